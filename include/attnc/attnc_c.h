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

#ifdef __cplusplus
extern "C" {
#endif

/* 3: destroy functions return a status; attnc_role_name. 5: fp8 caches
 * (ATTNC_F8E4M3, ATTNC_F8E5M2, kv_dtype and kv_scales in the spec). */
#define ATTNC_C_API_VERSION 5

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

typedef struct attnc_variant_st *attnc_variant;
typedef struct attnc_kernel_st *attnc_kernel;
typedef struct attnc_plan_st *attnc_plan;

/* Mirrors attnc::VariantSpec; attnc_variant_spec_init fills the defaults.
 * attnc_variant_from_spec checks the encoding (flags 0 or 1, the sentinels
 * below, known enumerators, the capture array); the attn dialect's
 * verifier checks the values, and its message is attnc_last_error. */
typedef struct attnc_variant_spec {
  const char *name; /* a symbol: [A-Za-z_][A-Za-z0-9_]*; NULL: "attention" */
  int64_t query_heads, kv_heads, head_dim;
  attnc_dtype dtype;           /* BF16 or F16 */
  attnc_layout query_layout;   /* DENSE or RAGGED */
  int64_t queries_per_request; /* dense queries: 0 for any */
  attnc_layout kv_layout;
  int64_t page_size;           /* paged keys only */
  attnc_page_order page_order; /* paged keys only */
  int causal;                  /* 0 or 1 */
  /* Both -1: no window; otherwise both non-negative. */
  int64_t window_left, window_right;
  int64_t sinks;
  float scale;    /* 0: 1/sqrt(head_dim) */
  float softcap;  /* 0: none */
  int alibi;      /* 0 or 1 */
  int return_lse; /* 0 or 1 */
  /* Region block text, or NULL (or "") for none: the block arguments are in
   * attnc.h's VariantSpec::scoreMod and maskMod, the admitted ops in
   * docs/regions.md. It must be exactly one block: text that closes the
   * region to add operations is refused. */
  const char *score_mod;
  const char *mask_mod;
  /* num_captures (0..attnc_limits.max_captures) memref types, each parsed
   * alone: anything but one whole memref type is refused. */
  const char *const *capture_types;
  int num_captures;
  /* Keys and values: -1 for `dtype`, or an fp8 cache (ATTNC_F8E4M3,
   * ATTNC_F8E5M2) dequantized on load. */
  int kv_dtype;
  /* An fp8 cache's scales, inputs after k and v (f32 device arrays). */
  attnc_kv_scales kv_scales;
} attnc_variant_spec;

typedef struct attnc_tensor_spec {
  attnc_role role;
  int64_t heads, dim;
  attnc_dtype dtype;
  attnc_layout layout;
  int64_t seq_len; /* per request; -1 when any */
} attnc_tensor_spec;

/* Mirrors attnc::Batch: index arrays are int32 device pointers, which
 * attnc cannot check; counts and lengths must be non-negative, page
 * strides 0 (packed pages) or positive. */
typedef struct attnc_batch {
  int batch;
  int max_query_len;
  int max_kv_len;
  int64_t query_tokens;
  uint64_t q_indptr, kv_indptr, page_indices, last_page_len;
  int64_t k_page_stride, v_page_stride;
  /* Keys of all requests: rows of ragged k and v (the last kv_indptr), or
   * the sum of the paged requests' lengths; 0: unknown, and a kernel that
   * needs it reads it from the device when planning (a synchronous copy).
   * Decode splits a ragged batch's long requests further when given. */
  int64_t kv_tokens;
} attnc_batch;

/* What a kernel can hold (attnc/device/abi.h's limits). */
typedef struct attnc_limits {
  int64_t max_seq_len;  /* tokens per request, window extents, sinks */
  int64_t max_heads;    /* query or KV heads */
  int64_t max_head_dim; /* elements per head the IR accepts */
  int64_t min_page_size, max_page_size;
  int64_t max_kv_splits;
  int64_t max_merge_states;
  int64_t max_captures, max_capture_rank;
} attnc_limits;

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

attnc_status attnc_plan_create(attnc_kernel kernel, const attnc_batch *batch,
                               attnc_plan *out);
attnc_status attnc_plan_destroy(attnc_plan plan);
/* KV splits of attention launch `launch`; 0 if there is no such launch. */
int attnc_plan_num_splits(attnc_plan plan, int launch);

/* buffer_sizes and buffer_ranks: both NULL when every buffer has a static
 * shape, else one entry for each buffer input (role BUFFER) in order:
 * buffer_sizes[i] holds buffer_ranks[i] sizes (rank 0: the static shape).
 * No allocation, no synchronization. */
attnc_status attnc_run(attnc_kernel kernel, attnc_plan plan,
                       const uint64_t *inputs, int num_inputs,
                       const uint64_t *outputs, int num_outputs,
                       const int64_t *const *buffer_sizes,
                       const int *buffer_ranks, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* ATTNC_ATTNC_C_H */
