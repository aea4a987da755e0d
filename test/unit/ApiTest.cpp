//===- ApiTest.cpp - the C++ JIT API without a GPU ------------------------===//

#include "attnc/attnc.h"

#include "attnc/Driver/Compile.h"
#include "attnc/Driver/ParserStack.h"
#include "cuda/CudaDriver.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <map>
#include <set>

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

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// fromSpec's error message for `spec` (the test fails if it succeeds).
std::string specError(const VariantSpec &spec) {
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  EXPECT_FALSE(variant.ok()) << variant->mlir();
  if (variant.ok())
    return "";
  EXPECT_EQ(variant.status().code(), ErrorCode::InvalidArgument);
  return variant.status().message();
}

const char *kScoreMod =
    "^bb0(%s: f32, %b: index, %h: index, %qi: index, "
    "%ki: index, %ql: index, %kl: index):\n  attn.yield %s : f32";

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

TEST(Api, SegmentsAreDocumentIdsIndexedLikeTheirTokens) {
  // examples/document_segments.mlir's operands: ids per token of a ragged
  // batch, after k and v and before the scales; per [batch, seq] of a
  // dense one.
  VariantSpec spec = gqaCausal();
  spec.segments = true;
  spec.queryLayout = spec.kvLayout = TokenLayout::Ragged;
  spec.kvDtype = DType::F8E4M3;
  spec.kvScales = KVScales::PerTensor;
  StatusOr<Variant> ragged = Variant::fromSpec(spec);
  ASSERT_TRUE(ragged.ok()) << ragged.status().toString();
  EXPECT_NE(ragged->mlir().find(
                "%attnc_v: !attn.kv<?x8x128xf8E4M3FN, ragged>, "
                "%attnc_q_segments: memref<?xi32>, %attnc_kv_segments: "
                "memref<?xi32>, %attnc_k_scale: memref<1xf32>"),
            std::string::npos)
      << ragged->mlir();
  EXPECT_NE(
      ragged->mlir().find(" segments(%attnc_q_segments, %attnc_kv_segments : "
                          "memref<?xi32>, memref<?xi32>) kv_scales("),
      std::string::npos)
      << ragged->mlir();

  spec = gqaCausal();
  spec.segments = true;
  StatusOr<Variant> dense = Variant::fromSpec(spec);
  ASSERT_TRUE(dense.ok()) << dense.status().toString();
  EXPECT_NE(dense->mlir().find("segments(%attnc_q_segments, "
                               "%attnc_kv_segments : memref<?x?xi32>, "
                               "memref<?x?xi32>)"),
            std::string::npos)
      << dense->mlir();
}

TEST(Api, SpecErrorsAreValues) {
  VariantSpec spec = gqaCausal();
  spec.kvHeads = 5;
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  ASSERT_FALSE(variant.ok());
  EXPECT_EQ(variant.status().code(), ErrorCode::InvalidArgument);
  // The verifier's words: fromSpec does not check what it checks.
  EXPECT_NE(variant.status().message().find(
                "query heads (32) must be a multiple of key/value heads (5)"),
            std::string::npos)
      << variant.status().message();

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
  // The persistent Hopper kernel numbers its work items in 32 bits.
  batch.batch = 65535;
  batch.maxQueryLen = 1 << 20;
  plan = kernel->plan(batch);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("work items (row blocks x query "
                                         "heads x KV splits x requests)"),
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
std::string repeat(const std::string &piece, int times) {
  std::string text;
  for (int i = 0; i < times; ++i)
    text += piece;
  return text;
}

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
      // The guard reads tokens: spacing and comments hide nothing.
      {"\"func.return\"(%0 #2147483647) : (i32) -> ()",
       "<variant>:1:18: error: result number #2147483647 is larger than"},
      {"\"func.return\"(%0 // a comment\n #99999) : (i32) -> ()",
       "<variant>:2:2: error: result number #99999 is larger than"},
      // A `>` closes only a `<`: comparisons cannot lower the count.
      {"func.func @f() attributes {x = " + repeat("(>=", 300) + "}",
       "error: brackets nest deeper than 256 levels"},
      // Affine expressions recurse per operator, without brackets.
      {"func.func @f() attributes {x = affine_map<(d0) -> (" +
           repeat("- ", 20000) + "d0)>} { return }",
       "<variant>:1:32: error: 'affine_map' is not part of attnc's input"},
      {"#set = affine_set<(d0) : (d0 >= 0)>",
       "<variant>:1:8: error: 'affine_set' is not part of attnc's input"},
      // Where MLIR's lexer differs from a text scan (found in review):
      // a carriage return ends a comment,
      {"func.func @f() attributes {a = // x\r" + repeat("[", 20000) +
           "\n} {\n return\n}\n",
       "error: brackets nest deeper than 256 levels"},
      // `#` and a digit lex as digits only,
      {"func.func @f(%a: i32) -> i32 {\n  %r = arith.addi %a, "
       "%a#4000000000overflow<nsw> : i32\n  return %r : i32\n}\n",
       "<variant>:2:25: error: result number #4000000000 is larger than"},
      // a NUL is skipped,
      {std::string("func.func @f(%a: i32) -> i32 {\n  %r = arith.addi %a, "
                   "%a\0#4000000000 : i32\n  return %r : i32\n}\n",
                   94),
       "<variant>:2:26: error: result number #4000000000 is larger than"},
      // and a dialect body ends by its brackets, `//` inside it no comment.
      {"func.func private @f() attributes {a = !attn.q<// > , b = " +
           repeat("[", 20000) + "\n?x32x128xf16>}\n",
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
                   .find("attribute 'x' on 'func.func' would be ignored") ==
               std::string::npos);
}

// A host thread's stack may be small (Python's and worker pools' can be a
// few hundred kilobytes): the parser brings its own, sized for the deepest
// nesting the guard lets through.
TEST(Api, ParsingTheDeepestNestingNeedsNoLargeCallerStack) {
  std::string text = "func.func @f() attributes {x = " + repeat("[", 250) +
                     repeat("]", 250) + "} { return }";
  std::string message;
  // A thread of 64 KiB, the smallest caller stack this test stands for.
  runOnParserStack(
      [&] { message = Variant::fromMlir(text).status().message(); }, 64 << 10);
  // Parsed whole: the error is the verdict on what was parsed.
  EXPECT_NE(message.find("attribute 'x' on 'func.func' would be ignored"),
            std::string::npos)
      << message;
}

// An attribute nothing reads would silently change nothing: it is refused.
TEST(Api, AttributesThatWouldBeIgnoredAreErrors) {
  std::string attention =
      "  %o = attn.attention(%q, %k, %v) : !attn.q<?x8x64xbf16>, "
      "!attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> "
      "!attn.out<?x8x64xbf16>\n  return %o : !attn.out<?x8x64xbf16>\n}\n";
  std::string signature =
      "(%q: !attn.q<?x8x64xbf16>, %k: !attn.kv<?x8x64xbf16>, "
      "%v: !attn.kv<?x8x64xbf16>) -> !attn.out<?x8x64xbf16>";
  struct Case {
    std::string text, message;
  };
  std::vector<Case> cases = {
      {"func.func @f" + signature + " attributes {attn.causal} {\n" + attention,
       "'attn.causal' on 'func.func' would be ignored: attn annotates no "
       "other operation; write variant attributes on attn.attention (e.g. "
       "{causal})"},
      {"func.func @f" + signature + " attributes {causal} {\n" + attention,
       "attribute 'causal' on 'func.func' would be ignored"},
      {"module attributes {my.window = 4} {\nfunc.func @f" + signature +
           " {\n" + attention + "}\n",
       "attribute 'my.window' on 'builtin.module' would be ignored"},
      {"func.func @f(%q: !attn.q<?x8x64xbf16> {my.causal}, "
       "%k: !attn.kv<?x8x64xbf16>, %v: !attn.kv<?x8x64xbf16>) -> "
       "!attn.out<?x8x64xbf16> {\n" +
           attention,
       "argument and result attributes of 'f' would be ignored: attnc reads "
       "none"},
  };
  for (const Case &c : cases) {
    StatusOr<Variant> variant = Variant::fromMlir(c.text);
    ASSERT_FALSE(variant.ok()) << c.text;
    EXPECT_NE(variant.status().message().find(c.message), std::string::npos)
        << variant.status().message();
  }
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

TEST(Api, SpecFieldsTheIrCannotSpellAreChecked) {
  VariantSpec spec = gqaCausal();
  spec.dtype = static_cast<DType>(9);
  EXPECT_EQ(specError(spec), "unknown dtype 9");
  spec = gqaCausal();
  spec.queryLayout = static_cast<TokenLayout>(-2);
  EXPECT_EQ(specError(spec), "unknown query layout -2");
  spec = gqaCausal();
  spec.headDim = -64;
  EXPECT_EQ(specError(spec), "head dim must be positive, got -64");
  spec = gqaCausal();
  spec.kvLayout = TokenLayout::Paged;
  spec.pageSize = -16;
  EXPECT_EQ(specError(spec), "page size must be positive, got -16");
  spec = gqaCausal();
  spec.queriesPerRequest = -1;
  EXPECT_TRUE(contains(specError(spec), "0 (any) or positive, got -1"));
  spec = gqaCausal();
  spec.name = "";
  EXPECT_TRUE(contains(specError(spec), "variant name '' must be a letter"));
  spec.name = std::string("a\0b", 3);
  EXPECT_TRUE(contains(specError(spec), "must be a letter or underscore"));
  spec = gqaCausal();
  spec.captureTypes = {"memref<4xf32>"};
  EXPECT_TRUE(contains(specError(spec), "need a score_mod or mask_mod"));
  spec = gqaCausal();
  spec.kvDtype = static_cast<DType>(12);
  EXPECT_EQ(specError(spec), "unknown KV dtype 12");
  spec = gqaCausal();
  spec.kvScales = static_cast<KVScales>(3);
  EXPECT_EQ(specError(spec), "unknown KV scales 3");
}

// An fp8 cache with scales per KV head: two f32 inputs after k and v,
// one value per KV head each, and a kernel for sm_89 and newer.
TEST(Api, Fp8CacheTakesItsScalesAfterKeysAndValues) {
  VariantSpec spec = gqaCausal();
  spec.kvDtype = DType::F8E4M3;
  spec.kvScales = KVScales::PerHead;
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  ASSERT_TRUE(variant.ok()) << variant.status().toString();
  EXPECT_TRUE(contains(variant->mlir(), "kv_scales("));
  StatusOr<Kernel> kernel = Kernel::compile(*variant, {"sm_90a", 132, "-"});
  ASSERT_TRUE(kernel.ok()) << kernel.status().toString();
  ASSERT_EQ(kernel->inputs().size(), 5u);
  EXPECT_EQ(kernel->inputs()[1].dtype, DType::F8E4M3);
  for (int i : {3, 4}) {
    EXPECT_EQ(kernel->inputs()[i].role, TensorSpec::Role::Buffer);
    EXPECT_EQ(kernel->inputs()[i].dtype, DType::F32);
  }
  StatusOr<Kernel> ampere = Kernel::compile(*variant, {"sm_80", 108, "-"});
  ASSERT_FALSE(ampere.ok());
  EXPECT_TRUE(contains(ampere.status().message(),
                       "fp8 conversions need sm_89 or newer"));
  // Scales without an fp8 cache are the verifier's to refuse.
  spec.kvDtype.reset();
  EXPECT_TRUE(contains(specError(spec), "kv_scales dequantize an fp8"));
}

// A latent (MLA) cache: one operand after the queries, outputs of the
// latent width, compiled on sm_90a's latent schedule and refused by name on
// sm_80.
TEST(Api, LatentSpecTakesOneCacheAndGivesTheLatentWidth) {
  VariantSpec spec;
  spec.queryHeads = 128;
  spec.kvHeads = 1;
  spec.headDim = 576;
  spec.ropeDim = 64;
  spec.queriesPerRequest = 1;
  spec.kvLayout = TokenLayout::Paged;
  spec.pageSize = 64;
  spec.returnLse = true;
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  ASSERT_TRUE(variant.ok()) << variant.status().toString();
  EXPECT_TRUE(contains(variant->mlir(),
                       "!attn.latent_kv<?x576xbf16, rope = 64, paged<64, "
                       "nhd>>"));
  EXPECT_TRUE(contains(variant->mlir(), "!attn.out<1x128x512xbf16>"));
  StatusOr<Kernel> kernel = Kernel::compile(*variant, {"sm_90a", 132, "-"});
  ASSERT_TRUE(kernel.ok()) << kernel.status().toString();
  ASSERT_EQ(kernel->inputs().size(), 2u);
  EXPECT_EQ(kernel->inputs()[1].role, TensorSpec::Role::KV);
  EXPECT_EQ(kernel->inputs()[1].heads, 1);
  EXPECT_EQ(kernel->inputs()[1].dim, 576);
  EXPECT_EQ(kernel->outputs()[0].dim, 512);
  StatusOr<Kernel> ampere = Kernel::compile(*variant, {"sm_80", 108, "-"});
  ASSERT_FALSE(ampere.ok());
  EXPECT_TRUE(contains(ampere.status().message(),
                       "multi-head latent attention on sm_80"));

  spec.kvHeads = 2;
  EXPECT_EQ(specError(spec), "a latent cache (rope dim 64) is one KV head "
                             "shared by every query head, got 2 KV heads");
  spec.kvHeads = 1;
  spec.ropeDim = -64;
  EXPECT_EQ(specError(spec), "rope dim must be positive, got -64");
}

TEST(Api, ValueHeadDimGivesTheValuesAndOutputsTheirWidth) {
  // DeepSeek's MLA prefill in the non-absorbed form: qk 192, v 128.
  VariantSpec spec;
  spec.queryHeads = 16;
  spec.kvHeads = 16;
  spec.headDim = 192;
  spec.valueHeadDim = 128;
  spec.causal = true;
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  ASSERT_TRUE(variant.ok()) << variant.status().toString();
  EXPECT_TRUE(contains(variant->mlir(), "!attn.kv<?x16x192xbf16>"));
  EXPECT_TRUE(contains(variant->mlir(), "!attn.kv<?x16x128xbf16>"));
  EXPECT_TRUE(contains(variant->mlir(), "!attn.out<?x16x128xbf16>"));
  for (const char *arch : {"sm_90a", "sm_80"}) {
    StatusOr<Kernel> kernel = Kernel::compile(*variant, {arch, 132, "-"});
    ASSERT_TRUE(kernel.ok()) << arch << ": " << kernel.status().toString();
    ASSERT_EQ(kernel->inputs().size(), 3u);
    EXPECT_EQ(kernel->inputs()[1].dim, 192);
    EXPECT_EQ(kernel->inputs()[2].dim, 128);
    EXPECT_EQ(kernel->outputs()[0].dim, 128);
  }

  spec.valueHeadDim = -128;
  EXPECT_EQ(specError(spec), "value head dim must be positive, got -128");
  spec.valueHeadDim = 512;
  spec.kvHeads = 1;
  spec.headDim = 576;
  spec.ropeDim = 64;
  EXPECT_EQ(specError(spec), "a latent cache's values are its first head dim "
                             "- rope dim columns: value head dim must be 0 "
                             "with rope dim 64, got 512");
}

TEST(Api, SpecValuesAreTheVerifiers) {
  VariantSpec spec = gqaCausal();
  spec.kvHeads = 0;
  EXPECT_TRUE(contains(specError(spec),
                       "key/value head count must be in [1, 1024], got 0"));
  spec = gqaCausal();
  spec.window = {{-4, 0}};
  EXPECT_TRUE(contains(specError(spec),
                       "window extents must be in [0, 2147483647], got"));
  spec = gqaCausal();
  spec.sinks = -1;
  EXPECT_TRUE(
      contains(specError(spec), "sinks must be in [0, 2147483647], got -1"));
  spec = gqaCausal();
  spec.queryLayout = TokenLayout::Paged;
  EXPECT_TRUE(contains(specError(spec), "query cannot be paged"));
  // NaN and infinity reach the verifier, which names them, rather than
  // failing to parse.
  spec = gqaCausal();
  spec.scale = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(contains(specError(spec), "scale must be positive and finite"));
  spec = gqaCausal();
  spec.softcap = -std::numeric_limits<float>::infinity();
  EXPECT_TRUE(contains(specError(spec), "softcap must be positive and finite"));
}

TEST(Api, RegionsMayNameTheirArgumentsFreely) {
  // The function's own value names must not collide with a region's.
  VariantSpec spec = gqaCausal();
  spec.scoreMod = "^bb0(%s: f32, %b: index, %h: index, %q: index, %k: "
                  "index, %ql: index, %kl: index):\n  attn.yield %s : f32";
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  EXPECT_TRUE(variant.ok()) << variant.status().message();
}

TEST(Api, RegionTextCannotLeaveItsRegion) {
  const std::string closeRegion = std::string(kScoreMod) + "\n}\n";
  const std::string types =
      ": !attn.q<?x32x128xbf16>, !attn.kv<?x8x128xbf16>, "
      "!attn.kv<?x8x128xbf16> -> !attn.out<?x32x128xbf16>\n";
  struct Case {
    std::string what, scoreMod, maskMod, message;
  };
  const Case cases[] = {
      {"a mask_mod the spec does not have",
       closeRegion + "mask_mod {\n^bb0(%b: index, %h: index, %qi: index, %ki: "
                     "index, %ql: index, %kl: index):\n"
                     "  %f = arith.constant false\n  attn.yield %f : i1",
       "", "regions are not the spec's score_mod and mask_mod"},
      {"a score_mod inside the mask_mod text", "",
       "^bb0(%b: index, %h: index, %qi: index, %ki: index, %ql: index, %kl: "
       "index):\n"
       "  %t = arith.constant true\n  attn.yield %t : i1\n}\nscore_mod {\n" +
           std::string(kScoreMod),
       // The parser takes regions in order: score_mod after mask_mod is
       // not the op's syntax.
       ""},
      {"a second attention in the function",
       closeRegion + "%x = attn.attention(%attnc_q, %attnc_k, %attnc_v) " +
           types + "score_mod {\n" + kScoreMod,
       "", "holds other operations than the attention"},
      {"a second function",
       closeRegion + "return %attnc_out : !attn.out<?x32x128xbf16>\n}\n" +
           "func.func @evil(%attnc_q: !attn.q<?x32x128xbf16>, %attnc_k: "
           "!attn.kv<?x8x128xbf16>, %attnc_v: !attn.kv<?x8x128xbf16>) -> "
           "(!attn.out<?x32x128xbf16>) {\n"
           "%attnc_out = attn.attention(%attnc_q, %attnc_k, %attnc_v) " +
           types + "score_mod {\n" + kScoreMod,
       "", "no longer one function"},
  };
  for (const Case &c : cases) {
    VariantSpec spec = gqaCausal();
    spec.scoreMod = c.scoreMod;
    spec.maskMod = c.maskMod;
    std::string error = specError(spec);
    EXPECT_TRUE(contains(error, c.message)) << c.what << ": " << error;
  }
}

TEST(Api, CaptureTypesEnterTheTextAsParsed) {
  VariantSpec spec = gqaCausal();
  spec.scoreMod = "^bb0(%s: f32, %b: index, %h: index, %qi: index, %ki: "
                  "index, %ql: index, %kl: index, %t: memref<?xf32>):\n  "
                  "attn.yield %s : f32";
  spec.captureTypes = {"memref<?xf32>) -> () {"};
  EXPECT_TRUE(contains(specError(spec), "capture type 0 is not a type"));
  EXPECT_TRUE(contains(specError(spec), "<capture type 0>:1:14: error:"))
      << specError(spec);
  // Named as parseType names its own diagnostics: no endless renaming.
  spec.captureTypes = {"<capture type 0>"};
  EXPECT_TRUE(contains(specError(spec), "capture type 0 is not a type"));
  spec.captureTypes = {"!attn.q<?x32x128xbf16>"};
  EXPECT_TRUE(contains(specError(spec), "must be a memref type"));
  spec.captureTypes = {" memref<?xf32> "};
  StatusOr<Variant> variant = Variant::fromSpec(spec);
  ASSERT_TRUE(variant.ok()) << variant.status().message();
  EXPECT_TRUE(contains(variant->mlir(), "%attnc_capture0: memref<?xf32>)"));
}

// Variant::fromSpec is the one hand-written step from the spec's list
// (ATTNC_VARIANT_SPEC in attnc_variant_fields.h, which generates the C and
// C++ structs and the C translation) to the IR: each member must change the
// variant's text, and with it the kernel caches' key, where it applies. A
// member added to the list fails here until it has a case, and so does one
// that fromSpec leaves out of the text.
TEST(Api, EveryVariantFieldReachesTheIr) {
  using Edit = std::function<void(VariantSpec &)>;
  struct Case {
    Edit context; // what makes the member matter (paged keys for pageSize)
    Edit change;
  };
  Edit none = [](VariantSpec &) {};
  Edit paged = [](VariantSpec &s) { s.kvLayout = TokenLayout::Paged; };
  const std::map<std::string, Case> cases = {
      {"name", {none, [](VariantSpec &s) { s.name = "other"; }}},
      {"queryHeads", {none, [](VariantSpec &s) { s.queryHeads = 32; }}},
      {"kvHeads", {none, [](VariantSpec &s) { s.kvHeads = 8; }}},
      {"headDim", {none, [](VariantSpec &s) { s.headDim = 64; }}},
      {"dtype", {none, [](VariantSpec &s) { s.dtype = DType::F16; }}},
      {"queryLayout",
       {none, [](VariantSpec &s) { s.queryLayout = TokenLayout::Ragged; }}},
      {"queriesPerRequest",
       {none, [](VariantSpec &s) { s.queriesPerRequest = 1; }}},
      {"kvLayout",
       {none, [](VariantSpec &s) { s.kvLayout = TokenLayout::Ragged; }}},
      {"pageSize", {paged, [](VariantSpec &s) { s.pageSize = 32; }}},
      {"pageOrder",
       {paged, [](VariantSpec &s) { s.pageOrder = PageOrder::HND; }}},
      {"causal", {none, [](VariantSpec &s) { s.causal = true; }}},
      {"window", {none, [](VariantSpec &s) { s.window = {{128, 0}}; }}},
      {"sinks", {none, [](VariantSpec &s) { s.sinks = 4; }}},
      {"scale", {none, [](VariantSpec &s) { s.scale = 0.125f; }}},
      {"softcap", {none, [](VariantSpec &s) { s.softcap = 30.0f; }}},
      {"alibi", {none, [](VariantSpec &s) { s.alibi = true; }}},
      {"returnLse", {none, [](VariantSpec &s) { s.returnLse = true; }}},
      {"scoreMod", {none, [](VariantSpec &s) { s.scoreMod = kScoreMod; }}},
      {"maskMod",
       {none,
        [](VariantSpec &s) {
          s.maskMod = "^bb0(%b: index, %h: index, %qi: index, %ki: index, "
                      "%ql: index, %kl: index):\n"
                      "  %t = arith.constant true\n  attn.yield %t : i1";
        }}},
      // The region's capture argument would not verify without the capture.
      {"captureTypes",
       {[](VariantSpec &s) { s.scoreMod = kScoreMod; },
        [](VariantSpec &s) {
          s.scoreMod = "^bb0(%s: f32, %b: index, %h: index, %qi: index, %ki: "
                       "index, %ql: index, %kl: index, %t: memref<4xf32>):\n"
                       "  attn.yield %s : f32";
          s.captureTypes = {"memref<4xf32>"};
        }}},
      {"kvDtype", {none, [](VariantSpec &s) { s.kvDtype = DType::F8E4M3; }}},
      {"kvScales",
       {[](VariantSpec &s) { s.kvDtype = DType::F8E4M3; },
        [](VariantSpec &s) { s.kvScales = KVScales::PerTensor; }}},
      {"ropeDim",
       {[](VariantSpec &s) {
          s.kvHeads = 1;
          s.headDim = 576;
        },
        [](VariantSpec &s) { s.ropeDim = 64; }}},
      {"valueHeadDim", {none, [](VariantSpec &s) { s.valueHeadDim = 64; }}},
      {"segments", {none, [](VariantSpec &s) { s.segments = true; }}},
      {"sharedKeys", {none, [](VariantSpec &s) { s.sharedKeys = true; }}},
  };
  std::vector<std::string> members;
#define ATTNC_MEMBER_NAME(member) members.push_back(#member);
  ATTNC_VARIANT_SPEC_MEMBERS(ATTNC_MEMBER_NAME)
#undef ATTNC_MEMBER_NAME
  for (const std::string &member : members)
    EXPECT_EQ(cases.count(member), 1u)
        << "VariantSpec::" << member << " has no case here: add one, and its "
        << "translation to IR in Variant::fromSpec";
  EXPECT_EQ(cases.size(), members.size()) << "a case of no member";

  for (const auto &[member, c] : cases) {
    VariantSpec base;
    base.queryHeads = 16;
    base.kvHeads = 4;
    base.headDim = 128;
    c.context(base);
    VariantSpec changed = base;
    c.change(changed);
    StatusOr<Variant> before = Variant::fromSpec(base);
    StatusOr<Variant> after = Variant::fromSpec(changed);
    ASSERT_TRUE(before.ok()) << member << ": " << before.status().message();
    ASSERT_TRUE(after.ok()) << member << ": " << after.status().message();
    EXPECT_NE(before->mlir(), after->mlir()) << member << " changes no IR";
    EXPECT_NE(kernelCacheKey(before->mlir(), CompileOptions(), "nvrtc"),
              kernelCacheKey(after->mlir(), CompileOptions(), "nvrtc"))
        << member;
  }
}

TEST(Api, PlanRefusesNegativePageStrides) {
  StatusOr<Kernel> kernel =
      Kernel::compile(*Variant::fromSpec(gqaCausal()), sm90());
  ASSERT_TRUE(kernel.ok());
  Batch batch = twoRequests(128);
  batch.vPageStride = -1;
  StatusOr<Plan> plan = kernel->plan(batch);
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(contains(plan.status().message(), "page strides"));
}

// The cache key reads attn-plan's options from the pass itself: each one
// the planner declares changes the key, so a new option cannot be left out.
TEST(Api, EveryPlannerOptionIsInTheKernelCacheKey) {
  CompileOptions base;
  std::string key = kernelCacheKey("source", base, "nvrtc");
  EXPECT_EQ(kernelCacheKey("source", base, "nvrtc"), key);
  std::vector<std::function<void(CompileOptions &)>> changes = {
      [](CompileOptions &o) { o.arch = "sm_80"; },
      [](CompileOptions &o) { o.sms = 114; },
      [](CompileOptions &o) { o.smem = 101376; },
      [](CompileOptions &o) { o.maxSplits = 8; },
      [](CompileOptions &o) { o.prefillWarps = 4; },
      [](CompileOptions &o) { o.decodeStages = 2; },
      [](CompileOptions &o) { o.consumers = 2; },
      [](CompileOptions &o) { o.queryBuffers = 2; },
      [](CompileOptions &o) { o.clusterCtas = 2; },
      [](CompileOptions &o) { o.registerRelief = 1; },
  };
  std::set<std::string> keys = {key};
  for (auto &change : changes) {
    CompileOptions options;
    change(options);
    keys.insert(kernelCacheKey("source", options, "nvrtc"));
  }
  EXPECT_EQ(keys.size(), changes.size() + 1);
  // What the driver takes beyond the planner's options changes no kernel.
  CompileOptions debug;
  debug.printOpOnDiagnostic = true;
  EXPECT_EQ(kernelCacheKey("source", debug, "nvrtc"), key);
}

// Every attn-plan option reaches the command line, but the target's size
// (sms, smem) and max-splits, which the CLI leaves at the planner's
// defaults: a knob added to the pass without its flag fails here.
TEST(Api, EveryPlannerKnobHasACommandLineFlag) {
  std::string text = plannerOptionsText(CompileOptions());
  size_t open = text.find('{');
  ASSERT_NE(open, std::string::npos) << text;
  std::vector<std::string> names;
  for (size_t at = open + 1; at < text.size();) {
    size_t equals = text.find('=', at);
    if (equals == std::string::npos)
      break;
    names.push_back(text.substr(at, equals - at));
    at = text.find_first_of(" }", equals) + 1;
  }
  ASSERT_GE(names.size(), 10u) << text;
  std::string help;
  FILE *pipe = popen(ATTNC_BINARY " compile --help", "r");
  ASSERT_NE(pipe, nullptr);
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe))
    help.append(buffer, n);
  ASSERT_EQ(pclose(pipe), 0);
  for (const std::string &name : names) {
    if (name == "sms" || name == "smem" || name == "max-splits")
      continue;
    EXPECT_NE(help.find("--" + name + " "), std::string::npos)
        << "attn-plan's " << name << " has no flag in attnc compile:\n"
        << help;
  }
}
