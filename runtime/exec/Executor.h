//===- Executor.h - launch a compiled program on the GPU --------*- C++ -*-===//
//
// Binds a Program's values to device memory, allocates what the launches
// produce internally (split-KV partial states), chooses the number of KV
// splits per launch from the batch and the GPU, fills each kernel's
// parameter struct and launches the kernels in order on one stream.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_EXEC_EXECUTOR_H
#define ATTNC_RUNTIME_EXEC_EXECUTOR_H

#include "attnc/device/hopper/params.h"
#include "cuda/CudaDriver.h"
#include "exec/KVSplits.h"
#include "exec/Program.h"

#include <map>
#include <string>
#include <vector>

namespace attnc {

/// Where the requests of a batch are: the same for every layer of a model.
struct BatchLayout {
  int batch = 1;
  int qLen = 1;        // queries per request (dense), the most (ragged)
  int kvLen = 0;       // keys per request (dense), the most otherwise
  int64_t qTokens = 0; // rows of q, out and lse: all requests' queries
  /// Rows of contiguous k and v (dense: batch x kvLen; ragged: the last
  /// kv_indptr), which bound the tensor maps of TMA kernels; 0 until
  /// Executor::resolveKVTokens reads it.
  int64_t kvTokens = 0;
  cuda::CUdeviceptr qIndptr = 0;            // ragged queries: [batch + 1]
  cuda::CUdeviceptr kvIndptr = 0;           // ragged keys: tokens; paged: pages
  cuda::CUdeviceptr pageIndices = 0;        // paged
  cuda::CUdeviceptr lastPageLen = 0;        // paged: [batch]
  int64_t kPageStride = 0, vPageStride = 0; // elements; 0: contiguous pages
};

/// Whether `layout` fits what `program`'s kernels hold (grid dimensions,
/// 32-bit row and position indices): checked by Executor::run, and by plans
/// before they touch the GPU.
Status checkLayout(const Program &program, const BatchLayout &layout);

/// Device memory of each value: inputs and outputs set by the caller.
struct Binding {
  std::vector<cuda::CUdeviceptr> values;
  /// Sizes of buffer values (segments, captures), dynamic sizes resolved.
  std::vector<std::vector<int64_t>> bufferSizes;
  /// The workspace of each launch that has one (by launch index) and its
  /// bytes: set by a plan, or allocated on the first run.
  std::map<int, std::pair<cuda::CUdeviceptr, size_t>> workspaces;
};

/// A loaded module and its kernels.
class LoadedModule {
public:
  static StatusOr<LoadedModule> load(cuda::Driver &driver,
                                     const std::string &cubin);
  StatusOr<cuda::CUfunction> function(const std::string &name, int64_t smem);
  /// CTAs of kernel `name` the whole GPU holds at once (its occupancy per
  /// multiprocessor times their count): a persistent launch's grid.
  StatusOr<int64_t> residentCtas(const std::string &name, int64_t threads,
                                 int64_t smem);

  /// What a launch needs of its kernel at run time. A module holds one
  /// program's kernels (its cubin's), so its launches are numbered by that
  /// program's launch index.
  struct ResolvedLaunch {
    cuda::CUfunction function = nullptr;
    /// residentCtas of the kernel; 0 where no run needs it (launches that
    /// neither split keys nor walk a work order).
    int64_t residentCtas = 0;
  };
  /// Launch `index`'s resolution, or null before Executor::resolveKernels
  /// has set them: a run then reads its kernel by index, without the name
  /// lookups above (string compares in a map) on every launch.
  const ResolvedLaunch *resolved(int index) const {
    return size_t(index) < resolved_.size() ? &resolved_[index] : nullptr;
  }

private:
  friend class Executor;
  cuda::Driver *driver_ = nullptr;
  cuda::CUmodule module_ = nullptr;
  std::map<std::string, cuda::CUfunction> functions_;
  std::map<std::string, int64_t> residentCtas_;
  /// Set once, by the first resolveKernels, before any run can read it
  /// (a run needs a plan, and a plan resolves first); never written after,
  /// so runs on several threads read it without a lock.
  std::vector<ResolvedLaunch> resolved_;
};

class Executor {
public:
  Executor(cuda::Driver &driver, const Program &program, LoadedModule &module)
      : driver_(driver), program_(program), module_(module) {}

  /// Runs every launch. `splits` > 0 forces the number of KV splits of
  /// split-KV launches (tests use it to cover 1..max); 0 lets the GPU's
  /// size and the batch decide. `gridCtas` > 0 caps the CTAs of persistent
  /// (warp-specialized) launches, so that tests make each CTA walk many
  /// items and benchmarks compare grids; 0 launches as many as the GPU
  /// holds at once.
  Status run(const BatchLayout &layout, Binding &binding,
             cuda::CUstream stream = nullptr, int splits = 0,
             int64_t gridCtas = 0);

  /// How a launch would split `layout`'s keys.
  KVSplits chooseSplits(const LaunchSpec &launch,
                        const BatchLayout &layout) const;

  /// Bytes of every value the launches produce for `layout` with the splits
  /// they would choose: what a caller binds (outputs) or a plan allocates
  /// once (intermediate states), so that `run` allocates nothing.
  std::map<int, size_t> resultBytes(const BatchLayout &layout) const;

  /// Bytes of the workspace of each launch that needs one for `layout`
  /// (by launch index): a kernel that merges its own splits keeps their
  /// partial states there (and its arrival counters, unless it merges in a
  /// second launch), a prefill kernel whose CTAs claim their items its claim
  /// counters. The counters must be zero before the first launch; the
  /// kernel leaves them at zero.
  std::map<int, size_t> workspaceBytes(const BatchLayout &layout) const;

  /// Resolves every kernel (and its shared-memory limit and occupancy)
  /// ahead of `run`, and records them in the module by launch index
  /// (LoadedModule::resolved) the first time.
  Status resolveKernels();

  /// Sets `layout.kvTokens` where a kernel loads k and v through tensor
  /// maps: from the dense shape, or, for ragged keys whose caller did not
  /// give it, by reading the last kv_indptr from the device (a synchronous
  /// copy: plan time, never in `run`).
  Status resolveKVTokens(BatchLayout &layout) const;

private:
  /// chooseSplits on a GPU that holds `residentCtas` of the launch's CTAs
  /// at once.
  KVSplits splitsFor(const LaunchSpec &launch, const BatchLayout &layout,
                     int64_t residentCtas) const;
  Status launchAttention(int launchIndex, const BatchLayout &layout,
                         Binding &binding, cuda::CUstream stream, int splits,
                         int64_t gridCtas);
  Status launchMerge(int launchIndex, const BatchLayout &layout,
                     Binding &binding, cuda::CUstream stream);
  Status ensureBuffer(int value, size_t bytes, Binding &binding);
  /// The workspace of launch `launch` in `base`, allocated (and zeroed)
  /// if the binding has none.
  Status ensureWorkspace(int launch, size_t bytes, Binding &binding,
                         cuda::CUdeviceptr &base);
  /// A launch's workspace, each part's bytes: a merging launch's partial
  /// outputs, partial LSEs and arrival counters, then a claiming launch's
  /// two item-claim counters (WorkOrder::claims).
  struct LaunchWorkspace {
    size_t outs = 0, lses = 0, counters = 0, claims = 0;
    size_t total() const { return outs + lses + counters + claims; }
  };
  LaunchWorkspace launchWorkspace(const LaunchSpec &launch,
                                  const BatchLayout &layout, int splits) const;
  /// The work items of a warp-specialized launch and their order.
  WorkOrder workOrder(const LaunchSpec &launch, const BatchLayout &layout,
                      int splits, const ValueSpec &key,
                      const ValueSpec &value) const;
  Status encodeOperandMaps(const LaunchSpec &launch, const BatchLayout &layout,
                           const ValueSpec &query, const ValueSpec &key,
                           const ValueSpec &value, TmaAttnParams &params);
  size_t attentionResultBytes(const LaunchSpec &launch, int result,
                              const BatchLayout &layout, int splits) const;
  size_t mergeResultBytes(const LaunchSpec &launch, int result,
                          const BatchLayout &layout) const;

  cuda::Driver &driver_;
  const Program &program_;
  LoadedModule &module_;
  std::map<int, cuda::DeviceBuffer> owned_;
  std::map<int, cuda::DeviceBuffer> ownedWorkspaces_; // by launch index
  /// Partial-state value -> the splits it holds, for a merge launch that
  /// reads one split attention's states (only launches with splitResults
  /// record theirs: any other attention's results are one state).
  std::map<int, int> statesOf_;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_EXEC_EXECUTOR_H
