//===- captures.h - reading buffers captured by score_mod and mask_mod ----===//
//
// The regions of score_mod and mask_mod may read buffers the variant
// captures (`captures(...)`); their emitted code calls loadCapture, in
// every schedule.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_CAPTURES_H
#define ATTNC_DEVICE_CAPTURES_H

#include "attnc/device/params.h"
#include "attnc/device/prelude.h"

namespace attnc {

#if ATTNC_IS_DEVICE

/// Element `idx...` of captured buffer `k` (a strided view).
template <typename T, typename... Index>
ATTNC_DEVICE T loadCapture(const AttnParams *p, int k, Index... idx) {
  const CaptureParams &view = p->captures[k];
  i64 offset = 0;
  int dim = 0;
  ((offset += i64(idx) * view.strides[dim++]), ...);
  return static_cast<const T *>(view.data)[offset];
}

#endif // ATTNC_IS_DEVICE

} // namespace attnc

#endif // ATTNC_DEVICE_CAPTURES_H
