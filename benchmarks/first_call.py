"""The first attnc.attention call of a variant, the user's way (issue 49):
a fresh process per measure, the time from the call to its result
(compile or library lookup or cache lookup, module load, plan, launch).

Per attnc variant, three fresh processes, each with its own caches:
  cold, library     an empty XDG_CACHE_HOME, the prebuilt kernel library
                    (attnc-kernels.bin beside libattnc.so, or
                    $ATTNC_KERNEL_LIBRARY) as a user gets it;
  cold, no library  an empty XDG_CACHE_HOME, ATTNC_KERNEL_LIBRARY=- (NVRTC);
  disk hit          ATTNC_KERNEL_LIBRARY=-, the cache the previous one left;
and in each, a second call in the same process (an in-process hit).

Peers, the same way, run first (they are few and their time is bounded):
  FlexAttention     torch.compile(flex_attention), empty inductor and triton
                    caches (cold), then the caches it left (disk hit);
  FlashInfer        its sdist (.peers/, benchmarks/flashinfer_peer.py)
                    extracted into a fresh folder and a fresh JIT workspace,
                    no prebuilt AOT modules: the first call of a
                    BatchPrefillWithRaggedKVCacheWrapper (plan, which
                    JIT-builds its module with nvcc on all cores, and run)
                    of a drawn common prefill variant's shape; then the
                    built workspace again in a fresh process (disk hit).

Then attnc variants, common and region interleaved, until --budget seconds
from the start have passed (the rest are skipped, with a note). No child
runs past --hard-limit seconds from the start. Variants are drawn with a
fixed seed from the common space (dtypes, head dims, GQA groups, causal,
windows, soft-caps, sinks, decode or prefill) and, separately, with
score_mod/mask_mod functions (regions). Ends with a Markdown table for
docs/PERFORMANCE.md; every row goes to <out>/first_call.json (rewritten
after each row, so a run cut short keeps what it measured).

    PYTHONPATH=python python3 benchmarks/first_call.py --out $OUT/first
    python3 benchmarks/first_call.py --dry-run     # what it would run
"""

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BENCHMARKS = os.path.join(REPO, "benchmarks")

# One variant in a fresh process: builds the tensors, then times the first
# and the second call of the variant in `sys.argv[1]` (JSON), and prints
# {"first_ms": .., "second_ms": ..}.
CHILD = r"""
import json, sys, time
import torch
spec = json.loads(sys.argv[1])
torch.manual_seed(0)
dtype = getattr(torch, spec["dtype"])
b, q_len, kv_len = spec["batch"], spec["q_len"], spec["kv_len"]
h, kvh, d = spec["heads"], spec["kv_heads"], spec["dim"]
q = torch.randn(b, h, q_len, d, device="cuda", dtype=dtype)
k = torch.randn(b, kvh, kv_len, d, device="cuda", dtype=dtype)
v = torch.randn_like(k)
torch.cuda.synchronize()
if spec["peer"] == "flex":
    from torch.nn.attention.flex_attention import flex_attention
    fn = torch.compile(flex_attention)
    def call():
        return fn(q, k, v, enable_gqa=h != kvh)
else:
    import attnc
    options = dict(causal=spec["causal"], window=spec["window"],
                   softcap=spec["softcap"], sinks=spec["sinks"])
    if spec["mod"] == "alibi":
        slopes = torch.rand(h, device="cuda")
        options["score_mod"] = lambda s, b, hh, qi, ki: s + slopes[hh] * (
            ki - qi)
    elif spec["mod"] == "band":
        options["mask_mod"] = lambda b, hh, qi, ki: (qi - ki) % 97 < 64
    def call():
        return attnc.attention(q, k, v, layout="bhsd", **options)
start = time.perf_counter()
call()
torch.cuda.synchronize()
first = (time.perf_counter() - start) * 1e3
start = time.perf_counter()
call()
torch.cuda.synchronize()
second = (time.perf_counter() - start) * 1e3
print(json.dumps({"first_ms": first, "second_ms": second}))
"""

# FlashInfer's first call in a fresh process: argv[1] the variant, argv[2]
# {"benchmarks", "work", "sdist", "no_prebuilt"}. flashinfer_peer.load()
# extracts the sdist under `work` (not the shared /tmp/attnc-peers, where
# bench.py may have installed prebuilt AOT modules), installs no prebuilt
# archive (`no_prebuilt` names no file), and keeps the JIT workspace the
# parent chose ($FLASHINFER_WORKSPACE_BASE). The timed first call is the
# wrapper, its plan() (which JIT-builds the module: ninja, $MAX_JOBS jobs)
# and its run(); the import is timed apart. Prints {"first_ms", ...} or
# {"unavailable": why}.
FI_CHILD = r"""
import functools, json, os, sys, time
spec = json.loads(sys.argv[1])
cfg = json.loads(sys.argv[2])
sys.path.insert(0, cfg["benchmarks"])
import flashinfer_peer as fp
fp.extract = functools.partial(fp.extract, work=cfg["work"])
began = time.perf_counter()
try:
    fi = fp.load(cfg["sdist"], prebuilt=cfg["no_prebuilt"])
except fp.Unavailable as why:
    print(json.dumps({"unavailable": str(why)}))
    sys.exit(0)
load_s = time.perf_counter() - began
import torch
aot = os.path.join(os.path.dirname(os.path.abspath(fi.__file__)), "data",
                   "aot")
aot_modules = sorted(os.listdir(aot)) if os.path.isdir(aot) else []
torch.manual_seed(0)
dtype = getattr(torch, spec["dtype"])
b, q_len, kv_len = spec["batch"], spec["q_len"], spec["kv_len"]
h, kvh, d = spec["heads"], spec["kv_heads"], spec["dim"]
q = torch.randn(b * q_len, h, d, device="cuda", dtype=dtype)
k = torch.randn(b * kv_len, kvh, d, device="cuda", dtype=dtype)
v = torch.randn_like(k)
qo_indptr = torch.arange(b + 1, device="cuda", dtype=torch.int32) * q_len
kv_indptr = torch.arange(b + 1, device="cuda", dtype=torch.int32) * kv_len
torch.cuda.synchronize()
start = time.perf_counter()
try:
    fn, backend = fp.ragged_prefill(fi, q, k, v, qo_indptr, kv_indptr,
                                    causal=spec["causal"],
                                    window=spec["window"],
                                    softcap=spec["softcap"])
    fn()
    torch.cuda.synchronize()
except Exception as error:  # a failed JIT build: its first compiler error
    print(json.dumps({"error": [fp.short_error(error)],
                      "failed_after_s": round(time.perf_counter() - start, 1),
                      "aot_modules": aot_modules}))
    sys.exit(0)
first = (time.perf_counter() - start) * 1e3
start = time.perf_counter()
fn()
torch.cuda.synchronize()
second = (time.perf_counter() - start) * 1e3
print(json.dumps({"first_ms": first, "second_ms": second,
                  "load_s": round(load_s, 2), "backend": backend,
                  "version": fp.version(fi), "aot_modules": aot_modules}))
"""

CATEGORIES = ("common", "region", "flex", "flashinfer")


def draw(rng, mod=None):
    """One variant of the common space (or with a mod)."""
    dim = rng.choice([64, 128, 256])
    kv_heads = rng.choice([1, 2, 8, 32])
    group = rng.choice([1, 4, 8]) if kv_heads < 32 else 1
    decode = rng.random() < 0.4
    window = rng.choice([None, None, 128, 1024])
    return dict(
        dtype=rng.choice(["bfloat16", "float16"]), dim=dim, batch=2,
        heads=kv_heads * group, kv_heads=kv_heads,
        q_len=1 if decode else 512, kv_len=rng.choice([512, 2048]),
        causal=not decode and rng.random() < 0.7,
        window=window, softcap=rng.choice([None, None, 30.0]),
        sinks=rng.choice([0, 4]) if window else 0, mod=mod, peer="attnc")


def interleave(groups):
    """The items of several lists spread evenly in one list (a run cut by
    the budget keeps each list's share)."""
    keyed = [((i + 0.5) / len(items), g, item)
             for g, items in enumerate(groups) for i, item in enumerate(items)]
    return [item for _, _, item in sorted(keyed, key=lambda t: t[:2])]


class Clock:
    """Seconds since the start; the hard limit no child may run past."""

    def __init__(self, hard_limit):
        self.start = time.monotonic()
        self.hard_limit = hard_limit

    def elapsed(self):
        return time.monotonic() - self.start

    def timeout(self, own):
        """A child's timeout: its own, cut to what the hard limit leaves;
        None when that is under 5 s (the child is not started)."""
        left = self.hard_limit - self.elapsed()
        return None if left < 5 else min(own, left)


def base_env(cache):
    """The environment of a child whose caches all live under `cache`."""
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = cache
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "torchinductor")
    env["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.join(REPO, "python"),
                    os.environ.get("PYTHONPATH")) if p)
    return env


def attnc_env(cache, library):
    env = base_env(cache)
    if library:
        # The user's default: no ATTNC_KERNEL_LIBRARY, or the one named.
        if env.get("ATTNC_KERNEL_LIBRARY", "x") in ("", "-"):
            del env["ATTNC_KERNEL_LIBRARY"]
    else:
        env["ATTNC_KERNEL_LIBRARY"] = "-"
    return env


def env_diff(env):
    """What a child's environment changes, for --dry-run."""
    keys = ("XDG_CACHE_HOME", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR",
            "PYTHONPATH", "ATTNC_KERNEL_LIBRARY", "FLASHINFER_WORKSPACE_BASE",
            "MAX_JOBS")
    return " ".join(f"{k}={env[k]}" if k in env else f"-{k}"
                    for k in keys
                    if env.get(k) != os.environ.get(k) or
                    (k == "ATTNC_KERNEL_LIBRARY" and k in env))


def count_files(folder):
    return sum(len(files) for _, _, files in os.walk(folder))


def run_child(argv, env, timeout, dry=False, label=""):
    """Runs one child (its own process group, all of it killed on timeout).
    Returns its JSON line, {"error": [..]} or {"timeout_s": ..}."""
    if timeout is None:
        return {"skipped": "past --hard-limit"}
    if dry:
        script = {CHILD: "<CHILD>", FI_CHILD: "<FI_CHILD>"}.get(argv[2], "?")
        print(f"    would run [{label}] {os.path.basename(argv[0])} -c "
              f"{script} SPEC{' CFG' if len(argv) > 4 else ''}, timeout "
              f"{timeout:.0f} s, env: {env_diff(env)}", flush=True)
        if len(argv) > 4:
            print(f"      CFG {argv[4]}", flush=True)
        return {"dry_run": True}
    began = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # ninja and nvcc with it
        except ProcessLookupError:
            pass
        proc.communicate()
        return {"timeout_s": round(timeout, 1),
                "error": [f"timed out after {timeout:.3g} s"]}
    wall = round(time.monotonic() - began, 2)
    lines = [l for l in out.strip().splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (err or out).strip().splitlines()[-3:]
        return {"error": tail or [f"exit status {proc.returncode}"],
                "wall_s": wall}
    result = json.loads(lines[-1])
    result["wall_s"] = wall
    return result


def show(result):
    """One measure, short."""
    if "first_ms" in result:
        return (f"{result['first_ms']:.1f} ms (2nd {result['second_ms']:.3f} "
                f"ms, {result['wall_s']:.1f} s wall)")
    for key in ("unavailable", "skipped"):
        if key in result:
            return f"{key}: {result[key]}"
    if "dry_run" in result:
        return "dry run"
    return "error: " + (result.get("error") or ["?"])[-1][:300]


def describe(spec, dry=False):
    if dry:
        return (describe(spec) + "\n    SPEC " +
                json.dumps(spec, sort_keys=True))
    mod = f" {spec['mod']}" if spec.get("mod") else ""
    return (f"{spec['dtype'][:4]} d{spec['dim']} h{spec['heads']}/"
            f"{spec['kv_heads']} q{spec['q_len']} kv{spec['kv_len']}"
            f"{' causal' if spec['causal'] else ''}"
            f"{' win' + str(spec['window']) if spec['window'] else ''}"
            f"{' sinks' + str(spec['sinks']) if spec['sinks'] else ''}"
            f"{' cap' + str(spec['softcap']) if spec['softcap'] else ''}"
            f"{mod}")


def library_path():
    """Where libattnc.so would find its kernel library (for the record)."""
    named = os.environ.get("ATTNC_KERNEL_LIBRARY")
    if named and named != "-":
        return named
    lib = os.environ.get("ATTNC_LIBRARY")
    dirs = ([os.path.dirname(lib)] if lib else
            [os.path.join(REPO, "python", "attnc"),
             os.path.join(REPO, "build", "lib")])
    for d in dirs:
        if os.path.exists(os.path.join(d, "libattnc.so")):
            return os.path.join(d, "attnc-kernels.bin")
    return os.path.join(dirs[-1], "attnc-kernels.bin")


# -- the measures -------------------------------------------------------------

def measure_attnc(spec, clock, args):
    py = [sys.executable, "-c", CHILD, json.dumps(spec)]
    row = {}
    with tempfile.TemporaryDirectory(prefix="attnc-first-lib-") as lib_cache, \
            tempfile.TemporaryDirectory(prefix="attnc-first-") as cache:
        row["cold_lib"] = run_child(
            py, attnc_env(lib_cache, True), clock.timeout(args.child_timeout),
            args.dry_run, "cold, library")
        row["cold_nolib"] = run_child(
            py, attnc_env(cache, False), clock.timeout(args.child_timeout),
            args.dry_run, "cold, no library")
        if "first_ms" in row["cold_nolib"] or args.dry_run:
            row["disk_hit"] = run_child(
                py, attnc_env(cache, False),
                clock.timeout(args.child_timeout), args.dry_run,
                "disk hit, no library")
        else:
            row["disk_hit"] = {"skipped": "the cold run failed"}
        if not args.dry_run:
            # Files the cold runs left in their caches: none after the
            # library run hints that the library served the variant.
            row["cold_lib"]["cache_files"] = count_files(lib_cache)
            row["cold_nolib"]["cache_files"] = count_files(cache)
    return row


def measure_flex(spec, clock, args):
    py = [sys.executable, "-c", CHILD, json.dumps(dict(spec, peer="flex"))]
    row = {}
    with tempfile.TemporaryDirectory(prefix="attnc-first-flex-") as cache:
        env = base_env(cache)
        row["cold"] = run_child(py, env, clock.timeout(args.flex_timeout),
                                args.dry_run, "flex cold")
        if "first_ms" in row["cold"] or args.dry_run:
            row["disk_hit"] = run_child(
                py, env, clock.timeout(args.flex_timeout), args.dry_run,
                "flex disk hit")
        else:
            row["disk_hit"] = {"skipped": "the cold run failed"}
    return row


def flashinfer_sdist(args):
    """The sdist's path, or raises flashinfer_peer.Unavailable."""
    sys.path.insert(0, BENCHMARKS)
    import flashinfer_peer
    return flashinfer_peer.find_sdist(args.flashinfer_sdist)


def measure_flashinfer(spec, sdist, clock, args):
    # FlashInfer 0.2.14 has no attention sinks: the shape, without them.
    spec = dict(spec, sinks=0, peer="flashinfer")
    row = {"spec": spec}
    with tempfile.TemporaryDirectory(prefix="attnc-first-fi-") as work:
        cfg = dict(benchmarks=BENCHMARKS, work=os.path.join(work, "tree"),
                   sdist=sdist,
                   no_prebuilt=os.path.join(work, "no-prebuilt-archive"))
        env = base_env(os.path.join(work, "cache"))
        env["FLASHINFER_WORKSPACE_BASE"] = os.path.join(work, "jit")
        env.setdefault("MAX_JOBS", str(os.cpu_count() or 1))
        py = [sys.executable, "-c", FI_CHILD, json.dumps(spec),
              json.dumps(cfg)]
        row["cold"] = run_child(py, env,
                                clock.timeout(args.flashinfer_timeout),
                                args.dry_run, "FlashInfer cold JIT")
        if "first_ms" in row["cold"] or args.dry_run:
            row["disk_hit"] = run_child(
                py, env, clock.timeout(args.flex_timeout), args.dry_run,
                "FlashInfer disk hit")
        else:
            row["disk_hit"] = {"skipped": "the cold run did not finish"}
        if not args.dry_run and "aot_modules" in row["cold"] and \
                row["cold"]["aot_modules"]:
            row["note"] = "AOT modules were present: not a cold JIT build"
    return row


# -- the report ---------------------------------------------------------------

def values(rows, kind, field, key="first_ms"):
    return [r[field][key] for r in rows
            if r["kind"] == kind and key in r.get(field, {})]


def stat(xs, how):
    if not xs:
        return "—"
    x = statistics.median(xs) if how == "median" else max(xs)
    return f"{x:.3f}" if x < 1 else f"{x:.1f}"


def summary(rows):
    """Per category, median and max of each measure (ms), and counts."""
    fields = {"common": ("cold_lib", "cold_nolib", "disk_hit"),
              "region": ("cold_lib", "cold_nolib", "disk_hit"),
              "flex": ("cold", None, "disk_hit"),
              "flashinfer": ("cold", None, "disk_hit")}
    out = {}
    for kind, (cold, cold2, disk) in fields.items():
        entry = {"n": sum(r["kind"] == kind for r in rows)}
        for name, field, key in (("cold_lib", cold, "first_ms"),
                                 ("cold_nolib", cold2, "first_ms"),
                                 ("disk_hit", disk, "first_ms"),
                                 ("in_process", cold, "second_ms")):
            xs = values(rows, kind, field, key) if field else []
            entry[name] = {"n": len(xs),
                           "median": statistics.median(xs) if xs else None,
                           "max": max(xs) if xs else None}
        out[kind] = entry
    return out


def print_summary(rows):
    print("\nPer category (ms; variants run, measures failed; in-process: "
          "the second call of the cold run, with the library where there "
          "is one; FlexAttention and FlashInfer: their cold run in the "
          "'cold, library' column)")
    print("| category | variants | failed | cold, library med / max | "
          "cold, no library med / max | disk hit med / max | in-process hit "
          "med / max |")
    print("|---|---|---|---|---|---|---|")
    fields = {"common": ("cold_lib", "cold_nolib"),
              "region": ("cold_lib", "cold_nolib"),
              "flex": ("cold", None), "flashinfer": ("cold", None)}
    for kind in CATEGORIES:
        cold, cold2 = fields[kind]
        cells = []
        for field, key in ((cold, "first_ms"), (cold2, "first_ms"),
                           ("disk_hit", "first_ms"), (cold, "second_ms")):
            xs = values(rows, kind, field, key) if field else []
            cells.append(f"{stat(xs, 'median')} / {stat(xs, 'max')}"
                         if xs else "—")
        mine = [r for r in rows if r["kind"] == kind]
        failed = sum("error" in m for r in mine for m in r.values()
                     if isinstance(m, dict))
        print(f"| {kind} | {len(mine)} | {failed} | " + " | ".join(cells) +
              " |")


def why_empty(rows, skipped, kind, field):
    """A table cell for a category with no measure: why."""
    for r in rows:
        if r["kind"] == kind and "timeout_s" in r.get(field, {}):
            return f"timed out after {r[field]['timeout_s']:.0f} s"
    for r in rows:
        if r["kind"] == kind and "unavailable" in r.get(field, {}):
            return "unavailable (note)"
    if any(r["kind"] == kind for r in rows):
        return "failed (json)"
    if any(s["kind"] == kind for s in skipped):
        return "skipped (note)"
    return "—"


def performance_table(rows, notes, skipped=()):
    """The Markdown table for docs/PERFORMANCE.md."""
    lines = ["| first call, fresh process (H200) | n | median first call "
             "(ms) | max (ms) | disk hit (ms) | in-process hit (ms) |",
             "|---|---|---|---|---|---|"]

    def line(name, kind, field, disk=True):
        xs = values(rows, kind, field)
        hits = values(rows, kind, "disk_hit") if disk else []
        second = values(rows, kind, field, "second_ms")
        if not xs:
            lines.append(f"| {name} | 0 | "
                         f"{why_empty(rows, skipped, kind, field)} | — | — "
                         f"| — |")
            return
        lines.append(f"| {name} | {len(xs)} | {stat(xs, 'median')} | "
                     f"{stat(xs, 'max')} | "
                     f"{stat(hits, 'median') if disk else '— ¹'} | "
                     f"{stat(second, 'median')} |")
    line("attnc, common variant, kernel library", "common", "cold_lib",
         disk=False)
    line("attnc, common variant, no library (NVRTC)", "common", "cold_nolib")
    line("attnc, region variant (score_mod / mask_mod)", "region",
         "cold_lib")
    line("FlexAttention (torch.compile)", "flex", "cold")
    line("FlashInfer (JIT build with nvcc)", "flashinfer", "cold")
    lines.append("")
    lines.append("¹ a library variant is served from the library in every "
                 "process, no disk cache involved. Disk hit: a second fresh "
                 "process over the cache the cold one left (attnc with the "
                 "library disabled; FlexAttention's inductor and triton "
                 "caches; FlashInfer's built JIT workspace). In-process "
                 "hit: the second call in the cold process, the kernel's "
                 "run included. Region row: the default path (library "
                 "present; a region compiles with NVRTC). Cold: empty "
                 "caches; each measure is the "
                 "first call alone (tensors made and modules imported "
                 "before it).")
    lines.extend(f"- {n}" for n in notes)
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 2)[2])
    parser.add_argument("--common", type=int, default=12,
                        help="common variants drawn (default 12)")
    parser.add_argument("--regions", type=int, default=6,
                        help="variants with score_mod/mask_mod (default 6)")
    parser.add_argument("--flex", type=int, default=2,
                        help="common variants FlexAttention's first call is "
                             "timed on (default 2)")
    parser.add_argument("--flashinfer", type=int, default=1,
                        help="common prefill variants FlashInfer's first "
                             "call (cold JIT build) is timed on (default 1)")
    parser.add_argument("--flashinfer-sdist", default=None,
                        help="FlashInfer's sdist (default "
                             ".peers/flashinfer_python-*.tar.gz)")
    parser.add_argument("--flashinfer-timeout", type=float, default=240,
                        help="seconds FlashInfer's cold first call may take "
                             "(default 240)")
    parser.add_argument("--flex-timeout", type=float, default=150,
                        help="seconds a FlexAttention child (or FlashInfer's "
                             "disk hit) may take (default 150)")
    parser.add_argument("--child-timeout", type=float, default=90,
                        help="seconds an attnc child may take (default 90)")
    parser.add_argument("--budget", type=float, default=330,
                        help="seconds from the start after which no further "
                             "attnc variant starts (default 330)")
    parser.add_argument("--hard-limit", type=float, default=560,
                        help="seconds from the start no child runs past "
                             "(default 560)")
    parser.add_argument("--seed", type=int, default=49)
    parser.add_argument("--out", default="first-call")
    parser.add_argument("--dry-run", action="store_true",
                        help="draw and print the variants and the commands "
                             "and environments it would run; run nothing")
    args = parser.parse_args()
    clock = Clock(args.hard_limit)

    rng = random.Random(args.seed)
    common = [("common", draw(rng)) for _ in range(args.common)]
    regions = [("region", draw(rng, rng.choice(["alibi", "band"])))
               for _ in range(args.regions)]
    flex_specs = [s for _, s in common[:args.flex]]
    prefills = [s for _, s in common if s["q_len"] > 1]
    fi_specs = (prefills + [s for _, s in common
                            if s["q_len"] == 1])[:args.flashinfer]
    order = interleave([common, regions])

    lib = library_path()
    notes = []
    header = (f"first_call: {len(common)} common + {len(regions)} region "
              f"attnc variants, {len(flex_specs)} FlexAttention, "
              f"{len(fi_specs)} FlashInfer; budget {args.budget:.0f} s, "
              f"hard limit {args.hard_limit:.0f} s; kernel library "
              f"{lib} ({'%.1f MiB' % (os.path.getsize(lib) / 2**20) if os.path.exists(lib) else 'absent'})")
    print(header, flush=True)
    if not os.path.exists(lib):
        notes.append(f"kernel library {lib} absent: 'library' rows compile "
                     f"with NVRTC")
    meta = dict(args=vars(args), python=sys.executable, kernel_library=lib,
                kernel_library_bytes=(os.path.getsize(lib)
                                      if os.path.exists(lib) else None),
                cpus=os.cpu_count())
    rows = []
    skipped = []
    out_json = os.path.join(args.out, "first_call.json")

    def save():
        if args.dry_run:
            return
        os.makedirs(args.out, exist_ok=True)
        with open(out_json, "w") as f:
            json.dump(dict(meta, rows=rows, skipped=skipped, notes=notes,
                           summary=summary(rows),
                           elapsed_s=round(clock.elapsed(), 1)), f, indent=1)

    def finish(kind, spec, row, began):
        row.update(kind=kind, spec=row.get("spec", spec),
                   seconds=round(time.monotonic() - began, 1),
                   elapsed_s=round(clock.elapsed(), 1))
        rows.append(row)
        save()

    # FlexAttention
    for i, spec in enumerate(flex_specs):
        began = time.monotonic()
        print(f"[{clock.elapsed():6.1f} s] flex {i + 1}/{len(flex_specs)} "
              f"{describe(spec, args.dry_run)}", flush=True)
        row = measure_flex(spec, clock, args)
        finish("flex", spec, row, began)
        print(f"    cold {show(row['cold'])}; disk hit "
              f"{show(row['disk_hit'])}  [{row['seconds']:.1f} s]",
              flush=True)

    # FlashInfer
    if fi_specs:
        try:
            sdist = flashinfer_sdist(args)
        except Exception as why:  # flashinfer_peer.Unavailable
            sdist = None
            reason = f"FlashInfer skipped: {why}"
            print(f"[{clock.elapsed():6.1f} s] {reason}", flush=True)
            notes.append(reason)
            skipped.extend(dict(kind="flashinfer", spec=s, why=str(why))
                           for s in fi_specs)
        for i, spec in enumerate(fi_specs if sdist else []):
            began = time.monotonic()
            print(f"[{clock.elapsed():6.1f} s] flashinfer {i + 1}/"
                  f"{len(fi_specs)} {describe(spec)}"
                  f"{' (sinks dropped: FlashInfer has none)' if spec['sinks'] else ''}"
                  f" from {os.path.basename(sdist)}, "
                  f"MAX_JOBS={os.environ.get('MAX_JOBS', os.cpu_count())}, "
                  f"timeout {clock.timeout(args.flashinfer_timeout) or 0:.0f} s",
                  flush=True)
            row = measure_flashinfer(spec, sdist, clock, args)
            finish("flashinfer", spec, row, began)
            cold = row["cold"]
            if "unavailable" in cold:
                notes.append(f"FlashInfer unavailable: {cold['unavailable']}")
            elif "timeout_s" in cold:
                notes.append(f"FlashInfer's first call timed out after "
                             f"{cold['timeout_s']:.0f} s (JIT build "
                             f"unfinished)")
            elif "first_ms" in cold:
                notes.append(f"FlashInfer {cold.get('version')}, "
                             f"{cold.get('backend', '?').upper()} backend, "
                             f"ragged prefill wrapper; its first call is "
                             f"plan() (JIT build, MAX_JOBS="
                             f"{os.environ.get('MAX_JOBS', os.cpu_count())})"
                             f" and run(); sdist extraction and import "
                             f"({cold.get('load_s')} s) not counted")
            if row.get("note"):
                notes.append(row["note"])
            print(f"    cold {show(cold)}; disk hit {show(row['disk_hit'])}"
                  f"  [{row['seconds']:.1f} s]", flush=True)

    # attnc
    for i, (kind, spec) in enumerate(order):
        if clock.elapsed() > args.budget and not args.dry_run:
            left = order[i:]
            skipped.extend(dict(kind=k, spec=s, why="--budget")
                           for k, s in left)
            counts = {k: sum(1 for kk, _ in left if kk == k)
                      for k in ("common", "region")}
            note = (f"budget of {args.budget:.0f} s spent at "
                    f"{clock.elapsed():.0f} s: {counts['common']} common and "
                    f"{counts['region']} region variants skipped")
            print(note, flush=True)
            notes.append(note)
            break
        began = time.monotonic()
        print(f"[{clock.elapsed():6.1f} s] {kind} {i + 1}/{len(order)} "
              f"{describe(spec, args.dry_run)}", flush=True)
        row = measure_attnc(spec, clock, args)
        finish(kind, spec, row, began)
        print(f"    cold+lib {show(row['cold_lib'])}"
              f"{' files %d' % row['cold_lib']['cache_files'] if 'cache_files' in row['cold_lib'] else ''}"
              f"; cold {show(row['cold_nolib'])}; disk hit "
              f"{show(row['disk_hit'])}  [{row['seconds']:.1f} s]",
              flush=True)

    if args.dry_run:
        print(f"\ndry run: nothing ran; would write {out_json}")
        return
    print_summary(rows)
    table = performance_table(rows, notes, skipped)
    print("\n" + table)
    meta["table"] = table
    save()
    print(f"\n{len(rows)} rows in {out_json}; {clock.elapsed():.0f} s",
          flush=True)


if __name__ == "__main__":
    main()
