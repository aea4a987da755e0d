"""ctypes bindings of libattnc.so's C API (include/attnc/attnc_c.h).

The names and values of the library's enums, its status codes and its
limits are read from the library, never written down here."""

import atexit
import ctypes
import logging
import os
from pathlib import Path

from .errors import AttncError, InvalidArgumentError

API_VERSION = 20  # attnc_c.h's ATTNC_C_API_VERSION this package speaks

c_void_p, c_int, c_int64, c_char_p = (ctypes.c_void_p, ctypes.c_int,
                                      ctypes.c_int64, ctypes.c_char_p)
ProgressFn = ctypes.CFUNCTYPE(None, c_char_p, c_void_p)  # attnc_progress_fn


class _Field(ctypes.Structure):
    """attnc_field: the one record whose layout is written here, since the
    others are read through it."""
    _fields_ = [("name", c_char_p), ("offset", c_int64), ("size", c_int64),
                ("kind", c_int), ("encoding", c_int), ("enum_type", c_char_p),
                ("counts", c_char_p), ("has_none", c_int), ("none", c_int64)]


class Field:
    """One field of a record as the library describes it (attnc_field):
    name; kind (KIND_*, an index of _KIND_TYPES); encoding (ENCODING_*:
    VALUE, FLAG, ENUM or COUNT); enum_type (ENUM: the enum's C name);
    counts (COUNT: the array field it counts); none (the value that stands
    for "no value", or NO_NONE where there is none)."""

    def __init__(self, field):
        self.name = field.name.decode()
        self.kind, self.encoding = field.kind, field.encoding
        self.enum_type = field.enum_type and field.enum_type.decode()
        self.counts = field.counts and field.counts.decode()
        self.none = field.none if field.has_none else NO_NONE

    def __repr__(self):
        return f"Field({self.name!r}, encoding={self.encoding})"


NO_NONE = object()  # Field.none of a field that has no "no value"


_I32P, _I64P = ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(c_int64)
# attnc_field_kind's values, in order: the ctypes type of each.
_KIND_TYPES = [ctypes.c_int32, c_int64, ctypes.c_uint64, ctypes.c_float,
               ctypes.c_double, c_char_p, ctypes.POINTER(c_char_p), _I32P,
               _I64P]
(KIND_INT32, KIND_INT64, KIND_UINT64, KIND_FLOAT, KIND_DOUBLE, KIND_STRING,
 KIND_STRINGS, KIND_INT32_ARRAY, KIND_INT64_ARRAY) = range(len(_KIND_TYPES))
# attnc_field_encoding's values, in order.
ENCODINGS = (ENCODING_VALUE, ENCODING_FLAG, ENCODING_ENUM,
             ENCODING_COUNT) = range(4)


def _record(lib, record, kind_types=None):
    """The ctypes mirror of attnc_c.h's `record`, built from the library's
    table of its fields (attnc_record_fields); ImportError where ctypes
    would lay it out otherwise than the C compiler did. Its `fields` are
    the table's entries (Field), in order."""
    kind_types = kind_types or _KIND_TYPES
    count, size = c_int(), c_int64()
    fields = lib.attnc_record_fields(record.encode(), ctypes.byref(count),
                                     ctypes.byref(size))
    if not fields:
        raise ImportError(f"attnc: libattnc.so has no record {record}")
    table = [fields[i] for i in range(count.value)]
    for field in table:
        if not 0 <= field.kind < len(kind_types):
            raise ImportError(f"attnc: {record}.{field.name.decode()} has a "
                              f"field kind ({field.kind}) this package does "
                              "not know: rebuild libattnc.so")
        if field.encoding not in ENCODINGS:
            raise ImportError(f"attnc: {record}.{field.name.decode()} has an "
                              f"encoding ({field.encoding}) this package "
                              "does not know: rebuild libattnc.so")
    mirror = type(record, (ctypes.Structure,), {
        "_fields_": [(field.name.decode(), kind_types[field.kind])
                     for field in table],
        "fields": tuple(Field(field) for field in table)})
    for field in table:
        name = field.name.decode()
        laid = getattr(mirror, name)
        if (laid.offset, laid.size) != (field.offset, field.size):
            raise ImportError(
                f"attnc: ctypes lays {record}.{name} out at offset "
                f"{laid.offset}, {laid.size} bytes; libattnc.so at "
                f"{field.offset}, {field.size}")
    if ctypes.sizeof(mirror) != size.value:
        raise ImportError(f"attnc: ctypes makes {record} {ctypes.sizeof(mirror)}"
                          f" bytes, libattnc.so {size.value}")
    return mirror


def _candidates():
    env = os.environ.get("ATTNC_LIBRARY")
    if env:
        yield Path(env)
        return
    here = Path(__file__).resolve().parent
    yield here / "libattnc.so"                     # installed with pip
    yield here.parent.parent / "build" / "lib" / "libattnc.so"  # build tree


def _load():
    tried = []
    for path in _candidates():
        tried.append(str(path))
        if path.is_file():
            lib = ctypes.CDLL(str(path))
            lib.attnc_api_version.restype = c_int
            version = lib.attnc_api_version()
            if version != API_VERSION:
                raise ImportError(
                    f"attnc: {path} speaks C API version {version}, this "
                    f"package version {API_VERSION}: rebuild libattnc.so")
            lib.attnc_record_fields.restype = ctypes.POINTER(_Field)
            lib.attnc_record_fields.argtypes = [
                c_char_p, ctypes.POINTER(c_int), ctypes.POINTER(c_int64)]
            lib.attnc_record_name.restype = c_char_p
            lib.attnc_record_name.argtypes = [c_int]
            return lib
    raise ImportError(
        "attnc: libattnc.so not found (tried " + ", ".join(tried) +
        "); build it with scripts/bootstrap.sh or set ATTNC_LIBRARY")


def _declare(lib):
    P = ctypes.POINTER
    sigs = {
        "attnc_last_error": (c_char_p, []),
        "attnc_version": (c_char_p, []),
        "attnc_status_name": (c_char_p, [c_int]),
        "attnc_dtype_name": (c_char_p, [c_int]),
        "attnc_layout_name": (c_char_p, [c_int]),
        "attnc_page_order_name": (c_char_p, [c_int]),
        "attnc_role_name": (c_char_p, [c_int]),
        "attnc_kv_scales_name": (c_char_p, [c_int]),
        "attnc_get_limits": (P(Limits), []),
        "attnc_variant_spec_init": (None, [P(VariantSpec)]),
        "attnc_variant_from_mlir": (c_int, [c_char_p, P(c_void_p)]),
        "attnc_variant_from_spec": (c_int, [P(VariantSpec), P(c_void_p)]),
        "attnc_variant_mlir": (c_char_p, [c_void_p]),
        "attnc_variant_destroy": (c_int, [c_void_p]),
        "attnc_kernel_compile": (c_int, [c_void_p, c_char_p, c_char_p,
                                         P(c_void_p)]),
        "attnc_set_compile_progress": (None, [ProgressFn, c_void_p]),
        "attnc_kernel_destroy": (c_int, [c_void_p]),
        "attnc_kernel_num_inputs": (c_int, [c_void_p]),
        "attnc_kernel_num_outputs": (c_int, [c_void_p]),
        "attnc_kernel_input": (c_int, [c_void_p, c_int, P(TensorSpec)]),
        "attnc_kernel_output": (c_int, [c_void_p, c_int, P(TensorSpec)]),
        "attnc_kernel_cuda_source": (c_char_p, [c_void_p]),
        "attnc_kernel_cubin_size": (ctypes.c_size_t, [c_void_p]),
        "attnc_plan_create": (c_int, [c_void_p, P(Batch), P(c_void_p)]),
        "attnc_plan_destroy": (c_int, [c_void_p]),
        "attnc_plan_num_splits": (c_int, [c_void_p, c_int]),
        "attnc_run": (c_int, [c_void_p, c_void_p, P(ctypes.c_uint64), c_int,
                              P(ctypes.c_uint64), c_int,
                              P(P(ctypes.c_int64)), P(c_int), c_void_p]),
        # The serving runtime (version 6).
        "attnc_kv_pool_config_init": (None, [P(KVPoolConfig)]),
        "attnc_kv_memory_name": (c_char_p, [c_int]),
        "attnc_kv_pool_create": (c_int, [P(KVPoolConfig), P(c_void_p)]),
        "attnc_kv_pool_destroy": (c_int, [c_void_p]),
        "attnc_kv_pool_num_pages": (c_int64, [c_void_p]),
        "attnc_kv_pool_page_size": (c_int64, [c_void_p]),
        "attnc_kv_pool_num_free_pages": (c_int64, [c_void_p]),
        "attnc_kv_pool_key_cache": (ctypes.c_uint64, [c_void_p]),
        "attnc_kv_pool_value_cache": (ctypes.c_uint64, [c_void_p]),
        "attnc_kv_pool_append_slots": (c_int, [
            c_void_p, ctypes.c_uint64, ctypes.c_uint64, c_int64, c_int64,
            ctypes.c_uint64, c_int64, c_void_p]),
        # Layers, page copies and the pool's stream (version 12).
        "attnc_kv_pool_num_layers": (c_int64, [c_void_p]),
        "attnc_kv_pool_layer_caches": (c_int, [
            c_void_p, c_int64, P(ctypes.c_uint64), P(ctypes.c_uint64)]),
        "attnc_kv_pool_set_stream": (c_int, [c_void_p, c_void_p]),
        "attnc_kv_pool_append_layer_slots": (c_int, [
            c_void_p, c_int64, ctypes.c_uint64, ctypes.c_uint64, c_int64,
            c_int64, ctypes.c_uint64, c_int64, c_void_p]),
        "attnc_kv_pool_copy_pages": (c_int, [c_void_p, _I32P, c_int64,
                                             c_void_p]),
        "attnc_radix_cache_create": (c_int, [c_void_p, P(c_void_p)]),
        "attnc_radix_cache_destroy": (c_int, [c_void_p]),
        "attnc_radix_cache_cached_tokens": (c_int64, [c_void_p]),
        "attnc_radix_cache_evictable_tokens": (c_int64, [c_void_p]),
        "attnc_radix_cache_match_prefix": (c_int, [
            c_void_p, _I32P, c_int64, ctypes.c_uint64, P(c_int64), _I32P,
            P(c_int64)]),
        "attnc_radix_cache_evict": (c_int, [c_void_p, c_int64, P(c_int64)]),
        # A host tier (version 14).
        "attnc_radix_cache_create_with_host_tier": (c_int, [
            c_void_p, c_int64, P(c_void_p)]),
        "attnc_radix_cache_host_tokens": (c_int64, [c_void_p]),
        # Its transfers, for a cache no scheduler serves (version 19).
        "attnc_radix_cache_take_transfers": (c_int, [
            c_void_p, _I32P, P(c_int64)]),
        "attnc_scheduler_config_init": (None, [P(SchedulerConfig)]),
        "attnc_request_init": (None, [P(Request)]),
        "attnc_policy_name": (c_char_p, [c_int]),
        "attnc_scheduler_create": (c_int, [P(SchedulerConfig), c_void_p,
                                           c_void_p, P(c_void_p)]),
        "attnc_scheduler_destroy": (c_int, [c_void_p]),
        "attnc_scheduler_add": (c_int, [c_void_p, P(Request)]),
        "attnc_scheduler_step": (c_int, [c_void_p, P(c_void_p)]),
        "attnc_step_get_info": (c_int, [c_void_p, P(StepInfo)]),
        "attnc_step_destroy": (c_int, [c_void_p]),
        "attnc_scheduler_commit": (c_int, [c_void_p, P(Sample), c_int64,
                                           _I64P, P(c_int64)]),
        # Samples as arrays (version 13): addresses, 0 for NULL.
        "attnc_scheduler_commit_arrays": (c_int, [
            c_void_p, c_int64, c_void_p, c_void_p, c_void_p, c_void_p,
            c_void_p, P(c_int64)]),
        # Speculative decoding (version 16): verdicts and drafts.
        "attnc_scheduler_commit_verdict_arrays": (c_int, [
            c_void_p, c_int64, c_void_p, c_void_p, c_void_p, c_void_p,
            c_void_p, c_void_p, P(c_int64)]),
        "attnc_scheduler_propose": (c_int, [
            c_void_p, c_int64, ctypes.c_int32, c_void_p, c_int64]),
        "attnc_scheduler_abort": (c_int, [c_void_p, c_int64]),
        "attnc_scheduler_idle": (c_int, [c_void_p]),
        "attnc_scheduler_get_stats": (c_int, [c_void_p, P(SchedulerStats)]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


lib = _load()
VariantSpec = _record(lib, "attnc_variant_spec")
TensorSpec = _record(lib, "attnc_tensor_spec")
Batch = _record(lib, "attnc_batch")
Limits = _record(lib, "attnc_limits")
KVPoolConfig = _record(lib, "attnc_kv_pool_config")
SchedulerConfig = _record(lib, "attnc_scheduler_config")
Request = _record(lib, "attnc_request")
Sample = _record(lib, "attnc_sample")
StepInfo = _record(lib, "attnc_step_info")
SchedulerStats = _record(lib, "attnc_scheduler_stats")
_declare(lib)


# What a compile that misses the kernel caches is doing ("compiling ... with
# NVRTC", "compiled ... in N ms": a second or more), as INFO records of the
# "attnc" logger. Kept here for as long as the library may call it.
@ProgressFn
def _compile_progress(line, _user):
    logging.getLogger("attnc").info("%s", line.decode(errors="replace"))


lib.attnc_set_compile_progress(_compile_progress, None)
# Before the interpreter tears down this module (and the callback with it).
atexit.register(lib.attnc_set_compile_progress, ProgressFn(), None)


def _names(name_of):
    """{name: value} of an enum whose values run from 0 up, named by the
    library ("" past the last)."""
    names = {}
    while True:
        value = len(names)
        name = name_of(value).decode()
        if not name:
            return names
        names[name] = value


def enum_names(enum_type):
    """{name: value} of the C enum `enum_type` ("attnc_dtype"), named by the
    library's <enum_type>_name function (what a Field's enum_type names)."""
    name_of = getattr(lib, enum_type + "_name")
    name_of.restype, name_of.argtypes = c_char_p, [c_int]
    return _names(name_of)


DTYPES = enum_names("attnc_dtype")            # {"bf16": ..., "f16": ...}
LAYOUTS = enum_names("attnc_layout")          # {"dense": ..., ...}
PAGE_ORDERS = enum_names("attnc_page_order")  # {"nhd": ..., "hnd": ...}
ROLES = enum_names("attnc_role")              # {"query": ..., ...}
KV_SCALES = enum_names("attnc_kv_scales")     # {"none": ..., ...}
KV_MEMORY = enum_names("attnc_kv_memory")     # {"host": ..., ...}
POLICIES = enum_names("attnc_policy")         # {"fcfs": ..., ...}
_limits = lib.attnc_get_limits().contents
LIMITS = {name: getattr(_limits, name) for name, _ in Limits._fields_}


def _status_codes():
    # Codes run from 0 ("ok") up; the library names the ones past the last
    # "unknown error".
    codes, code = {}, 0
    while True:
        name = lib.attnc_status_name(code).decode()
        if name == "unknown error" or code > 255:
            return codes
        codes[name] = code
        code += 1


STATUS = _status_codes()
OK = STATUS["ok"]
INVALID_ARGUMENT = STATUS["invalid argument"]
NOT_FOUND = STATUS["not found"]


def library_version():
    """libattnc.so's version: the CLI's, from CMakeLists.txt."""
    return lib.attnc_version().decode()


def last_error():
    return lib.attnc_last_error().decode(errors="replace")


def error(status):
    """The exception for a failed C call's status."""
    kind = lib.attnc_status_name(status).decode()
    cls = InvalidArgumentError if status == INVALID_ARGUMENT else AttncError
    return cls(status, kind, last_error())


def check(status):
    """Raises AttncError for a failed C call."""
    if status != OK:
        raise error(status)
