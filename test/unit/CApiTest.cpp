//===- CApiTest.cpp - libattnc.so's C API without a GPU -------------------===//

#include "attnc/attnc_c.h"

#include <gtest/gtest.h>

#include <string>

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

} // namespace

TEST(CApi, DefaultsAreAPlainVariant) {
  attnc_variant_spec spec;
  attnc_variant_spec_init(&spec);
  EXPECT_EQ(spec.dtype, ATTNC_BF16);
  EXPECT_EQ(spec.window_left, -1);
  EXPECT_EQ(spec.page_size, 16);
  EXPECT_EQ(attnc_api_version(), ATTNC_C_API_VERSION);
}

TEST(CApi, ErrorsAreStatusCodesWithMessages) {
  attnc_variant_spec spec = gqaCausal();
  spec.kv_heads = 3;
  attnc_variant variant = nullptr;
  EXPECT_EQ(attnc_variant_from_spec(&spec, &variant), ATTNC_INVALID_ARGUMENT);
  EXPECT_EQ(variant, nullptr);
  EXPECT_NE(lastError().find("multiple of KV heads"), std::string::npos);
  EXPECT_STREQ(attnc_status_name(ATTNC_INVALID_ARGUMENT), "invalid argument");

  EXPECT_EQ(attnc_variant_from_mlir("func.func @f(", &variant),
            ATTNC_PARSE_ERROR);
  EXPECT_NE(lastError().find("<variant>:1:"), std::string::npos);

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
  EXPECT_EQ(attnc_run(kernel, nullptr, nullptr, 0, nullptr, 0, nullptr, nullptr,
                      nullptr),
            ATTNC_INVALID_ARGUMENT);
  attnc_kernel_destroy(kernel);
  attnc_variant_destroy(variant);
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
