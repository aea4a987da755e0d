"""Variants, compiled kernels and batch plans: thin owners of C handles."""

import ctypes

from . import _capi
from ._capi import check, lib


class Variant:
    """A verified attention variant: MLIR text of the attn dialect."""

    def __init__(self, handle):
        self._handle = handle

    @classmethod
    def from_mlir(cls, text):
        handle = ctypes.c_void_p()
        check(lib.attnc_variant_from_mlir(text.encode(), ctypes.byref(handle)))
        return cls(handle)

    @classmethod
    def from_spec(cls, **fields):
        """Fields of attnc_variant_spec (attnc_c.h), by name."""
        spec = _capi.VariantSpec()
        lib.attnc_variant_spec_init(ctypes.byref(spec))
        keep = []
        for name, value in fields.items():
            if name == "capture_types":
                array = (ctypes.c_char_p * max(1, len(value)))(
                    *[t.encode() for t in value])
                keep.append(array)
                spec.capture_types = array
                spec.num_captures = len(value)
            elif isinstance(value, str):
                encoded = value.encode()
                keep.append(encoded)
                setattr(spec, name, encoded)
            else:
                setattr(spec, name, value)
        handle = ctypes.c_void_p()
        check(lib.attnc_variant_from_spec(ctypes.byref(spec),
                                          ctypes.byref(handle)))
        return cls(handle)

    @property
    def mlir(self):
        return lib.attnc_variant_mlir(self._handle).decode()

    def __del__(self):
        if getattr(self, "_handle", None):
            lib.attnc_variant_destroy(self._handle)
            self._handle = None


class TensorInfo:
    """What a kernel expects of one argument or result."""

    ROLES = {0: "query", 1: "kv", 2: "output", 3: "lse", 4: "buffer"}

    def __init__(self, spec):
        self.role = self.ROLES[spec.role]
        self.heads = spec.heads
        self.dim = spec.dim
        self.dtype = {0: "bfloat16", 1: "float16", 2: "float32",
                      3: "int32"}[spec.dtype]
        self.layout = {0: "dense", 1: "ragged", 2: "paged"}[spec.layout]
        self.seq_len = spec.seq_len

    def __repr__(self):
        return (f"TensorInfo({self.role}, heads={self.heads}, dim={self.dim},"
                f" {self.dtype}, {self.layout})")


class Kernel:
    """A compiled variant. `arch=None` compiles for the current GPU."""

    def __init__(self, variant, arch=None, cache_dir=None):
        self.variant = variant
        handle = ctypes.c_void_p()
        check(lib.attnc_kernel_compile(
            variant._handle, arch.encode() if arch else None,
            cache_dir.encode() if cache_dir else None, ctypes.byref(handle)))
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
        return lib.attnc_kernel_cuda_source(self._handle).decode()

    @property
    def cubin_size(self):
        return lib.attnc_kernel_cubin_size(self._handle)

    def plan(self, batch, max_query_len, max_kv_len, query_tokens,
             q_indptr=0, kv_indptr=0, page_indices=0, last_page_len=0,
             k_page_stride=0, v_page_stride=0):
        """Index arrays are device addresses of int32 arrays (0: none)."""
        b = _capi.Batch(batch, max_query_len, max_kv_len, query_tokens,
                        q_indptr, kv_indptr, page_indices, last_page_len,
                        k_page_stride, v_page_stride)
        handle = ctypes.c_void_p()
        check(lib.attnc_plan_create(self._handle, ctypes.byref(b),
                                    ctypes.byref(handle)))
        return Plan(self, handle)

    def run(self, plan, inputs, outputs, stream=0, buffer_sizes=None):
        """Launches on `stream`; inputs and outputs are device addresses.
        Neither allocates nor synchronizes."""
        ins = (ctypes.c_uint64 * max(1, len(inputs)))(*inputs)
        outs = (ctypes.c_uint64 * max(1, len(outputs)))(*outputs)
        sizes = ranks = None
        if buffer_sizes:
            rows = [(ctypes.c_int64 * max(1, len(s)))(*s)
                    for s in buffer_sizes]
            sizes = (ctypes.POINTER(ctypes.c_int64) * len(rows))(
                *[ctypes.cast(r, ctypes.POINTER(ctypes.c_int64))
                  for r in rows])
            ranks = (ctypes.c_int * len(rows))(*[len(s) for s in buffer_sizes])
        check(lib.attnc_run(self._handle, plan._handle, ins, len(inputs), outs,
                            len(outputs), sizes, ranks,
                            ctypes.c_void_p(stream or None)))

    def __del__(self):
        if getattr(self, "_handle", None):
            lib.attnc_kernel_destroy(self._handle)
            self._handle = None


class Plan:
    """A batch's layout, KV-split choices and scratch memory."""

    def __init__(self, kernel, handle):
        self.kernel = kernel  # keeps the kernel alive as long as the plan
        self._handle = handle

    def splits(self, launch=0):
        return lib.attnc_plan_num_splits(self._handle, launch)

    def __del__(self):
        if getattr(self, "_handle", None):
            lib.attnc_plan_destroy(self._handle)
            self._handle = None
