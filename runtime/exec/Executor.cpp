//===- Executor.cpp - launch a compiled program on the GPU ----------------===//

#include "exec/Executor.h"

#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/params.h"
#include "cuda/TensorMap.h"
#include "exec/KVSplits.h"
#include "exec/WorkOrder.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

namespace attnc {

StatusOr<LoadedModule> LoadedModule::load(cuda::Driver &driver,
                                          const std::string &cubin) {
  StatusOr<cuda::CUmodule> module = driver.loadModule(cubin.data());
  if (!module.ok())
    return module.status();
  LoadedModule loaded;
  loaded.driver_ = &driver;
  loaded.module_ = *module;
  return loaded;
}

StatusOr<cuda::CUfunction> LoadedModule::function(const std::string &name,
                                                  int64_t smem) {
  auto it = functions_.find(name);
  if (it != functions_.end())
    return it->second;
  StatusOr<cuda::CUfunction> function = driver_->getFunction(module_, name);
  if (!function.ok())
    return function.status();
  if (smem > 48 * 1024)
    if (Status s = driver_->setSharedMemory(*function, int(smem)); !s.ok())
      return s;
  functions_[name] = *function;
  return *function;
}

StatusOr<int64_t> LoadedModule::residentCtas(const std::string &name,
                                             int64_t threads, int64_t smem) {
  auto it = residentCtas_.find(name);
  if (it != residentCtas_.end())
    return it->second;
  StatusOr<cuda::CUfunction> function = this->function(name, smem);
  if (!function.ok())
    return function.status();
  StatusOr<int> perSm =
      driver_->residentBlocks(*function, int(threads), int(smem));
  if (!perSm.ok())
    return perSm.status();
  int64_t ctas = int64_t(*perSm) * driver_->device().multiprocessors;
  residentCtas_[name] = ctas;
  return ctas;
}

Status Executor::ensureBuffer(int value, size_t bytes, Binding &binding) {
  if (binding.values[value])
    return Status();
  StatusOr<cuda::DeviceBuffer> buffer =
      cuda::DeviceBuffer::allocate(driver_, bytes);
  if (!buffer.ok())
    return buffer.status();
  binding.values[value] = buffer->get();
  owned_[value] = std::move(*buffer);
  return Status();
}

/// Row blocks of the longest request: CTAs along the grid's x, or the
/// row blocks of a persistent launch's work order.
static int64_t rowBlocks(const LaunchSpec &launch, const BatchLayout &layout) {
  return (int64_t(layout.qLen) * launch.packedHeads + launch.blockM - 1) /
         launch.blockM;
}

/// Groups of query heads, each a CTA's rows: the grid's y per split.
static int64_t headBlocks(const LaunchSpec &launch) {
  return launch.kvHeads * launch.group / launch.packedHeads;
}

/// (request, query-head group, KV split) units: a work order's items are
/// these times the row blocks.
static int64_t workUnits(const LaunchSpec &launch, const BatchLayout &layout,
                         int64_t splits) {
  return int64_t(layout.batch) * headBlocks(launch) * splits;
}

/// The warp-specialized schedules' CTAs are persistent and walk a work
/// order (and load through tensor maps).
static bool walksWorkOrder(const LaunchSpec &launch) {
  return traits(launch.schedule).has(schedule_feature::WarpSpecialized);
}

Status checkLayout(const Program &program, const BatchLayout &layout) {
  auto invalid = [](const std::string &message) {
    return Status::error(ErrorCode::InvalidArgument, message);
  };
  // The batch indexes the grid's z dimension.
  if (layout.batch < 0 || layout.batch > 65535)
    return invalid("the batch must have 0 to 65535 requests, got " +
                   std::to_string(layout.batch));
  if (layout.qLen < 0 || layout.kvLen < 0 || layout.qTokens < 0)
    return invalid("query and key lengths and query tokens must be "
                   "non-negative");
  for (const LaunchSpec &launch : program.launches) {
    if (launch.kind != LaunchSpec::Kind::Attention)
      continue;
    // A request's rows (queries x the GQA group) are 32-bit on the device.
    if (int64_t(layout.qLen) * launch.group > limits::kMaxSeqLen)
      return invalid("a request's queries times the GQA group (" +
                     std::to_string(layout.qLen) + " x " +
                     std::to_string(launch.group) + ") exceed " +
                     std::to_string(limits::kMaxSeqLen));
    // A work order numbers its items in 32 bits on the device.
    int64_t items =
        rowBlocks(launch, layout) * workUnits(launch, layout, launch.kvSplits);
    if (walksWorkOrder(launch) && items > limits::kMaxSeqLen)
      return invalid("the batch has " + std::to_string(items) +
                     " work items (row blocks x query heads x KV splits x "
                     "requests); the most is " +
                     std::to_string(limits::kMaxSeqLen));
  }
  return Status();
}

/// Launches whose CTAs split each request's keys.
static bool splitsKeys(const LaunchSpec &launch) {
  return launch.splitResults || launch.mergesSplits;
}

Status Executor::ensureWorkspace(int launch, size_t bytes, Binding &binding,
                                 cuda::CUdeviceptr &base) {
  if (auto held = binding.workspaces.find(launch);
      held != binding.workspaces.end()) {
    // A launch split differently from the plan's would overrun it.
    if (held->second.second < bytes)
      return Status::error(ErrorCode::InvalidArgument,
                           "launch " + std::to_string(launch) + " needs " +
                               std::to_string(bytes) +
                               " bytes of split workspace, its plan holds " +
                               std::to_string(held->second.second));
    base = held->second.first;
    return Status();
  }
  StatusOr<cuda::DeviceBuffer> buffer =
      cuda::DeviceBuffer::allocate(driver_, bytes);
  if (!buffer.ok())
    return buffer.status();
  // The arrival counters start at zero (and the kernel leaves them there);
  // the fill completes before any stream's launch reads them.
  if (Status s = driver_.fill(buffer->get(), 0, bytes); !s.ok())
    return s;
  if (Status s = driver_.synchronize(); !s.ok())
    return s;
  base = buffer->get();
  binding.workspaces[launch] = {base, bytes};
  ownedWorkspaces_[launch] = std::move(*buffer);
  return Status();
}

KVSplits Executor::chooseSplits(const LaunchSpec &launch,
                                const BatchLayout &layout) const {
  if (!splitsKeys(launch))
    return {};
  // resolveKernels has measured the occupancy; one CTA per multiprocessor
  // stands in for a kernel it could not load.
  StatusOr<int64_t> resident =
      module_.residentCtas(launch.kernel, launch.threads, launch.smem);
  return splitsFor(launch, layout,
                   resident.ok() ? *resident
                                 : driver_.device().multiprocessors);
}

KVSplits Executor::splitsFor(const LaunchSpec &launch,
                             const BatchLayout &layout, int64_t slots) const {
  if (!splitsKeys(launch))
    return {};
  int64_t ctas = rowBlocks(launch, layout) * headBlocks(launch) * layout.batch;
  int64_t tile = std::max<int64_t>(launch.blockN, 1);
  int64_t keyTiles = (int64_t(layout.kvLen) + tile - 1) / tile;
  // Every request's last tile may be partial: at most one more each.
  int64_t totalKeyTiles =
      layout.kvTokens > 0 ? layout.kvTokens / tile + layout.batch : 0;
  // Requests of a ragged batch take only the splits their keys need where
  // a CTA past its request's last split stores nothing; a merge pass reads
  // every split's state, so there every split stores one.
  return chooseKVSplits(ctas, slots, keyTiles, launch.kvSplits, layout.batch,
                        totalKeyTiles,
                        launch.mergesSplits && !launch.mergesInSecondLaunch);
}

Executor::LaunchWorkspace Executor::launchWorkspace(const LaunchSpec &launch,
                                                    const BatchLayout &layout,
                                                    int splits) const {
  LaunchWorkspace workspace;
  if (launch.claimsItems)
    workspace.claims = 2 * sizeof(int32_t);
  if (!launch.mergesSplits)
    return workspace;
  const ValueSpec &out = program_.values[launch.results[0]];
  size_t rows = size_t(layout.qTokens) * out.heads;
  workspace.outs = size_t(splits) * rows * out.dim * sizeof(float);
  workspace.lses = size_t(splits) * rows * sizeof(float);
  // A counter per (request, head group, row block): the grid's CTAs of one
  // split; none where a merge pass merges them.
  if (!launch.mergesInSecondLaunch)
    workspace.counters = size_t(layout.batch) * headBlocks(launch) *
                         rowBlocks(launch, layout) * sizeof(int32_t);
  return workspace;
}

std::map<int, size_t>
Executor::workspaceBytes(const BatchLayout &layout) const {
  std::map<int, size_t> bytes;
  for (int i = 0; i < int(program_.launches.size()); ++i) {
    const LaunchSpec &launch = program_.launches[i];
    if (launch.kind != LaunchSpec::Kind::Attention)
      continue;
    size_t total = launchWorkspace(launch, layout,
                                   int(chooseSplits(launch, layout).splits))
                       .total();
    if (total > 0)
      bytes[i] = total;
  }
  return bytes;
}

size_t Executor::attentionResultBytes(const LaunchSpec &launch, int result,
                                      const BatchLayout &layout,
                                      int splits) const {
  const ValueSpec &out = program_.values[launch.results[0]];
  size_t rows = size_t(layout.qTokens) * out.heads;
  size_t copies = launch.splitResults ? size_t(splits) : 1;
  return result == 0 ? copies * rows * out.dim * bytesOf(out.dtype)
                     : copies * rows * sizeof(float);
}

size_t Executor::mergeResultBytes(const LaunchSpec &launch, int result,
                                  const BatchLayout &layout) const {
  const ValueSpec &out = program_.values[launch.results[0]];
  size_t rows = size_t(layout.qTokens) * out.heads;
  return result == 0 ? rows * out.dim * bytesOf(out.dtype)
                     : rows * sizeof(float);
}

std::map<int, size_t> Executor::resultBytes(const BatchLayout &layout) const {
  std::map<int, size_t> bytes;
  for (const LaunchSpec &launch : program_.launches)
    for (int r = 0; r < int(launch.results.size()); ++r)
      bytes[launch.results[r]] =
          launch.kind == LaunchSpec::Kind::Attention
              ? attentionResultBytes(launch, r, layout,
                                     int(chooseSplits(launch, layout).splits))
              : mergeResultBytes(launch, r, layout);
  return bytes;
}

Status Executor::resolveKernels() {
  std::vector<LoadedModule::ResolvedLaunch> resolved;
  resolved.reserve(program_.launches.size());
  for (const LaunchSpec &launch : program_.launches) {
    LoadedModule::ResolvedLaunch &r = resolved.emplace_back();
    StatusOr<cuda::CUfunction> function = module_.function(
        launch.kernel,
        launch.kind == LaunchSpec::Kind::Attention ? launch.smem : 0);
    if (!function.ok())
      return function.status();
    r.function = *function;
    if (walksWorkOrder(launch) || splitsKeys(launch)) {
      StatusOr<int64_t> ctas =
          module_.residentCtas(launch.kernel, launch.threads, launch.smem);
      if (!ctas.ok())
        return ctas.status();
      r.residentCtas = *ctas;
    }
  }
  // Every plan resolves; only the first records, so that a later plan
  // never writes what runs on other threads read.
  if (module_.resolved_.empty())
    module_.resolved_ = std::move(resolved);
  return Status();
}

WorkOrder Executor::workOrder(const LaunchSpec &launch,
                              const BatchLayout &layout, int splits,
                              const ValueSpec &key,
                              const ValueSpec &value) const {
  // A KV head's bytes are the longest request's keys and values.
  int64_t kvHeadBytes =
      int64_t(layout.kvLen) *
      (key.dim * bytesOf(key.dtype) + value.dim * bytesOf(value.dtype));
  return makeWorkOrder(rowBlocks(launch, layout),
                       workUnits(launch, layout, splits), launch.group * splits,
                       kvHeadBytes, driver_.device().l2CacheBytes);
}

Status Executor::run(const BatchLayout &layout, Binding &binding,
                     cuda::CUstream stream, int splits, int64_t gridCtas) {
  if (Status status = checkLayout(program_, layout); !status.ok())
    return status;
  binding.values.resize(program_.values.size(), 0);
  binding.bufferSizes.resize(program_.values.size());
  for (int i = 0; i < int(program_.launches.size()); ++i) {
    const LaunchSpec &launch = program_.launches[i];
    Status s =
        launch.kind == LaunchSpec::Kind::Attention
            ? launchAttention(i, layout, binding, stream, splits, gridCtas)
            : launchMerge(i, layout, binding, stream);
    if (!s.ok())
      return s;
  }
  return Status();
}

Status Executor::launchAttention(int launchIndex, const BatchLayout &layout,
                                 Binding &binding, cuda::CUstream stream,
                                 int forcedSplits, int64_t gridCtas) {
  const LaunchSpec &launch = program_.launches[launchIndex];
  AttnParams p;
  std::memset(&p, 0, sizeof(p));
  const ValueSpec *query = nullptr, *key = nullptr, *value = nullptr;
  int buffers = 0;
  for (int arg : launch.args) {
    const ValueSpec &spec = program_.values[arg];
    void *ptr = reinterpret_cast<void *>(binding.values[arg]);
    if (!ptr)
      return Status::error(ErrorCode::InvalidArgument,
                           "input " + std::to_string(arg) + " is not bound");
    switch (spec.kind) {
    case ValueSpec::Kind::Query:
      query = &spec;
      p.q = ptr;
      break;
    case ValueSpec::Kind::KV:
      (key ? value : key) = &spec;
      (p.k ? p.v : p.k) = ptr;
      break;
    case ValueSpec::Kind::Buffer: {
      // Segment ids, then scales, then captures: the operands' order.
      int index = buffers++;
      if (launch.segments && index < 2) {
        (index == 0 ? p.q_segments : p.kv_segments) =
            static_cast<const i32 *>(ptr);
        break;
      }
      index -= launch.segments ? 2 : 0;
      if (launch.kvScales && index < 2) {
        (index == 0 ? p.k_scale : p.v_scale) = static_cast<const float *>(ptr);
        break;
      }
      int capture = index - (launch.kvScales ? 2 : 0);
      if (capture >= limits::kMaxCaptures)
        return Status::error(ErrorCode::Internal,
                             "more captured buffers than the verifier allows");
      CaptureParams &view = p.captures[capture];
      view.data = ptr;
      const std::vector<int64_t> &sizes = binding.bufferSizes[arg];
      if (sizes.size() != spec.shape.size() ||
          sizes.size() > size_t(limits::kMaxCaptureRank))
        return Status::error(ErrorCode::InvalidArgument,
                             "captured buffer " + std::to_string(capture) +
                                 " needs its sizes");
      int64_t stride = 1;
      for (int d = int(sizes.size()) - 1; d >= 0; --d) {
        view.sizes[d] = sizes[d];
        view.strides[d] = stride;
        stride *= sizes[d];
      }
      break;
    }
    default:
      return Status::error(ErrorCode::Internal, "unexpected launch argument");
    }
  }
  if (!query || !key)
    return Status::error(ErrorCode::Internal, "attention without q or k");
  if (!value) {
    value = key;
    p.v = p.k;
  }
  if (query->layout == TokenLayout::Ragged && !layout.qIndptr)
    return Status::error(ErrorCode::InvalidArgument,
                         "ragged queries need q_indptr");
  if (key->layout != TokenLayout::Dense && !layout.kvIndptr)
    return Status::error(ErrorCode::InvalidArgument,
                         "ragged or paged keys need kv_indptr");
  if (key->layout == TokenLayout::Paged &&
      (!layout.pageIndices || !layout.lastPageLen))
    return Status::error(ErrorCode::InvalidArgument,
                         "paged keys need page indices and last page lengths");
  p.q_indptr = reinterpret_cast<const i32 *>(layout.qIndptr);
  p.kv_indptr = reinterpret_cast<const i32 *>(layout.kvIndptr);
  p.page_indices = reinterpret_cast<const i32 *>(layout.pageIndices);
  p.last_page_len = reinterpret_cast<const i32 *>(layout.lastPageLen);
  int64_t pageElems = key->pageSize * key->heads * key->dim;
  p.k_page_stride = layout.kPageStride ? layout.kPageStride : pageElems;
  p.v_page_stride = layout.vPageStride
                        ? layout.vPageStride
                        : value->pageSize * value->heads * value->dim;
  p.batch = layout.batch;
  p.q_len = layout.qLen;
  p.kv_len = layout.kvLen;
  p.values = launch.values;

  // The kernel and its occupancy as the plan resolved them (no name
  // lookups), or by name for an executor whose module was never resolved.
  const LoadedModule::ResolvedLaunch *resolved = module_.resolved(launchIndex);
  KVSplits cut =
      forcedSplits > 0 && splitsKeys(launch)
          ? KVSplits{std::min<int64_t>(forcedSplits, launch.kvSplits), 0}
      : resolved && resolved->residentCtas > 0
          ? splitsFor(launch, layout, resolved->residentCtas)
          : chooseSplits(launch, layout);
  int splits = int(cut.splits);
  p.num_splits = splits;
  p.split_tiles = i32(cut.tilesPerSplit);
  int outValue = launch.results[0];
  const ValueSpec &out = program_.values[outValue];
  int64_t rows = layout.qTokens * out.heads;
  if (Status s = ensureBuffer(
          outValue, attentionResultBytes(launch, 0, layout, splits), binding);
      !s.ok())
    return s;
  p.out = reinterpret_cast<void *>(binding.values[outValue]);
  if (launch.results.size() > 1) {
    int lseValue = launch.results[1];
    if (Status s = ensureBuffer(
            lseValue, attentionResultBytes(launch, 1, layout, splits), binding);
        !s.ok())
      return s;
    p.lse = reinterpret_cast<float *>(binding.values[lseValue]);
    // Only split results are read as `splits` states by a merge (a map
    // node per run otherwise, for nothing).
    if (launch.splitResults)
      statesOf_[outValue] = splits;
  }
  p.partial_out = static_cast<float *>(p.out);
  p.partial_lse = p.lse;
  p.partial_split_stride = rows;
  LaunchWorkspace workspace = launchWorkspace(launch, layout, splits);
  char *workspaceBase = nullptr;
  if (workspace.total() > 0) {
    cuda::CUdeviceptr base = 0;
    if (Status s =
            ensureWorkspace(launchIndex, workspace.total(), binding, base);
        !s.ok())
      return s;
    workspaceBase = reinterpret_cast<char *>(base);
  }
  if (launch.mergesSplits) {
    p.partial_out = reinterpret_cast<float *>(workspaceBase);
    p.partial_lse = reinterpret_cast<float *>(workspaceBase + workspace.outs);
    if (!launch.mergesInSecondLaunch)
      p.split_counters = reinterpret_cast<i32 *>(
          workspaceBase + workspace.outs + workspace.lses);
  }

  StatusOr<cuda::CUfunction> function =
      resolved ? StatusOr<cuda::CUfunction>(resolved->function)
               : module_.function(launch.kernel, launch.smem);
  if (!function.ok())
    return function.status();
  int64_t mTiles = rowBlocks(launch, layout);
  if (mTiles == 0 || layout.batch == 0)
    return Status();
  unsigned gridY = unsigned(headBlocks(launch) * splits);
  if (!walksWorkOrder(launch))
    return driver_.launch(*function, unsigned(mTiles), gridY,
                          unsigned(layout.batch), unsigned(launch.threads),
                          unsigned(launch.smem), stream, &p, sizeof(p));
  TmaAttnParams tma;
  std::memset(&tma, 0, sizeof(tma));
  tma.attn = p;
  if (Status s = encodeOperandMaps(launch, layout, *query, *key, *value, tma);
      !s.ok())
    return s;
  tma.order = workOrder(launch, layout, splits, *key, *value);
  if (launch.claimsItems)
    tma.order.claims = reinterpret_cast<i32 *>(
        workspaceBase + workspace.outs + workspace.lses + workspace.counters);
  StatusOr<int64_t> resident =
      resolved && resolved->residentCtas > 0
          ? StatusOr<int64_t>(resolved->residentCtas)
          : module_.residentCtas(launch.kernel, launch.threads, launch.smem);
  if (!resident.ok())
    return resident.status();
  // As many CTAs as the GPU holds at once: ragged batches' items without
  // rows cost a CTA a few loads there, where a CTA per item would cost a
  // launch each.
  int64_t grid = gridCtas > 0 ? gridCtas : *resident;
  // Whole clusters (the kernel's __cluster_dims__): a cluster's CTAs take
  // the two row blocks of one pair, so the items are a multiple of it too.
  auto wholeClusters = [&](int64_t ctas) {
    return std::max(launch.clusterCtas,
                    ctas / launch.clusterCtas * launch.clusterCtas);
  };
  int64_t ctas = wholeClusters(std::min<int64_t>(tma.order.items, grid));
  if (Status s = driver_.launch(*function, unsigned(ctas), 1, 1,
                                unsigned(launch.threads), unsigned(launch.smem),
                                stream, &tma, sizeof(tma),
                                launch.overlapsPreviousLaunch);
      !s.ok())
    return s;
  if (!launch.mergesInSecondLaunch || splits == 1)
    return Status();
  // The merge pass: the same kernel again, its warps merging the splits'
  // partial states into the results over the whole grid, in registers (no
  // shared memory).
  tma.merge_pass = 1;
  return driver_.launch(*function, unsigned(wholeClusters(grid)), 1, 1,
                        unsigned(launch.threads), 0, stream, &tma, sizeof(tma),
                        launch.overlapsPreviousLaunch);
}

Status Executor::resolveKVTokens(BatchLayout &layout) const {
  for (const LaunchSpec &launch : program_.launches) {
    if (launch.kind != LaunchSpec::Kind::Attention || !walksWorkOrder(launch))
      continue;
    const ValueSpec *key = nullptr;
    for (int arg : launch.args)
      if (program_.values[arg].kind == ValueSpec::Kind::KV) {
        key = &program_.values[arg];
        break;
      }
    if (!key)
      return Status::error(ErrorCode::Internal, "attention without keys");
    if (key->layout != TokenLayout::Ragged) { // paged maps are unbounded
      layout.kvTokens = int64_t(layout.batch) * layout.kvLen;
      return Status();
    }
    if (layout.kvTokens > 0) // the caller knows its tensors' rows
      return Status();
    if (!layout.kvIndptr)
      return Status::error(ErrorCode::InvalidArgument,
                           "ragged or paged keys need kv_indptr");
    i32 last = 0;
    if (Status s = driver_.copyToHost(
            &last, layout.kvIndptr + sizeof(i32) * size_t(layout.batch),
            sizeof(last));
        !s.ok())
      return s;
    if (last < 0)
      return Status::error(ErrorCode::InvalidArgument,
                           "kv_indptr ends at a negative token count (" +
                               std::to_string(last) + ")");
    layout.kvTokens = last;
    return Status();
  }
  return Status();
}

namespace {
/// One operand's tensor map as a call: the arguments of
/// cuda::attentionOperandMap (`paged` 0) or cuda::pagedOperandMap
/// (`paged` 1), the fields the other one has none of left 0, so that equal
/// calls are equal bytes.
struct OperandMapCall {
  uint64_t address = 0;
  int64_t tokens = 0, heads = 0, dim = 0, pageSize = 0, pageStride = 0;
  int32_t paged = 0, boxRows = 0;
  DType dtype = DType::BF16;
  PageOrder pageOrder = PageOrder::NHD;

  StatusOr<cuda::TensorMapArgs> args() const {
    return paged ? cuda::pagedOperandMap(address, dtype, pageOrder, pageSize,
                                         heads, dim, pageStride, boxRows)
                 : cuda::attentionOperandMap(address, dtype, tokens, heads, dim,
                                             boxRows);
  }
};

/// Tensor maps already encoded on this thread, by their calls: a run whose
/// operands are where an earlier run's were, with the same shapes (a plan
/// reused over the same buffers, each layer's fixed KV cache), copies the
/// map instead of building and validating its arguments and calling
/// cuTensorMapEncodeTiled again. The arguments are a function of the call
/// and the encoded map of the arguments (the address is one of them), so
/// the call is the whole key: a hit is the map the driver would encode.
/// Direct-mapped: a collision only costs the encode it would have cost
/// anyway. Per thread, so that runs on several threads share no lock.
class TensorMapMemo {
public:
  Status encode(cuda::Driver &driver, hopper::TensorMap &map,
                const OperandMapCall &call) {
    Entry &entry = entries_[slot(call)];
    if (entry.valid && std::memcmp(&entry.call, &call, sizeof(call)) == 0) {
      map = entry.map;
      return Status();
    }
    entry.valid = false;
    StatusOr<cuda::TensorMapArgs> args = call.args();
    if (!args.ok())
      return args.status();
    if (Status s = driver.encodeTensorMap(map, *args); !s.ok())
      return s;
    entry.call = call;
    entry.map = map;
    entry.valid = true;
    return Status();
  }

private:
  // Compared and hashed as bytes: no padding may hold garbage.
  static_assert(std::has_unique_object_representations_v<OperandMapCall> &&
                    sizeof(OperandMapCall) % sizeof(uint64_t) == 0,
                "OperandMapCall has padding");
  static constexpr size_t kEntries = 256; // layers x k and v, and some q
  struct Entry {
    hopper::TensorMap map;
    OperandMapCall call;
    bool valid = false;
  };
  static size_t slot(const OperandMapCall &call) {
    uint64_t words[sizeof(call) / sizeof(uint64_t)];
    std::memcpy(words, &call, sizeof(call));
    uint64_t h = 0;
    for (uint64_t w : words)
      h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    return size_t(h >> 32) % kEntries;
  }
  // On the heap: 64 KB is too much for a thread's static TLS block.
  std::unique_ptr<Entry[]> entries_ = std::make_unique<Entry[]>(kEntries);
};

Status encodeMemoized(cuda::Driver &driver, hopper::TensorMap &map,
                      const OperandMapCall &call) {
  thread_local TensorMapMemo memo;
  return memo.encode(driver, map, call);
}
} // namespace

Status Executor::encodeOperandMaps(const LaunchSpec &launch,
                                   const BatchLayout &layout,
                                   const ValueSpec &query, const ValueSpec &key,
                                   const ValueSpec &value,
                                   TmaAttnParams &params) {
  // A tensor map needs at least one row; an empty tensor is never read.
  auto rows = [](int64_t n) { return std::max<int64_t>(n, 1); };
  if (key.layout == TokenLayout::Ragged && layout.kvTokens == 0 &&
      layout.kvLen > 0)
    return Status::error(ErrorCode::InvalidArgument,
                         "ragged keys loaded through tensor maps need the "
                         "total key tokens: plan the batch first");
  int64_t kvTokens = key.layout == TokenLayout::Dense
                         ? int64_t(layout.batch) * layout.kvLen
                         : layout.kvTokens;
  // Page strides as the kernel's parameters already resolved them (0 in
  // the layout: packed pages).
  struct Operand {
    const void *address;
    const ValueSpec &spec;
    int64_t tokens;
    int64_t boxRows;
    int64_t pageStride;
    hopper::TensorMap &map;
  } operands[] = {
      {params.attn.q, query, layout.qTokens, launch.qBoxRows, 0, params.q},
      {params.attn.k, key, kvTokens, launch.kvBoxRows,
       params.attn.k_page_stride, params.k},
      {params.attn.v, value, kvTokens, launch.kvBoxRows,
       params.attn.v_page_stride, params.v},
  };
  for (Operand &o : operands) {
    // Pages gathered row by row by the kernel's producer need no map.
    if (!hopper::boxesFillAtoms(int(o.boxRows)))
      continue;
    OperandMapCall call;
    call.address = reinterpret_cast<uint64_t>(o.address);
    call.dtype = o.spec.dtype;
    call.dim = o.spec.dim;
    call.boxRows = int32_t(o.boxRows);
    if (o.spec.kind == ValueSpec::Kind::Query && launch.packedHeads > 1) {
      // A CTA whose rows pack every query head of its tokens (the latent
      // schedule) loads consecutive (token, head) rows: one head of
      // tokens x heads rows.
      call.tokens = rows(o.tokens * o.spec.heads);
      call.heads = 1;
    } else if (o.spec.kind == ValueSpec::Kind::KV &&
               o.spec.layout == TokenLayout::Paged) {
      call.paged = 1;
      call.pageOrder = o.spec.pageOrder;
      call.pageSize = o.spec.pageSize;
      call.heads = o.spec.heads;
      call.pageStride = o.pageStride;
    } else {
      call.tokens = rows(o.tokens);
      call.heads = o.spec.heads;
    }
    if (Status s = encodeMemoized(driver_, o.map, call); !s.ok())
      return s;
  }
  return Status();
}

Status Executor::launchMerge(int launchIndex, const BatchLayout &layout,
                             Binding &binding, cuda::CUstream stream) {
  const LaunchSpec &launch = program_.launches[launchIndex];
  MergeParams p;
  std::memset(&p, 0, sizeof(p));
  size_t pairs = launch.args.size() / 2;
  const ValueSpec &out = program_.values[launch.results[0]];
  int64_t rows = layout.qTokens * out.heads;
  if (pairs == 1) {
    // The partial states of one split-KV attention, `rows` apart.
    int outs = launch.args[0], lses = launch.args[1];
    const ValueSpec &in = program_.values[outs];
    auto recorded = statesOf_.find(outs);
    int states = recorded != statesOf_.end() ? recorded->second : 1;
    p.num_states = states;
    for (int s = 0; s < states; ++s) {
      p.outs[s] = reinterpret_cast<const char *>(binding.values[outs]) +
                  size_t(s) * rows * in.dim * bytesOf(in.dtype);
      p.lses[s] = reinterpret_cast<const float *>(binding.values[lses]) +
                  size_t(s) * rows;
    }
  } else {
    if (pairs > size_t(limits::kMaxMergeStates))
      return Status::error(ErrorCode::Unsupported,
                           "more than 32 states to merge");
    p.num_states = int(pairs);
    for (size_t s = 0; s < pairs; ++s) {
      p.outs[s] =
          reinterpret_cast<const void *>(binding.values[launch.args[s]]);
      p.lses[s] = reinterpret_cast<const float *>(
          binding.values[launch.args[pairs + s]]);
    }
  }
  for (int r = 0; r < 2; ++r)
    if (Status s = ensureBuffer(launch.results[r],
                                mergeResultBytes(launch, r, layout), binding);
        !s.ok())
      return s;
  p.out = reinterpret_cast<void *>(binding.values[launch.results[0]]);
  p.lse = reinterpret_cast<float *>(binding.values[launch.results[1]]);
  p.rows = rows;
  const LoadedModule::ResolvedLaunch *resolved = module_.resolved(launchIndex);
  StatusOr<cuda::CUfunction> function =
      resolved ? StatusOr<cuda::CUfunction>(resolved->function)
               : module_.function(launch.kernel, 0);
  if (!function.ok())
    return function.status();
  int64_t rowsPerBlock = launch.threads / 32;
  int64_t blocks = (rows + rowsPerBlock - 1) / rowsPerBlock;
  if (blocks == 0)
    return Status();
  return driver_.launch(*function, unsigned(blocks), 1, 1,
                        unsigned(launch.threads), 0, stream, &p, sizeof(p));
}

} // namespace attnc
