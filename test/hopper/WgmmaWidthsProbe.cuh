//===- WgmmaWidthsProbe.cuh - every wgmma width, assembled once ----------===//
//
// Compiled by the SASS check, never launched: instantiates wgmmaSS and
// wgmmaRS for every N of wgmma_widths.h in bf16 and f16, so that a wrong
// operand spelling for a width no kernel uses yet fails in CI (as an NVRTC
// or ptxas error, or a missing HGMMA) instead of in a later kernel.
//
//===----------------------------------------------------------------------===//
#include "attnc/device/hopper/wgmma.h"

namespace attnc {
namespace hopper_test {

template <typename T, int N>
__device__ __forceinline__ float probeWidth(u64 a, u64 b, u32 bits) {
  using namespace hopper;
  Accumulator<N> acc;
  zero(acc);
  AFragment fragment = {{bits, bits ^ 1u, bits ^ 2u, bits ^ 3u}};
  wgmmaFence();
  wgmmaSS<T, 0>(acc, a, b, 0);
  wgmmaRS<T, 1>(acc, fragment, b, 1);
  wgmmaCommit();
  wgmmaWait<0>(acc);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < Accumulator<N>::kRegs; ++i)
    sum += acc.d[i];
  return sum;
}

template <typename T>
__device__ __forceinline__ float probeAll(u64 a, u64 b, u32 bits) {
  float sum = 0.0f;
#define ATTNC_PROBE(N) sum += probeWidth<T, N>(a, b + N, bits);
  ATTNC_WGMMA_WIDTHS(ATTNC_PROBE)
#undef ATTNC_PROBE
  return sum;
}

} // namespace hopper_test
} // namespace attnc

extern "C" __global__ void __launch_bounds__(128, 1)
    wgmma_widths_probe(attnc::u64 a, attnc::u64 b, attnc::u32 bits,
                       float *out) {
  out[threadIdx.x] = attnc::hopper_test::probeAll<attnc::bf16>(a, b, bits) +
                     attnc::hopper_test::probeAll<attnc::f16>(a, b, bits);
}
