//===- RegionOpsTest.cpp - every admitted region op lowers and evaluates --===//
//
// For every op RegionOps.h admits: a region using it verifies, lowers to
// CUDA C++, and the reference interpreter evaluates it to the value arith
// defines (math functions against std::, integer ops against hand-computed
// wrapping, rounding and signedness). A test fails when the list grows
// without a case here.
//
//===----------------------------------------------------------------------===//

#include "attnc/Dialect/Attn/RegionOps.h"
#include "attnc/Check/RegionInterpreter.h"
#include "attnc/Dialect/Attn/AttnDialect.h"
#include "attnc/Driver/Pipeline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>

using namespace mlir;

namespace attnc {
namespace {

// The region's leading arguments: score, batch, head, qi, kvi, q_len, kv_len.
const std::vector<double> kScalars{0.25, 1, 2, 3, 10, 4, 12};

std::string variant(const std::string &region, const std::string &body) {
  bool score = region == "score_mod";
  return std::string("func.func @f(%query: !attn.q<?x8x64xbf16>, %key: "
                     "!attn.kv<?x8x64xbf16>, %value: !attn.kv<?x8x64xbf16>) -> "
                     "!attn.out<?x8x64xbf16> {\n"
                     "  %out = attn.attention(%query, %key, %value) : "
                     "!attn.q<?x8x64xbf16>, "
                     "!attn.kv<?x8x64xbf16>, !attn.kv<?x8x64xbf16> -> "
                     "!attn.out<?x8x64xbf16>\n  ") +
         region + " {\n  ^bb0(" + (score ? "%s: f32, " : "") +
         "%b: index, %h: index, %qi: index, %kvi: index, %ql: index, "
         "%kl: index):\n" +
         body + "\n  }\n  return %out : !attn.out<?x8x64xbf16>\n}\n";
}

/// Parses a variant whose `region` holds `body`, records the op names it
/// uses, evaluates the region on `scalars` (without the score for a
/// mask_mod) and checks that it lowers to CUDA C++ containing `cuda`.
struct RegionCase {
  std::set<std::string> opNames;
  std::string error;

  std::optional<double> run(const std::string &region, const std::string &body,
                            std::vector<double> scalars,
                            const std::string &cuda = "") {
    MLIRContext context;
    registerAttncDialects(context);
    DiagnosticCollector diagnostics(context);
    std::string text = variant(region, body);
    OwningOpRef<ModuleOp> module = diagnostics.parse(text, "region.mlir");
    EXPECT_TRUE(module) << diagnostics.text() << text;
    if (!module)
      return std::nullopt;
    attn::AttentionOp op;
    module->walk([&](attn::AttentionOp found) { op = found; });
    Region &modifier =
        region == "score_mod" ? op.getScoreMod() : op.getMaskMod();
    modifier.walk([&](Operation *nested) {
      opNames.insert(nested->getName().getStringRef().str());
    });
    if (region != "score_mod")
      scalars.erase(scalars.begin());
    error.clear();
    std::optional<double> value = evaluateRegion(modifier, scalars, {}, error);

    std::string emitted;
    EXPECT_TRUE(
        succeeded(lowerVariant(*module, CompileOptions(), Stage::EmitC)) &&
        succeeded(printCuda(*module, emitted)))
        << diagnostics.text() << text;
    EXPECT_NE(emitted.find(cuda), std::string::npos) << cuda << "\n" << emitted;
    return value;
  }

  /// The f32 a score_mod yields.
  double score(const std::string &body) {
    std::optional<double> value = run("score_mod", body, kScalars);
    EXPECT_TRUE(value) << error << "\n" << body;
    return value.value_or(NAN);
  }
};

TEST(RegionOps, EveryMathFunctionLowersToItsCudaFunctionAndEvaluates) {
  using F = std::function<double(double, double, double)>;
  // Each function's expected value, and an argument inside its domain; the
  // other operands are 1.75 and -0.5.
  const std::map<std::string, std::pair<F, double>> expected{
      {"math.absf",
       {[](double x, double, double) { return std::fabs(x); }, -0.6}},
      {"math.acos",
       {[](double x, double, double) { return std::acos(x); }, 0.6}},
      {"math.acosh",
       {[](double x, double, double) { return std::acosh(x); }, 1.6}},
      {"math.asin",
       {[](double x, double, double) { return std::asin(x); }, 0.6}},
      {"math.asinh",
       {[](double x, double, double) { return std::asinh(x); }, 0.6}},
      {"math.atan",
       {[](double x, double, double) { return std::atan(x); }, 0.6}},
      {"math.atan2",
       {[](double x, double y, double) { return std::atan2(x, y); }, -0.6}},
      {"math.atanh",
       {[](double x, double, double) { return std::atanh(x); }, 0.6}},
      {"math.cbrt",
       {[](double x, double, double) { return std::cbrt(x); }, -0.6}},
      {"math.ceil",
       {[](double x, double, double) { return std::ceil(x); }, -1.6}},
      {"math.copysign",
       {[](double x, double y, double) { return std::copysign(x, y); }, -0.6}},
      {"math.cos", {[](double x, double, double) { return std::cos(x); }, 0.6}},
      {"math.cosh",
       {[](double x, double, double) { return std::cosh(x); }, 0.6}},
      {"math.erf", {[](double x, double, double) { return std::erf(x); }, 0.6}},
      {"math.erfc",
       {[](double x, double, double) { return std::erfc(x); }, 0.6}},
      {"math.exp", {[](double x, double, double) { return std::exp(x); }, 0.6}},
      {"math.exp2",
       {[](double x, double, double) { return std::exp2(x); }, 0.6}},
      {"math.expm1",
       {[](double x, double, double) { return std::expm1(x); }, 0.6}},
      {"math.floor",
       {[](double x, double, double) { return std::floor(x); }, -1.6}},
      {"math.fma",
       {[](double x, double y, double z) { return std::fma(x, y, z); }, 0.6}},
      {"math.log", {[](double x, double, double) { return std::log(x); }, 0.6}},
      {"math.log10",
       {[](double x, double, double) { return std::log10(x); }, 0.6}},
      {"math.log1p",
       {[](double x, double, double) { return std::log1p(x); }, 0.6}},
      {"math.log2",
       {[](double x, double, double) { return std::log2(x); }, 0.6}},
      {"math.powf",
       {[](double x, double y, double) { return std::pow(x, y); }, 0.6}},
      {"math.round",
       {[](double x, double, double) { return std::round(x); }, 2.5}},
      {"math.roundeven", {[](double, double, double) { return 2.0; }, 2.5}},
      {"math.rsqrt",
       {[](double x, double, double) { return 1 / std::sqrt(x); }, 0.6}},
      {"math.sin", {[](double x, double, double) { return std::sin(x); }, 0.6}},
      {"math.sinh",
       {[](double x, double, double) { return std::sinh(x); }, 0.6}},
      {"math.sqrt",
       {[](double x, double, double) { return std::sqrt(x); }, 0.6}},
      {"math.tan", {[](double x, double, double) { return std::tan(x); }, 0.6}},
      {"math.tanh",
       {[](double x, double, double) { return std::tanh(x); }, 0.6}},
      {"math.trunc",
       {[](double x, double, double) { return std::trunc(x); }, -1.6}},
  };
  EXPECT_EQ(expected.size(), attn::regionMathFunctions().size());
  for (const attn::RegionMathFunction &function : attn::regionMathFunctions()) {
    auto it = expected.find(function.op.str());
    ASSERT_NE(it, expected.end()) << function.op.str() << " has no case";
    auto [reference, x] = it->second;
    std::string operands = "%s", types = "f32";
    const char *others[] = {"%y", "%z"};
    for (unsigned n = 1; n < function.arity; ++n) {
      operands += std::string(", ") + others[n - 1];
      types += ", f32";
    }
    std::string body = "    %y = arith.constant 1.75 : f32\n"
                       "    %z = arith.constant -0.5 : f32\n"
                       "    %r = \"" +
                       function.op.str() + "\"(" + operands + ") : (" + types +
                       ") -> f32\n    attn.yield %r : f32";
    std::vector<double> scalars = kScalars;
    scalars[0] = x;
    RegionCase c;
    std::optional<double> value =
        c.run("score_mod", body, scalars, function.cuda.str() + "(");
    ASSERT_TRUE(value) << c.error;
    EXPECT_DOUBLE_EQ(*value, reference(x, 1.75, -0.5)) << function.op.str();
  }
}

/// Integer results as f32: index and i64 through i64, i32 directly.
std::string yieldIndex(const std::string &value) {
  return "    %yi = arith.index_cast " + value +
         " : index to i64\n    %yf = arith.sitofp %yi : i64 to f32\n"
         "    attn.yield %yf : f32";
}
std::string yieldI32(const std::string &value) {
  return "    %yf = arith.sitofp " + value +
         " : i32 to f32\n    attn.yield %yf : f32";
}
std::string yieldI64(const std::string &value) {
  return "    %yf = arith.sitofp " + value +
         " : i64 to f32\n    attn.yield %yf : f32";
}
std::string yieldBool(const std::string &value) {
  return "    %yf = arith.uitofp " + value +
         " : i1 to f32\n    attn.yield %yf : f32";
}

// qi = 3 and kvi = 10, so %rel = qi - kvi = -7 (as index).
const char *kRel = "    %rel = arith.subi %qi, %kvi : index\n"
                   "    %c4 = arith.constant 4 : index\n";

TEST(RegionOps, EveryOtherOpEvaluatesAsArithDefinesIt) {
  RegionCase c;
  // Floats.
  EXPECT_EQ(c.score("    %a = arith.constant 2.0 : f32\n"
                    "    %r0 = arith.addf %s, %a : f32\n"
                    "    %r1 = arith.mulf %r0, %a : f32\n"
                    "    %r2 = arith.subf %r1, %s : f32\n"
                    "    %r3 = arith.divf %r2, %a : f32\n"
                    "    %r4 = arith.negf %r3 : f32\n"
                    "    attn.yield %r4 : f32"),
            -(((0.25 + 2) * 2 - 0.25) / 2));
  EXPECT_EQ(c.score("    %a = arith.constant -7.5 : f32\n"
                    "    %b2 = arith.constant 2.0 : f32\n"
                    "    %r = arith.remf %a, %b2 : f32\n"
                    "    attn.yield %r : f32"),
            -1.5); // the dividend's sign, as fmod
  const char *nan = "    %z = arith.constant 0.0 : f32\n"
                    "    %n = arith.divf %z, %z : f32\n";
  EXPECT_TRUE(std::isnan(c.score(std::string(nan) +
                                 "    %r = arith.maximumf %n, %s : f32\n"
                                 "    attn.yield %r : f32")));
  EXPECT_TRUE(std::isnan(c.score(std::string(nan) +
                                 "    %r = arith.minimumf %s, %n : f32\n"
                                 "    attn.yield %r : f32")));
  EXPECT_EQ(c.score(std::string(nan) + "    %r = arith.maxnumf %n, %s : f32\n"
                                       "    attn.yield %r : f32"),
            0.25);
  EXPECT_EQ(c.score("    %a = arith.constant -2.0 : f32\n"
                    "    %r = arith.minnumf %s, %a : f32\n"
                    "    attn.yield %r : f32"),
            -2.0);
  // Unordered comparisons are true with a NaN, ordered ones false.
  EXPECT_EQ(c.score(std::string(nan) +
                    "    %u = arith.cmpf ult, %n, %s : f32\n"
                    "    %o = arith.cmpf olt, %n, %s : f32\n"
                    "    %x = arith.xori %u, %o : i1\n" +
                    yieldBool("%x")),
            1.0);
  // Signed division truncates toward zero; floor and ceil round.
  EXPECT_EQ(c.score(std::string(kRel) +
                    "    %r = arith.divsi %rel, %c4 : index\n" +
                    yieldIndex("%r")),
            -1.0);
  EXPECT_EQ(c.score(std::string(kRel) +
                    "    %r = arith.remsi %rel, %c4 : index\n" +
                    yieldIndex("%r")),
            -3.0);
  EXPECT_EQ(c.score(std::string(kRel) +
                    "    %r = arith.floordivsi %rel, %c4 : index\n" +
                    yieldIndex("%r")),
            -2.0);
  EXPECT_EQ(c.score(std::string(kRel) +
                    "    %r = arith.ceildivsi %rel, %c4 : index\n" +
                    yieldIndex("%r")),
            -1.0);
  EXPECT_EQ(c.score("    %c4 = arith.constant 4 : index\n"
                    "    %r = arith.ceildivsi %kvi, %c4 : index\n" +
                    yieldIndex("%r")),
            3.0);
  EXPECT_EQ(c.score("    %c4 = arith.constant 4 : index\n"
                    "    %r0 = arith.divui %kvi, %c4 : index\n"
                    "    %r1 = arith.remui %kvi, %c4 : index\n"
                    "    %r2 = arith.ceildivui %kvi, %c4 : index\n"
                    "    %c10 = arith.constant 10 : index\n"
                    "    %a = arith.muli %r0, %c10 : index\n"
                    "    %b2 = arith.addi %a, %r1 : index\n"
                    "    %d = arith.muli %b2, %c10 : index\n"
                    "    %r = arith.addi %d, %r2 : index\n" +
                    yieldIndex("%r")),
            223.0); // 10 / 4 = 2, 10 % 4 = 2, ceil(10 / 4) = 3
  // Unsigned order sees -7 as 2^64 - 7.
  EXPECT_EQ(c.score(std::string(kRel) +
                    "    %a = arith.minui %rel, %c4 : index\n"
                    "    %b2 = arith.minsi %rel, %c4 : index\n"
                    "    %m = arith.maxui %rel, %c4 : index\n"
                    "    %n = arith.maxsi %rel, %c4 : index\n"
                    "    %c10 = arith.constant 10 : index\n"
                    "    %t0 = arith.muli %a, %c10 : index\n"
                    "    %t1 = arith.addi %t0, %b2 : index\n"
                    "    %t2 = arith.muli %t1, %c10 : index\n"
                    "    %t3 = arith.addi %t2, %m : index\n"
                    "    %t4 = arith.muli %t3, %c10 : index\n"
                    "    %r = arith.addi %t4, %n : index\n" +
                    yieldIndex("%r")),
            ((4.0 * 10 - 7) * 10 - 7) * 10 + 4); // min 4, -7; max -7, 4
  EXPECT_EQ(c.score(std::string(kRel) + "    %r = math.absi %rel : index\n" +
                    yieldIndex("%r")),
            7.0);
  // Bitwise ops and shifts on index values (a packed mask's word and bit
  // of a key): kvi = 10, rel = -7; shrsi keeps the sign, shrui does not.
  EXPECT_EQ(c.score(std::string(kRel) +
                    "    %c1 = arith.constant 1 : index\n"
                    "    %c2 = arith.constant 2 : index\n"
                    "    %c3 = arith.constant 3 : index\n"
                    "    %c5 = arith.constant 5 : index\n"
                    "    %c60 = arith.constant 60 : index\n"
                    "    %a = arith.shrui %kvi, %c1 : index\n"
                    "    %b2 = arith.andi %kvi, %c3 : index\n"
                    "    %d = arith.shli %kvi, %c2 : index\n"
                    "    %e = arith.shrsi %rel, %c1 : index\n"
                    "    %f = arith.ori %kvi, %c5 : index\n"
                    "    %g = arith.xori %kvi, %c3 : index\n"
                    "    %u = arith.shrui %rel, %c60 : index\n"
                    "    %t0 = arith.addi %a, %b2 : index\n"
                    "    %t1 = arith.addi %t0, %d : index\n"
                    "    %t2 = arith.addi %t1, %e : index\n"
                    "    %t3 = arith.addi %t2, %f : index\n"
                    "    %t4 = arith.addi %t3, %g : index\n"
                    "    %r = arith.addi %t4, %u : index\n" +
                    yieldIndex("%r")),
            5.0 + 2 + 40 - 4 + 15 + 9 + 15);
  // i32 wraps; shifts by the width or more give 0.
  const char *i32 = "    %k = arith.constant 65536 : i32\n"
                    "    %m8 = arith.constant -8 : i32\n"
                    "    %one = arith.constant 1 : i32\n"
                    "    %c40 = arith.constant 40 : i32\n";
  EXPECT_EQ(c.score(std::string(i32) + "    %r = arith.muli %k, %k : i32\n" +
                    yieldI32("%r")),
            0.0);
  EXPECT_EQ(c.score(std::string(i32) +
                    "    %r = arith.shrsi %m8, %one : i32\n" + yieldI32("%r")),
            -4.0);
  EXPECT_EQ(c.score(std::string(i32) +
                    "    %r = arith.shrui %m8, %one : i32\n" + yieldI32("%r")),
            2147483644.0);
  EXPECT_EQ(c.score(std::string(i32) +
                    "    %a = arith.shli %one, %c40 : i32\n"
                    "    %b2 = arith.shli %k, %one : i32\n"
                    "    %r = arith.addi %a, %b2 : i32\n" +
                    yieldI32("%r")),
            131072.0);
  EXPECT_EQ(c.score(std::string(i32) +
                    "    %a = arith.andi %m8, %k : i32\n"
                    "    %b2 = arith.ori %a, %one : i32\n"
                    "    %r = arith.xori %b2, %m8 : i32\n" +
                    yieldI32("%r")),
            double((((-8) & 65536) | 1) ^ (-8)));
  EXPECT_EQ(c.score(std::string(i32) +
                    "    %n = arith.subi %one, %k : i32\n"
                    "    %r = math.absi %n : i32\n" +
                    yieldI32("%r")),
            65535.0);
  // Casts: sign and zero extension, truncation to the low bits.
  EXPECT_EQ(c.score(std::string(i32) +
                    "    %r = arith.extsi %m8 : i32 to i64\n" + yieldI64("%r")),
            -8.0);
  EXPECT_EQ(c.score(std::string(i32) +
                    "    %r = arith.extui %m8 : i32 to i64\n" + yieldI64("%r")),
            4294967288.0);
  EXPECT_EQ(c.score("    %big = arith.constant 4294967301 : i64\n"
                    "    %r = arith.trunci %big : i64 to i32\n" +
                    yieldI32("%r")),
            5.0);
  EXPECT_EQ(c.score(std::string(i32) +
                    "    %u = arith.uitofp %m8 : i32 to f32\n"
                    "    attn.yield %u : f32"),
            4294967288.0);
  EXPECT_EQ(c.score(std::string(i32) +
                    "    %n = arith.index_cast %m8 : i32 to index\n"
                    "    %u = arith.index_castui %m8 : i32 to index\n"
                    "    %c0 = arith.constant 0 : index\n"
                    "    %neg = arith.cmpi slt, %n, %c0 : index\n"
                    "    %pos = arith.cmpi sgt, %u, %c0 : index\n"
                    "    %r = arith.andi %neg, %pos : i1\n" +
                    yieldBool("%r")),
            1.0);
  EXPECT_EQ(c.score("    %a = arith.constant -2.7 : f32\n"
                    "    %b2 = arith.constant 2.7 : f32\n"
                    "    %x = arith.fptosi %a : f32 to i32\n"
                    "    %y = arith.fptoui %b2 : f32 to i64\n"
                    "    %xf = arith.sitofp %x : i32 to f32\n"
                    "    %yf2 = arith.uitofp %y : i64 to f32\n"
                    "    %r = arith.addf %xf, %yf2 : f32\n"
                    "    attn.yield %r : f32"),
            0.0); // -2 + 2
  // Booleans: trunci keeps the low bit; extui, index_castui, uitofp give 1.
  EXPECT_EQ(c.score("    %six = arith.constant 6 : i32\n"
                    "    %seven = arith.constant 7 : i32\n"
                    "    %a = arith.trunci %six : i32 to i1\n"
                    "    %b2 = arith.trunci %seven : i32 to i1\n"
                    "    %lt = arith.cmpi ult, %a, %b2 : i1\n"
                    "    %e = arith.extui %lt : i1 to i32\n"
                    "    %x = arith.index_castui %b2 : i1 to index\n"
                    "    %xi = arith.index_cast %x : index to i32\n"
                    "    %s2 = arith.select %a, %six, %e : i32\n"
                    "    %r = arith.addi %s2, %xi : i32\n" +
                    yieldI32("%r")),
            2.0);
  // q_len and kv_len reach the region: the aligned position of query 3 of
  // 4 over 12 keys is 11.
  EXPECT_EQ(c.score("    %e = arith.addi %qi, %kl : index\n"
                    "    %p = arith.subi %e, %ql : index\n" +
                    yieldIndex("%p")),
            11.0);

  std::string missing;
  for (StringRef name : attn::regionScalarOps())
    if (!c.opNames.count(name.str()))
      missing += " " + name.str();
  EXPECT_EQ(missing, "") << "ops without a case";
}

// Every binary integer op on every integer type regions compute on: the
// verifier admits each pair, so each must lower (index's bitwise ops once
// passed the verifier and failed in EmitC, which only lowers integers).
TEST(RegionOps, EveryIntegerOpLowersOnEveryIntegerType) {
  std::vector<std::string> ops;
  for (StringRef op : attn::regionScalarOps())
    // The binary ones: arith.*i but comparisons, casts and conversions.
    if (op.starts_with("arith.") && op.ends_with("i") && op != "arith.cmpi" &&
        !op.contains("cast") && !op.contains("ext") && !op.contains("trunc") &&
        !op.contains("fpto"))
      ops.push_back(op.str());
  ASSERT_GE(ops.size(), 20u);
  for (const std::string type : {"index", "i32", "i64"})
    for (const std::string &op : ops) {
      RegionCase c;
      // Operands from the block's arguments (kvi 10, qi 3): of constants,
      // the op would be folded away before it is lowered.
      std::string operands =
          type == "index"
              ? "    %a = arith.addi %kvi, %b : index\n"
                "    %b2 = arith.addi %qi, %b : index\n"
              : "    %a = arith.index_cast %kvi : index to " + type +
                    "\n    %b2 = arith.index_cast %qi : index to " + type +
                    "\n";
      std::string body =
          operands + "    %r = " + op + " %a, %b2 : " + type + "\n";
      body += type == "index" ? yieldIndex("%r")
              : type == "i32" ? yieldI32("%r")
                              : yieldI64("%r");
      std::optional<double> value = c.run("score_mod", body, kScalars);
      EXPECT_TRUE(value) << op << " on " << type << ": " << c.error;
    }
}

TEST(RegionOps, UndefinedArithIsAnErrorNotAValue) {
  RegionCase c;
  EXPECT_FALSE(c.run("score_mod",
                     "    %c0 = arith.constant 0 : index\n"
                     "    %r = arith.divui %kvi, %c0 : index\n" +
                         yieldIndex("%r"),
                     kScalars));
  EXPECT_NE(c.error.find("arith.divui divides by zero"), std::string::npos)
      << c.error;
  EXPECT_FALSE(c.run("score_mod",
                     "    %big = arith.constant 3.0e10 : f32\n"
                     "    %r = arith.fptosi %big : f32 to i32\n" +
                         yieldI32("%r"),
                     kScalars));
  EXPECT_NE(c.error.find("out of the result's range"), std::string::npos)
      << c.error;
}

TEST(RegionOps, MaskAtTheAlignedPositionIsCausal) {
  // kvi <= qi + kv_len - q_len, evaluated for a chunk of 4 queries over 12
  // keys: query 3 sits at position 11, query 0 at position 8.
  std::string body = "    %e = arith.addi %qi, %kl : index\n"
                     "    %p = arith.subi %e, %ql : index\n"
                     "    %r = arith.cmpi ule, %kvi, %p : index\n"
                     "    attn.yield %r : i1";
  RegionCase c;
  for (int qi = 0; qi < 4; ++qi)
    for (int kvi = 0; kvi < 12; ++kvi) {
      std::optional<double> visible =
          c.run("mask_mod", body, {0, 0, 0, double(qi), double(kvi), 4, 12},
                "return attention_mask_mod(b, h, i, j, qLen, kvLen, &p);");
      ASSERT_TRUE(visible) << c.error;
      EXPECT_EQ(*visible, kvi <= qi + 8 ? 1.0 : 0.0) << qi << ", " << kvi;
    }
}

} // namespace
} // namespace attnc
