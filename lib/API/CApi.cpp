//===- CApi.cpp - the C API over attnc.h ----------------------------------===//

#include "attnc/attnc.h"
#include "attnc/attnc_c.h"

#include <exception>
#include <string>

struct attnc_variant_st {
  attnc::Variant variant;
};
struct attnc_kernel_st {
  attnc::Kernel kernel;
};
struct attnc_plan_st {
  attnc::Plan plan;
};

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
ATTNC_SAME(ATTNC_DENSE, attnc::TokenLayout::Dense)
ATTNC_SAME(ATTNC_RAGGED, attnc::TokenLayout::Ragged)
ATTNC_SAME(ATTNC_PAGED, attnc::TokenLayout::Paged)
ATTNC_SAME(ATTNC_NHD, attnc::PageOrder::NHD)
ATTNC_SAME(ATTNC_HND, attnc::PageOrder::HND)
ATTNC_SAME(ATTNC_ROLE_QUERY, attnc::TensorSpec::Role::Query)
ATTNC_SAME(ATTNC_ROLE_KV, attnc::TensorSpec::Role::KV)
ATTNC_SAME(ATTNC_ROLE_OUTPUT, attnc::TensorSpec::Role::Output)
ATTNC_SAME(ATTNC_ROLE_LSE, attnc::TensorSpec::Role::Lse)
ATTNC_SAME(ATTNC_ROLE_BUFFER, attnc::TensorSpec::Role::Buffer)
#undef ATTNC_SAME

namespace {

thread_local std::string lastError;

attnc_status fail(attnc_status code, std::string message) {
  lastError = std::move(message);
  return code;
}

attnc_status fail(const attnc::Status &status) {
  return fail(static_cast<attnc_status>(status.code()), status.message());
}

/// The C boundary: nothing may unwind through it.
template <typename F> attnc_status guarded(F &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(ATTNC_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception &e) {
    return fail(ATTNC_INTERNAL, e.what());
  }
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

} // namespace

extern "C" {

const char *attnc_last_error(void) { return lastError.c_str(); }

const char *attnc_status_name(attnc_status status) {
  if (status == ATTNC_OK)
    return "ok";
  return attnc::toString(static_cast<attnc::ErrorCode>(status));
}

int attnc_api_version(void) { return ATTNC_C_API_VERSION; }

const char *attnc_dtype_name(int dtype) {
  return attnc::keyword(attnc::DType(dtype));
}
const char *attnc_layout_name(int layout) {
  return attnc::keyword(attnc::TokenLayout(layout));
}
const char *attnc_page_order_name(int order) {
  return attnc::keyword(attnc::PageOrder(order));
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
  *spec = attnc_variant_spec{};
  spec->name = "attention";
  spec->dtype = ATTNC_BF16;
  spec->query_layout = ATTNC_DENSE;
  spec->kv_layout = ATTNC_DENSE;
  spec->page_size = 16;
  spec->page_order = ATTNC_NHD;
  spec->window_left = spec->window_right = -1;
}

attnc_status attnc_variant_from_mlir(const char *text, attnc_variant *out) {
  if (!text || !out)
    return fail(ATTNC_INVALID_ARGUMENT, "text and out must not be null");
  return guarded([&] {
    attnc::StatusOr<attnc::Variant> variant = attnc::Variant::fromMlir(text);
    if (!variant.ok())
      return fail(variant.status());
    *out = new attnc_variant_st{std::move(*variant)};
    return ATTNC_OK;
  });
}

attnc_status attnc_variant_from_spec(const attnc_variant_spec *c,
                                     attnc_variant *out) {
  if (!c || !out)
    return fail(ATTNC_INVALID_ARGUMENT, "spec and out must not be null");
  return guarded([&] {
    attnc::VariantSpec spec;
    if (c->name)
      spec.name = c->name;
    spec.queryHeads = c->query_heads;
    spec.kvHeads = c->kv_heads;
    spec.headDim = c->head_dim;
    // An enum from C may hold any int: only known enumerators pass (the
    // verifier decides which of them a role accepts).
    if (!*attnc::keyword(attnc::DType(c->dtype)))
      return fail(ATTNC_INVALID_ARGUMENT,
                  "unknown dtype " + std::to_string(int(c->dtype)));
    if (!*attnc::keyword(attnc::TokenLayout(c->query_layout)) ||
        !*attnc::keyword(attnc::TokenLayout(c->kv_layout)))
      return fail(ATTNC_INVALID_ARGUMENT, "unknown layout");
    if (!*attnc::keyword(attnc::PageOrder(c->page_order)))
      return fail(ATTNC_INVALID_ARGUMENT,
                  "unknown page order " + std::to_string(int(c->page_order)));
    spec.dtype = attnc::DType(c->dtype);
    spec.queryLayout = attnc::TokenLayout(c->query_layout);
    spec.queriesPerRequest = c->queries_per_request;
    spec.kvLayout = attnc::TokenLayout(c->kv_layout);
    spec.pageSize = c->page_size;
    spec.pageOrder = attnc::PageOrder(c->page_order);
    spec.causal = c->causal != 0;
    if (c->window_left >= 0 || c->window_right >= 0)
      spec.window = {c->window_left < 0 ? 0 : c->window_left,
                     c->window_right < 0 ? 0 : c->window_right};
    spec.sinks = c->sinks;
    if (c->scale != 0)
      spec.scale = c->scale;
    if (c->softcap != 0)
      spec.softcap = c->softcap;
    spec.alibi = c->alibi != 0;
    spec.returnLse = c->return_lse != 0;
    if (c->score_mod)
      spec.scoreMod = c->score_mod;
    if (c->mask_mod)
      spec.maskMod = c->mask_mod;
    if (c->num_captures < 0 || (c->num_captures > 0 && !c->capture_types))
      return fail(ATTNC_INVALID_ARGUMENT, "capture types missing");
    for (int i = 0; i < c->num_captures; ++i) {
      if (!c->capture_types[i])
        return fail(ATTNC_INVALID_ARGUMENT,
                    "capture type " + std::to_string(i) + " is null");
      spec.captureTypes.push_back(c->capture_types[i]);
    }
    attnc::StatusOr<attnc::Variant> variant = attnc::Variant::fromSpec(spec);
    if (!variant.ok())
      return fail(variant.status());
    *out = new attnc_variant_st{std::move(*variant)};
    return ATTNC_OK;
  });
}

const char *attnc_variant_mlir(attnc_variant variant) {
  return variant ? variant->variant.mlir().c_str() : "";
}

void attnc_variant_destroy(attnc_variant variant) { delete variant; }

attnc_status attnc_kernel_compile(attnc_variant variant, const char *arch,
                                  const char *cacheDir, attnc_kernel *out) {
  if (!variant || !out)
    return fail(ATTNC_INVALID_ARGUMENT, "variant and out must not be null");
  return guarded([&] {
    attnc::Target target;
    if (arch)
      target.arch = arch;
    if (cacheDir)
      target.cacheDir = cacheDir;
    attnc::StatusOr<attnc::Kernel> kernel =
        attnc::Kernel::compile(variant->variant, target);
    if (!kernel.ok())
      return fail(kernel.status());
    *out = new attnc_kernel_st{std::move(*kernel)};
    return ATTNC_OK;
  });
}

void attnc_kernel_destroy(attnc_kernel kernel) { delete kernel; }

int attnc_kernel_num_inputs(attnc_kernel kernel) {
  return kernel ? int(kernel->kernel.inputs().size()) : 0;
}
int attnc_kernel_num_outputs(attnc_kernel kernel) {
  return kernel ? int(kernel->kernel.outputs().size()) : 0;
}

attnc_status attnc_kernel_input(attnc_kernel kernel, int index,
                                attnc_tensor_spec *out) {
  if (!kernel || !out || index < 0 ||
      index >= int(kernel->kernel.inputs().size()))
    return fail(ATTNC_INVALID_ARGUMENT, "no input " + std::to_string(index));
  *out = toC(kernel->kernel.inputs()[index]);
  return ATTNC_OK;
}

attnc_status attnc_kernel_output(attnc_kernel kernel, int index,
                                 attnc_tensor_spec *out) {
  if (!kernel || !out || index < 0 ||
      index >= int(kernel->kernel.outputs().size()))
    return fail(ATTNC_INVALID_ARGUMENT, "no output " + std::to_string(index));
  *out = toC(kernel->kernel.outputs()[index]);
  return ATTNC_OK;
}

const char *attnc_kernel_cuda_source(attnc_kernel kernel) {
  return kernel ? kernel->kernel.cudaSource().c_str() : "";
}

size_t attnc_kernel_cubin_size(attnc_kernel kernel) {
  return kernel ? kernel->kernel.cubin().size() : 0;
}

attnc_status attnc_plan_create(attnc_kernel kernel, const attnc_batch *c,
                               attnc_plan *out) {
  if (!kernel || !c || !out)
    return fail(ATTNC_INVALID_ARGUMENT,
                "kernel, batch and out must not be null");
  return guarded([&] {
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
    attnc::StatusOr<attnc::Plan> plan = kernel->kernel.plan(batch);
    if (!plan.ok())
      return fail(plan.status());
    *out = new attnc_plan_st{std::move(*plan)};
    return ATTNC_OK;
  });
}

void attnc_plan_destroy(attnc_plan plan) { delete plan; }

int attnc_plan_num_splits(attnc_plan plan, int launch) {
  if (!plan || launch < 0 || launch >= int(plan->plan.splits().size()))
    return 0;
  return plan->plan.splits()[launch];
}

attnc_status attnc_run(attnc_kernel kernel, attnc_plan plan,
                       const uint64_t *inputs, int numInputs,
                       const uint64_t *outputs, int numOutputs,
                       const int64_t *const *bufferSizes,
                       const int *bufferRanks, void *stream) {
  if (!kernel || !plan || (numInputs > 0 && !inputs) ||
      (numOutputs > 0 && !outputs) || numInputs < 0 || numOutputs < 0)
    return fail(ATTNC_INVALID_ARGUMENT,
                "kernel, plan, inputs and outputs must not be null");
  return guarded([&] {
    std::vector<std::vector<int64_t>> sizes;
    if (bufferSizes && bufferRanks) {
      int buffers = 0;
      for (const attnc::TensorSpec &spec : kernel->kernel.inputs())
        buffers += spec.role == attnc::TensorSpec::Role::Buffer;
      for (int b = 0; b < buffers; ++b)
        sizes.emplace_back(bufferSizes[b], bufferSizes[b] + bufferRanks[b]);
    }
    attnc::Status status = kernel->kernel.run(
        plan->plan, std::vector<uint64_t>(inputs, inputs + numInputs),
        std::vector<uint64_t>(outputs, outputs + numOutputs), stream, sizes);
    if (!status.ok())
      return fail(status);
    return ATTNC_OK;
  });
}

} // extern "C"
