"""FlashInfer as an optional peer of bench.py, loaded from its source
distribution: the GPU machine has no FlashInfer installed and cannot fetch
it, so the harness carries flashinfer-python's sdist (.peers/ at the repo
root, ignored by git) and FlashInfer JIT-builds each kernel it needs with
nvcc on first use (a module is 8 kernel files of 40-60 s each on one core;
cached under /tmp/attnc-peers, gone with the GPU machine).

    fi = load()                      # raises Unavailable with the reason
    prebuild(fi, modules)            # one parallel ninja run for all kernels
    export_prebuilt(fi, modules, p)  # the built modules as one archive
    fn = ragged_prefill(fi, ...)     # fn() runs one call, returns out

The built modules (<uri>.so, 1-5 MB each) travel as one archive,
.peers/flashinfer-aot-*.tar.gz: load() installs them as FlashInfer's AOT
modules (flashinfer/data/aot/<uri>/<uri>.so), which FlashInfer loads
instead of building. They are tied to the torch and CUDA they were built
against (the archive's manifest says which; a mismatch is not installed).
They can be built on any x86-64 machine with nvcc and the same torch, no
GPU needed: TORCH_CUDA_ARCH_LIST=9.0 bench.py --flashinfer-build-only
--flashinfer-export .peers/flashinfer-aot-<torch>.tar.gz

Tested against flashinfer-python 0.2.14 (its prefill.py and decode.py)."""

import glob
import os
import re
import sys
import tarfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DEFAULT_SDIST = os.path.join(REPO, ".peers", "flashinfer_python-*.tar.gz")
DEFAULT_PREBUILT = os.path.join(REPO, ".peers", "flashinfer-aot-*.tar.gz")
WORK = "/tmp/attnc-peers"
WORKSPACE_BYTES = 128 << 20

# flashinfer/jit/env.py looks for its C++ sources under flashinfer/data/;
# a wheel carries them there, the sdist at its top level (custom_backend.py
# makes the same links for an editable install).
DATA_LINKS = {
    "csrc": "csrc",
    "include": "include",
    "tvm_binding": "tvm_binding",
    "cutlass": os.path.join("3rdparty", "cutlass"),
    "spdlog": os.path.join("3rdparty", "spdlog"),
}


class Unavailable(Exception):
    """FlashInfer cannot be used in this run; str() says why."""


def find_sdist(pattern=None):
    pattern = pattern or DEFAULT_SDIST
    if os.path.isfile(pattern):
        return pattern
    found = sorted(glob.glob(pattern))
    if not found:
        raise Unavailable(f"no FlashInfer sdist at {pattern} (carry .peers/ "
                          f"to the GPU machine, or pass --flashinfer-sdist)")
    return found[-1]


def extract(sdist, work=WORK):
    """The sdist's source tree under `work`, extracted once: a tree is
    extracted beside its final name and renamed into place, so a run that
    died half-way leaves nothing that looks complete."""
    name = os.path.basename(sdist)
    for suffix in (".tar.gz", ".tgz", ".tar"):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    dest = os.path.join(work, name)
    marker = os.path.join(dest, ".attnc-extracted")
    if os.path.exists(marker):
        return _tree(dest)
    os.makedirs(work, exist_ok=True)
    staging = f"{dest}.partial-{os.getpid()}"
    with tarfile.open(sdist) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.12, 3.11.4+
            tar.extractall(staging, filter="data")
        else:
            tar.extractall(staging)
    open(os.path.join(staging, ".attnc-extracted"), "w").close()
    try:
        os.rename(staging, dest)
    except OSError:  # another process got there first
        import shutil
        shutil.rmtree(staging, ignore_errors=True)
        if not os.path.exists(marker):
            raise
    return _tree(dest)


def _tree(dest):
    """The folder holding flashinfer/ (the sdist's one top-level folder)."""
    for entry in sorted(os.listdir(dest)):
        if os.path.isdir(os.path.join(dest, entry, "flashinfer")):
            return os.path.join(dest, entry)
    raise Unavailable(f"{dest} has no <folder>/flashinfer/ inside")


def link_data(tree):
    data = os.path.join(tree, "flashinfer", "data")
    os.makedirs(data, exist_ok=True)
    for link, target in DATA_LINKS.items():
        source = os.path.join(tree, target)
        if not os.path.isdir(source):
            raise Unavailable(f"the sdist has no {target}/")
        path = os.path.join(data, link)
        if os.path.islink(path):
            if os.readlink(path) == source:
                continue
            os.unlink(path)
        elif os.path.exists(path):
            continue  # a real folder (a wheel's layout): leave it
        os.symlink(source, path, target_is_directory=True)


def _shim_torch():
    """flashinfer 0.2.14's jit/cpp_ext.py imports this helper, which torch
    deprecated ("removed after PyTorch 2.9"; it returned []): give it back
    where it is gone, so the import does not fail on it."""
    import torch.utils.cpp_extension as ext
    if not hasattr(ext, "_get_pybind11_abi_build_flags"):
        ext._get_pybind11_abi_build_flags = lambda: []


_loaded = None


def load(sdist=None, prebuilt=None):
    """Extracts the sdist (once), links flashinfer/data/, installs the
    prebuilt modules of `prebuilt` (an archive, or a glob; default
    .peers/flashinfer-aot-*.tar.gz), imports flashinfer from it. Raises
    Unavailable (with the reason) on any failure; a prebuilt archive that
    does not fit only prints why."""
    global _loaded
    if _loaded is not None:
        return _loaded
    try:
        import shutil
        from torch.utils.cpp_extension import CUDA_HOME
        nvcc = (os.path.join(CUDA_HOME, "bin", "nvcc") if CUDA_HOME
                else shutil.which("nvcc"))
        if not nvcc or not os.path.exists(nvcc):
            raise Unavailable("no nvcc to JIT-build its kernels")
        if not shutil.which("ninja"):
            raise Unavailable("no ninja to JIT-build its kernels")
        tree = extract(find_sdist(sdist))
        link_data(tree)
        installed = install_prebuilt(tree, prebuilt)
        if installed:
            print(f"FlashInfer: {len(installed) - 1} prebuilt modules "
                  f"installed from {installed[0]}", flush=True)
        # Its JIT cache (generated sources, objects, .so) goes beside the
        # tree unless the caller chose a place.
        os.environ.setdefault("FLASHINFER_WORKSPACE_BASE", WORK)
        _shim_torch()
        if tree not in sys.path:
            sys.path.insert(0, tree)
        import flashinfer
        where = os.path.dirname(os.path.abspath(flashinfer.__file__))
        if not where.startswith(tree):
            raise Unavailable(f"imported another flashinfer, from {where}")
        _loaded = flashinfer
        return flashinfer
    except Unavailable:
        raise
    except Exception as error:
        raise Unavailable(f"{type(error).__name__}: "
                          f"{str(error).splitlines()[0] if str(error) else ''}"
                          ) from error


def version(fi):
    return getattr(fi, "__version__", "?")


def short_error(error):
    """One line for the table's notes: a failed JIT build's first compiler
    error rather than ninja's banner."""
    text = str(error)
    if "Ninja build failed" in text:
        for line in text.splitlines():
            if " error" in line or "error:" in line:
                return "JIT build failed: " + line.strip()[:200]
        return "JIT build failed (no error line in ninja's output)"
    first = text.splitlines()[0] if text else type(error).__name__
    # FlashInfer's C++ errors: "Error in function 'f' at <path>:<line>:
    # <message>", where the path (its generated sources) fills the cut.
    found = re.match(r"Error in function '([^']*)' at (\S+?):(\d+): (.*)",
                     first)
    if found:
        func, path, line, message = found.groups()
        first = f"{message} ({os.path.basename(path)}:{line})"
    return first[:200]


# -- kernels a workload needs, built before anything is timed ---------------

def prefill_key(backend, head_dim, head_dim_vo=None, alibi=False,
                window=False, softcap=False):
    """A JIT module's arguments, as the wrappers' plan() derives them."""
    return ("prefill", backend, head_dim, head_dim_vo or head_dim,
            2 if alibi else 0, bool(window), bool(softcap))


def decode_key(head_dim):
    return ("decode", head_dim)


def _spec(fi, key):
    """The JitSpec of a module key (writes its generated sources)."""
    import torch
    bf16, i32 = torch.bfloat16, torch.int32
    if key[0] == "cascade":
        return fi.cascade.gen_cascade_module()
    if key[0] == "prefill":
        _, backend, dim, dim_vo, posenc, window, softcap = key
        return fi.jit.gen_batch_prefill_module(
            backend, bf16, bf16, bf16, i32, dim, dim_vo, posenc, window,
            softcap, False)
    _, dim = key
    return fi.jit.gen_batch_decode_module(
        bf16, bf16, bf16, i32, dim, dim, 0, False, False)


def prebuild(fi, keys):
    """Builds every module of `keys` in one ninja run (all cores, instead of
    one module after another at each wrapper's first plan()); installed
    prebuilt modules are skipped. Returns (seconds taken, modules built);
    raises on a failed build (plan() then retries the one module it needs,
    and reports its error)."""
    specs = [_spec(fi, key) for key in sorted(set(keys))]
    todo = [spec for spec in specs if not spec.is_aot]
    began = time.time()
    if todo:
        fi.jit.build_jit_specs(todo, verbose=False)
    return time.time() - began, len(todo)


def _manifest():
    import torch
    return {"torch": torch.__version__, "cuda": torch.version.cuda,
            "flashinfer": None}


def export_prebuilt(fi, keys, path):
    """Writes the built modules of `keys` (<uri>.so) and a manifest to the
    archive `path` (.tar.gz), for install_prebuilt on a later run. Returns
    the archive's size in bytes."""
    import io
    import json
    manifest = dict(_manifest(), flashinfer=version(fi), modules=[])
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for key in sorted(set(keys)):
            spec = _spec(fi, key)
            so = spec.get_library_path()
            if not os.path.exists(so):
                raise FileNotFoundError(f"{spec.name} is not built")
            tar.add(str(so), arcname=f"{spec.name}.so")
            manifest["modules"].append(spec.name)
        data = json.dumps(manifest, indent=1).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return os.path.getsize(path)


def install_prebuilt(tree, pattern=None):
    """Installs an archive of export_prebuilt as FlashInfer's AOT modules
    (flashinfer/data/aot/<uri>/<uri>.so: JitSpec loads those rather than
    building). Returns [archive, module names] or [] when there is no
    archive or it was built against another torch, CUDA or FlashInfer."""
    import json
    pattern = pattern or DEFAULT_PREBUILT
    found = ([pattern] if os.path.isfile(pattern)
             else sorted(glob.glob(pattern)))
    if not found:
        return []
    archive = found[-1]
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
        here = _manifest()
        sdist_version = _sdist_version(tree)
        wrong = [f"{k} {manifest.get(k)} (here {here[k]})"
                 for k in ("torch", "cuda") if manifest.get(k) != here[k]]
        if sdist_version and manifest.get("flashinfer") != sdist_version:
            wrong.append(f"flashinfer {manifest.get('flashinfer')} (here "
                         f"{sdist_version})")
        if wrong:
            print(f"FlashInfer: not using {archive}: built for "
                  f"{', '.join(wrong)}", flush=True)
            return []
        aot = os.path.join(tree, "flashinfer", "data", "aot")
        names = []
        for member in tar.getmembers():
            if not member.isfile() or not member.name.endswith(".so"):
                continue
            name = os.path.basename(member.name)[:-len(".so")]
            dest = os.path.join(aot, name, name + ".so")
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with tar.extractfile(member) as src, \
                    open(dest + ".partial", "wb") as out:
                out.write(src.read())
            os.replace(dest + ".partial", dest)
            names.append(name)
    return [archive] + names


def _sdist_version(tree):
    try:
        with open(os.path.join(tree, "version.txt")) as f:
            return f.read().strip()
    except OSError:
        return None


# -- runners ------------------------------------------------------------------

def _workspace(device):
    import torch
    # Decode requires it zeroed before its first use.
    return torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device=device)


def ragged_prefill(fi, q, k, v, qo_indptr, kv_indptr, causal, window=None,
                   softcap=None, alibi=False):
    """BatchPrefillWithRaggedKVCacheWrapper on q [tokens, heads, dim], k and
    v [tokens, kv_heads, dim]; int32 index pointers. FA3 (Hopper) except
    for ALiBi, which only the FA2 backend applies: the FA3 variant ignores
    pos_encoding_mode. Returns (fn, backend); fn() returns out."""
    import torch
    backend = "fa2" if alibi else "fa3"
    heads, dim, dim_vo = q.shape[1], q.shape[2], v.shape[2]
    kv_heads = k.shape[1]
    wrapper = fi.BatchPrefillWithRaggedKVCacheWrapper(
        _workspace(q.device), "NHD", backend=backend)
    wrapper.plan(qo_indptr, kv_indptr, heads, kv_heads, dim,
                 head_dim_vo=dim_vo, causal=causal,
                 pos_encoding_mode="ALIBI" if alibi else "NONE",
                 window_left=-1 if window is None else window,
                 logits_soft_cap=softcap,
                 q_data_type=q.dtype, kv_data_type=k.dtype)
    out = q.new_empty(q.shape[:-1] + (dim_vo,))
    return (lambda: wrapper.run(q, k, v, out=out)), backend


def paged_prefill(fi, q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices,
                  last_page_len, causal, window=None, softcap=None):
    """BatchPrefillWithPagedKVCacheWrapper (FA3) on ragged q [tokens,
    heads, dim] over NHD pages [pages, page_size, kv_heads, dim]."""
    import torch
    heads, dim = q.shape[1], q.shape[2]
    kv_heads, page = k_cache.shape[2], k_cache.shape[1]
    wrapper = fi.BatchPrefillWithPagedKVCacheWrapper(
        _workspace(q.device), "NHD", backend="fa3")
    wrapper.plan(qo_indptr, kv_indptr, kv_indices, last_page_len, heads,
                 kv_heads, dim, page, causal=causal,
                 window_left=-1 if window is None else window,
                 logits_soft_cap=softcap, q_data_type=q.dtype,
                 kv_data_type=k_cache.dtype)
    out = torch.empty_like(q)
    return lambda: wrapper.run(q, (k_cache, v_cache), out=out)


def paged_decode(fi, q, k_cache, v_cache, kv_indptr, kv_indices,
                 last_page_len, tensor_cores):
    """BatchDecodeWithPagedKVCacheWrapper on q [batch, heads, dim] over NHD
    pages; CUDA-core decode kernel, or (tensor_cores) the FA2 prefill
    kernel with the group's query heads as rows."""
    import torch
    heads, dim = q.shape[1], q.shape[2]
    kv_heads, page = k_cache.shape[2], k_cache.shape[1]
    wrapper = fi.BatchDecodeWithPagedKVCacheWrapper(
        _workspace(q.device), "NHD", use_tensor_cores=tensor_cores)
    wrapper.plan(kv_indptr, kv_indices, last_page_len, heads, kv_heads, dim,
                 page, q_data_type=q.dtype, kv_data_type=k_cache.dtype)
    out = torch.empty_like(q)
    return lambda: wrapper.run(q, (k_cache, v_cache), out=out)


def cascade_key():
    return ("cascade",)


def cascade(fi, q, k_cache, v_cache, levels, causal):
    """MultiLevelCascadeAttentionWrapper on q [tokens, heads, dim] over NHD
    pages, the levels as (qo_indptr, kv_indptr, kv_indices,
    kv_last_page_len) int32 tensors; fn() returns out."""
    heads, dim = q.shape[1], q.shape[2]
    kv_heads, page = k_cache.shape[2], k_cache.shape[1]
    wrapper = fi.MultiLevelCascadeAttentionWrapper(
        len(levels), _workspace(q.device), "NHD")
    on = [[a.to(q.device) for a in level] for level in levels]
    wrapper.plan([l[0] for l in on], [l[1] for l in on], [l[2] for l in on],
                 [l[3] for l in on], heads, kv_heads, dim, page,
                 causal=causal, q_data_type=q.dtype,
                 kv_data_type=k_cache.dtype)
    return lambda: wrapper.run(q, (k_cache, v_cache))
