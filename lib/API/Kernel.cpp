//===- Kernel.cpp - compile once, plan per batch, run per layer -----------===//

#include "attnc/attnc.h"

#include "attnc/Dialect/AttnGPU/AttnGPUDialect.h"
#include "attnc/Driver/Compile.h"
#include "cuda/CudaDriver.h"
#include "exec/Executor.h"

#include <map>
#include <mutex>
#include <set>

namespace attnc {

struct Kernel::State {
  CompiledVariant compiled;
  std::vector<TensorSpec> inputs, outputs;
  std::mutex mutex; // guards the module, loaded on the first plan
  cuda::Driver *driver = nullptr;
  std::optional<LoadedModule> module;
};

struct Plan::State {
  /// Shared so that a plan outliving its kernel can never be taken for a
  /// newer kernel's that reuses the address.
  std::shared_ptr<const Kernel::State> kernel;
  BatchLayout layout;
  std::vector<int> splits;
  std::map<int, cuda::DeviceBuffer> scratch;
  std::map<int, cuda::DeviceBuffer> workspaces; // by launch index
  /// What every run binds the same way, bound once: the scratch values and
  /// workspaces, the arrays sized; a run sets its inputs and outputs over
  /// it, so that it allocates nothing. A plan serves one launch at a time,
  /// so runs may rebind it without a lock.
  Binding binding;
  /// The executor its runs share (its program and module live as long as
  /// `kernel`).
  std::optional<Executor> executor;
};

namespace {

Status invalid(const std::string &message) {
  return Status::error(ErrorCode::InvalidArgument, message);
}

TensorSpec describe(const ValueSpec &value) {
  TensorSpec spec;
  spec.role = static_cast<TensorSpec::Role>(value.kind);
  spec.heads = value.heads;
  spec.dim = value.dim;
  spec.dtype = value.dtype;
  spec.layout = value.layout;
  spec.seqLen = value.seqLen;
  return spec;
}

/// The arch list lives with the target attribute; an arch outside it is
/// refused by name before anything is compiled.
Status checkArch(const std::string &arch, ErrorCode code) {
  if (mlir::attn_gpu::TargetAttr::isSupportedArch(arch))
    return Status();
  std::string supported;
  for (llvm::StringRef name : mlir::attn_gpu::TargetAttr::getSupportedArchs())
    supported += (supported.empty() ? "" : ", ") + name.str();
  return Status::error(code, "unsupported GPU architecture '" + arch +
                                 "'; attnc compiles for " + supported);
}

StatusOr<CompileOptions> optionsFor(const Target &target) {
  CompileOptions options;
  if (!target.arch.empty()) {
    if (Status status = checkArch(target.arch, ErrorCode::InvalidArgument);
        !status.ok())
      return status;
    options.arch = target.arch;
    if (target.multiprocessors > 0)
      options.sms = target.multiprocessors;
    return options;
  }
  StatusOr<cuda::Driver *> driver = cuda::Driver::get();
  if (!driver.ok())
    return Status::error(driver.status().code(), "no target arch given and " +
                                                     driver.status().message());
  const cuda::DeviceInfo &device = (*driver)->device();
  options.arch = device.arch();
  if (Status status = checkArch(options.arch, ErrorCode::Unsupported);
      !status.ok())
    return status;
  options.sms = device.multiprocessors;
  options.smem = device.sharedMemoryPerBlockOptin;
  return options;
}

} // namespace

Kernel::Kernel(std::shared_ptr<State> state) : state_(std::move(state)) {}
Kernel::~Kernel() = default;
Kernel::Kernel(Kernel &&) noexcept = default;
Kernel &Kernel::operator=(Kernel &&) noexcept = default;

StatusOr<Kernel> Kernel::compile(const Variant &variant, const Target &target) {
  StatusOr<CompileOptions> options = optionsFor(target);
  if (!options.ok())
    return options.status();
  options->progress = target.progress;
  StatusOr<CompiledVariant> compiled = compileVariant(
      variant.mlir(), variant.fileName(), *options, target.cacheDir);
  if (!compiled.ok())
    return compiled.status();
  auto state = std::make_shared<State>();
  state->compiled = std::move(*compiled);
  const Program &program = state->compiled.program;
  for (int id : program.inputs)
    state->inputs.push_back(describe(program.values[id]));
  for (int id : program.outputs)
    state->outputs.push_back(describe(program.values[id]));
  return Kernel(std::move(state));
}

const std::vector<TensorSpec> &Kernel::inputs() const { return state_->inputs; }
const std::vector<TensorSpec> &Kernel::outputs() const {
  return state_->outputs;
}
const std::string &Kernel::cudaSource() const { return state_->compiled.cuda; }
const std::string &Kernel::cubin() const { return state_->compiled.cubin; }
bool Kernel::fromCache() const { return state_->compiled.fromCache; }

static BatchLayout layoutOf(const Batch &batch) {
  BatchLayout layout;
  layout.batch = batch.batch;
  layout.qLen = batch.maxQueryLen;
  layout.kvLen = batch.maxKVLen;
  layout.qTokens = batch.queryTokens;
  layout.qIndptr = batch.qIndptr;
  layout.kvIndptr = batch.kvIndptr;
  layout.pageIndices = batch.pageIndices;
  layout.lastPageLen = batch.lastPageLen;
  layout.kPageStride = batch.kPageStride;
  layout.vPageStride = batch.vPageStride;
  layout.kvTokens = batch.kvTokens;
  return layout;
}

static Status checkBatch(const Program &program, const Batch &batch) {
  if (batch.batch < 0 || batch.maxQueryLen < 0 || batch.maxKVLen < 0 ||
      batch.queryTokens < 0)
    return invalid("batch sizes and lengths must be non-negative");
  // A negative stride would read before the cache.
  if (batch.kPageStride < 0 || batch.vPageStride < 0)
    return invalid("page strides must be 0 (packed pages) or positive");
  if (batch.kvTokens < 0)
    return invalid("kv_tokens must be 0 (unknown) or positive");
  for (int id : program.inputs) {
    const ValueSpec &value = program.values[id];
    if (value.kind == ValueSpec::Kind::Query) {
      if (value.layout == TokenLayout::Ragged && !batch.qIndptr)
        return invalid("ragged queries need q_indptr");
      if (value.layout == TokenLayout::Dense) {
        if (value.seqLen > 0 && batch.maxQueryLen != value.seqLen)
          return invalid("the variant takes " + std::to_string(value.seqLen) +
                         " queries per request, the batch has " +
                         std::to_string(batch.maxQueryLen));
        if (batch.queryTokens !=
            int64_t(batch.batch) * int64_t(batch.maxQueryLen))
          return invalid(
              "dense queries: query tokens (" +
              std::to_string(batch.queryTokens) +
              ") must be batch x query length (" +
              std::to_string(int64_t(batch.batch) * batch.maxQueryLen) + ")");
      }
    }
    if (value.kind == ValueSpec::Kind::KV) {
      if (value.layout != TokenLayout::Dense && !batch.kvIndptr)
        return invalid("ragged or paged keys need kv_indptr");
      if (value.layout == TokenLayout::Paged &&
          (!batch.pageIndices || !batch.lastPageLen))
        return invalid("paged keys need page indices and last page lengths");
    }
  }
  return Status();
}

StatusOr<Plan> Kernel::plan(const Batch &batch) const {
  const Program &program = state_->compiled.program;
  if (Status status = checkBatch(program, batch); !status.ok())
    return status;
  BatchLayout layout = layoutOf(batch);
  if (Status status = checkLayout(program, layout); !status.ok())
    return status;
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (!state_->module) {
    StatusOr<cuda::Driver *> driver = cuda::Driver::get();
    if (!driver.ok())
      return driver.status();
    StatusOr<LoadedModule> module =
        LoadedModule::load(**driver, state_->compiled.cubin);
    if (!module.ok())
      return module.status();
    state_->driver = *driver;
    state_->module = std::move(*module);
  }
  auto plan = std::make_unique<Plan::State>();
  plan->kernel = state_;
  Executor &executor =
      plan->executor.emplace(*state_->driver, program, *state_->module);
  if (Status status = executor.resolveKernels(); !status.ok())
    return status;
  if (Status status = executor.resolveKVTokens(layout); !status.ok())
    return status;
  plan->layout = layout;
  for (const LaunchSpec &launch : program.launches)
    if (launch.kind == LaunchSpec::Kind::Attention)
      plan->splits.push_back(int(executor.chooseSplits(launch, layout).splits));
  std::set<int> external(program.inputs.begin(), program.inputs.end());
  external.insert(program.outputs.begin(), program.outputs.end());
  for (auto [value, bytes] : executor.resultBytes(layout)) {
    if (external.count(value))
      continue;
    StatusOr<cuda::DeviceBuffer> buffer = cuda::DeviceBuffer::allocate(
        *state_->driver, std::max<size_t>(bytes, 1));
    if (!buffer.ok())
      return buffer.status();
    plan->scratch.emplace(value, std::move(*buffer));
  }
  for (auto [launch, bytes] : executor.workspaceBytes(layout)) {
    StatusOr<cuda::DeviceBuffer> buffer = cuda::DeviceBuffer::allocate(
        *state_->driver, std::max<size_t>(bytes, 1));
    if (!buffer.ok())
      return buffer.status();
    // Arrival counters start at zero; the kernels leave them there.
    if (Status status = state_->driver->fill(buffer->get(), 0, bytes);
        !status.ok())
      return status;
    plan->workspaces.emplace(launch, std::move(*buffer));
  }
  if (!plan->workspaces.empty())
    if (Status status = state_->driver->synchronize(); !status.ok())
      return status;
  Binding &binding = plan->binding;
  binding.values.assign(program.values.size(), 0);
  binding.bufferSizes.assign(program.values.size(), {});
  for (const auto &[value, buffer] : plan->scratch)
    binding.values[value] = buffer.get();
  for (const auto &[launch, buffer] : plan->workspaces)
    binding.workspaces[launch] = {buffer.get(), buffer.size()};
  return Plan(std::move(plan));
}

Status Kernel::run(const Plan &plan, const std::vector<uint64_t> &inputs,
                   const std::vector<uint64_t> &outputs, void *stream,
                   const std::vector<std::vector<int64_t>> &bufferSizes) const {
  const Program &program = state_->compiled.program;
  if (plan.state_->kernel != state_)
    return invalid("the plan was made by another kernel");
  if (inputs.size() != program.inputs.size() ||
      outputs.size() != program.outputs.size())
    return invalid("the variant takes " +
                   std::to_string(program.inputs.size()) + " inputs and " +
                   std::to_string(program.outputs.size()) + " outputs, got " +
                   std::to_string(inputs.size()) + " and " +
                   std::to_string(outputs.size()));
  Binding &binding = plan.state_->binding;
  size_t buffers = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    int id = program.inputs[i];
    if (!inputs[i])
      return invalid("input " + std::to_string(i) + " is a null pointer");
    binding.values[id] = inputs[i];
    const ValueSpec &value = program.values[id];
    if (value.kind != ValueSpec::Kind::Buffer)
      continue;
    // Assigned into the plan's array, whose storage the next run reuses.
    std::vector<int64_t> &sizes = binding.bufferSizes[id];
    if (buffers < bufferSizes.size() && !bufferSizes[buffers].empty())
      sizes = bufferSizes[buffers];
    else
      sizes = value.shape;
    ++buffers;
    if (sizes.size() != value.shape.size())
      return invalid("buffer input " + std::to_string(i) + " has rank " +
                     std::to_string(value.shape.size()) + ", got " +
                     std::to_string(sizes.size()) + " sizes");
    for (size_t d = 0; d < sizes.size(); ++d)
      if (sizes[d] < 0 || (value.shape[d] >= 0 && sizes[d] != value.shape[d]))
        return invalid("buffer input " + std::to_string(i) +
                       " needs its size " + std::to_string(d) +
                       (value.shape[d] >= 0
                            ? " to be " + std::to_string(value.shape[d])
                            : std::string(" (it is dynamic)")));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i])
      return invalid("output " + std::to_string(i) + " is a null pointer");
    binding.values[program.outputs[i]] = outputs[i];
  }
  return plan.state_->executor->run(plan.state_->layout, binding,
                                    static_cast<cuda::CUstream>(stream));
}

Plan::Plan(std::unique_ptr<State> state) : state_(std::move(state)) {}
Plan::~Plan() = default;
Plan::Plan(Plan &&) noexcept = default;
Plan &Plan::operator=(Plan &&) noexcept = default;
const std::vector<int> &Plan::splits() const { return state_->splits; }

} // namespace attnc
