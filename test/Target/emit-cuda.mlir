// RUN: attnc compile %s --emit=cuda | FileCheck %s

// MLIR's C++ printer turns the device file into CUDA C++ for NVRTC: the
// tile library's headers, the configuration struct (the compiler's decisions,
// the shared-memory size and mask classification among them, in the ABI's
// enums) and the entry point. The decode kernel (a GQA group of 4: the
// transposed CTA, 8 rows) merges its own KV splits (up to the plan's 16):
// there is no merge kernel.
// CHECK-NOT: #include "attnc/device/attention.h"
// CHECK: #include "attnc/device/transposed_decode.h"
// CHECK: struct attention_config {
// CHECK: using Elem = attnc::bf16;
// CHECK: using Out = attnc::bf16;
// CHECK: static constexpr int kBlockM = 8;
// CHECK: static constexpr int kKVSplits = 16;
// CHECK: static constexpr int kSmemBytes = [[SMEM:[0-9]+]];
// CHECK: static constexpr attnc::TokenLayout kKVLayout = attnc::TokenLayout::Paged;
// CHECK: static constexpr int kPageSize = 16;
// CHECK: static constexpr attnc::PageOrder kPageOrder = attnc::PageOrder::NHD;
// CHECK: static constexpr attnc::PartialTiles kPartialTiles = attnc::PartialTiles::Edges;
// CHECK: static constexpr bool kMergeSplits = true;
// CHECK: extern "C" __global__ __launch_bounds__(128, 1) void attention(const attnc::AttnParams [[P:v[0-9]+]]) {
// CHECK: extern __shared__ __align__(16) char attnc_smem[];
// CHECK: attnc::TransposedDecodeCta<attention_config> cta;
// CHECK: bool [[LIVE:v[0-9]+]] = cta.begin([[P]], attnc_smem);
// CHECK: if ([[LIVE]]) {
// CHECK: for (int32_t [[T:i[0-9]+]] =
// CHECK: cta.waitTile([[T]]);
// CHECK: cta.scores([[T]]);
// CHECK: cta.onlineSoftmax();
// CHECK: cta.accumulateValues([[T]]);
// CHECK: cta.finish();
// CHECK-NEXT: cta.mergeSplits();
// CHECK-NOT: mergeStates
func.func @decode(%q: !attn.q<1x32x128xbf16>, %k: !attn.kv<?x8x128xbf16, paged<16, nhd>>,
                  %v: !attn.kv<?x8x128xbf16, paged<16, nhd>>) -> !attn.out<1x32x128xbf16> {
  %out = attn.attention(%q, %k, %v)
      : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16, paged<16, nhd>>, !attn.kv<?x8x128xbf16, paged<16, nhd>>
      -> !attn.out<1x32x128xbf16>
  return %out : !attn.out<1x32x128xbf16>
}
