//===- abi.h - what every layer agrees on: enums and limits ---------------===//
//
// The one definition of the facts that cross from the IR to the device:
// how tokens are laid out, the order inside a page, the element types and
// the limits of what a kernel's integer types and parameter structs hold.
// The attn dialect's types, the compiler, the C++ and C APIs (the C enums
// are static_asserted against these), Python (through the C API) and the
// device tile library all read them from here.
//
// Each enum is an X-macro list so that its values, its IR keywords and its
// C++ spelling (what the emitter prints into a kernel's config) cannot
// drift apart.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_ABI_H
#define ATTNC_DEVICE_ABI_H

#include "attnc/device/prelude.h"

namespace attnc {

// X(enumerator, IR keyword)
#define ATTNC_TOKEN_LAYOUTS(X)                                                 \
  X(Dense, "dense")                                                            \
  X(Ragged, "ragged")                                                          \
  X(Paged, "paged")

// X(enumerator, IR keyword)
#define ATTNC_PAGE_ORDERS(X)                                                   \
  X(NHD, "nhd") /* a page is [page_size, heads, dim] */                        \
  X(HND, "hnd") /* a page is [heads, page_size, dim] */

// X(enumerator, IR keyword, bytes per element)
#define ATTNC_DTYPES(X)                                                        \
  X(BF16, "bf16", 2)                                                           \
  X(F16, "f16", 2)                                                             \
  X(F32, "f32", 4)                                                             \
  X(I32, "i32", 4)                                                             \
  X(I64, "i64", 8)                                                             \
  X(F8E4M3, "f8E4M3FN", 1) /* fp8 KV caches: 4 exponent bits, no inf */        \
  X(F8E5M2, "f8E5M2", 1)   /* fp8 KV caches: 5 exponent bits */

// X(enumerator, IR keyword): which visited KV tiles need the per-element
// mask, as attn-analyze-masks decided.
#define ATTNC_PARTIAL_TILES(X)                                                 \
  X(Never, "never")   /* no mask, every tile whole */                          \
  X(Edges, "edges")   /* tiles crossing a closed-form bound */                 \
  X(Always, "always") /* mask_mod or segments: no closed form */

// X(enumerator, keyword): how many dequantization scales an fp8 KV cache
// has, each for K and for V (the APIs' spelling of kv_scales' memref size).
#define ATTNC_KV_SCALES(X)                                                     \
  X(None, "none")        /* a 16-bit cache, or an fp8 one read as stored */    \
  X(PerTensor, "tensor") /* memref<1xf32> */                                   \
  X(PerHead, "head")     /* memref<KV_HEADS x f32> */

#define ATTNC_ENUMERATOR(name, ...) name,
/// How the tokens of a batch of requests are stored.
enum class TokenLayout : i32 { ATTNC_TOKEN_LAYOUTS(ATTNC_ENUMERATOR) };
/// Dimension order inside one page of a paged KV cache.
enum class PageOrder : i32 { ATTNC_PAGE_ORDERS(ATTNC_ENUMERATOR) };
/// Element types of the tensors and buffers a kernel reads or writes.
enum class DType : i32 { ATTNC_DTYPES(ATTNC_ENUMERATOR) };
enum class PartialTiles : i32 { ATTNC_PARTIAL_TILES(ATTNC_ENUMERATOR) };
/// Dequantization scales of an fp8 KV cache.
enum class KVScales : i32 { ATTNC_KV_SCALES(ATTNC_ENUMERATOR) };
#undef ATTNC_ENUMERATOR

/// Limits of what a kernel holds. Positions, lengths and row indices are
/// `i32` on the device; grid dimensions y and z hold at most 65535.
namespace limits {
/// Tokens per request (and every window extent and sink count, which are
/// compared with positions).
constexpr i64 kMaxSeqLen = 2147483647;
/// Query or KV heads: KV heads x splits index the grid's y dimension.
constexpr i64 kMaxHeads = 1024;
/// Elements of a head; the planner decides which of them compile.
constexpr i64 kMaxHeadDim = 1024;
/// Head dims (query/key and value, each) the mma.sync kernels take: both
/// products step over 16 columns of a head at a time (m16n8k16 k-steps of
/// Q.K^T, 16-column V tiles of P.V), and a thread's output accumulators for
/// 256 columns are the most its registers hold.
constexpr i64 kKernelHeadDimStep = 16;
constexpr i64 kMaxKernelHeadDim = 256;
/// Multi-head latent attention (hopper/latent.h): its query/key rows are
/// the latent and rope parts of one cache row, and each of its two
/// consumer warpgroups holds half of the latent (value) columns, whole
/// 64-column blocks of at most one 256-wide wgmma.
constexpr i64 kMaxLatentHeadDim = 576;
constexpr i64 kLatentDimStep = 128;
constexpr i64 kMaxLatentDim = 512;
/// The latent producer widens an fp8 cache this many rows a pass (its
/// warpgroup's threads, four to a row's 64 columns; hopper/row_widen.h):
/// its KV tiles take a multiple of it.
constexpr i64 kWidenedRowsPerPass = 32;
/// Query/key head dims whose fp8 keys the mma.sync kernels widen in
/// registers, straight from their swizzled stage (rows of whole pairs of
/// 16-byte chunks); other fp8 keys are widened through shared memory.
constexpr bool fp8KeysInRegisters(i64 qkDim) { return qkDim % 32 == 0; }
/// Rows of the transposed decode (transposed_decode.h): a token's GQA
/// group of at most this many query heads takes m16n8k16's n side.
constexpr i64 kTransposedDecodeRows = 8;
constexpr i64 kMinPageSize = 1;
constexpr i64 kMaxPageSize = 256;
/// Attention states one merge kernel combines (MergeParams' arrays).
constexpr i32 kMaxMergeStates = 32;
/// KV splits of one attention (a decision of attn-plan or an explicit
/// `kv_splits`): their merge passes a pointer per split, and with kMaxHeads
/// they fit the grid's y dimension.
constexpr i64 kMaxKVSplits = kMaxMergeStates;
/// Buffers captured by score_mod / mask_mod regions (AttnParams' array),
/// and the rank of each (a table per key, or per query and key).
constexpr i32 kMaxCaptures = 8;
constexpr i32 kMaxCaptureRank = 2;
/// Threads of one CTA.
constexpr i64 kMaxThreadsPerCta = 1024;
} // namespace limits

#if !ATTNC_IS_DEVICE
// Host-only: names for the IR, the emitter, the APIs and error messages.

#define ATTNC_KEYWORD(name, keyword, ...) keyword,
constexpr const char *kTokenLayoutKeywords[] = {
    ATTNC_TOKEN_LAYOUTS(ATTNC_KEYWORD)};
constexpr const char *kPageOrderKeywords[] = {ATTNC_PAGE_ORDERS(ATTNC_KEYWORD)};
constexpr const char *kDTypeKeywords[] = {ATTNC_DTYPES(ATTNC_KEYWORD)};
constexpr const char *kPartialTilesKeywords[] = {
    ATTNC_PARTIAL_TILES(ATTNC_KEYWORD)};
constexpr const char *kKVScalesKeywords[] = {ATTNC_KV_SCALES(ATTNC_KEYWORD)};
#undef ATTNC_KEYWORD
#define ATTNC_LAYOUT_SPELLING(name, ...) "attnc::TokenLayout::" #name,
constexpr const char *kTokenLayoutSpellings[] = {
    ATTNC_TOKEN_LAYOUTS(ATTNC_LAYOUT_SPELLING)};
#undef ATTNC_LAYOUT_SPELLING
#define ATTNC_ORDER_SPELLING(name, ...) "attnc::PageOrder::" #name,
constexpr const char *kPageOrderSpellings[] = {
    ATTNC_PAGE_ORDERS(ATTNC_ORDER_SPELLING)};
#undef ATTNC_ORDER_SPELLING
#define ATTNC_DTYPE_SPELLING(name, ...) "attnc::DType::" #name,
constexpr const char *kDTypeSpellings[] = {ATTNC_DTYPES(ATTNC_DTYPE_SPELLING)};
#undef ATTNC_DTYPE_SPELLING
#define ATTNC_PARTIAL_SPELLING(name, ...) "attnc::PartialTiles::" #name,
constexpr const char *kPartialTilesSpellings[] = {
    ATTNC_PARTIAL_TILES(ATTNC_PARTIAL_SPELLING)};
#undef ATTNC_PARTIAL_SPELLING
#define ATTNC_BYTES(name, keyword, bytes) bytes,
constexpr int kDTypeBytes[] = {ATTNC_DTYPES(ATTNC_BYTES)};
#undef ATTNC_BYTES

/// Bytes of one element of `type`.
inline int bytesOf(DType type) { return kDTypeBytes[int(type)]; }

namespace detail {
template <int N> const char *nameAt(const char *const (&names)[N], int i) {
  return i >= 0 && i < N ? names[i] : "";
}
inline bool sameText(const char *a, const char *b, unsigned long bLen) {
  unsigned long i = 0;
  for (; i < bLen; ++i)
    if (a[i] != b[i] || a[i] == '\0')
      return false;
  return a[i] == '\0';
}
template <typename Enum, int N>
bool lookup(const char *const (&names)[N], const char *text,
            unsigned long length, Enum &out) {
  for (int i = 0; i < N; ++i)
    if (sameText(names[i], text, length)) {
      out = Enum(i);
      return true;
    }
  return false;
}
} // namespace detail

/// The IR keyword of an enumerator ("paged"), or "" if out of range.
inline const char *keyword(TokenLayout v) {
  return detail::nameAt(kTokenLayoutKeywords, int(v));
}
inline const char *keyword(PageOrder v) {
  return detail::nameAt(kPageOrderKeywords, int(v));
}
inline const char *keyword(DType v) {
  return detail::nameAt(kDTypeKeywords, int(v));
}
inline const char *keyword(PartialTiles v) {
  return detail::nameAt(kPartialTilesKeywords, int(v));
}
inline const char *keyword(KVScales v) {
  return detail::nameAt(kKVScalesKeywords, int(v));
}

/// The qualified C++ enumerator ("attnc::TokenLayout::Paged") that the
/// emitter prints into a kernel's config.
inline const char *spelling(TokenLayout v) {
  return detail::nameAt(kTokenLayoutSpellings, int(v));
}
inline const char *spelling(PageOrder v) {
  return detail::nameAt(kPageOrderSpellings, int(v));
}
inline const char *spelling(DType v) {
  return detail::nameAt(kDTypeSpellings, int(v));
}
inline const char *spelling(PartialTiles v) {
  return detail::nameAt(kPartialTilesSpellings, int(v));
}

/// Parses an IR keyword (`text` of `length` characters, not necessarily
/// NUL-terminated); false if it names no enumerator.
inline bool parseKeyword(const char *text, unsigned long length,
                         TokenLayout &out) {
  return detail::lookup(kTokenLayoutKeywords, text, length, out);
}
inline bool parseKeyword(const char *text, unsigned long length,
                         PageOrder &out) {
  return detail::lookup(kPageOrderKeywords, text, length, out);
}
inline bool parseKeyword(const char *text, unsigned long length, DType &out) {
  return detail::lookup(kDTypeKeywords, text, length, out);
}
inline bool parseKeyword(const char *text, unsigned long length,
                         PartialTiles &out) {
  return detail::lookup(kPartialTilesKeywords, text, length, out);
}
#endif // !ATTNC_IS_DEVICE

} // namespace attnc

#endif // ATTNC_DEVICE_ABI_H
