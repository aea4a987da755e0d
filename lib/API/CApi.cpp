//===- CApi.cpp - the C API over attnc.h ----------------------------------===//
//
// Variants, kernels and plans. Handles are numbers looked up in registries
// on every call (CApiSupport.h); the serving runtime's handles are in
// ServingCApi.cpp.
//
//===----------------------------------------------------------------------===//

#include "attnc/attnc.h"
#include "attnc/attnc_c.h"

#include "CApiSupport.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

static_assert(int(attnc::ErrorCode::InvalidArgument) ==
                      ATTNC_INVALID_ARGUMENT &&
                  int(attnc::ErrorCode::CompileError) == ATTNC_COMPILE_ERROR,
              "the C status codes mirror attnc::ErrorCode");

// The C enums are the ABI's (attnc/device/abi.h) under C names.
#define ATTNC_SAME(c, cpp) static_assert(int(c) == int(cpp), #c " is " #cpp);
ATTNC_SAME(ATTNC_BF16, attnc::DType::BF16)
ATTNC_SAME(ATTNC_F16, attnc::DType::F16)
ATTNC_SAME(ATTNC_F32, attnc::DType::F32)
ATTNC_SAME(ATTNC_I32, attnc::DType::I32)
ATTNC_SAME(ATTNC_I64, attnc::DType::I64)
ATTNC_SAME(ATTNC_F8E4M3, attnc::DType::F8E4M3)
ATTNC_SAME(ATTNC_F8E5M2, attnc::DType::F8E5M2)
ATTNC_SAME(ATTNC_DENSE, attnc::TokenLayout::Dense)
ATTNC_SAME(ATTNC_RAGGED, attnc::TokenLayout::Ragged)
ATTNC_SAME(ATTNC_PAGED, attnc::TokenLayout::Paged)
ATTNC_SAME(ATTNC_NHD, attnc::PageOrder::NHD)
ATTNC_SAME(ATTNC_HND, attnc::PageOrder::HND)
ATTNC_SAME(ATTNC_KV_SCALES_NONE, attnc::KVScales::None)
ATTNC_SAME(ATTNC_KV_SCALES_PER_TENSOR, attnc::KVScales::PerTensor)
ATTNC_SAME(ATTNC_KV_SCALES_PER_HEAD, attnc::KVScales::PerHead)
ATTNC_SAME(ATTNC_ROLE_QUERY, attnc::TensorSpec::Role::Query)
ATTNC_SAME(ATTNC_ROLE_KV, attnc::TensorSpec::Role::KV)
ATTNC_SAME(ATTNC_ROLE_OUTPUT, attnc::TensorSpec::Role::Output)
ATTNC_SAME(ATTNC_ROLE_LSE, attnc::TensorSpec::Role::Lse)
ATTNC_SAME(ATTNC_ROLE_BUFFER, attnc::TensorSpec::Role::Buffer)
#undef ATTNC_SAME

namespace attnc::capi {

namespace {
thread_local std::string lastError;
/// Handle values: drawn from one counter for every type and never reused.
std::atomic<uintptr_t> nextHandle{uintptr_t(0xA7C0) << 48};
} // namespace

attnc_status fail(attnc_status code, std::string message) {
  lastError = std::move(message);
  return code;
}

const char *lastErrorMessage() { return lastError.c_str(); }

uintptr_t drawHandle() { return nextHandle.fetch_add(1); }

} // namespace attnc::capi

using namespace attnc::capi;

namespace {

// Never destroyed: objects still alive at exit must not be freed after the
// CUDA driver they use has been unloaded.
auto &variants() {
  static auto *registry =
      new Registry<attnc_variant, attnc::Variant>("attnc_variant");
  return *registry;
}
auto &kernels() {
  static auto *registry =
      new Registry<attnc_kernel, attnc::Kernel>("attnc_kernel");
  return *registry;
}
auto &plans() {
  static auto *registry = new Registry<attnc_plan, attnc::Plan>("attnc_plan");
  return *registry;
}

attnc_tensor_spec toC(const attnc::TensorSpec &spec) {
  attnc_tensor_spec out;
  out.role = static_cast<attnc_role>(spec.role);
  out.heads = spec.heads;
  out.dim = spec.dim;
  out.dtype = static_cast<attnc_dtype>(spec.dtype);
  out.layout = static_cast<attnc_layout>(spec.layout);
  out.seq_len = spec.seqLen;
  return out;
}

attnc_status flagFromC(const char *name, int value, bool &out) {
  if (!isFlag(value))
    return invalid(std::string(name) + " must be 0 or 1, got " +
                   std::to_string(value));
  out = value;
  return ATTNC_OK;
}

/// Two fields that are both `none` (no value) or both non-negative.
attnc_status pairFromC(const char *first, const char *second, const char *what,
                       int64_t a, int64_t b, int64_t none,
                       std::optional<std::pair<int64_t, int64_t>> &out) {
  if (a == none && b == none)
    return ATTNC_OK;
  if (a < 0 || b < 0)
    return invalid(std::string(first) + " and " + second + " must both be " +
                   std::to_string(none) + " (no " + what +
                   ") or both be non-negative, got " + std::to_string(a) +
                   " and " + std::to_string(b));
  out = {a, b};
  return ATTNC_OK;
}

/// An array of `count` (0..max) strings, none of them null.
attnc_status stringsFromC(const char *array, const char *countName,
                          const char *const *strings, int count, int max,
                          std::vector<std::string> &out) {
  // Bounds how much of the caller's array is read.
  if (count < 0 || count > max)
    return invalid(std::string(countName) + " must be in 0.." +
                   std::to_string(max) + ", got " + std::to_string(count));
  if (count > 0 && !strings)
    return invalid(std::string(array) + " is null but " + countName + " is " +
                   std::to_string(count));
  for (int i = 0; i < count; ++i) {
    if (!strings[i])
      return invalid(std::string(array) + "[" + std::to_string(i) +
                     "] is null");
    out.push_back(strings[i]);
  }
  return ATTNC_OK;
}

#define ATTNC_CHECKED(call)                                                    \
  if (attnc_status status = call; status != ATTNC_OK)                          \
    return status;

/// Checks the encoding of a C spec (flags, sentinels, the capture array)
/// and translates it, field by field from ATTNC_VARIANT_SPEC; the C++ API
/// and the verifier judge the values.
attnc_status specFromC(const attnc_variant_spec &c, attnc::VariantSpec &spec) {
#define FROM_C_INT64(A, f, cpp, d) spec.cpp = c.f;
  // Enum fields may hold any int; fromSpec refuses unknown enumerators.
#define FROM_C_ENUM(A, f, cpp, CEnum, Enum, d)                                 \
  spec.cpp = attnc::Enum(enumBits(c.f));
#define FROM_C_OPTIONAL_ENUM(A, f, cpp, CEnum, Enum, none)                     \
  if (c.f != (none))                                                           \
    spec.cpp = attnc::Enum(c.f);
#define FROM_C_FLAG(A, f, cpp, d) ATTNC_CHECKED(flagFromC(#f, c.f, spec.cpp))
#define FROM_C_OPTIONAL_FLOAT(A, f, cpp, none)                                 \
  if (c.f != (none))                                                           \
    spec.cpp = c.f;
  // NULL keeps the default ("attention", or no region).
#define FROM_C_STRING(A, f, cpp, d)                                            \
  if (c.f)                                                                     \
    spec.cpp = c.f;
#define FROM_C_OPTIONAL_STRING(A, f, cpp) FROM_C_STRING(A, f, cpp, "")
#define FROM_C_OPTIONAL_PAIR(A, f1, f2, cpp, none)                             \
  ATTNC_CHECKED(pairFromC(#f1, #f2, #cpp, c.f1, c.f2, none, spec.cpp))
#define FROM_C_STRINGS(A, f, count, cpp, max)                                  \
  ATTNC_CHECKED(stringsFromC(#f, #count, c.f, c.count, max, spec.cpp))
  ATTNC_VARIANT_SPEC(FROM_C, ~)
#undef FROM_C_INT64
#undef FROM_C_ENUM
#undef FROM_C_OPTIONAL_ENUM
#undef FROM_C_FLAG
#undef FROM_C_OPTIONAL_FLOAT
#undef FROM_C_STRING
#undef FROM_C_OPTIONAL_STRING
#undef FROM_C_OPTIONAL_PAIR
#undef FROM_C_STRINGS
  return ATTNC_OK;
}
#undef ATTNC_CHECKED

/// The C spelling of `spec`, whose strings it points into: the C defaults
/// are the C++ defaults, ATTNC_VARIANT_SPEC's.
void specToC(const attnc::VariantSpec &spec, attnc_variant_spec &c) {
  c = attnc_variant_spec{};
#define TO_C_INT64(A, f, cpp, d) c.f = spec.cpp;
#define TO_C_ENUM(A, f, cpp, CEnum, Enum, d) c.f = static_cast<CEnum>(spec.cpp);
#define TO_C_OPTIONAL_ENUM(A, f, cpp, CEnum, Enum, none)                       \
  c.f = spec.cpp ? int(*spec.cpp) : (none);
#define TO_C_FLAG(A, f, cpp, d) c.f = spec.cpp;
#define TO_C_OPTIONAL_FLOAT(A, f, cpp, none) c.f = spec.cpp.value_or(none);
#define TO_C_STRING(A, f, cpp, d) c.f = spec.cpp.c_str();
#define TO_C_OPTIONAL_STRING(A, f, cpp)                                        \
  c.f = spec.cpp.empty() ? nullptr : spec.cpp.c_str();
#define TO_C_OPTIONAL_PAIR(A, f1, f2, cpp, none)                               \
  c.f1 = spec.cpp ? spec.cpp->first : (none);                                  \
  c.f2 = spec.cpp ? spec.cpp->second : (none);
  // A list has no default but the empty one (and no array to point at).
#define TO_C_STRINGS(A, f, count, cpp, max)                                    \
  c.f = nullptr;                                                               \
  c.count = 0;
  ATTNC_VARIANT_SPEC(TO_C, ~)
#undef TO_C_INT64
#undef TO_C_ENUM
#undef TO_C_OPTIONAL_ENUM
#undef TO_C_FLAG
#undef TO_C_OPTIONAL_FLOAT
#undef TO_C_STRING
#undef TO_C_OPTIONAL_STRING
#undef TO_C_OPTIONAL_PAIR
#undef TO_C_STRINGS
}

/// attnc_set_compile_progress's handler: the compiles that start after a
/// call take it.
struct CompileProgress {
  std::mutex mutex;
  attnc_progress_fn fn = nullptr;
  void *user = nullptr;
};
CompileProgress &compileProgress() {
  static auto *progress = new CompileProgress;
  return *progress;
}

const char *kRoleNames[] = {"query", "kv", "output", "lse", "buffer"};
static_assert(sizeof(kRoleNames) / sizeof(*kRoleNames) ==
                  size_t(attnc::TensorSpec::Role::Buffer) + 1,
              "a name for every role");

} // namespace

extern "C" {

const char *attnc_last_error(void) { return lastErrorMessage(); }

const char *attnc_status_name(attnc_status status) {
  if (status == ATTNC_OK)
    return "ok";
  return attnc::toString(static_cast<attnc::ErrorCode>(status));
}

int attnc_api_version(void) { return ATTNC_C_API_VERSION; }

const char *attnc_version(void) { return ATTNC_VERSION; }

const char *attnc_dtype_name(int dtype) {
  return attnc::keyword(attnc::DType(dtype));
}
const char *attnc_layout_name(int layout) {
  return attnc::keyword(attnc::TokenLayout(layout));
}
const char *attnc_page_order_name(int order) {
  return attnc::keyword(attnc::PageOrder(order));
}
const char *attnc_kv_scales_name(int scales) {
  return attnc::keyword(attnc::KVScales(scales));
}
const char *attnc_role_name(int role) {
  int count = int(sizeof(kRoleNames) / sizeof(*kRoleNames));
  return role >= 0 && role < count ? kRoleNames[role] : "";
}

const attnc_limits *attnc_get_limits(void) {
  namespace limits = attnc::limits;
  static const attnc_limits values = {
      limits::kMaxSeqLen,      limits::kMaxHeads,    limits::kMaxHeadDim,
      limits::kMinPageSize,    limits::kMaxPageSize, limits::kMaxKVSplits,
      limits::kMaxMergeStates, limits::kMaxCaptures, limits::kMaxCaptureRank};
  return &values;
}

void attnc_variant_spec_init(attnc_variant_spec *spec) {
  if (!spec)
    return;
  // Never destroyed: the default strings point into it.
  static const auto *defaults = new attnc::VariantSpec();
  specToC(*defaults, *spec);
}

attnc_status attnc_variant_from_mlir(const char *text, attnc_variant *out) {
  if (!text || !out)
    return invalid("text and out must not be null");
  return guarded([&] {
    attnc::StatusOr<attnc::Variant> variant = attnc::Variant::fromMlir(text);
    if (!variant.ok())
      return fail(variant.status());
    *out = variants().add(std::move(*variant));
    return ATTNC_OK;
  });
}

attnc_status attnc_variant_from_spec(const attnc_variant_spec *c,
                                     attnc_variant *out) {
  if (!c || !out)
    return invalid("spec and out must not be null");
  return guarded([&] {
    attnc::VariantSpec spec;
    if (attnc_status status = specFromC(*c, spec); status != ATTNC_OK)
      return status;
    attnc::StatusOr<attnc::Variant> variant = attnc::Variant::fromSpec(spec);
    if (!variant.ok())
      return fail(variant.status());
    *out = variants().add(std::move(*variant));
    return ATTNC_OK;
  });
}

const char *attnc_variant_mlir(attnc_variant handle) {
  std::shared_ptr<attnc::Variant> variant = variants().find(handle, "variant");
  // The text lives as long as the variant's handle.
  return variant ? variant->mlir().c_str() : "";
}

attnc_status attnc_variant_destroy(attnc_variant variant) {
  return guarded([&] { return variants().remove(variant, "variant"); });
}

attnc_status attnc_kernel_compile(attnc_variant handle, const char *arch,
                                  const char *cacheDir, attnc_kernel *out) {
  if (!out)
    return invalid("out must not be null");
  return guarded([&] {
    std::shared_ptr<attnc::Variant> variant =
        variants().find(handle, "variant");
    if (!variant)
      return ATTNC_INVALID_ARGUMENT;
    attnc::Target target;
    if (arch)
      target.arch = arch;
    if (cacheDir)
      target.cacheDir = cacheDir;
    {
      CompileProgress &progress = compileProgress();
      std::lock_guard<std::mutex> lock(progress.mutex);
      if (attnc_progress_fn fn = progress.fn)
        target.progress = [fn, user = progress.user](const std::string &line) {
          fn(line.c_str(), user);
        };
    }
    attnc::StatusOr<attnc::Kernel> kernel =
        attnc::Kernel::compile(*variant, target);
    if (!kernel.ok())
      return fail(kernel.status());
    *out = kernels().add(std::move(*kernel));
    return ATTNC_OK;
  });
}

void attnc_set_compile_progress(attnc_progress_fn fn, void *user) {
  CompileProgress &progress = compileProgress();
  std::lock_guard<std::mutex> lock(progress.mutex);
  progress.fn = fn;
  progress.user = user;
}

attnc_status attnc_kernel_destroy(attnc_kernel kernel) {
  return guarded([&] { return kernels().remove(kernel, "kernel"); });
}

int attnc_kernel_num_inputs(attnc_kernel handle) {
  std::shared_ptr<attnc::Kernel> kernel = kernels().find(handle, "kernel");
  return kernel ? int(kernel->inputs().size()) : 0;
}
int attnc_kernel_num_outputs(attnc_kernel handle) {
  std::shared_ptr<attnc::Kernel> kernel = kernels().find(handle, "kernel");
  return kernel ? int(kernel->outputs().size()) : 0;
}

attnc_status attnc_kernel_input(attnc_kernel handle, int index,
                                attnc_tensor_spec *out) {
  std::shared_ptr<attnc::Kernel> kernel = kernels().find(handle, "kernel");
  if (!kernel)
    return ATTNC_INVALID_ARGUMENT;
  if (!out)
    return invalid("out must not be null");
  if (index < 0 || index >= int(kernel->inputs().size()))
    return invalid("no input " + std::to_string(index));
  *out = toC(kernel->inputs()[index]);
  return ATTNC_OK;
}

attnc_status attnc_kernel_output(attnc_kernel handle, int index,
                                 attnc_tensor_spec *out) {
  std::shared_ptr<attnc::Kernel> kernel = kernels().find(handle, "kernel");
  if (!kernel)
    return ATTNC_INVALID_ARGUMENT;
  if (!out)
    return invalid("out must not be null");
  if (index < 0 || index >= int(kernel->outputs().size()))
    return invalid("no output " + std::to_string(index));
  *out = toC(kernel->outputs()[index]);
  return ATTNC_OK;
}

const char *attnc_kernel_cuda_source(attnc_kernel handle) {
  std::shared_ptr<attnc::Kernel> kernel = kernels().find(handle, "kernel");
  return kernel ? kernel->cudaSource().c_str() : "";
}

size_t attnc_kernel_cubin_size(attnc_kernel handle) {
  std::shared_ptr<attnc::Kernel> kernel = kernels().find(handle, "kernel");
  return kernel ? kernel->cubin().size() : 0;
}

attnc_status attnc_plan_create(attnc_kernel handle, const attnc_batch *c,
                               attnc_plan *out) {
  if (!c || !out)
    return invalid("batch and out must not be null");
  return guarded([&] {
    std::shared_ptr<attnc::Kernel> kernel = kernels().find(handle, "kernel");
    if (!kernel)
      return ATTNC_INVALID_ARGUMENT;
    attnc::Batch batch;
    batch.batch = c->batch;
    batch.maxQueryLen = c->max_query_len;
    batch.maxKVLen = c->max_kv_len;
    batch.queryTokens = c->query_tokens;
    batch.qIndptr = c->q_indptr;
    batch.kvIndptr = c->kv_indptr;
    batch.pageIndices = c->page_indices;
    batch.lastPageLen = c->last_page_len;
    batch.kPageStride = c->k_page_stride;
    batch.vPageStride = c->v_page_stride;
    batch.kvTokens = c->kv_tokens;
    attnc::StatusOr<attnc::Plan> plan = kernel->plan(batch);
    if (!plan.ok())
      return fail(plan.status());
    *out = plans().add(std::move(*plan));
    return ATTNC_OK;
  });
}

attnc_status attnc_plan_destroy(attnc_plan plan) {
  return guarded([&] { return plans().remove(plan, "plan"); });
}

int attnc_plan_num_splits(attnc_plan handle, int launch) {
  std::shared_ptr<attnc::Plan> plan = plans().find(handle, "plan");
  if (!plan)
    return 0;
  if (launch < 0 || launch >= int(plan->splits().size())) {
    invalid("the plan has no attention launch " + std::to_string(launch));
    return 0;
  }
  return plan->splits()[launch];
}

attnc_status attnc_run(attnc_kernel kernelHandle, attnc_plan planHandle,
                       const uint64_t *inputs, int numInputs,
                       const uint64_t *outputs, int numOutputs,
                       const int64_t *const *bufferSizes,
                       const int *bufferRanks, void *stream) {
  if ((numInputs > 0 && !inputs) || (numOutputs > 0 && !outputs) ||
      numInputs < 0 || numOutputs < 0)
    return invalid("inputs and outputs must be arrays of num_inputs and "
                   "num_outputs (non-negative) pointers");
  if (!bufferSizes != !bufferRanks)
    return invalid("buffer_sizes and buffer_ranks must both be null or both "
                   "be given");
  return guarded([&] {
    std::shared_ptr<attnc::Kernel> kernel =
        kernels().find(kernelHandle, "kernel");
    if (!kernel)
      return ATTNC_INVALID_ARGUMENT;
    // The kernel's declared counts bound what is read of the arrays.
    int declaredInputs = int(kernel->inputs().size());
    int declaredOutputs = int(kernel->outputs().size());
    if (numInputs != declaredInputs || numOutputs != declaredOutputs)
      return invalid("num_inputs and num_outputs must be the kernel's " +
                     std::to_string(declaredInputs) + " inputs and " +
                     std::to_string(declaredOutputs) + " outputs, got " +
                     std::to_string(numInputs) + " and " +
                     std::to_string(numOutputs));
    // The arrays Kernel::run takes, kept per thread and refilled, so that
    // a run allocates no host memory once a thread has made one: an engine
    // calls this per layer per step. (A call never reenters it.)
    thread_local std::vector<uint64_t> inputArray, outputArray;
    thread_local std::vector<std::vector<int64_t>> sizeArrays;
    static const std::vector<std::vector<int64_t>> noSizes;
    if (bufferSizes) {
      int buffers = 0;
      for (const attnc::TensorSpec &spec : kernel->inputs())
        buffers += spec.role == attnc::TensorSpec::Role::Buffer;
      // resize keeps the first `buffers` arrays' storage for assign.
      sizeArrays.resize(buffers);
      for (int b = 0; b < buffers; ++b) {
        int rank = bufferRanks[b];
        if (rank < 0 || rank > attnc::limits::kMaxCaptureRank)
          return invalid("buffer_ranks[" + std::to_string(b) +
                         "] must be in 0.." +
                         std::to_string(attnc::limits::kMaxCaptureRank) +
                         ", got " + std::to_string(rank));
        if (rank > 0 && !bufferSizes[b])
          return invalid("buffer_sizes[" + std::to_string(b) + "] is null");
        sizeArrays[b].assign(bufferSizes[b], bufferSizes[b] + rank);
      }
    }
    std::shared_ptr<attnc::Plan> plan = plans().find(planHandle, "plan");
    if (!plan)
      return ATTNC_INVALID_ARGUMENT;
    inputArray.assign(inputs, inputs + numInputs);
    outputArray.assign(outputs, outputs + numOutputs);
    attnc::Status status = kernel->run(*plan, inputArray, outputArray, stream,
                                       bufferSizes ? sizeArrays : noSizes);
    if (!status.ok())
      return fail(status);
    return ATTNC_OK;
  });
}

} // extern "C"
