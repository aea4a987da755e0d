//===- hopper/params.h - launch parameters of the TMA schedules ----------===//
//
// Kernels that load through the bulk tensor copy engine take the tensor
// maps of their operands beside the ordinary attention arguments, in one
// struct passed as `const __grid_constant__`, so the maps stay in
// parameter space where TMA may read them. The host encodes the maps
// (runtime/cuda/TensorMap.h) for the pointers of each run.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_PARAMS_H
#define ATTNC_DEVICE_HOPPER_PARAMS_H

#include "attnc/device/hopper/tma.h"
#include "attnc/device/hopper/work_order.h"
#include "attnc/device/params.h"

namespace attnc {

struct TmaAttnParams {
  hopper::TensorMap q; // [q tokens, heads, dim], boxes of one consumer's rows
  hopper::TensorMap k; // [kv tokens, kv heads, dim], boxes of one KV tile
  hopper::TensorMap v; // [kv tokens, kv heads, v dim], likewise
  AttnParams attn;
  WorkOrder order; // the items the CTAs walk (work_order.h)
  /// Nonzero in the second launch of a latent kernel that merges its own
  /// splits: the launch merges the partial states the first one stored
  /// (hopper/latent.h).
  i32 merge_pass;
};

} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_PARAMS_H
