//===- Program.h - what the host runs: buffers and kernel launches -*- C++
//-*-===//
//
// The compiler's host-side output: the function's values (descriptor types
// reduced to what a launcher needs) and the ordered kernel launches over
// them. It is plain data with a line-based text form, so a cached compile
// needs no MLIR to run.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_EXEC_PROGRAM_H
#define ATTNC_RUNTIME_EXEC_PROGRAM_H

#include "attnc/Status.h"
#include "attnc/device/abi.h"
#include "attnc/device/params.h"
#include "attnc/device/schedules.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnc {

/// One value of the compiled function.
struct ValueSpec {
  enum class Kind { Query, KV, Output, Lse, Buffer } kind = Kind::Query;
  int64_t seqLen = -1; // per request; -1 when dynamic
  int64_t heads = 0, dim = 0;
  DType dtype = DType::BF16;
  TokenLayout layout = TokenLayout::Dense;
  int64_t pageSize = 0;
  PageOrder pageOrder = PageOrder::NHD;
  std::vector<int64_t> shape; // buffers (memrefs): -1 for dynamic sizes
};

struct LaunchSpec {
  enum class Kind { Attention, Merge } kind = Kind::Attention;
  std::string kernel;
  int64_t threads = 128, smem = 0, blockM = 16, kvSplits = 1;
  /// Keys per tile of an attention launch: the unit its splits cut.
  int64_t blockN = 64;
  std::vector<int> args, results;
  // Attention launches.
  /// The kernel's schedule: what the executor knows of its grid comes from
  /// its row of the table (attnc/device/schedules.h).
  Schedule schedule = Schedule::Decode;
  int64_t group = 1, kvHeads = 1;
  /// Query heads whose rows one CTA holds: the GQA group (mma.sync
  /// schedules) or 1 (warp-specialized); the grid has a y per row block.
  int64_t packedHeads = 1;
  /// Rows of the tensor-map boxes the kernel loads Q and K/V tiles in;
  /// 0 for kernels that take no tensor maps.
  int64_t qBoxRows = 0, kvBoxRows = 0;
  bool hasLse = false, segments = false;
  /// Whether buffers after the segment ids are an fp8 cache's key and
  /// value scales.
  bool kvScales = false;
  /// Whether the results are split-KV partial states for a merge.
  bool splitResults = false;
  /// Whether a split-KV kernel merges its own splits: its results are
  /// final, its partial states (and arrival counters, unless it merges in
  /// a second launch) a workspace.
  bool mergesSplits = false;
  /// Whether it merges them in a second launch of itself, its merge pass
  /// (attn_gpu::PlanAttr::mergesInSecondLaunch), when a run splits.
  bool mergesInSecondLaunch = false;
  /// Whether its kernel waits on the grids before it before touching
  /// memory, so that it may be launched to overlap the kernel before it
  /// (attn_gpu::PlanAttr::overlapsPreviousLaunch).
  bool overlapsPreviousLaunch = false;
  /// Whether a persistent kernel's CTAs claim their work items with two
  /// counters in its workspace (attn_gpu::PlanAttr::claimsItems).
  bool claimsItems = false;
  /// CTAs per cluster of a latent kernel that shares its loads
  /// (attn_gpu::PlanAttr's cluster_ctas): its grid is a multiple of it.
  int64_t clusterCtas = 1;
  /// The variant's numbers, which its kernel reads at launch (params.h).
  VariantValues values = withScoreFactors({-1, -1, 0, 1.0f, 0.0f});
};

struct Program {
  std::vector<ValueSpec> values;
  std::vector<int> inputs, outputs;
  std::vector<LaunchSpec> launches;

  std::string serialize() const;
  static StatusOr<Program> deserialize(const std::string &text);
};

} // namespace attnc

#endif // ATTNC_RUNTIME_EXEC_PROGRAM_H
