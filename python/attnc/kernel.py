"""Variants, compiled kernels and batch plans: thin owners of C handles."""

import ctypes
import os

from . import _capi, trace
from ._capi import check, lib
from ._launch import addresses
from ._tensors import IR_NAMES, TORCH_NAMES
from ._values import (INT32, INT64, UINT64, as_flag, as_float32, as_int,
                      as_sequence, as_text, window_extents)

# attnc_variant_spec's fields as the library describes them: how each
# keyword converts (an enumerator's name, a flag, None for "no value") comes
# from the field's encoding, never from a list here.
_SPEC = {field.name: field for field in _capi.VariantSpec.fields}
# A count follows from its list (num_captures from capture_types).
_COUNTS = {field.counts: field.name for field in _SPEC.values()
           if field.encoding == _capi.ENCODING_COUNT}
# The window's two fields, which Python spells as one argument, window=,
# as every front end does.
_WINDOW_FIELDS = ("window_left", "window_right")
SPEC_FIELDS = tuple(name for name, field in _SPEC.items()
                    if field.encoding != _capi.ENCODING_COUNT and
                    name not in _WINDOW_FIELDS) + ("window",)
# Enum fields' names, by the enum's C name: {"attnc_dtype": DTYPES, ...}.
_ENUM_NAMES = {field.enum_type: _capi.enum_names(field.enum_type)
               for field in _SPEC.values()
               if field.encoding == _capi.ENCODING_ENUM}
# Where Python spells an enum its own way, as every front end does:
# element types by torch's names (or torch dtypes), page orders as
# FlashInfer's kv_layout. {enum: {Python's name: the library's}}.
PYTHON_NAMES = {
    "attnc_dtype": {torch: ir for torch, ir in IR_NAMES.items()
                    if ir in _ENUM_NAMES["attnc_dtype"]},
    "attnc_page_order": {name.upper(): name
                         for name in _ENUM_NAMES["attnc_page_order"]},
}


def _enum(field, enum_type, value, names):
    """An enum field: its name ("ragged", "bfloat16", "NHD": Python's where
    PYTHON_NAMES has them, and a torch dtype for a dtype) or its int value
    (which the library checks). The library's own spelling of a name
    Python spells otherwise is refused, naming Python's."""
    python = PYTHON_NAMES.get(enum_type)
    if python is not None and str(value).startswith("torch."):
        value = str(value)[len("torch."):]
    if not isinstance(value, str):
        return as_int(field, value, INT32)
    if python is None:
        if value not in names:
            raise ValueError(f"{field} must be one of {', '.join(names)}, "
                             f"got {value!r}")
        return names[value]
    if value in python:
        return names[python[value]]
    spelled = {ir: name for name, ir in python.items()}.get(value)
    if spelled is not None:
        raise ValueError(f"{field}={value!r} is the C API's spelling: "
                         f"Python's is {spelled!r}")
    raise ValueError(f"{field} must be one of {', '.join(python)}, got "
                     f"{value!r}")


def _spec_value(name, value):
    """The C value of one attnc_variant_spec field, from its encoding and C
    type (the library's table); the library judges what it means."""
    field = _SPEC[name]
    if value is None and field.none is not _capi.NO_NONE:
        # "No value": the kv_dtype of the queries, no window, no region.
        return None if field.kind == _capi.KIND_STRING else field.none
    if field.encoding == _capi.ENCODING_ENUM:
        return _enum(name, field.enum_type, value,
                     _ENUM_NAMES[field.enum_type])
    if field.encoding == _capi.ENCODING_FLAG:
        return as_flag(name, value)
    if field.kind == _capi.KIND_INT64:
        return as_int(name, value, INT64)
    if field.kind == _capi.KIND_INT32:
        return as_int(name, value, INT32)
    if field.kind == _capi.KIND_FLOAT:
        return as_float32(name, value)
    if field.kind == _capi.KIND_STRING:
        return as_text(name, value).encode()
    raise AssertionError(f"no conversion for field {name} (kind "
                         f"{field.kind}, encoding {field.encoding})")


def _spec_list(name, value):
    """A list of strings (capture_types) as a C array and its length."""
    items = [as_text(f"{name}[{i}]", item).encode()
             for i, item in enumerate(as_sequence(name, value))]
    return (ctypes.c_char_p * max(1, len(items)))(*items), len(items)


def _live(handle, what):
    """The C handle of an object, or a clear error once it has none."""
    if not handle:
        raise ValueError(f"this {what} has been released")
    return handle


REGIONS = ("score_mod", "mask_mod")


def _traced_regions(fields):
    """The spec fields with function mods traced into region text, and the
    tensors the functions read (appended to capture_types)."""
    listed = [as_text(f"capture_types[{i}]", t) for i, t in enumerate(
        as_sequence("capture_types", fields.get("capture_types", ())))]
    score_mod, mask_mod, traced = trace.lower(
        fields.get("score_mod"), fields.get("mask_mod"),
        [None] * len(listed), listed)
    fields = dict(fields, score_mod=score_mod, mask_mod=mask_mod,
                  capture_types=listed + [t for _, _, t in traced])
    return fields, tuple(tensor for _, tensor, _ in traced)


class Variant:
    """A verified attention variant: MLIR text of the attn dialect. Made by
    from_mlir or from_spec. `captures`: the tensors traced mods read (see
    from_spec)."""

    captures = ()

    def __init__(self, handle):
        self._handle = handle

    @classmethod
    def from_mlir(cls, text):
        text = as_text("text", text)
        handle = ctypes.c_void_p()
        check(lib.attnc_variant_from_mlir(text.encode(), ctypes.byref(handle)))
        return cls(handle)

    @classmethod
    def from_spec(cls, **fields):
        """Fields of attnc_variant_spec (attnc_c.h), by name, in Python's
        vocabulary, the one every front end speaks: element types by torch's
        names or dtypes ("bfloat16", torch.float8_e4m3fn), page orders "NHD"
        and "HND", the window as window= (None, keys to the left, or a (left,
        right) pair) for window_left and window_right; other enum fields by the
        library's names ("ragged", "paged") or values. None for "no value"
        where the library's table gives a field one (e.g. kv_dtype None: the
        queries' dtype); capture_types a list of memref type strings (its count
        follows). score_mod and mask_mod are MLIR text or Python functions
        (traced, as attnc.attention's): the tensors functions read follow
        capture_types, and the variant's `captures` lists them, the buffers to
        pass after the listed ones."""
        spelled = [name for name in _WINDOW_FIELDS if name in fields]
        if spelled:
            raise TypeError(f"{' and '.join(spelled)} are the C API's "
                            f"fields: Python's is window= (None, an int of "
                            f"keys to the left, or a (left, right) pair), "
                            f"as attnc.attention takes it")
        unknown = sorted(set(fields) - set(SPEC_FIELDS))
        if unknown:
            raise TypeError(f"unknown variant spec field(s): "
                            f"{', '.join(unknown)} (the fields are "
                            f"{', '.join(SPEC_FIELDS)})")
        fields = dict(fields)
        if "window" in fields:
            left, right = window_extents(fields.pop("window"))
            fields.update(window_left=left, window_right=right)
        captures = ()
        if any(callable(fields.get(name)) for name in REGIONS):
            fields, captures = _traced_regions(fields)
        spec = _capi.VariantSpec()
        lib.attnc_variant_spec_init(ctypes.byref(spec))
        keep = []  # the C strings and array, alive until the call returns
        for name, value in fields.items():
            if _SPEC[name].kind == _capi.KIND_STRINGS:
                value, count = _spec_list(name, value)
                setattr(spec, _COUNTS[name], count)
            else:
                value = _spec_value(name, value)
            keep.append(value)
            setattr(spec, name, value)
        handle = ctypes.c_void_p()
        check(lib.attnc_variant_from_spec(ctypes.byref(spec),
                                          ctypes.byref(handle)))
        variant = cls(handle)
        variant.captures = captures
        return variant

    @property
    def mlir(self):
        text = lib.attnc_variant_mlir(_live(self._handle, "variant"))
        if not text:  # a live variant always has text
            raise _capi.error(_capi.INVALID_ARGUMENT)
        return text.decode()

    def __del__(self):
        if getattr(self, "_handle", None):
            lib.attnc_variant_destroy(self._handle)
            self._handle = None


class TensorInfo:
    """What a kernel expects of one argument or result."""

    _ROLES = {value: name for name, value in _capi.ROLES.items()}
    _DTYPES = {value: name for name, value in _capi.DTYPES.items()}
    _LAYOUTS = {value: name for name, value in _capi.LAYOUTS.items()}

    def __init__(self, spec):
        self.role = self._ROLES[spec.role]
        self.heads = spec.heads
        self.dim = spec.dim
        ir = self._DTYPES[spec.dtype]
        self.dtype = TORCH_NAMES.get(ir, ir)
        self.layout = self._LAYOUTS[spec.layout]
        self.seq_len = spec.seq_len

    def __repr__(self):
        return (f"TensorInfo({self.role}, heads={self.heads}, dim={self.dim},"
                f" {self.dtype}, {self.layout})")


def _optional_text(name, value):
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    return as_text(name, value).encode()


def _addresses(name, values):
    """Device addresses as uint64s: ctypes would wrap a negative one. Plain
    ints in range pass as they are (every decode step comes here)."""
    values = as_sequence(name, values)
    lo, hi = UINT64
    if all(type(v) is int and lo <= v <= hi for v in values):
        return values
    return [as_int(f"{name}[{i}]", v, UINT64) for i, v in enumerate(values)]


class Kernel:
    """A compiled variant. `arch=None` compiles for the current GPU."""

    def __init__(self, variant, arch=None, cache_dir=None):
        if not isinstance(variant, Variant):
            raise TypeError(f"variant must be an attnc.Variant, got "
                            f"{type(variant).__name__}")
        self.variant = variant
        handle = ctypes.c_void_p()
        check(lib.attnc_kernel_compile(
            _live(variant._handle, "variant"), _optional_text("arch", arch),
            _optional_text("cache_dir", cache_dir), ctypes.byref(handle)))
        self._handle = handle
        self.inputs = [self._info(lib.attnc_kernel_input, i)
                       for i in range(lib.attnc_kernel_num_inputs(handle))]
        self.outputs = [self._info(lib.attnc_kernel_output, i)
                        for i in range(lib.attnc_kernel_num_outputs(handle))]

    def _info(self, getter, index):
        spec = _capi.TensorSpec()
        check(getter(self._handle, index, ctypes.byref(spec)))
        return TensorInfo(spec)

    @property
    def cuda_source(self):
        text = lib.attnc_kernel_cuda_source(_live(self._handle, "kernel"))
        if not text:  # a live kernel always has source
            raise _capi.error(_capi.INVALID_ARGUMENT)
        return text.decode()

    @property
    def cubin_size(self):
        return lib.attnc_kernel_cubin_size(_live(self._handle, "kernel"))

    def plan(self, batch, max_query_len, max_kv_len, query_tokens,
             q_indptr=0, kv_indptr=0, page_indices=0, last_page_len=0,
             k_page_stride=0, v_page_stride=0, kv_tokens=0):
        """Index arrays are device addresses of int32 arrays (0: none).
        `kv_tokens` is the keys of all requests: the rows of ragged k and v,
        or the sum of paged requests' lengths (0: unknown; ragged kernels
        that need it read kv_indptr on the device, a synchronization)."""
        values = dict(batch=batch, max_query_len=max_query_len,
                      max_kv_len=max_kv_len, query_tokens=query_tokens,
                      q_indptr=q_indptr, kv_indptr=kv_indptr,
                      page_indices=page_indices, last_page_len=last_page_len,
                      k_page_stride=k_page_stride,
                      v_page_stride=v_page_stride, kv_tokens=kv_tokens)
        bounds = {ctypes.c_int: INT32, ctypes.c_int64: INT64,
                  ctypes.c_uint64: UINT64}
        b = _capi.Batch(**{
            name: as_int(name, values[name], bounds[ctype])
            for name, ctype in _capi.Batch._fields_})
        handle = ctypes.c_void_p()
        check(lib.attnc_plan_create(_live(self._handle, "kernel"),
                                    ctypes.byref(b), ctypes.byref(handle)))
        return Plan(self, handle)

    def run(self, plan, inputs, outputs, stream=0, buffer_sizes=None):
        """Launches on `stream`; inputs and outputs are device addresses.
        buffer_sizes: None, or the sizes of each buffer input in order.
        Neither allocates nor synchronizes."""
        if not isinstance(plan, Plan):
            raise TypeError(f"plan must be an attnc.Plan, got "
                            f"{type(plan).__name__}")
        if plan.kernel is not self:
            raise ValueError("plan was made by another kernel")
        inputs = _addresses("inputs", inputs)
        outputs = _addresses("outputs", outputs)
        stream = as_int("stream", 0 if stream is None else stream, UINT64)
        ins, outs = addresses(*inputs), addresses(*outputs)
        sizes = ranks = None
        if buffer_sizes is not None:
            # The library reads one entry per buffer input: no fewer.
            buffers = sum(info.role == "buffer" for info in self.inputs)
            buffer_sizes = as_sequence("buffer_sizes", buffer_sizes)
            if len(buffer_sizes) != buffers:
                raise ValueError(f"buffer_sizes needs one entry per buffer "
                                 f"input ({buffers}), got "
                                 f"{len(buffer_sizes)}")
            rows = []
            for i, row in enumerate(buffer_sizes):
                row = [as_int(f"buffer_sizes[{i}][{d}]", s, INT64)
                       for d, s in enumerate(
                           as_sequence(f"buffer_sizes[{i}]", row))]
                rows.append(row)
            arrays = [(ctypes.c_int64 * max(1, len(r)))(*r) for r in rows]
            sizes = (ctypes.POINTER(ctypes.c_int64) * max(1, len(rows)))(
                *[ctypes.cast(a, ctypes.POINTER(ctypes.c_int64))
                  for a in arrays])
            ranks = (ctypes.c_int * max(1, len(rows)))(
                *[len(r) for r in rows])
        check(lib.attnc_run(_live(self._handle, "kernel"),
                            _live(plan._handle, "plan"), ins, len(inputs),
                            outs, len(outputs), sizes, ranks,
                            ctypes.c_void_p(stream or None)))

    def __del__(self):
        if getattr(self, "_handle", None):
            lib.attnc_kernel_destroy(self._handle)
            self._handle = None


class Plan:
    """A batch's layout, KV-split choices and scratch memory. Made by
    Kernel.plan."""

    def __init__(self, kernel, handle):
        self.kernel = kernel  # keeps the kernel alive as long as the plan
        self._handle = handle

    def splits(self, launch=0):
        """KV splits of attention launch `launch`."""
        launch = as_int("launch", launch, INT32)
        splits = lib.attnc_plan_num_splits(_live(self._handle, "plan"),
                                           launch)
        if splits == 0:  # every launch has at least one split
            raise _capi.error(_capi.INVALID_ARGUMENT)
        return splits

    def __del__(self):
        if getattr(self, "_handle", None):
            lib.attnc_plan_destroy(self._handle)
            self._handle = None
