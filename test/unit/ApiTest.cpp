//===- ApiTest.cpp - the C++ JIT API without a GPU ------------------------===//

#include "attnc/attnc.h"

#include "cuda/CudaDriver.h"

#include <gtest/gtest.h>

using namespace attnc;

namespace {

VariantSpec gqaCausal() {
  VariantSpec spec;
  spec.queryHeads = 32;
  spec.kvHeads = 8;
  spec.headDim = 128;
  spec.causal = true;
  return spec;
}

Target sm90() {
  Target target;
  target.arch = "sm_90a";
  target.cacheDir = "-";
  return target;
}

bool haveGpu() { return cuda::Driver::get().ok(); }

/// Two requests of 64 queries and 64 keys, `queryTokens` rows in all.
Batch twoRequests(int64_t queryTokens) {
  Batch batch;
  batch.batch = 2;
  batch.maxQueryLen = 64;
  batch.maxKVLen = 64;
  batch.queryTokens = queryTokens;
  return batch;
}

} // namespace

TEST(Api, SpecBecomesAVerifiedVariant) {
  VariantSpec spec = gqaCausal();
  spec.window = {{1024, 0}};
  spec.sinks = 4;
  spec.returnLse = true;
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  ASSERT_TRUE(variant.ok()) << variant.status().toString();
  EXPECT_NE(variant->mlir().find("window = #attn.window<1024, 0>"),
            std::string::npos);
  EXPECT_NE(variant->mlir().find("-> (!attn.out<?x32x128xbf16>, "
                                 "!attn.lse<?x32>)"),
            std::string::npos);
}

TEST(Api, SpecErrorsAreValues) {
  VariantSpec spec = gqaCausal();
  spec.kvHeads = 5;
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  ASSERT_FALSE(variant.ok());
  EXPECT_EQ(variant.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(variant.status().message().find("multiple of KV heads"),
            std::string::npos);

  spec = gqaCausal();
  spec.kvLayout = TokenLayout::Paged;
  spec.pageSize = 512;
  EXPECT_EQ(Variant::fromSpec(spec).status().code(),
            ErrorCode::InvalidArgument);
}

TEST(Api, BadRegionTextIsAnInvalidSpecWithALocation) {
  VariantSpec spec = gqaCausal();
  spec.scoreMod = "^bb0(%s: f32):\n  attn.yield %nope : f32";
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  ASSERT_FALSE(variant.ok());
  EXPECT_EQ(variant.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(variant.status().message().find("<attention>:"), std::string::npos);
}

TEST(Api, CompilesForAnExplicitArchWithoutAGpu) {
  StatusOr<Variant> variant = Variant::fromSpec(gqaCausal());
  ASSERT_TRUE(variant.ok());
  StatusOr<Kernel> kernel = Kernel::compile(*variant, sm90());
  ASSERT_TRUE(kernel.ok()) << kernel.status().toString();
  ASSERT_EQ(kernel->inputs().size(), 3u);
  EXPECT_EQ(kernel->inputs()[0].role, TensorSpec::Role::Query);
  EXPECT_EQ(kernel->inputs()[1].heads, 8);
  ASSERT_EQ(kernel->outputs().size(), 1u);
  EXPECT_EQ(kernel->outputs()[0].role, TensorSpec::Role::Output);
  EXPECT_FALSE(kernel->cubin().empty());
  EXPECT_NE(kernel->cudaSource().find("__global__"), std::string::npos);
}

TEST(Api, UnsupportedVariantsFailToCompileWithAReason) {
  VariantSpec spec = gqaCausal();
  spec.headDim = 72; // not a multiple of the kernels' 16-column steps
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  ASSERT_TRUE(variant.ok());
  StatusOr<Kernel> kernel = Kernel::compile(*variant, sm90());
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.status().message().find("head dim 72/72"),
            std::string::npos);
}

TEST(Api, PlanChecksTheBatchBeforeTouchingTheGpu) {
  VariantSpec spec = gqaCausal();
  spec.queryLayout = TokenLayout::Ragged;
  spec.kvLayout = TokenLayout::Ragged;
  StatusOr<Kernel> kernel = Kernel::compile(*Variant::fromSpec(spec), sm90());
  ASSERT_TRUE(kernel.ok());
  StatusOr<Plan> plan = kernel->plan(twoRequests(100));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(plan.status().message().find("q_indptr"), std::string::npos);
}

TEST(Api, DenseQueriesMustFillTheBatch) {
  StatusOr<Kernel> kernel =
      Kernel::compile(*Variant::fromSpec(gqaCausal()), sm90());
  ASSERT_TRUE(kernel.ok());
  StatusOr<Plan> plan = kernel->plan(twoRequests(100));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("batch x query length"),
            std::string::npos);
}

TEST(Api, PlanWithoutAGpuSaysSo) {
  if (haveGpu())
    GTEST_SKIP() << "a GPU is present: the no-GPU path cannot be seen";
  StatusOr<Kernel> kernel =
      Kernel::compile(*Variant::fromSpec(gqaCausal()), sm90());
  ASSERT_TRUE(kernel.ok());
  StatusOr<Plan> plan = kernel->plan(twoRequests(128));
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::NoDevice);
}

TEST(Api, CompileWithoutArchNeedsAGpu) {
  if (haveGpu())
    GTEST_SKIP() << "a GPU is present: the no-GPU path cannot be seen";
  StatusOr<Kernel> kernel = Kernel::compile(*Variant::fromSpec(gqaCausal()));
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), ErrorCode::NoDevice);
  EXPECT_NE(kernel.status().message().find("no target arch"),
            std::string::npos);
}
