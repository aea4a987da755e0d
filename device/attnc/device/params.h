//===- params.h - launch parameters shared by host and device -------------===//
//
// One struct per kernel kind, passed by value as the only kernel argument.
// Host code fills it; the layout must not depend on the compiler, so every
// field is a fixed-width integer, a float or a pointer.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_PARAMS_H
#define ATTNC_DEVICE_PARAMS_H

#include "attnc/device/abi.h"

namespace attnc {

/// A buffer captured by a score_mod or mask_mod region: a strided view.
struct CaptureParams {
  const void *data;
  i64 sizes[limits::kMaxCaptureRank];
  i64 strides[limits::kMaxCaptureRank];
};

/// The variant's numbers, given at launch rather than compiled in, so that
/// variants differing only in them share one kernel (issue 49). Which of
/// them apply is structure, in the kernel's config (kHasWindowLeft,
/// kHasWindowRight, kHasSinks, kHasSoftcap); the others are unread.
struct VariantValues {
  i64 window_left;  // keys before a query's position that it sees
  i64 window_right; // keys after it
  i64 sinks;        // leading keys every query sees besides its window
  float scale;      // of the raw products; positive (the verifiers')
  float softcap;    // positive
  // Products of the two the inner loops take as operands: a score then
  // costs one FFMA with a parameter operand, as with a compiled-in
  // constant, not a product per tile on the softmax's path (3-4 % on P2
  // and P4, H200). Set by withScoreFactors.
  float scale_log2;   // scale x log2(e)
  float softcap_log2; // softcap x log2(e)
  float tanh_scale;   // scale / softcap (0 without a soft-cap)
};

/// `values` with its score factors set from its scale and soft-cap.
ATTNC_DEVICE VariantValues withScoreFactors(VariantValues values) {
  values.scale_log2 = values.scale * kLog2E;
  values.softcap_log2 = values.softcap * kLog2E;
  values.tanh_scale =
      values.softcap > 0.0f ? values.scale / values.softcap : 0.0f;
  return values;
}

/// Arguments of one attention launch. Tensors are contiguous:
/// q/out [tokens, heads, dim]; dense and ragged k/v [tokens, kv_heads, dim];
/// paged k/v pages of [page, kv_heads, dim] (nhd) or [kv_heads, page, dim]
/// (hnd), `*_page_stride` elements apart; lse [tokens, heads] in f32.
struct AttnParams {
  const void *q;
  const void *k;
  const void *v;
  void *out;
  float *lse;
  // Ragged requests: token offsets per request ([batch + 1]). Null for dense
  // tensors, whose requests are `q_len` / `kv_len` tokens apart.
  const i32 *q_indptr;
  const i32 *kv_indptr;
  // Paged keys and values: kv_indptr indexes page_indices per request.
  const i32 *page_indices;
  const i32 *last_page_len;
  i64 k_page_stride;
  i64 v_page_stride;
  // Dequantization scales of an fp8 cache: one f32, or one per KV head.
  const float *k_scale;
  const float *v_scale;
  // Document ids per token for `segments`.
  const i32 *q_segments;
  const i32 *kv_segments;
  i32 batch;
  i32 q_len;  // dense queries per request; the longest one when ragged
  i32 kv_len; // dense keys per request
  i32 num_splits;
  // Split-KV: partial states [split, tokens, heads, v_dim] and
  // [split, tokens, heads] in f32, merged by the merge kernel or, in a
  // kernel that merges its splits (split_merge.h), by the CTA that stores a
  // row block's last one or by the kernel's merge pass.
  float *partial_out;
  float *partial_lse;
  i64 partial_split_stride; // tokens * heads
  // A kernel that merges its splits in its launch: one arrival counter per
  // (request, KV head, row block), zero between launches (null for a merge
  // pass), and the visible key tiles of each split (0: every request's
  // tiles in `num_splits` even shares; more: a request takes as many splits
  // as its tiles need, at most num_splits).
  i32 *split_counters;
  i32 split_tiles;
  VariantValues values;
  CaptureParams captures[limits::kMaxCaptures];
};

/// Element offset of slot `slot` of KV head `head` from the start of a
/// page of `pageSize` slots, in the paged layouts above.
ATTNC_DEVICE i64 pagedSlotOffset(PageOrder order, int head, int slot,
                                 int pageSize, int kvHeads, int dim) {
  return order == PageOrder::HND ? (i64(head) * pageSize + slot) * dim
                                 : (i64(slot) * kvHeads + head) * dim;
}

/// Arguments of a merge of attention states over the same queries.
struct MergeParams {
  const void *outs[limits::kMaxMergeStates];
  const float *lses[limits::kMaxMergeStates];
  void *out;
  float *lse; // may be null
  i32 num_states;
  i64 rows; // tokens * heads
};

} // namespace attnc

#endif // ATTNC_DEVICE_PARAMS_H
