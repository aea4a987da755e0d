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
  spec.headDim = 80;
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  ASSERT_TRUE(variant.ok());
  StatusOr<Kernel> kernel = Kernel::compile(*variant, sm90());
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.status().message().find("head dim"), std::string::npos);
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

// What the kernels' grid and 32-bit indices cannot hold is refused at plan
// time, before the GPU is touched, never launched truncated.
TEST(Api, PlanRefusesBatchesBeyondTheKernelsLimits) {
  VariantSpec spec = gqaCausal();
  spec.queryLayout = TokenLayout::Ragged;
  spec.kvLayout = TokenLayout::Ragged;
  StatusOr<Kernel> kernel = Kernel::compile(*Variant::fromSpec(spec), sm90());
  ASSERT_TRUE(kernel.ok());
  Batch batch = twoRequests(128);
  batch.qIndptr = batch.kvIndptr = 0x1000; // never read: refused first
  batch.batch = 65536;
  StatusOr<Plan> plan = kernel->plan(batch);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("0 to 65535 requests, got 65536"),
            std::string::npos)
      << plan.status().message();
  batch.batch = 2;
  batch.maxQueryLen = 1 << 29; // x 4 query heads per KV head > 2^31 - 1
  plan = kernel->plan(batch);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("queries times the GQA group "
                                         "(536870912 x 4) exceed"),
            std::string::npos)
      << plan.status().message();
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

// Inputs on which MLIR 22's parser crashes the process are refused with a
// located error first: a host application must survive any string.
TEST(Api, UpstreamParserCrashesAreErrors) {
  struct Case {
    std::string text, message;
  };
  std::vector<Case> cases = {
      {"func.func @f() attributes {x = array<index: 1>} { return }",
       "<variant>:1:32: error: dense arrays of 'index' are not supported"},
      {"\"func.return\"(%0#2147483647) : (i32) -> ()",
       "<variant>:1:17: error: result number #2147483647 is larger than"},
      {"func.func @f() attributes {x = " + std::string(100000, '[') +
           std::string(100000, ']') + "} { return }",
       "error: brackets nest deeper than 256 levels"},
      {"func.func @f() attributes {x = " + std::string(20000, '(') + "}",
       "error: brackets nest deeper than 256 levels"},
  };
  for (const Case &c : cases) {
    StatusOr<Variant> variant = Variant::fromMlir(c.text);
    ASSERT_FALSE(variant.ok()) << c.text.substr(0, 80);
    EXPECT_EQ(variant.status().code(), ErrorCode::ParseError);
    EXPECT_NE(variant.status().message().find(c.message), std::string::npos)
        << variant.status().message();
  }
  // The scan skips strings and comments, where the same text is harmless.
  EXPECT_FALSE(Variant::fromMlir("// array<index: 1> %0#99999999\n"
                                 "func.func @f() attributes "
                                 "{x = \"array<index: 1>\"} { return }")
                   .status()
                   .message()
                   .find("nothing to compile") == std::string::npos);
}

TEST(Api, AModuleWithNothingToCompileIsAnError) {
  StatusOr<Variant> variant =
      Variant::fromMlir("func.func @f() {\n  return\n}\n");
  ASSERT_FALSE(variant.ok());
  EXPECT_EQ(variant.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(variant.status().message().find(
                "<variant>:1:1: error: nothing to compile"),
            std::string::npos)
      << variant.status().message();
  EXPECT_FALSE(Variant::fromMlir("").ok());
}
