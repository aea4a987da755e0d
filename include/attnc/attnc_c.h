/*===- attnc_c.h - the C API of libattnc.so ------------------------------===*\
|*                                                                            *|
|* Opaque handles over the C++ API (attnc.h): a variant from MLIR text or a   *|
|* spec, a kernel compiled from it, a plan per batch, and a launch. Every     *|
|* function returns a status code; attnc_last_error() gives the message of    *|
|* the calling thread's last failure. Nothing aborts.                         *|
|*                                                                            *|
|* Handles are checked on every call: a null, destroyed or foreign handle     *|
|* (one attnc did not return, or of another type) is ATTNC_INVALID_ARGUMENT   *|
|* ("... is not a live attnc_kernel"), never a crash; handle values are       *|
|* never reused, so a stale handle stays detectable. Functions that return a  *|
|* string or a number return "" or 0 for such a handle and set                *|
|* attnc_last_error. Destroying NULL does nothing, like free(NULL). A         *|
|* handle may be used from several threads; destroying it while another       *|
|* thread is inside a call with it frees the object when that call ends.      *|
|*                                                                            *|
|* What C cannot show is the caller's to get right: strings must be           *|
|* NUL-terminated, arrays must hold as many entries as their counts say,      *|
|* and device pointers must point at tensors of the shapes the kernel's       *|
|* inputs describe.                                                           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef ATTNC_ATTNC_C_H
#define ATTNC_ATTNC_C_H

#include <stddef.h>
#include <stdint.h>

#include "attnc_variant_fields.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 3: destroy functions return a status; attnc_role_name. 5: fp8 caches
 * (ATTNC_F8E4M3, ATTNC_F8E5M2, kv_dtype and kv_scales in the spec).
 * 6: the serving runtime: attnc_kv_pool, attnc_radix_cache,
 * attnc_scheduler and attnc_step (the second half of this file).
 * 7: multi-head latent attention (rope_dim in the spec).
 * 8: value_head_dim in the spec (values of another head dim).
 * 9: attnc_set_compile_progress.
 * 10: attnc_record_fields and attnc_record_name (records' layouts).
 * 11: attnc_field's encoding (flags, enums, sentinels, counts).
 * 12: a pool's layers (num_layers, attnc_kv_pool_layer_caches,
 * attnc_kv_pool_append_layer_slots), its page copies
 * (attnc_kv_pool_copy_pages) and stream (attnc_kv_pool_set_stream), and
 * a step's page copies (num_page_copies, page_copies).
 * 13: clip_max_new_tokens and dfs_weight_window in the scheduler config,
 * a step's token_from_sample, attnc_scheduler_commit_arrays.
 * 14: a radix cache's host tier (attnc_radix_cache_create_with_host_tier,
 * attnc_radix_cache_host_tokens), a step's page transfers
 * (num_page_transfers, page_transfers), the scheduler's
 * host_loaded_tokens.
 * 15: segments in the spec (document ids).
 * 16: speculative decoding: speculative_tokens in the scheduler config,
 * attnc_scheduler_propose, a step's num_drafts, a sample's rejected,
 * attnc_scheduler_commit_verdict_arrays.
 * 17: shared_keys in the spec (cascade attention's shared levels).
 * 18: cascade attention: cascade, cascade_min_sharers and
 * cascade_min_shared_tokens in the scheduler config, a step's cascade
 * levels (num_cascade_levels and the cascade_* arrays).
 * 19: attnc_radix_cache_take_transfers (a host tier's transfers for a
 * cache no scheduler serves).
 * 20: attnc_version (the library's version string). */
#define ATTNC_C_API_VERSION 20

typedef enum attnc_status {
  ATTNC_OK = 0,
  ATTNC_INVALID_ARGUMENT = 1,
  ATTNC_OUT_OF_MEMORY = 2,
  ATTNC_NOT_FOUND = 3,
  ATTNC_UNSUPPORTED = 4,
  ATTNC_PARSE_ERROR = 5,
  ATTNC_INTERNAL = 6,
  ATTNC_NO_DEVICE = 7,
  ATTNC_CUDA_ERROR = 8,
  ATTNC_COMPILE_ERROR = 9,
} attnc_status;

/* The values of attnc/device/abi.h's enums (checked where the API is
 * built); attnc_dtype_name and friends give their names. */
typedef enum attnc_dtype {
  ATTNC_BF16 = 0,
  ATTNC_F16 = 1,
  ATTNC_F32 = 2,
  ATTNC_I32 = 3,
  ATTNC_I64 = 4,
  ATTNC_F8E4M3 = 5, /* fp8 KV caches */
  ATTNC_F8E5M2 = 6
} attnc_dtype;
typedef enum attnc_layout {
  ATTNC_DENSE = 0,
  ATTNC_RAGGED = 1,
  ATTNC_PAGED = 2
} attnc_layout;
typedef enum attnc_page_order { ATTNC_NHD = 0, ATTNC_HND = 1 } attnc_page_order;
/* An fp8 cache's dequantization scales, for K and for V each. */
typedef enum attnc_kv_scales {
  ATTNC_KV_SCALES_NONE = 0,
  ATTNC_KV_SCALES_PER_TENSOR = 1, /* one f32 */
  ATTNC_KV_SCALES_PER_HEAD = 2    /* one f32 per KV head */
} attnc_kv_scales;
typedef enum attnc_role {
  ATTNC_ROLE_QUERY = 0,
  ATTNC_ROLE_KV = 1,
  ATTNC_ROLE_OUTPUT = 2,
  ATTNC_ROLE_LSE = 3,
  ATTNC_ROLE_BUFFER = 4,
} attnc_role;

/* Each record (struct) of this header is declared once, as the list of its
 * fields, ATTNC_<RECORD>_FIELDS(FIELD) with FIELD(type, name): the list
 * defines the struct here and the table attnc_record_fields returns, from
 * which bindings (Python's ctypes) build their mirrors and check their
 * sizes and offsets. Nothing else spells a record's fields (the variant
 * spec's list is itself generated, with the C++ struct, from
 * attnc_variant_fields.h). */
#define ATTNC_DECLARE_FIELD(type, name) type name;
#define ATTNC_RECORD(record, fields)                                           \
  typedef struct record {                                                      \
    fields(ATTNC_DECLARE_FIELD)                                                \
  } record;

/* What a field holds, for bindings: the C types are those the
 * ATTNC_<RECORD>_FIELDS lists name (enums are int). */
typedef enum attnc_field_kind {
  ATTNC_FIELD_INT32 = 0,       /* int, int32_t, an enum */
  ATTNC_FIELD_INT64 = 1,       /* int64_t */
  ATTNC_FIELD_UINT64 = 2,      /* uint64_t (device addresses, namespaces) */
  ATTNC_FIELD_FLOAT = 3,       /* float */
  ATTNC_FIELD_DOUBLE = 4,      /* double */
  ATTNC_FIELD_STRING = 5,      /* const char *, NUL-terminated */
  ATTNC_FIELD_STRINGS = 6,     /* const char *const * */
  ATTNC_FIELD_INT32_ARRAY = 7, /* const int32_t * */
  ATTNC_FIELD_INT64_ARRAY = 8  /* const int64_t * */
} attnc_field_kind;

/* What a field's value means to attnc beyond its C type, for bindings that
 * convert their own values into it (a name into an enumerator, "no value"
 * into its sentinel, a list's length into its count). */
typedef enum attnc_field_encoding {
  ATTNC_ENCODING_VALUE = 0, /* the number or string itself */
  ATTNC_ENCODING_FLAG = 1,  /* 0 or 1 */
  /* An enumerator of the enum enum_type ("attnc_dtype"), whose names the
   * function <enum_type>_name gives (attnc_dtype_name). */
  ATTNC_ENCODING_ENUM = 2,
  ATTNC_ENCODING_COUNT = 3 /* the number of entries of the field `counts` */
} attnc_field_encoding;

typedef struct attnc_field {
  const char *name;
  int64_t offset, size; /* bytes */
  attnc_field_kind kind;
  /* Since version 11. The variant spec's encodings come from its list
   * (attnc_variant_fields.h); other records' fields are ENUM where their C
   * type is an enum and VALUE otherwise. */
  attnc_field_encoding encoding;
  const char *enum_type; /* ENUM: the enum's C name; NULL otherwise */
  const char *counts;    /* COUNT: the array field it counts; NULL otherwise */
  /* 1 where the value `none` (converted to the field's type, NULL for a
   * string) stands for "no value": kv_dtype -1, scale 0, score_mod NULL. */
  int has_none;
  int64_t none;
} attnc_field;

typedef struct attnc_variant_st *attnc_variant;
typedef struct attnc_kernel_st *attnc_kernel;
typedef struct attnc_plan_st *attnc_plan;

/* Mirrors attnc::VariantSpec: both are generated from one list,
 * ATTNC_VARIANT_SPEC in attnc_variant_fields.h, where each field's meaning,
 * sentinels and default are. attnc_variant_spec_init fills the defaults.
 * attnc_variant_from_spec checks the encoding (flags 0 or 1, the sentinels,
 * known enumerators, the capture array); the attn dialect's verifier checks
 * the values, and its message is attnc_last_error. */
#define ATTNC_VARIANT_SPEC_FIELDS(FIELD)                                       \
  ATTNC_VARIANT_SPEC(ATTNC_VARIANT_C, FIELD)
ATTNC_RECORD(attnc_variant_spec, ATTNC_VARIANT_SPEC_FIELDS)

#define ATTNC_TENSOR_SPEC_FIELDS(FIELD)                                        \
  FIELD(attnc_role, role)                                                      \
  FIELD(int64_t, heads)                                                        \
  FIELD(int64_t, dim)                                                          \
  FIELD(attnc_dtype, dtype)                                                    \
  FIELD(attnc_layout, layout)                                                  \
  FIELD(int64_t, seq_len) /* per request; -1 when any */
ATTNC_RECORD(attnc_tensor_spec, ATTNC_TENSOR_SPEC_FIELDS)

/* Mirrors attnc::Batch: index arrays are int32 device pointers, which
 * attnc cannot check; counts and lengths must be non-negative, page
 * strides 0 (packed pages) or positive. */
#define ATTNC_BATCH_FIELDS(FIELD)                                              \
  FIELD(int, batch)                                                            \
  FIELD(int, max_query_len)                                                    \
  FIELD(int, max_kv_len)                                                       \
  FIELD(int64_t, query_tokens)                                                 \
  FIELD(uint64_t, q_indptr)                                                    \
  FIELD(uint64_t, kv_indptr)                                                   \
  FIELD(uint64_t, page_indices)                                                \
  FIELD(uint64_t, last_page_len)                                               \
  FIELD(int64_t, k_page_stride)                                                \
  FIELD(int64_t, v_page_stride)                                                \
  /* Keys of all requests: rows of ragged k and v (the last kv_indptr), or     \
   * the sum of the paged requests' lengths; 0: unknown, and a kernel that     \
   * needs it reads it from the device when planning (a synchronous copy).     \
   * Decode splits a ragged batch's long requests further when given. */       \
  FIELD(int64_t, kv_tokens)
ATTNC_RECORD(attnc_batch, ATTNC_BATCH_FIELDS)

/* What a kernel can hold (attnc/device/abi.h's limits). */
#define ATTNC_LIMITS_FIELDS(FIELD)                                             \
  FIELD(int64_t, max_seq_len)  /* tokens per request, window extents, sinks */ \
  FIELD(int64_t, max_heads)    /* query or KV heads */                         \
  FIELD(int64_t, max_head_dim) /* elements per head the IR accepts */          \
  FIELD(int64_t, min_page_size)                                                \
  FIELD(int64_t, max_page_size)                                                \
  FIELD(int64_t, max_kv_splits)                                                \
  FIELD(int64_t, max_merge_states)                                             \
  FIELD(int64_t, max_captures)                                                 \
  FIELD(int64_t, max_capture_rank)
ATTNC_RECORD(attnc_limits, ATTNC_LIMITS_FIELDS)

const char *attnc_last_error(void);
/* The names of the enums' values ("bf16", "paged", "hnd"); "" for a value
 * that names nothing. */
const char *attnc_dtype_name(int dtype);
const char *attnc_layout_name(int layout);
const char *attnc_page_order_name(int order);
const char *attnc_role_name(int role);        /* "query", "kv", "output", ... */
const char *attnc_kv_scales_name(int scales); /* "none", "tensor", "head" */
const attnc_limits *attnc_get_limits(void);
const char *attnc_status_name(attnc_status status);
int attnc_api_version(void);
/* The library's version ("0.6.0"): the CLI's and the Python package's,
 * from CMakeLists.txt's project(attnc VERSION ...) (version 20). */
const char *attnc_version(void);
/* The fields of the record named `record` ("attnc_variant_spec", ...), in
 * order; *num_fields gets their count and *size (may be NULL) the record's
 * size in bytes. NULL, with *num_fields 0, for a name that is no record.
 * attnc_record_name(i) names the records, "" past the last. */
const attnc_field *attnc_record_fields(const char *record, int *num_fields,
                                       int64_t *size);
const char *attnc_record_name(int index);

void attnc_variant_spec_init(attnc_variant_spec *spec);
attnc_status attnc_variant_from_mlir(const char *text, attnc_variant *out);
attnc_status attnc_variant_from_spec(const attnc_variant_spec *spec,
                                     attnc_variant *out);
/* The variant's MLIR text, valid until the variant is destroyed. */
const char *attnc_variant_mlir(attnc_variant variant);
attnc_status attnc_variant_destroy(attnc_variant variant);

/* arch NULL or "": the current GPU's. cache_dir NULL or "": the default
 * cache; "-": none. */
attnc_status attnc_kernel_compile(attnc_variant variant, const char *arch,
                                  const char *cache_dir, attnc_kernel *out);
/* Called with a line of text (no newline) saying what a compile that misses
 * the kernel caches is doing ("compiling ... with NVRTC", "compiled ... in
 * N ms"): NVRTC takes a second or more there. Called on the compiling
 * thread, possibly from several threads at once, with `user` passed back;
 * `line` lives for the call only. Process-wide, for the compiles that start
 * after the call: those already running keep the handler they started
 * with, so `user` must outlive them. NULL (the default) makes none. A
 * handler must not wait for a compile of the same variant, whose thread may
 * be the one calling it. */
typedef void (*attnc_progress_fn)(const char *line, void *user);
void attnc_set_compile_progress(attnc_progress_fn fn, void *user);
/* A kernel's plans keep what they need of it: it may be destroyed first. */
attnc_status attnc_kernel_destroy(attnc_kernel kernel);
int attnc_kernel_num_inputs(attnc_kernel kernel);
int attnc_kernel_num_outputs(attnc_kernel kernel);
attnc_status attnc_kernel_input(attnc_kernel kernel, int index,
                                attnc_tensor_spec *out);
attnc_status attnc_kernel_output(attnc_kernel kernel, int index,
                                 attnc_tensor_spec *out);
const char *attnc_kernel_cuda_source(attnc_kernel kernel);
size_t attnc_kernel_cubin_size(attnc_kernel kernel);

/* Allocates the plan's scratch memory (split-KV partial states, the
 * counters of split merges and of persistent prefill's item claims) and
 * synchronizes: make it once per batch shape and reuse it for every layer.
 * A plan serves one launch at a time: runs on several streams at once take
 * a plan each. */
attnc_status attnc_plan_create(attnc_kernel kernel, const attnc_batch *batch,
                               attnc_plan *out);
attnc_status attnc_plan_destroy(attnc_plan plan);
/* KV splits of attention launch `launch`; 0 if there is no such launch. */
int attnc_plan_num_splits(attnc_plan plan, int launch);

/* buffer_sizes and buffer_ranks: both NULL when every buffer has a static
 * shape, else one entry for each buffer input (role BUFFER) in order:
 * buffer_sizes[i] holds buffer_ranks[i] sizes (rank 0: the static shape).
 * num_inputs and num_outputs must be the kernel's counts
 * (attnc_kernel_num_inputs/outputs), checked before either array is read.
 * No allocation, no synchronization. */
attnc_status attnc_run(attnc_kernel kernel, attnc_plan plan,
                       const uint64_t *inputs, int num_inputs,
                       const uint64_t *outputs, int num_outputs,
                       const int64_t *const *buffer_sizes,
                       const int *buffer_ranks, void *stream);

/*===----------------------------------------------------------------------===*\
|* The serving runtime (version 6)                                            *|
|*                                                                            *|
|* A paged KV pool (pages of keys and values in the layout the kernels read), *|
|* a radix prefix cache over it, and a cache-aware scheduler that forms each  *|
|* forward pass: attnc_scheduler_step returns the step's attention inputs     *|
|* (an attnc_step), the engine runs its model on them, and                    *|
|* attnc_scheduler_commit takes the tokens it sampled.                        *|
|*                                                                            *|
|* Lifetimes: a radix cache keeps its pool alive, and a scheduler its cache   *|
|* and pool, so handles may be destroyed in any order; a pool's memory is     *|
|* freed when its handle and every cache and scheduler over it are gone.      *|
|* (Destroying a pool's handle first makes the handle dead at once, the pool  *|
|* stays for the objects that use it.) A step is a copy of the step's arrays, *|
|* independent of the scheduler; its pointers are valid until it is           *|
|* destroyed. A cache serves at most one live scheduler at a time.            *|
|*                                                                            *|
|* Calls on a pool, its caches and its schedulers are serialized by one lock  *|
|* per pool, so they may come from several threads.                           *|
\*===----------------------------------------------------------------------===*/

typedef struct attnc_kv_pool_st *attnc_kv_pool;
typedef struct attnc_radix_cache_st *attnc_radix_cache;
typedef struct attnc_scheduler_st *attnc_scheduler;
typedef struct attnc_step_st *attnc_step;

/* Where a pool's pages live; attnc_kv_memory_name gives the names ("host",
 * "device", "accounting"). */
typedef enum attnc_kv_memory {
  ATTNC_KV_HOST = 0,      /* host memory: tests and CPU-side tools */
  ATTNC_KV_DEVICE = 1,    /* one device allocation; needs a GPU and NVRTC */
  ATTNC_KV_ACCOUNTING = 2 /* no K/V storage, only the page accounting */
} attnc_kv_memory;

/* attnc_kv_pool_config_init fills the defaults; num_pages must be set. */
#define ATTNC_KV_POOL_CONFIG_FIELDS(FIELD)                                     \
  FIELD(int64_t, num_pages) /* 1 .. 2^31-1 */                                  \
  /* Tokens a page: attnc_limits' min/max_page_size. */                        \
  FIELD(int64_t, page_size)                                                    \
  FIELD(int64_t, num_kv_heads) /* 1 .. max_heads */                            \
  FIELD(int64_t, head_dim)     /* 1 .. max_head_dim */                         \
  FIELD(attnc_dtype, dtype)    /* BF16, F16, F32, F8E4M3 or F8E5M2 */          \
  /* NHD: [pages, page, heads, dim]; HND */                                    \
  FIELD(attnc_page_order, page_order)                                          \
  FIELD(attnc_kv_memory, memory)                                               \
  /* A device pool's compiled kernels: NULL or "": the default cache; "-":     \
   * none. */                                                                  \
  FIELD(const char *, cache_dir)                                               \
  /* The model's layers, 1 .. 65535 (version 12): each has a key and a value   \
   * cache over the same pages; a copy of a page copies it in every layer. */  \
  FIELD(int64_t, num_layers)
ATTNC_RECORD(attnc_kv_pool_config, ATTNC_KV_POOL_CONFIG_FIELDS)

void attnc_kv_pool_config_init(attnc_kv_pool_config *config);
const char *attnc_kv_memory_name(int memory);
attnc_status attnc_kv_pool_create(const attnc_kv_pool_config *config,
                                  attnc_kv_pool *out);
attnc_status attnc_kv_pool_destroy(attnc_kv_pool pool);
/* 0 for a bad handle, with attnc_last_error set. */
int64_t attnc_kv_pool_num_pages(attnc_kv_pool pool);
int64_t attnc_kv_pool_page_size(attnc_kv_pool pool);
int64_t attnc_kv_pool_num_free_pages(attnc_kv_pool pool);
int64_t attnc_kv_pool_num_layers(attnc_kv_pool pool);
/* Addresses of layer 0's key and value caches, each [num_pages, page_size,
 * num_kv_heads, head_dim] (NHD) or [num_pages, num_kv_heads, page_size,
 * head_dim] (HND): device addresses for a device pool, host addresses for
 * a host pool; 0 for an accounting pool or a bad handle. */
uint64_t attnc_kv_pool_key_cache(attnc_kv_pool pool);
uint64_t attnc_kv_pool_value_cache(attnc_kv_pool pool);
/* Layer `layer`'s caches, as attnc_kv_pool_key_cache describes them (0 for
 * an accounting pool); ATTNC_INVALID_ARGUMENT for a layer outside [0,
 * num_layers). Either pointer may be NULL. */
attnc_status attnc_kv_pool_layer_caches(attnc_kv_pool pool, int64_t layer,
                                        uint64_t *key_cache,
                                        uint64_t *value_cache);
/* The stream a device pool launches its own copies on: the copies of a
 * scheduler's commit (a fork's copy-on-write), in every layer, never
 * synchronized. NULL (the default) is the legacy default stream. Give it
 * the engine's stream, so that a copy follows the writes of the page it
 * reads and precedes the next step's writes. A host pool ignores it. */
attnc_status attnc_kv_pool_set_stream(attnc_kv_pool pool, void *stream);
/* Writes `tokens` rows of keys and values to the int64 `slots` (a step's
 * slot_mapping; a negative slot is skipped): token t's head h is at element
 * t * key_stride + h * head_dim of `keys` (value_stride and `values`
 * alike). Device addresses on `stream` for a device pool, which neither
 * synchronizes nor writes a slot past the pool; host addresses for a host
 * pool, which refuses such a slot before writing anything. A device pool's
 * addresses and strides must be aligned to its row chunk (16 bytes for rows
 * of a multiple of 16 bytes). An accounting pool refuses. `tokens` is at
 * most 2^31-1 (a step's rows are int32), checked before `slots` is read. */
attnc_status attnc_kv_pool_append_slots(attnc_kv_pool pool, uint64_t keys,
                                        uint64_t values, int64_t key_stride,
                                        int64_t value_stride, uint64_t slots,
                                        int64_t tokens, void *stream);
/* attnc_kv_pool_append_slots into layer `layer`'s caches (the former
 * writes layer 0's); ATTNC_INVALID_ARGUMENT for a layer outside [0,
 * num_layers), before anything is read. */
attnc_status attnc_kv_pool_append_layer_slots(attnc_kv_pool pool, int64_t layer,
                                              uint64_t keys, uint64_t values,
                                              int64_t key_stride,
                                              int64_t value_stride,
                                              uint64_t slots, int64_t tokens,
                                              void *stream);
/* Copies, in order and in every layer, page copies[2i] over page
 * copies[2i+1] for i < num_copies: a step's page_copies. A host pool
 * copies at once, a device pool on `stream` without synchronizing, an
 * accounting pool not at all. ATTNC_INVALID_ARGUMENT for a page outside the
 * pool, before anything is copied; num_copies is checked before `copies`
 * is read. */
attnc_status attnc_kv_pool_copy_pages(attnc_kv_pool pool, const int32_t *copies,
                                      int64_t num_copies, void *stream);

attnc_status attnc_radix_cache_create(attnc_kv_pool pool,
                                      attnc_radix_cache *out);
/* Version 14. A cache with a host tier of `host_pages` pages (1 ..
 * 2^31-1) of the pool's geometry under it (serving/kv/HostTier.h):
 * eviction moves the pages it takes there, and a scheduler's admission
 * loads them back instead of computing them; both are a step's
 * page_transfers. The tier keeps host memory for a host pool, pinned host
 * memory for a device pool (copying on its stream), accounting only for an
 * accounting pool. ATTNC_OUT_OF_MEMORY when the host cannot hold them. */
attnc_status attnc_radix_cache_create_with_host_tier(attnc_kv_pool pool,
                                                     int64_t host_pages,
                                                     attnc_radix_cache *out);
attnc_status attnc_radix_cache_destroy(attnc_radix_cache cache);
/* Tokens the cache holds, and those of them no request has locked (what
 * eviction may free); 0 for a bad handle. */
int64_t attnc_radix_cache_cached_tokens(attnc_radix_cache cache);
int64_t attnc_radix_cache_evictable_tokens(attnc_radix_cache cache);
/* Version 14. Tokens the cache keeps in its host tier (0 without one, or
 * for a bad handle); attnc_radix_cache_cached_tokens counts the device. */
int64_t attnc_radix_cache_host_tokens(attnc_radix_cache cache);
/* The longest cached prefix of tokens[0 .. num_tokens) in whole pages,
 * within `cache_namespace`: *matched_tokens tokens held by the pages it
 * writes to `pages`. *num_pages is the capacity of `pages` on entry and the
 * match's page count on return; `pages` may be NULL to ask for the count
 * only, and num_tokens / page_size entries always suffice (a smaller
 * capacity than the match is ATTNC_INVALID_ARGUMENT, with the count set).
 * Nothing is locked: the pages stay cached until eviction takes them. */
attnc_status attnc_radix_cache_match_prefix(attnc_radix_cache cache,
                                            const int32_t *tokens,
                                            int64_t num_tokens,
                                            uint64_t cache_namespace,
                                            int64_t *matched_tokens,
                                            int32_t *pages, int64_t *num_pages);
/* Frees the pages covering `tokens` tokens (whole pages, from the tail of
 * the least-recently-used unlocked leaf first; what is left of a leaf still
 * matches), or every evictable page when there are fewer; *evicted (may be
 * NULL) gets the count of tokens freed. With a host tier the pages go
 * there while it has room, each an offload to take (below). */
attnc_status attnc_radix_cache_evict(attnc_radix_cache cache, int64_t tokens,
                                     int64_t *evicted);

/* The direction of a step's page transfer (version 14). */
typedef enum attnc_transfer_direction {
  ATTNC_TRANSFER_OFFLOAD = 0, /* device page to host page: evicted */
  ATTNC_TRANSFER_LOAD = 1     /* host page to device page: loaded back */
} attnc_transfer_direction;

/* Version 19. Takes the page transfers the cache's host tier made since
 * they were last taken (offloads of the pages eviction moved, loads back),
 * in the order made, as (host page, device page, attnc_transfer_direction)
 * triples like a step's page_transfers, written to `transfers`.
 * *num_transfers is the capacity of `transfers` in triples on entry and
 * the count on return; `transfers` may be NULL to ask the count only,
 * taking nothing, and a smaller capacity than the count is
 * ATTNC_INVALID_ARGUMENT, with the count set and nothing taken. A cache
 * without a tier has none.
 * The transfers have one reader, who must take them (the cache keeps each
 * until then): while a scheduler serves the cache its steps do
 * (page_transfers, with the offloads of an attnc_radix_cache_evict between
 * two steps), and taking them here is ATTNC_INVALID_ARGUMENT; otherwise
 * the cache's user does, with this call, and applies them in order to
 * caches of its own, or drops them when its caches are the pool's (the
 * tier moved those pages already). What was not taken when a scheduler
 * starts serving the cache goes to its first step: an engine with caches
 * of its own that never applied an offload would load back a host page it
 * never wrote. */
attnc_status attnc_radix_cache_take_transfers(attnc_radix_cache cache,
                                              int32_t *transfers,
                                              int64_t *num_transfers);

/* attnc_policy_name gives the names ("fcfs", "lpm", "dfs-weight"). */
typedef enum attnc_policy {
  ATTNC_POLICY_FCFS = 0,
  ATTNC_POLICY_LPM = 1, /* longest prefix match */
  ATTNC_POLICY_DFS_WEIGHT = 2
} attnc_policy;

/* Mirrors attnc::SchedulerConfig (serving/sched/Scheduler.h, where each
 * field is explained); attnc_scheduler_config_init fills its defaults and
 * attnc::checkConfig judges the values (its message names the field). */
#define ATTNC_SCHEDULER_CONFIG_FIELDS(FIELD)                                   \
  FIELD(attnc_policy, policy)                                                  \
  /* Tokens fed per pass, decodes included: >= 1. */                           \
  FIELD(int64_t, token_budget)                                                 \
  FIELD(int64_t, max_running)               /* >= 1 */                         \
  FIELD(int64_t, in_flight_share_threshold) /* 1 .. 2^31-1 tokens */           \
  FIELD(int, protect_waiting_prefixes)      /* 0 or 1 */                       \
  FIELD(int64_t, aging_steps)               /* >= 0; 0: never */               \
  /* 0 <= min_new_token_ratio <= initial_new_token_ratio <= 1 and              \
   * 0 <= new_token_ratio_decay <= 1. */                                       \
  FIELD(double, initial_new_token_ratio)                                       \
  FIELD(double, min_new_token_ratio)                                           \
  FIELD(double, new_token_ratio_decay)                                         \
  /* Version 13. >= 1: the most remaining max_tokens a request reserves. */    \
  FIELD(int64_t, clip_max_new_tokens)                                          \
  /* Version 13. >= 0: waiting requests DFS-weight orders; 0: all. */          \
  FIELD(int64_t, dfs_weight_window)                                            \
  /* Version 16. 0 .. 2^31-1: drafts a step verifies per request; 0: off. */   \
  FIELD(int64_t, speculative_tokens)                                           \
  /* Version 18. 0 or 1: plan cascade attention (a step's cascade levels;      \
   * its decodes, and its prefills, in the radix tree's DFS order). */         \
  FIELD(int, cascade)                                                          \
  /* Version 18. 1 .. 2^31-1: the requests and the tokens a shared node run    \
   * needs to be a cascade level's entry. */                                   \
  FIELD(int64_t, cascade_min_sharers)                                          \
  FIELD(int64_t, cascade_min_shared_tokens)
ATTNC_RECORD(attnc_scheduler_config, ATTNC_SCHEDULER_CONFIG_FIELDS)

/* A request as it arrives; attnc_request_init fills the defaults. */
#define ATTNC_REQUEST_FIELDS(FIELD)                                            \
  FIELD(int64_t, id) /* unique among the requests queued or running */         \
  FIELD(const int32_t *, prompt)                                               \
  FIELD(int64_t, prompt_len) /* >= 1 */                                        \
  /* >= 1; prompt_len + max_tokens <= 2^31-1 */                                \
  FIELD(int64_t, max_tokens)                                                   \
  FIELD(int32_t, priority) /* higher goes first */                             \
  /* Requests share cached KV only within one. */                              \
  FIELD(uint64_t, cache_namespace)                                             \
  /* Parallel samples, 1 .. 256: the prompt is computed once and forks into    \
   * n branches when it completes (each a request of the batch, named by       \
   * its branch). */                                                           \
  FIELD(int32_t, n)
ATTNC_RECORD(attnc_request, ATTNC_REQUEST_FIELDS)

/* What the model sampled for one of a step's samplers. */
#define ATTNC_SAMPLE_FIELDS(FIELD)                                             \
  FIELD(int64_t, request)                                                      \
  FIELD(int32_t, token)                                                        \
  FIELD(int32_t, stop)   /* 0 or 1: the engine stops the request here */       \
  FIELD(int32_t, branch) /* which of the request's n samples, 0 for n = 1 */   \
  /* Version 16. 0 or 1: for a verification row (num_drafts), the target       \
   * disagreed with this row's draft or one before it (attnc::Sample). */      \
  FIELD(int32_t, rejected)
ATTNC_RECORD(attnc_sample, ATTNC_SAMPLE_FIELDS)

/* The arrays of one step (attnc::EngineBatch and StepStats), valid until
 * the step is destroyed; an array is NULL when its count is 0. Requests
 * come in batch order, decodes first: request i feeds tokens
 * [qo_indptr[i], qo_indptr[i+1]) and reads the pages
 * page_indices[page_indptr[i] .. page_indptr[i+1]), its last page holding
 * last_page_len[i] tokens, as PagedAttention.plan and attnc_batch take
 * them. The model writes each token's keys and values at slot_mapping
 * (attnc_kv_pool_append_slots) before attention reads them.
 *
 * Before it writes any of them, the engine applies the step's page copies
 * (version 12) to every layer's key and value caches it keeps: page
 * page_copies[2i] copied over page page_copies[2i+1], in order (vLLM's
 * blocks_to_copy): the copy-on-write the scheduler decided since the last
 * step (a fork's copy of its prompt's partial last page), which this
 * step's sequences read. The scheduler's pool made them already, in every
 * layer, on its stream (attnc_kv_pool_set_stream): an engine whose caches
 * are the pool's may skip them, an engine with caches of its own must
 * apply them (attnc_kv_pool_copy_pages does for a pool's caches). Applying
 * them twice is harmless. */
#define ATTNC_STEP_INFO_FIELDS(FIELD)                                          \
  FIELD(int64_t, num_requests)                                                 \
  FIELD(const int64_t *, requests)                                             \
  FIELD(const int32_t *, branches) /* num_requests: each request's branch */   \
  FIELD(int64_t, num_decodes)      /* the first num_decodes requests decode */ \
  FIELD(const int32_t *, qo_indptr) /* num_requests + 1 */                     \
  FIELD(int64_t, num_tokens)                                                   \
  FIELD(const int32_t *, tokens) /* num_tokens token ids */                    \
  /* num_tokens: each token's position in its request's sequence. */           \
  FIELD(const int32_t *, positions)                                            \
  /* num_tokens: page * page_size + offset */                                  \
  FIELD(const int64_t *, slot_mapping)                                         \
  FIELD(const int32_t *, page_indptr) /* num_requests + 1 */                   \
  FIELD(int64_t, num_page_indices)                                             \
  FIELD(const int32_t *, page_indices)  /* num_page_indices */                 \
  FIELD(const int32_t *, last_page_len) /* num_requests */                     \
  /* The requests that sample from this pass, in batch order, and the row      \
   * of `tokens` whose logits each samples: what commit takes samples for      \
   * (the pass completing a prompt of n > 1 samples its n branches from one    \
   * row). */                                                                  \
  FIELD(int64_t, num_samplers)                                                 \
  FIELD(const int64_t *, samplers)                                             \
  FIELD(const int32_t *, sampler_branches)                                     \
  FIELD(const int32_t *, sample_rows)                                          \
  FIELD(int64_t, num_admitted)                                                 \
  FIELD(const int64_t *, admitted)                                             \
  /* Sent back to the queue to free pages, to be computed again. */            \
  FIELD(int64_t, num_preempted)                                                \
  FIELD(const int64_t *, preempted)                                            \
  FIELD(int64_t, prefill_tokens)                                               \
  FIELD(int64_t, decode_tokens)                                                \
  /* Pages to copy in every layer before this step's writes: 2 *               \
   * num_page_copies entries, (source, destination) pairs. */                  \
  FIELD(int64_t, num_page_copies)                                              \
  FIELD(const int32_t *, page_copies)                                          \
  /* Version 13. num_tokens: -1 where tokens[t] is the row's token, or the     \
   * index among the samplers of the step before this one whose sample the     \
   * row is, when this step was formed before that sample was committed: the   \
   * engine takes it from what it sampled there, tokens[t] does not hold it.   \
   */                                                                          \
  FIELD(const int32_t *, token_from_sample)                                    \
  /* Version 14. Pages moved between the pool and its cache's host tier,       \
   * applied in every layer after page_copies and before this step's writes,   \
   * in order: 3 * num_page_transfers entries, (host page, device page,        \
   * attnc_transfer_direction) triples. The tier made them in the              \
   * scheduler's pool already (a device pool's on its stream): an engine       \
   * whose caches are the pool's skips them, one with caches of its own        \
   * keeps host pages of its own and applies them. */                          \
  FIELD(int64_t, num_page_transfers)                                           \
  FIELD(const int32_t *, page_transfers)                                       \
  /* Version 16. num_requests: the drafts each decode feeds after its last     \
   * sample (attnc_scheduler_propose), 0 for a plain decode or a prefill: a    \
   * decode of d drafts feeds d + 1 rows, every one a sampler whose sample     \
   * commit takes with its verdict (attnc_sample's rejected). */               \
  FIELD(const int32_t *, num_drafts)                                           \
  /* Version 18. Cascade attention's levels (attnc::EngineBatch::cascade;      \
   * none unless the scheduler's config asks, nor when nothing is shared),     \
   * each as FlashInfer's MultiLevelCascadeAttentionWrapper takes it:          \
   * level l has cascade_level_entries[l] = E entries over all num_tokens      \
   * rows, its qo_indptr and kv_indptr E + 1 entries each, concatenated        \
   * level after level in cascade_qo_indptr and cascade_kv_indptr              \
   * (num_cascade_indptr in all: entries + levels), its E last page lengths    \
   * in cascade_kv_last_page_len (num_cascade_entries in all), and its pages   \
   * (each level's kv_indptr starts at 0) after the levels' before it in       \
   * cascade_kv_indices (num_cascade_kv_indices in all). */                    \
  FIELD(int64_t, num_cascade_levels)                                           \
  FIELD(const int32_t *, cascade_level_entries)                                \
  FIELD(int64_t, num_cascade_indptr)                                           \
  FIELD(const int32_t *, cascade_qo_indptr)                                    \
  FIELD(const int32_t *, cascade_kv_indptr)                                    \
  FIELD(int64_t, num_cascade_entries)                                          \
  FIELD(const int32_t *, cascade_kv_last_page_len)                             \
  FIELD(int64_t, num_cascade_kv_indices)                                       \
  FIELD(const int32_t *, cascade_kv_indices)
ATTNC_RECORD(attnc_step_info, ATTNC_STEP_INFO_FIELDS)

/* A scheduler's queue and its totals since it was made (prompt tokens are
 * counted at a request's first admission; attnc::SchedulerTotals). */
#define ATTNC_SCHEDULER_STATS_FIELDS(FIELD)                                    \
  FIELD(int64_t, num_waiting)                                                  \
  FIELD(int64_t, num_running)                                                  \
  FIELD(int64_t, prompt_tokens)                                                \
  FIELD(int64_t, cached_tokens)                                                \
  FIELD(int64_t, computed_prefill_tokens)                                      \
  FIELD(int64_t, recomputed_tokens)                                            \
  FIELD(int64_t, evicted_tokens)                                               \
  FIELD(int64_t, preemptions)                                                  \
  FIELD(int64_t, finished)                                                     \
  /* Version 14. Prompt tokens loaded back from the host tier instead of       \
   * computed. */                                                              \
  FIELD(int64_t, host_loaded_tokens)
ATTNC_RECORD(attnc_scheduler_stats, ATTNC_SCHEDULER_STATS_FIELDS)

void attnc_scheduler_config_init(attnc_scheduler_config *config);
void attnc_request_init(attnc_request *request);
const char *attnc_policy_name(int policy);
/* `cache` must be a cache over `pool` that serves no other live scheduler. */
attnc_status attnc_scheduler_create(const attnc_scheduler_config *config,
                                    attnc_kv_pool pool, attnc_radix_cache cache,
                                    attnc_scheduler *out);
/* Releases what its running requests hold (their pages, their locks). */
attnc_status attnc_scheduler_destroy(attnc_scheduler scheduler);
/* Queues a copy of the request. ATTNC_OUT_OF_MEMORY when its prompt and
 * max_tokens could never fit the pool; ATTNC_INVALID_ARGUMENT when a
 * request of its id is queued or running. Every such check, prompt_len's
 * included, comes before the prompt is read. */
attnc_status attnc_scheduler_add(attnc_scheduler scheduler,
                                 const attnc_request *request);
/* Forms the next forward pass into a new step (the caller destroys it).
 * How many steps may await their samples at once is the scheduler's rule
 * (attnc::Scheduler::step), and its refusal ATTNC_INVALID_ARGUMENT. */
attnc_status attnc_scheduler_step(attnc_scheduler scheduler, attnc_step *out);
attnc_status attnc_step_get_info(attnc_step step, attnc_step_info *out);
attnc_status attnc_step_destroy(attnc_step step);
/* One sample for each sampler of the step the scheduler awaits samples for
 * (attnc::Scheduler::commit), in that order: num_samples must be their
 * count, checked before `samples` is read. The requests that finished (a
 * stop, or max_tokens reached) are written to `finished` (NULL, or room
 * for num_samples ids), their count to *num_finished (may be NULL). All or
 * nothing: a refused commit (a bad sample, a failed page copy) leaves the
 * scheduler, its pool and its cache as they were, and the same samples may
 * be committed again. */
attnc_status attnc_scheduler_commit(attnc_scheduler scheduler,
                                    const attnc_sample *samples,
                                    int64_t num_samples, int64_t *finished,
                                    int64_t *num_finished);
/* attnc_scheduler_commit with the samples as arrays (version 13), so that a
 * binding passes the buffers it has without building a record per sample:
 * sample k is request requests[k], branch branches[k] (NULL: 0 for each),
 * token tokens[k], stop stops[k] (0 or 1; NULL: none stops). A step's
 * samplers and sampler_branches are its samples' requests and branches.
 * requests and tokens may be NULL only when num_samples is 0; num_samples
 * is checked before any array is read. */
attnc_status
attnc_scheduler_commit_arrays(attnc_scheduler scheduler, int64_t num_samples,
                              const int64_t *requests, const int32_t *branches,
                              const int32_t *tokens, const int32_t *stops,
                              int64_t *finished, int64_t *num_finished);
/* attnc_scheduler_commit_arrays with each sample's verdict (version 16):
 * rejected[k] (0 or 1; NULL: none rejected) is sample k's rejected. */
attnc_status attnc_scheduler_commit_verdict_arrays(
    attnc_scheduler scheduler, int64_t num_samples, const int64_t *requests,
    const int32_t *branches, const int32_t *tokens, const int32_t *stops,
    const int32_t *rejected, int64_t *finished, int64_t *num_finished);
/* Gives a decoding request's branch the drafts of its next tokens, to be
 * fed and verified by its next step (attnc::Scheduler::propose, whose
 * checks and messages refuse what it cannot take). num_drafts must not be
 * negative, and drafts may be NULL only when it is 0: both checked before
 * the buffer is read. */
attnc_status attnc_scheduler_propose(attnc_scheduler scheduler, int64_t request,
                                     int32_t branch, const int32_t *drafts,
                                     int64_t num_drafts);
/* Drops a queued or running request; ATTNC_NOT_FOUND when there is none of
 * that id. Between a step and its commit, its sample is ignored. */
attnc_status attnc_scheduler_abort(attnc_scheduler scheduler, int64_t request);
/* 1 when nothing waits or runs, 0 otherwise; -1 for a bad handle (so that a
 * `while (!attnc_scheduler_idle(s))` loop ends). */
int attnc_scheduler_idle(attnc_scheduler scheduler);
attnc_status attnc_scheduler_get_stats(attnc_scheduler scheduler,
                                       attnc_scheduler_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* ATTNC_ATTNC_C_H */
