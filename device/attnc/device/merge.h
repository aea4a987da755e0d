//===- merge.h - merging attention states ---------------------------------===//
//
// The state (out, lse) over a key set describes a partial attention fully;
// merging states over disjoint key sets is
//   lse = log(sum_i exp(lse_i)),  out = sum_i exp(lse_i - lse) * out_i.
// One warp merges one (token, head) row. Split-KV decode and attn.merge_states
// both end here.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_MERGE_H
#define ATTNC_DEVICE_MERGE_H

#include "attnc/device/math.h"
#include "attnc/device/mma.h"
#include "attnc/device/params.h"

namespace attnc {

ATTNC_DEVICE float loadElement(const float *p, i64 i) { return p[i]; }
template <typename T> ATTNC_DEVICE float loadElement(const T *p, i64 i) {
  return Mma<T>::unpackLo(reinterpret_cast<const u16 *>(p)[i]);
}
ATTNC_DEVICE void storeElement(float *p, i64 i, float v) { p[i] = v; }
template <typename T> ATTNC_DEVICE void storeElement(T *p, i64 i, float v) {
  reinterpret_cast<u16 *>(p)[i] = u16(Mma<T>::pack(v, 0.0f) & 0xffffu);
}

/// Merges `params.num_states` states of rows of `Dim` elements; InT and OutT
/// are the element types of the inputs and of the result.
template <typename InT, typename OutT, int Dim>
ATTNC_DEVICE void mergeStates(const MergeParams &params) {
  i64 row = i64(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= params.rows)
    return;
  float total = negInf();
  for (int i = 0; i < params.num_states; ++i)
    total = maxf(total, params.lses[i][row] * kLog2E);
  float base = total == negInf() ? 0.0f : total;
  float sum = 0.0f;
  for (int i = 0; i < params.num_states; ++i)
    sum += fastExp2(params.lses[i][row] * kLog2E - base);
  constexpr int perLane = (Dim + 31) / 32;
  float acc[perLane];
  for (int e = 0; e < perLane; ++e)
    acc[e] = 0.0f;
  for (int i = 0; i < params.num_states; ++i) {
    float weight =
        sum > 0.0f ? fastExp2(params.lses[i][row] * kLog2E - base) / sum : 0.0f;
    const InT *in = static_cast<const InT *>(params.outs[i]);
    if (weight == 0.0f)
      continue; // skips states without keys, whose output may be anything
    for (int e = 0; e < perLane; ++e) {
      int d = e * 32 + lane;
      if (d < Dim)
        acc[e] += weight * loadElement(in, row * Dim + d);
    }
  }
  OutT *out = static_cast<OutT *>(params.out);
  for (int e = 0; e < perLane; ++e) {
    int d = e * 32 + lane;
    if (d < Dim)
      storeElement(out, row * Dim + d, acc[e]);
  }
  if (params.lse && lane == 0)
    params.lse[row] = sum > 0.0f ? (base + fastLog2(sum)) * kLn2 : negInf();
}

} // namespace attnc

#endif // ATTNC_DEVICE_MERGE_H
