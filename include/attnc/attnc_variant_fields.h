/*===- attnc_variant_fields.h - a variant spec's fields, declared once ----===*\
|*                                                                            *|
|* The one list of a variant spec's fields, for C (attnc_variant_spec,        *|
|* attnc_c.h) and C++ (attnc::VariantSpec, attnc.h). Both structs are         *|
|* generated from it, and libattnc.so generates from it the C defaults        *|
|* (attnc_variant_spec_init, the C++ member initializers), the C-to-C++       *|
|* translation with its encoding checks, and the field table                  *|
|* attnc_record_fields gives bindings (each field's encoding: a flag, an      *|
|* enumerator, a "no value" sentinel, a count), from which Python builds      *|
|* its keyword arguments. What cannot be generated, Variant::fromSpec's       *|
|* translation to IR, is held to the list by a test                           *|
|* (Api.EveryVariantFieldReachesTheIr). Plain C99 preprocessor text: C        *|
|* never expands the C++ arguments.                                           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef ATTNC_ATTNC_VARIANT_FIELDS_H
#define ATTNC_ATTNC_VARIANT_FIELDS_H

/* clang-format off */
/* ATTNC_VARIANT_SPEC(X, A) expands, for each C++ member in order, the macro
 * X##_<ENCODING>(A, ...) with the entry's arguments: `c` the C field (two
 * for a pair, the array and its count for a list), `cpp` the C++ member.
 * The encoding fixes both types; a C++ default is the C default too, and a
 * `none` sentinel is the C spelling of an absent C++ value:
 *
 *   encoding                            C field(s)              C++ member
 *   INT64(A, c, cpp, default)           int64_t                 int64_t
 *   ENUM(A, c, cpp, CEnum, Enum, default)
 *                                       CEnum (any int read)    Enum
 *   OPTIONAL_ENUM(A, c, cpp, CEnum, Enum, none)
 *                                       int: a CEnum or none    std::optional<Enum>
 *   FLAG(A, c, cpp, default)            int, 0 or 1            bool
 *   OPTIONAL_FLOAT(A, c, cpp, none)     float                   std::optional<float>
 *   STRING(A, c, cpp, default)          const char *, NULL:     std::string
 *                                       the default
 *   OPTIONAL_STRING(A, c, cpp)          const char *, NULL or   std::string, "": none
 *                                       "": none
 *   OPTIONAL_PAIR(A, c1, c2, cpp, none) int64_t c1, c2: both    std::optional<std::pair<
 *                                       none, or neither        int64_t, int64_t>>
 *                                       negative
 *   STRINGS(A, c, count, cpp, max)      const char *const *c    std::vector<std::string>
 *                                       and int count, 0..max
 *
 * The C order is the ABI's: a new field goes at the end, with
 * ATTNC_C_API_VERSION bumped. Enum fields may hold any int: fromSpec refuses
 * unknown enumerators; the attn dialect's verifier judges the values. */
#define ATTNC_VARIANT_SPEC(X, A)                                               \
  /* A symbol: [A-Za-z_][A-Za-z0-9_]*; NULL: "attention". */                   \
  X##_STRING(A, name, name, "attention")                                       \
  X##_INT64(A, query_heads, queryHeads, 0)                                     \
  X##_INT64(A, kv_heads, kvHeads, 0)                                           \
  X##_INT64(A, head_dim, headDim, 0)                                           \
  /* Queries and outputs, and keys and values unless kv_dtype says             \
   * otherwise: BF16 or F16. */                                                \
  X##_ENUM(A, dtype, dtype, attnc_dtype, DType, DType::BF16)                   \
  /* DENSE or RAGGED; dense queries of queries_per_request tokens (0: any). */ \
  X##_ENUM(A, query_layout, queryLayout, attnc_layout, TokenLayout,            \
           TokenLayout::Dense)                                                 \
  X##_INT64(A, queries_per_request, queriesPerRequest, 0)                      \
  X##_ENUM(A, kv_layout, kvLayout, attnc_layout, TokenLayout,                  \
           TokenLayout::Dense)                                                 \
  X##_INT64(A, page_size, pageSize, 16) /* paged keys only */                  \
  X##_ENUM(A, page_order, pageOrder, attnc_page_order, PageOrder,              \
           PageOrder::NHD) /* paged keys only */                               \
  X##_FLAG(A, causal, causal, false)                                           \
  /* Keys visible to the left and right of a query's diagonal; in C both -1:   \
   * no window. */                                                             \
  X##_OPTIONAL_PAIR(A, window_left, window_right, window, -1)                  \
  X##_INT64(A, sinks, sinks, 0)                                                \
  X##_OPTIONAL_FLOAT(A, scale, scale, 0)     /* none: 1/sqrt(head_dim) */      \
  X##_OPTIONAL_FLOAT(A, softcap, softcap, 0) /* none: no softcap */            \
  X##_FLAG(A, alibi, alibi, false)                                             \
  X##_FLAG(A, return_lse, returnLse, false)                                    \
  /* Region blocks, or none. score_mod: `^bb0(%score: f32, %batch: index,      \
   * %head: index, %qi: index, %kvi: index, %q_len: index, %kv_len: index,     \
   * <captures>): ... attn.yield %s : f32`; mask_mod: the same without         \
   * %score, yielding `%keep : i1`, true where the key is visible. qi and      \
   * kvi index the request's queries and keys; the query's position in the     \
   * sequence is qi + kv_len - q_len. docs/regions.md lists the ops regions    \
   * may use. The text must be exactly one block: text that closes the         \
   * region to add operations is refused. */                                   \
  X##_OPTIONAL_STRING(A, score_mod, scoreMod)                                  \
  X##_OPTIONAL_STRING(A, mask_mod, maskMod)                                    \
  /* Types of the buffers the regions read, e.g. "memref<16x64xf32>", each     \
   * parsed alone: anything but one whole memref type is refused. */           \
  X##_STRINGS(A, capture_types, num_captures, captureTypes,                    \
              attnc::limits::kMaxCaptures)                                     \
  /* Keys and values stored in fp8 (F8E4M3 or F8E5M2), dequantized on load;    \
   * none (C: -1): `dtype`. */                                                 \
  X##_OPTIONAL_ENUM(A, kv_dtype, kvDtype, attnc_dtype, DType, -1)              \
  /* An fp8 cache's dequantization scales (the cache holds k / k_scale and     \
   * v / v_scale): inputs after k and v, f32 device arrays of one element      \
   * (PER_TENSOR) or one per KV head (PER_HEAD), read at run time. */          \
  X##_ENUM(A, kv_scales, kvScales, attnc_kv_scales, KVScales, KVScales::None)  \
  /* Multi-head latent attention (DeepSeek's MLA, up-projections absorbed):    \
   * > 0, the cache is one latent row of head_dim elements per token           \
   * ([tokens, head_dim] dense or ragged, [pages, page_size, head_dim]         \
   * paged), shared by every query head (kv_heads 1); its first head_dim -     \
   * rope_dim elements are the values, so the inputs are q and the cache and   \
   * the output's head dim is head_dim - rope_dim. 0: keys and values. */      \
  X##_INT64(A, rope_dim, ropeDim, 0)                                           \
  /* The values' and outputs' head dim where it differs from head_dim (the     \
   * queries' and keys', e.g. DeepSeek's MLA prefill in the non-absorbed       \
   * form: 192 and 128); 0: head_dim. 0 with rope_dim, whose values are the    \
   * latent row's first head_dim - rope_dim columns. */                        \
  X##_INT64(A, value_head_dim, valueHeadDim, 0)                             \
  /* Document ids (examples/document_segments.mlir): a key is visible only   \
   * to the queries of its document. Two int32 device arrays, the queries'   \
   * ids and the keys', are inputs after k and v (before kv scales), each    \
   * indexed like the tokens it labels: [tokens] for a ragged layout,        \
   * [batch, seq_len] for a dense one. Keys and values in a paged or latent  \
   * cache take none (compile refuses them). */                              \
  X##_FLAG(A, segments, segments, false)                                      \
  /* Cascade attention's shared levels (attn.attention's shared_keys): each    \
   * request is a node whose queries are the rows of every request sharing     \
   * its keys; no mask, no positions; the keys are split across CTAs. */      \
  X##_FLAG(A, shared_keys, sharedKeys, false)
/* clang-format on */

/* The C fields, as FIELD(type, name) (attnc_c.h's ATTNC_RECORD form). */
#define ATTNC_VARIANT_C_INT64(FIELD, c, cpp, d) FIELD(int64_t, c)
#define ATTNC_VARIANT_C_ENUM(FIELD, c, cpp, CEnum, Enum, d) FIELD(CEnum, c)
#define ATTNC_VARIANT_C_OPTIONAL_ENUM(FIELD, c, cpp, CEnum, Enum, none)        \
  FIELD(int, c)
#define ATTNC_VARIANT_C_FLAG(FIELD, c, cpp, d) FIELD(int, c)
#define ATTNC_VARIANT_C_OPTIONAL_FLOAT(FIELD, c, cpp, none) FIELD(float, c)
#define ATTNC_VARIANT_C_STRING(FIELD, c, cpp, d) FIELD(const char *, c)
#define ATTNC_VARIANT_C_OPTIONAL_STRING(FIELD, c, cpp) FIELD(const char *, c)
#define ATTNC_VARIANT_C_OPTIONAL_PAIR(FIELD, c1, c2, cpp, none)                \
  FIELD(int64_t, c1) FIELD(int64_t, c2)
#define ATTNC_VARIANT_C_STRINGS(FIELD, c, count, cpp, max)                     \
  FIELD(const char *const *, c) FIELD(int, count)

/* The C++ members' names, as MEMBER(name): for code (tests) that must cover
 * every member. */
#define ATTNC_VARIANT_SPEC_MEMBERS(MEMBER)                                     \
  ATTNC_VARIANT_SPEC(ATTNC_VARIANT_NAME, MEMBER)
#define ATTNC_VARIANT_NAME_INT64(M, c, cpp, d) M(cpp)
#define ATTNC_VARIANT_NAME_ENUM(M, c, cpp, CEnum, Enum, d) M(cpp)
#define ATTNC_VARIANT_NAME_OPTIONAL_ENUM(M, c, cpp, CEnum, Enum, none) M(cpp)
#define ATTNC_VARIANT_NAME_FLAG(M, c, cpp, d) M(cpp)
#define ATTNC_VARIANT_NAME_OPTIONAL_FLOAT(M, c, cpp, none) M(cpp)
#define ATTNC_VARIANT_NAME_STRING(M, c, cpp, d) M(cpp)
#define ATTNC_VARIANT_NAME_OPTIONAL_STRING(M, c, cpp) M(cpp)
#define ATTNC_VARIANT_NAME_OPTIONAL_PAIR(M, c1, c2, cpp, none) M(cpp)
#define ATTNC_VARIANT_NAME_STRINGS(M, c, count, cpp, max) M(cpp)

#ifdef __cplusplus
/* The C++ members with their defaults (attnc::VariantSpec, attnc.h); the
 * types need <cstdint>, <optional>, <string>, <utility> and <vector>. */
#define ATTNC_VARIANT_CXX_INT64(A, c, cpp, d) int64_t cpp = d;
#define ATTNC_VARIANT_CXX_ENUM(A, c, cpp, CEnum, Enum, d) Enum cpp = d;
#define ATTNC_VARIANT_CXX_OPTIONAL_ENUM(A, c, cpp, CEnum, Enum, none)          \
  std::optional<Enum> cpp;
#define ATTNC_VARIANT_CXX_FLAG(A, c, cpp, d) bool cpp = d;
#define ATTNC_VARIANT_CXX_OPTIONAL_FLOAT(A, c, cpp, none)                      \
  std::optional<float> cpp;
#define ATTNC_VARIANT_CXX_STRING(A, c, cpp, d) std::string cpp = d;
#define ATTNC_VARIANT_CXX_OPTIONAL_STRING(A, c, cpp) std::string cpp;
#define ATTNC_VARIANT_CXX_OPTIONAL_PAIR(A, c1, c2, cpp, none)                  \
  std::optional<std::pair<int64_t, int64_t>> cpp;
#define ATTNC_VARIANT_CXX_STRINGS(A, c, count, cpp, max)                       \
  std::vector<std::string> cpp;
#endif

#endif /* ATTNC_ATTNC_VARIANT_FIELDS_H */
