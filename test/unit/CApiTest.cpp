//===- CApiTest.cpp - libattnc.so's C API without a GPU -------------------===//

#include "attnc/attnc_c.h"

#include "attnc/attnc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace {

attnc_variant_spec gqaCausal() {
  attnc_variant_spec spec;
  attnc_variant_spec_init(&spec);
  spec.query_heads = 16;
  spec.kv_heads = 4;
  spec.head_dim = 64;
  spec.causal = 1;
  return spec;
}

std::string lastError() { return attnc_last_error(); }

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// A compiled kernel of gqaCausal(), for tests of handles.
struct Compiled {
  attnc_variant variant = nullptr;
  attnc_kernel kernel = nullptr;
  Compiled() {
    attnc_variant_spec spec = gqaCausal();
    EXPECT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_OK)
        << lastError();
    EXPECT_EQ(attnc_kernel_compile(variant, "sm_90a", "-", &kernel), ATTNC_OK)
        << lastError();
  }
  ~Compiled() {
    attnc_kernel_destroy(kernel);
    attnc_variant_destroy(variant);
  }
};

} // namespace

TEST(CApi, DefaultsAreAPlainVariant) {
  attnc_variant_spec spec;
  attnc_variant_spec_init(&spec);
  EXPECT_EQ(spec.dtype, ATTNC_BF16);
  EXPECT_EQ(spec.window_left, -1);
  EXPECT_EQ(spec.page_size, 16);
  EXPECT_EQ(attnc_api_version(), ATTNC_C_API_VERSION);
}

// The library says the version the CLI prints and the Python package
// reports: the project's, defined once in CMakeLists.txt.
TEST(CApi, SaysTheProjectsVersion) {
  ASSERT_NE(attnc_version(), nullptr);
  EXPECT_STREQ(attnc_version(), ATTNC_VERSION);
}

// attnc_variant_spec_init's defaults are VariantSpec's member initializers
// (both generated from ATTNC_VARIANT_SPEC): the same heads make the same
// variant through either API.
TEST(CApi, DefaultsAreTheCppDefaults) {
  attnc_variant_spec c;
  attnc_variant_spec_init(&c);
  c.query_heads = 16;
  c.kv_heads = 4;
  c.head_dim = 64;
  attnc_variant variant = nullptr;
  ASSERT_EQ(attnc_variant_from_spec(&c, &variant), ATTNC_OK) << lastError();
  attnc::VariantSpec spec;
  spec.queryHeads = 16;
  spec.kvHeads = 4;
  spec.headDim = 64;
  attnc::StatusOr<attnc::Variant> cpp = attnc::Variant::fromSpec(spec);
  ASSERT_TRUE(cpp.ok()) << cpp.status().message();
  EXPECT_EQ(attnc_variant_mlir(variant), cpp->mlir());
  attnc_variant_destroy(variant);
  EXPECT_STREQ(c.name, "attention");
  EXPECT_EQ(c.kv_dtype, -1);
  EXPECT_EQ(c.window_right, -1);
  EXPECT_EQ(c.score_mod, nullptr);
  EXPECT_EQ(c.capture_types, nullptr);
  EXPECT_EQ(c.kv_scales, ATTNC_KV_SCALES_NONE);
}

// A compile that misses the kernel caches says what it is doing through the
// process's progress handler (NVRTC takes a second or more there); a hit in
// the process's cache says nothing, and a cleared handler is not called.
TEST(CApi, ColdCompilesReportProgress) {
  std::vector<std::string> lines;
  attnc_set_compile_progress(
      [](const char *line, void *user) {
        static_cast<std::vector<std::string> *>(user)->push_back(line);
      },
      &lines);
  // A kernel no other test compiles: the process's cache has not seen it.
  attnc_variant_spec spec = gqaCausal();
  spec.query_heads = 10;
  spec.kv_heads = 5;
  spec.window_left = 37;
  spec.window_right = 0;
  attnc_variant variant = nullptr;
  attnc_kernel cold = nullptr, hit = nullptr;
  EXPECT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_OK) << lastError();
  EXPECT_EQ(attnc_kernel_compile(variant, "sm_90a", "-", &cold), ATTNC_OK)
      << lastError();
  size_t coldLines = lines.size();
  EXPECT_EQ(attnc_kernel_compile(variant, "sm_90a", "-", &hit), ATTNC_OK)
      << lastError();
  size_t hitLines = lines.size() - coldLines;
  attnc_set_compile_progress(nullptr, nullptr);
  attnc_kernel cleared = nullptr; // another arch: cold again
  EXPECT_EQ(attnc_kernel_compile(variant, "sm_80", "-", &cleared), ATTNC_OK)
      << lastError();
  attnc_kernel_destroy(cleared);
  attnc_kernel_destroy(hit);
  attnc_kernel_destroy(cold);
  attnc_variant_destroy(variant);
  ASSERT_EQ(coldLines, 2u);
  EXPECT_EQ(lines[0].rfind("compiling ", 0), 0u) << lines[0];
  EXPECT_TRUE(contains(lines[0], " for sm_90a with NVRTC (no disk cache)"))
      << lines[0];
  EXPECT_EQ(lines[1].rfind("compiled ", 0), 0u) << lines[1];
  EXPECT_TRUE(contains(lines[1], " ms")) << lines[1];
  EXPECT_EQ(hitLines, 0u);
  EXPECT_EQ(lines.size(), coldLines);
}

TEST(CApi, ErrorsAreStatusCodesWithMessages) {
  attnc_variant_spec spec = gqaCausal();
  spec.kv_heads = 3;
  attnc_variant variant = nullptr;
  EXPECT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(variant, nullptr);
  EXPECT_NE(lastError().find("must be a multiple of key/value heads (3)"),
            std::string::npos);
  EXPECT_STREQ(attnc_status_name(ATTNC_INVALID_ARGUMENT), "invalid argument");

  EXPECT_EQ(attnc_variant_from_mlir("func.func @f(", &variant),
            ATTNC_PARSE_ERROR);
  EXPECT_NE(lastError().find("<variant>:1:"), std::string::npos);
  EXPECT_EQ(attnc_variant_from_mlir("func.func @f() {\n  return\n}", &variant),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("nothing to compile"), std::string::npos);
  // Input that crashes MLIR's parser is an error, not a dead host process.
  EXPECT_EQ(attnc_variant_from_mlir(
                "func.func @f() attributes {x = array<index: 1>} { return }",
                &variant),
            ATTNC_PARSE_ERROR);

  EXPECT_EQ(attnc_variant_from_spec(nullptr, &variant), ATTNC_INVALID_ARGUMENT);
  spec = gqaCausal();
  spec.dtype = ATTNC_F32;
  EXPECT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_INVALID_ARGUMENT);
  EXPECT_NE(lastError().find("bf16 or f16"), std::string::npos);
}

TEST(CApi, CompilesAndDescribesTheKernel) {
  attnc_variant_spec spec = gqaCausal();
  spec.return_lse = 1;
  attnc_variant variant = nullptr;
  ASSERT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_OK) << lastError();
  EXPECT_NE(std::string(attnc_variant_mlir(variant)).find("causal"),
            std::string::npos);
  attnc_kernel kernel = nullptr;
  ASSERT_EQ(attnc_kernel_compile(variant, "sm_90a", "-", &kernel), ATTNC_OK)
      << lastError();
  EXPECT_EQ(attnc_kernel_num_inputs(kernel), 3);
  ASSERT_EQ(attnc_kernel_num_outputs(kernel), 2);
  attnc_tensor_spec lse;
  ASSERT_EQ(attnc_kernel_output(kernel, 1, &lse), ATTNC_OK);
  EXPECT_EQ(lse.role, ATTNC_ROLE_LSE);
  EXPECT_EQ(lse.heads, 16);
  attnc_tensor_spec none;
  EXPECT_EQ(attnc_kernel_input(kernel, 3, &none), ATTNC_INVALID_ARGUMENT);
  EXPECT_GT(attnc_kernel_cubin_size(kernel), 0u);
  EXPECT_NE(std::string(attnc_kernel_cuda_source(kernel)).find("__global__"),
            std::string::npos);

  attnc_batch batch{};
  batch.batch = 2;
  batch.max_query_len = 8;
  batch.max_kv_len = 8;
  batch.query_tokens = 15; // not 2 x 8
  attnc_plan plan = nullptr;
  EXPECT_EQ(attnc_plan_create(kernel, &batch, &plan), ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  batch.query_tokens = 16;
  batch.kv_tokens = -1;
  EXPECT_EQ(attnc_plan_create(kernel, &batch, &plan), ATTNC_INVALID_ARGUMENT);
  EXPECT_NE(std::string(attnc_last_error()).find("kv_tokens"),
            std::string::npos)
      << attnc_last_error();
  EXPECT_EQ(plan, nullptr);
  EXPECT_EQ(attnc_run(kernel, nullptr, nullptr, 0, nullptr, 0, nullptr, nullptr,
                      nullptr),
            ATTNC_INVALID_ARGUMENT);
  attnc_kernel_destroy(kernel);
  attnc_variant_destroy(variant);
}

// rope_dim makes the cache a latent one: q and the cache are the inputs.
TEST(CApi, RopeDimDescribesALatentCache) {
  attnc_variant_spec spec;
  attnc_variant_spec_init(&spec);
  EXPECT_EQ(spec.rope_dim, 0);
  spec.query_heads = 16;
  spec.kv_heads = 1;
  spec.head_dim = 576;
  spec.rope_dim = 64;
  spec.queries_per_request = 1;
  attnc_variant variant = nullptr;
  ASSERT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_OK) << lastError();
  EXPECT_TRUE(contains(attnc_variant_mlir(variant),
                       "!attn.latent_kv<?x576xbf16, rope = 64>"));
  attnc_kernel kernel = nullptr;
  ASSERT_EQ(attnc_kernel_compile(variant, "sm_90a", "-", &kernel), ATTNC_OK)
      << lastError();
  EXPECT_EQ(attnc_kernel_num_inputs(kernel), 2);
  attnc_kernel_destroy(kernel);
  attnc_variant_destroy(variant);
}

TEST(CApi, ValueHeadDimDescribesNarrowerValues) {
  attnc_variant_spec spec;
  attnc_variant_spec_init(&spec);
  EXPECT_EQ(spec.value_head_dim, 0);
  spec.query_heads = 8;
  spec.kv_heads = 8;
  spec.head_dim = 192;
  spec.value_head_dim = 128;
  attnc_variant variant = nullptr;
  ASSERT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_OK) << lastError();
  EXPECT_TRUE(contains(attnc_variant_mlir(variant), "!attn.kv<?x8x128xbf16>"));
  EXPECT_TRUE(contains(attnc_variant_mlir(variant), "!attn.out<?x8x128xbf16>"));
  attnc_variant_destroy(variant);
  spec.value_head_dim = -1;
  EXPECT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError().c_str(), "value head dim must be positive"));
}

TEST(CApi, CompileErrorsNameTheUnsupportedFeature) {
  attnc_variant_spec spec = gqaCausal();
  spec.head_dim = 40; // not a multiple of the kernels' 16-column steps
  attnc_variant variant = nullptr;
  ASSERT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_OK);
  attnc_kernel kernel = nullptr;
  EXPECT_NE(attnc_kernel_compile(variant, "sm_90a", "-", &kernel), ATTNC_OK);
  EXPECT_EQ(kernel, nullptr);
  EXPECT_NE(lastError().find("head dim 40/40"), std::string::npos);
  attnc_variant_destroy(variant);
}

TEST(CApi, NamesAndLimitsComeFromTheAbi) {
  EXPECT_STREQ(attnc_dtype_name(ATTNC_BF16), "bf16");
  EXPECT_STREQ(attnc_dtype_name(99), "");
  EXPECT_STREQ(attnc_layout_name(ATTNC_PAGED), "paged");
  EXPECT_STREQ(attnc_page_order_name(ATTNC_HND), "hnd");
  EXPECT_STREQ(attnc_role_name(ATTNC_ROLE_LSE), "lse");
  EXPECT_STREQ(attnc_role_name(ATTNC_ROLE_BUFFER + 1), "");
  EXPECT_STREQ(attnc_role_name(-1), "");
  EXPECT_EQ(attnc_get_limits()->max_captures, 8);
}

TEST(CApi, DestroyingTwiceIsAnErrorNotACrash) {
  attnc_variant_spec spec = gqaCausal();
  attnc_variant variant = nullptr;
  ASSERT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_OK);
  EXPECT_EQ(attnc_variant_destroy(variant), ATTNC_OK);
  EXPECT_EQ(attnc_variant_destroy(variant), ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "variant is not a live attnc_variant"))
      << lastError();

  Compiled compiled;
  attnc_kernel kernel = compiled.kernel;
  EXPECT_EQ(attnc_kernel_destroy(kernel), ATTNC_OK);
  EXPECT_EQ(attnc_kernel_destroy(kernel), ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "kernel is not a live attnc_kernel"));
  compiled.kernel = nullptr; // its destructor destroys NULL: nothing
}

TEST(CApi, UsingADestroyedHandleIsAnError) {
  attnc_variant_spec spec = gqaCausal();
  attnc_variant variant = nullptr;
  ASSERT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_OK);
  ASSERT_EQ(attnc_variant_destroy(variant), ATTNC_OK);
  // A new variant may take the old one's memory, never its handle.
  attnc_variant other = nullptr;
  ASSERT_EQ(attnc_variant_from_spec(&spec, &other), ATTNC_OK);
  EXPECT_NE(other, variant);
  EXPECT_STREQ(attnc_variant_mlir(variant), "");
  EXPECT_TRUE(contains(lastError(), "not a live attnc_variant"));
  attnc_kernel kernel = nullptr;
  EXPECT_EQ(attnc_kernel_compile(variant, "sm_90a", "-", &kernel),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(kernel, nullptr);
  EXPECT_TRUE(contains(attnc_variant_mlir(other), "attn.attention"));
  attnc_variant_destroy(other);

  Compiled compiled;
  attnc_kernel dead = compiled.kernel;
  ASSERT_EQ(attnc_kernel_destroy(dead), ATTNC_OK);
  compiled.kernel = nullptr;
  attnc_last_error(); // each call below must set the error itself
  EXPECT_EQ(attnc_kernel_num_inputs(dead), 0);
  EXPECT_TRUE(contains(lastError(), "kernel is not a live attnc_kernel"));
  EXPECT_EQ(attnc_kernel_num_outputs(dead), 0);
  EXPECT_STREQ(attnc_kernel_cuda_source(dead), "");
  EXPECT_EQ(attnc_kernel_cubin_size(dead), 0u);
  attnc_tensor_spec tensor;
  EXPECT_EQ(attnc_kernel_input(dead, 0, &tensor), ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(attnc_kernel_output(dead, 0, &tensor), ATTNC_INVALID_ARGUMENT);
  attnc_batch batch{};
  attnc_plan plan = nullptr;
  EXPECT_EQ(attnc_plan_create(dead, &batch, &plan), ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "kernel is not a live attnc_kernel"));
  EXPECT_EQ(attnc_run(dead, nullptr, nullptr, 0, nullptr, 0, nullptr, nullptr,
                      nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "kernel is not a live attnc_kernel"));
}

TEST(CApi, APointerThatIsNoHandleIsAnError) {
  int local = 0;
  auto variant = reinterpret_cast<attnc_variant>(&local);
  auto kernel = reinterpret_cast<attnc_kernel>(&local);
  auto plan = reinterpret_cast<attnc_plan>(&local);
  EXPECT_EQ(attnc_variant_destroy(variant), ATTNC_INVALID_ARGUMENT);
  EXPECT_STREQ(attnc_variant_mlir(variant), "");
  EXPECT_EQ(attnc_kernel_destroy(kernel), ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(attnc_kernel_num_inputs(kernel), 0);
  EXPECT_EQ(attnc_plan_destroy(plan), ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "plan is not a live attnc_plan"));
  EXPECT_EQ(attnc_plan_num_splits(plan, 0), 0);
  EXPECT_EQ(local, 0); // nothing wrote through it

  // A live handle of another type is no handle of this one.
  Compiled compiled;
  EXPECT_STREQ(
      attnc_variant_mlir(reinterpret_cast<attnc_variant>(compiled.kernel)), "");
  EXPECT_TRUE(contains(lastError(), "not a live attnc_variant"));
  // The kernel's counts (3 inputs, 1 output), so that the plan is what is
  // wrong.
  uint64_t pointers[3] = {1, 2, 3};
  EXPECT_EQ(attnc_run(compiled.kernel,
                      reinterpret_cast<attnc_plan>(compiled.kernel), pointers,
                      3, pointers, 1, nullptr, nullptr, nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "plan is not a live attnc_plan"));
  EXPECT_EQ(attnc_run(compiled.kernel, plan, pointers, 3, pointers, 1, nullptr,
                      nullptr, nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "plan is not a live attnc_plan"));
}

TEST(CApi, NullHandles) {
  EXPECT_EQ(attnc_variant_destroy(nullptr), ATTNC_OK); // like free(NULL)
  EXPECT_EQ(attnc_kernel_destroy(nullptr), ATTNC_OK);
  EXPECT_EQ(attnc_plan_destroy(nullptr), ATTNC_OK);
  EXPECT_STREQ(attnc_variant_mlir(nullptr), "");
  EXPECT_EQ(lastError(), "variant is null");
  attnc_kernel kernel = nullptr;
  EXPECT_EQ(attnc_kernel_compile(nullptr, "sm_90a", "-", &kernel),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "variant is null");
  EXPECT_EQ(attnc_kernel_num_outputs(nullptr), 0);
  EXPECT_EQ(lastError(), "kernel is null");
  EXPECT_EQ(attnc_plan_num_splits(nullptr, 0), 0);
  EXPECT_EQ(lastError(), "plan is null");
  Compiled compiled;
  EXPECT_EQ(attnc_kernel_compile(compiled.variant, "sm_90a", "-", nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "out must not be null");
  EXPECT_EQ(attnc_kernel_input(compiled.kernel, 0, nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "out must not be null");
  attnc_tensor_spec tensor;
  EXPECT_EQ(attnc_kernel_output(compiled.kernel, 1, &tensor),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "no output 1");
  EXPECT_EQ(attnc_plan_create(compiled.kernel, nullptr, nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "batch and out must not be null");
  EXPECT_EQ(attnc_variant_from_mlir(nullptr, nullptr), ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "text and out must not be null");
}

TEST(CApi, RunChecksItsArrays) {
  Compiled compiled;
  // No plan can be made without a GPU: these fail before the plan is read.
  EXPECT_EQ(attnc_run(compiled.kernel, nullptr, nullptr, 3, nullptr, 0, nullptr,
                      nullptr, nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "num_inputs and num_outputs"));
  uint64_t pointers[3] = {1, 2, 3};
  EXPECT_EQ(attnc_run(compiled.kernel, nullptr, pointers, -1, pointers, 1,
                      nullptr, nullptr, nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "non-negative"));
  int ranks[1] = {1};
  EXPECT_EQ(attnc_run(compiled.kernel, nullptr, pointers, 3, pointers, 1,
                      nullptr, ranks, nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "buffer_sizes and buffer_ranks"));
  EXPECT_EQ(attnc_run(compiled.kernel, nullptr, pointers, 3, pointers, 1,
                      nullptr, nullptr, nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "plan is null");
  // The kernel's counts bound what is read: a count past the 3-entry
  // array is refused before it is copied.
  EXPECT_EQ(attnc_run(compiled.kernel, nullptr, pointers, 1 << 30, pointers, 1,
                      nullptr, nullptr, nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "num_inputs and num_outputs must be the kernel's 3 "
                         "inputs and 1 outputs, got 1073741824 and 1");
  EXPECT_EQ(attnc_run(compiled.kernel, nullptr, pointers, 3, pointers, 3,
                      nullptr, nullptr, nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "num_inputs and num_outputs must be the kernel's 3 "
                         "inputs and 1 outputs, got 3 and 3");
}

namespace {

/// The status of `spec` after `change`, with attnc_last_error in `error`.
template <typename F>
attnc_status specStatus(F change, std::string &error,
                        attnc_variant_spec spec = gqaCausal()) {
  change(spec);
  attnc_variant variant = nullptr;
  attnc_status status = attnc_variant_from_spec(&spec, &variant);
  error = lastError();
  attnc_variant_destroy(variant);
  return status;
}

} // namespace

TEST(CApi, SpecEncodingIsChecked) {
  struct Case {
    const char *what;
    void (*change)(attnc_variant_spec &);
    const char *message;
  };
  static const char *oneType[] = {"memref<4xf32>"};
  static const char *nullType[] = {nullptr};
  const Case cases[] = {
      {"causal 2", [](attnc_variant_spec &s) { s.causal = 2; },
       "causal must be 0 or 1, got 2"},
      {"alibi -1", [](attnc_variant_spec &s) { s.alibi = -1; },
       "alibi must be 0 or 1, got -1"},
      {"return_lse 7", [](attnc_variant_spec &s) { s.return_lse = 7; },
       "return_lse must be 0 or 1, got 7"},
      {"segments 3", [](attnc_variant_spec &s) { s.segments = 3; },
       "segments must be 0 or 1, got 3"},
      {"kv_scales 3",
       [](attnc_variant_spec &s) { s.kv_scales = attnc_kv_scales(3); },
       "unknown KV scales 3"},
      {"kv_dtype 40", [](attnc_variant_spec &s) { s.kv_dtype = 40; },
       "unknown KV dtype 40"},
      {"scales of a bf16 cache",
       [](attnc_variant_spec &s) { s.kv_scales = ATTNC_KV_SCALES_PER_TENSOR; },
       "kv_scales dequantize an fp8 key/value cache"},
      {"half a window",
       [](attnc_variant_spec &s) {
         s.window_left = -1;
         s.window_right = 5;
       },
       "both be -1 (no window) or both be non-negative, got -1 and 5"},
      {"window -2",
       [](attnc_variant_spec &s) { s.window_left = s.window_right = -2; },
       "got -2 and -2"},
      {"num_captures -1", [](attnc_variant_spec &s) { s.num_captures = -1; },
       "num_captures must be in 0..8, got -1"},
      {"num_captures 9",
       [](attnc_variant_spec &s) {
         s.capture_types = oneType;
         s.num_captures = 9;
       },
       "num_captures must be in 0..8, got 9"},
      {"no capture array", [](attnc_variant_spec &s) { s.num_captures = 1; },
       "capture_types is null but num_captures is 1"},
      {"null capture type",
       [](attnc_variant_spec &s) {
         s.capture_types = nullType;
         s.num_captures = 1;
       },
       "capture_types[0] is null"},
      {"dtype 99",
       [](attnc_variant_spec &s) { s.dtype = static_cast<attnc_dtype>(99); },
       "unknown dtype 99"},
      {"query layout 7",
       [](attnc_variant_spec &s) {
         s.query_layout = static_cast<attnc_layout>(7);
       },
       "unknown query layout 7"},
      {"kv layout -1",
       [](attnc_variant_spec &s) {
         s.kv_layout = static_cast<attnc_layout>(-1);
       },
       "unknown KV layout -1"},
      {"page order 5",
       [](attnc_variant_spec &s) {
         s.page_order = static_cast<attnc_page_order>(5);
       },
       "unknown page order 5"},
      {"queries per request -1",
       [](attnc_variant_spec &s) { s.queries_per_request = -1; },
       "queries per request must be 0 (any) or positive, got -1"},
      {"ragged queries per request",
       [](attnc_variant_spec &s) {
         s.query_layout = ATTNC_RAGGED;
         s.queries_per_request = 4;
       },
       "applies to dense queries only"},
      {"empty name", [](attnc_variant_spec &s) { s.name = ""; },
       "variant name '' must be a letter or underscore"},
      {"name of a digit", [](attnc_variant_spec &s) { s.name = "9lives"; },
       "variant name '9lives'"},
      {"name with a brace",
       [](attnc_variant_spec &s) { s.name = "f() {} func.func @g"; },
       "must be a letter or underscore followed by letters"},
      // What the IR can say is the verifier's, in its words.
      {"no KV heads", [](attnc_variant_spec &s) { s.kv_heads = 0; },
       "key/value head count must be in [1, 1024], got 0"},
      {"negative heads", [](attnc_variant_spec &s) { s.query_heads = -3; },
       "query heads must be positive, got -3"},
      {"head dim 0", [](attnc_variant_spec &s) { s.head_dim = 0; },
       "head dim must be a multiple of 8 in [8, 1024], got 0"},
      {"page size 0",
       [](attnc_variant_spec &s) {
         s.kv_layout = ATTNC_PAGED;
         s.page_size = 0;
       },
       "page size must be between 1 and 256, got 0"},
      {"sinks -1", [](attnc_variant_spec &s) { s.sinks = -1; },
       "sinks must be in [0, 2147483647], got -1"},
      {"NaN scale", [](attnc_variant_spec &s) { s.scale = std::nanf(""); },
       "scale must be positive and finite, got"},
      {"infinite softcap", [](attnc_variant_spec &s) { s.softcap = INFINITY; },
       "softcap must be positive and finite, got"},
      {"negative scale", [](attnc_variant_spec &s) { s.scale = -1; },
       "scale must be positive and finite, got -1"},
      {"dtype f32", [](attnc_variant_spec &s) { s.dtype = ATTNC_F32; },
       "query element type must be bf16 or f16"},
  };
  for (const Case &c : cases) {
    std::string error;
    EXPECT_EQ(specStatus(c.change, error), ATTNC_INVALID_ARGUMENT) << c.what;
    EXPECT_TRUE(contains(error, c.message))
        << c.what << ": got \"" << error << "\"";
  }
  std::string error;
  EXPECT_EQ(specStatus([](attnc_variant_spec &s) { s.name = nullptr; }, error),
            ATTNC_OK)
      << "NULL is the default name: " << error;
  EXPECT_EQ(specStatus(
                [](attnc_variant_spec &s) {
                  s.window_left = 128;
                  s.window_right = 0;
                },
                error),
            ATTNC_OK)
      << error;
}

// Every field of the C spec (the library's own table of them) reaches the
// variant's text, through the translation generated from
// ATTNC_VARIANT_SPEC; a count is set with the array it counts.
TEST(CApi, EveryFieldReachesTheVariant) {
  using Edit = void (*)(attnc_variant_spec &);
  struct Case {
    Edit context, change;
  };
  static const char *oneType[] = {"memref<4xf32>"};
  Edit none = [](attnc_variant_spec &) {};
  Edit paged = [](attnc_variant_spec &s) { s.kv_layout = ATTNC_PAGED; };
  const std::map<std::string, Case> cases = {
      {"name", {none, [](attnc_variant_spec &s) { s.name = "other"; }}},
      {"query_heads",
       {none, [](attnc_variant_spec &s) { s.query_heads = 32; }}},
      {"kv_heads", {none, [](attnc_variant_spec &s) { s.kv_heads = 8; }}},
      {"head_dim", {none, [](attnc_variant_spec &s) { s.head_dim = 128; }}},
      {"dtype", {none, [](attnc_variant_spec &s) { s.dtype = ATTNC_F16; }}},
      {"query_layout",
       {none, [](attnc_variant_spec &s) { s.query_layout = ATTNC_RAGGED; }}},
      {"queries_per_request",
       {none, [](attnc_variant_spec &s) { s.queries_per_request = 1; }}},
      {"kv_layout",
       {none, [](attnc_variant_spec &s) { s.kv_layout = ATTNC_RAGGED; }}},
      {"page_size", {paged, [](attnc_variant_spec &s) { s.page_size = 32; }}},
      {"page_order",
       {paged, [](attnc_variant_spec &s) { s.page_order = ATTNC_HND; }}},
      {"causal", {none, [](attnc_variant_spec &s) { s.causal = 1; }}},
      {"window_left",
       {none,
        [](attnc_variant_spec &s) {
          s.window_left = 128;
          s.window_right = 0;
        }}},
      {"window_right",
       {none,
        [](attnc_variant_spec &s) {
          s.window_left = 0;
          s.window_right = 128;
        }}},
      {"sinks", {none, [](attnc_variant_spec &s) { s.sinks = 4; }}},
      {"scale", {none, [](attnc_variant_spec &s) { s.scale = 0.125f; }}},
      {"softcap", {none, [](attnc_variant_spec &s) { s.softcap = 30; }}},
      {"alibi", {none, [](attnc_variant_spec &s) { s.alibi = 1; }}},
      {"return_lse", {none, [](attnc_variant_spec &s) { s.return_lse = 1; }}},
      {"score_mod",
       {none,
        [](attnc_variant_spec &s) {
          s.score_mod = "^bb0(%s: f32, %b: index, %h: index, %qi: index, "
                        "%ki: index, %ql: index, %kl: index):\n"
                        "  attn.yield %s : f32";
        }}},
      {"mask_mod",
       {none,
        [](attnc_variant_spec &s) {
          s.mask_mod = "^bb0(%b: index, %h: index, %qi: index, %ki: index, "
                       "%ql: index, %kl: index):\n"
                       "  %t = arith.constant true\n  attn.yield %t : i1";
        }}},
      {"capture_types",
       {none,
        [](attnc_variant_spec &s) {
          s.score_mod = "^bb0(%s: f32, %b: index, %h: index, %qi: index, "
                        "%ki: index, %ql: index, %kl: index, "
                        "%t: memref<4xf32>):\n  attn.yield %s : f32";
          s.capture_types = oneType;
          s.num_captures = 1;
        }}},
      {"kv_dtype", {none, [](attnc_variant_spec &s) { s.kv_dtype = 5; }}},
      {"kv_scales",
       {[](attnc_variant_spec &s) { s.kv_dtype = ATTNC_F8E4M3; },
        [](attnc_variant_spec &s) { s.kv_scales = ATTNC_KV_SCALES_PER_HEAD; }}},
      {"rope_dim",
       {[](attnc_variant_spec &s) {
          s.kv_heads = 1;
          s.head_dim = 576;
        },
        [](attnc_variant_spec &s) { s.rope_dim = 64; }}},
      {"value_head_dim",
       {none, [](attnc_variant_spec &s) { s.value_head_dim = 32; }}},
      {"segments", {none, [](attnc_variant_spec &s) { s.segments = 1; }}},
      {"shared_keys", {none, [](attnc_variant_spec &s) { s.shared_keys = 1; }}},
  };
  int count = 0;
  const attnc_field *fields =
      attnc_record_fields("attnc_variant_spec", &count, nullptr);
  ASSERT_NE(fields, nullptr);
  size_t covered = 0;
  for (int i = 0; i < count; ++i) {
    std::string name = fields[i].encoding == ATTNC_ENCODING_COUNT
                           ? fields[i].counts
                           : fields[i].name;
    EXPECT_EQ(cases.count(name), 1u) << fields[i].name << " has no case";
    covered += fields[i].encoding != ATTNC_ENCODING_COUNT;
  }
  EXPECT_EQ(cases.size(), covered) << "a case of no field";

  for (const auto &[name, c] : cases) {
    attnc_variant_spec base = gqaCausal();
    base.causal = 0;
    c.context(base);
    attnc_variant_spec changed = base;
    c.change(changed);
    attnc_variant before = nullptr, after = nullptr;
    ASSERT_EQ(attnc_variant_from_spec(&base, &before), ATTNC_OK)
        << name << ": " << lastError();
    ASSERT_EQ(attnc_variant_from_spec(&changed, &after), ATTNC_OK)
        << name << ": " << lastError();
    EXPECT_STRNE(attnc_variant_mlir(before), attnc_variant_mlir(after))
        << name << " changes no IR";
    attnc_variant_destroy(before);
    attnc_variant_destroy(after);
  }
}

TEST(CApi, CaptureTypesCannotInjectIr) {
  const std::string scoreMod = "^bb0(%s: f32, %b: index, %h: index, %qi: "
                               "index, %ki: index, %ql: index, %kl: index, "
                               "%t: memref<4xf32>):\n  attn.yield %s : f32";
  struct Case {
    const char *type, *message;
  };
  const Case cases[] = {
      // Would close the function's signature it is pasted into.
      {"memref<4xf32>) -> () {", "capture type 0 is not a type"},
      {"memref<4xf32>, %x: memref<4xf32>", "capture type 0 is not a type"},
      {"f32", "capture type 0 must be a memref type, got 'f32'"},
      {"", "capture type 0 is not a type"},
  };
  for (const Case &c : cases) {
    attnc_variant_spec spec = gqaCausal();
    const char *types[] = {c.type};
    spec.capture_types = types;
    spec.num_captures = 1;
    spec.score_mod = scoreMod.c_str();
    attnc_variant variant = nullptr;
    EXPECT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_INVALID_ARGUMENT)
        << c.type;
    EXPECT_TRUE(contains(lastError(), c.message))
        << c.type << ": got \"" << lastError() << "\"";
  }
  // Brackets nested deep enough to overflow the parser's stack.
  std::string deep = "memref<4x" + std::string(100000, '<');
  attnc_variant_spec spec = gqaCausal();
  const char *types[] = {deep.c_str()};
  spec.capture_types = types;
  spec.num_captures = 1;
  spec.score_mod = scoreMod.c_str();
  attnc_variant variant = nullptr;
  EXPECT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "brackets nest deeper")) << lastError();

  // A type with spaces enters the text as MLIR prints it.
  const char *spaced[] = {"  memref<4xf32>\n"};
  spec.capture_types = spaced;
  ASSERT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_OK) << lastError();
  EXPECT_TRUE(contains(attnc_variant_mlir(variant),
                       "captures(%attnc_capture0 : memref<4xf32>)"))
      << attnc_variant_mlir(variant);
  attnc_variant_destroy(variant);
}

TEST(CApi, RegionTextThatLeavesItsRegionIsRefused) {
  // Closes score_mod and opens a mask_mod the spec does not have: it parses
  // and verifies, so only the shape check can see it.
  const char *addsMaskMod = "^bb0(%s: f32, %b: index, %h: index, %qi: index, "
                            "%ki: index, %ql: index, %kl: index):\n"
                            "  attn.yield %s : f32\n"
                            "}\n"
                            "mask_mod {\n"
                            "^bb0(%b: index, %h: index, %qi: index, %ki: "
                            "index, %ql: index, %kl: index):\n"
                            "  %f = arith.constant false\n"
                            "  attn.yield %f : i1";
  attnc_variant_spec spec = gqaCausal();
  spec.score_mod = addsMaskMod;
  attnc_variant variant = nullptr;
  EXPECT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "score_mod / mask_mod text must be one "
                                    "block of its region"))
      << lastError();
  EXPECT_EQ(variant, nullptr);
}

TEST(CApi, BatchEncodingIsChecked) {
  Compiled compiled;
  attnc_batch batch{};
  batch.batch = 1;
  batch.max_query_len = 1;
  batch.max_kv_len = 1;
  batch.query_tokens = 1;
  batch.k_page_stride = -8;
  attnc_plan plan = nullptr;
  EXPECT_EQ(attnc_plan_create(compiled.kernel, &batch, &plan),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "page strides")) << lastError();
  batch.k_page_stride = 0;
  batch.batch = -1;
  EXPECT_EQ(attnc_plan_create(compiled.kernel, &batch, &plan),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(lastError(), "non-negative")) << lastError();
  EXPECT_EQ(plan, nullptr);
}

TEST(CApi, APlanOutlivesItsKernel) {
  Compiled compiled;
  attnc_batch batch{};
  batch.batch = 2;
  batch.max_query_len = 8;
  batch.max_kv_len = 8;
  batch.query_tokens = 16;
  attnc_plan plan = nullptr;
  attnc_status status = attnc_plan_create(compiled.kernel, &batch, &plan);
  if (status == ATTNC_NO_DEVICE)
    GTEST_SKIP() << "no GPU: " << lastError();
  ASSERT_EQ(status, ATTNC_OK) << lastError();
  ASSERT_EQ(attnc_kernel_destroy(compiled.kernel), ATTNC_OK);
  compiled.kernel = nullptr;
  EXPECT_GE(attnc_plan_num_splits(plan, 0), 1);
  EXPECT_EQ(attnc_plan_num_splits(plan, 5), 0);
  EXPECT_TRUE(contains(lastError(), "no attention launch 5"));
  EXPECT_EQ(attnc_plan_destroy(plan), ATTNC_OK);
  EXPECT_EQ(attnc_plan_destroy(plan), ATTNC_INVALID_ARGUMENT);
}

TEST(CApi, RunChecksBufferSizes) {
  attnc_variant_spec spec = gqaCausal();
  const char *types[] = {"memref<?xf32>"};
  spec.capture_types = types;
  spec.num_captures = 1;
  spec.score_mod = "^bb0(%s: f32, %b: index, %h: index, %qi: index, "
                   "%ki: index, %ql: index, %kl: index, %t: memref<?xf32>):\n"
                   "  %x = memref.load %t[%ki] : memref<?xf32>\n"
                   "  %y = arith.addf %s, %x : f32\n"
                   "  attn.yield %y : f32";
  attnc_variant variant = nullptr;
  ASSERT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_OK) << lastError();
  attnc_kernel kernel = nullptr;
  ASSERT_EQ(attnc_kernel_compile(variant, "sm_90a", "-", &kernel), ATTNC_OK)
      << lastError();
  uint64_t pointers[4] = {1, 2, 3, 4};
  const int64_t *sizes[1] = {nullptr};
  int ranks[1] = {-1};
  // Checked before the plan (none can be made without a GPU) is read.
  EXPECT_EQ(attnc_run(kernel, nullptr, pointers, 4, pointers, 1, sizes, ranks,
                      nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "buffer_ranks[0] must be in 0..2, got -1");
  ranks[0] = 1;
  EXPECT_EQ(attnc_run(kernel, nullptr, pointers, 4, pointers, 1, sizes, ranks,
                      nullptr),
            ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(lastError(), "buffer_sizes[0] is null");
  attnc_kernel_destroy(kernel);
  attnc_variant_destroy(variant);
}

// Bindings read records' layouts from the library: each table lists the
// struct's fields in order, at the compiler's offsets, with their kinds.
TEST(CApi, RecordTablesDescribeTheStructs) {
  int count = -1;
  int64_t size = -1;
  const attnc_field *fields =
      attnc_record_fields("attnc_request", &count, &size);
  ASSERT_NE(fields, nullptr);
  ASSERT_EQ(count, 7);
  EXPECT_EQ(size, int64_t(sizeof(attnc_request)));
  EXPECT_STREQ(fields[1].name, "prompt");
  EXPECT_EQ(fields[1].offset, int64_t(offsetof(attnc_request, prompt)));
  EXPECT_EQ(fields[1].kind, ATTNC_FIELD_INT32_ARRAY);
  EXPECT_STREQ(fields[5].name, "cache_namespace");
  EXPECT_EQ(fields[5].offset,
            int64_t(offsetof(attnc_request, cache_namespace)));
  EXPECT_EQ(fields[5].kind, ATTNC_FIELD_UINT64);
  // Every record: fields in order, none overlapping, all inside the struct.
  int records = 0;
  for (; *attnc_record_name(records); ++records) {
    const attnc_field *f =
        attnc_record_fields(attnc_record_name(records), &count, &size);
    ASSERT_NE(f, nullptr);
    for (int i = 0; i < count; ++i) {
      EXPECT_GE(f[i].offset, i ? f[i - 1].offset + f[i - 1].size : 0)
          << attnc_record_name(records) << "." << f[i].name;
      EXPECT_LE(f[i].offset + f[i].size, size) << f[i].name;
    }
  }
  EXPECT_EQ(records, 10);
  EXPECT_STREQ(attnc_record_name(-1), "");
  // What bindings convert by: the variant spec's encodings come from its
  // list, other records' enums from their C types.
  fields = attnc_record_fields("attnc_variant_spec", &count, &size);
  ASSERT_NE(fields, nullptr);
  auto field = [&](const std::string &name) {
    for (int i = 0; i < count; ++i)
      if (name == fields[i].name)
        return fields[i];
    ADD_FAILURE() << "no field " << name;
    return attnc_field{};
  };
  EXPECT_EQ(field("query_heads").encoding, ATTNC_ENCODING_VALUE);
  EXPECT_EQ(field("query_heads").has_none, 0);
  EXPECT_EQ(field("causal").encoding, ATTNC_ENCODING_FLAG);
  EXPECT_EQ(field("dtype").encoding, ATTNC_ENCODING_ENUM);
  EXPECT_STREQ(field("dtype").enum_type, "attnc_dtype");
  EXPECT_EQ(field("kv_dtype").encoding, ATTNC_ENCODING_ENUM);
  EXPECT_STREQ(field("kv_dtype").enum_type, "attnc_dtype");
  EXPECT_EQ(field("kv_dtype").has_none, 1);
  EXPECT_EQ(field("kv_dtype").none, -1);
  EXPECT_EQ(field("window_left").none, -1);
  EXPECT_EQ(field("scale").has_none, 1);
  EXPECT_EQ(field("scale").none, 0);
  EXPECT_EQ(field("score_mod").has_none, 1);
  EXPECT_EQ(field("name").has_none, 0);
  EXPECT_EQ(field("num_captures").encoding, ATTNC_ENCODING_COUNT);
  EXPECT_STREQ(field("num_captures").counts, "capture_types");
  EXPECT_EQ(field("capture_types").counts, nullptr);
  fields = attnc_record_fields("attnc_kv_pool_config", &count, &size);
  ASSERT_NE(fields, nullptr);
  EXPECT_EQ(field("memory").encoding, ATTNC_ENCODING_ENUM);
  EXPECT_STREQ(field("memory").enum_type, "attnc_kv_memory");
  EXPECT_EQ(field("num_pages").encoding, ATTNC_ENCODING_VALUE);
  EXPECT_EQ(field("num_pages").enum_type, nullptr);
  EXPECT_EQ(attnc_record_fields("attnc_nothing", &count, &size), nullptr);
  EXPECT_EQ(count, 0);
}
