//===- KernelGenerator.cpp - hand-written attn_gpu kernels and launches ---===//
//
// attn_gpu is attnc's internal IR, but any text that parses reaches the
// compiler: a module may hold kernels next to the attention it compiles,
// and the describing of launches and the C++ emission then meet them. Their
// plans, targets, masks and geometries here take usual values and edges
// (0, negative, huge), their types now and then something other than the
// attn descriptors, and their bodies are the lowering's steps with some
// left out.
//
//===----------------------------------------------------------------------===//

#include "KernelGenerator.h"

#include "RegionGenerator.h"

namespace attnc::fuzz {

namespace {

std::string number(Choices &c, std::initializer_list<const char *> usual) {
  return c.usual(85) ? c.pick(usual)
                     : c.pick({"0", "-1", "1", "3", "2147483648",
                               "9223372036854775807"});
}

std::string type(Choices &c, const std::string &usual) {
  return c.usual(90) ? usual
                     : c.pick({"i32", "!attn.lse<?x8>", "f32",
                               "!attn.latent_kv<?x576xbf16, rope = 64>",
                               "!attn.q<?x8x64xbf16>"});
}

/// The steps attn-lower-to-gpu writes, each step without results kept
/// most of the time.
std::string body(Choices &c, const std::string &kv) {
  auto step = [&](const std::string &line) {
    return c.usual(90) ? "      " + line + "\n" : std::string();
  };
  return "    %live = attn_gpu.begin : i1\n    scf.if %live {\n" +
         step("attn_gpu.load_query") + "      %begin = attn_gpu.tiles_begin\n" +
         "      %end = attn_gpu.tiles_end\n" +
         step("attn_gpu.prefetch_tile %begin from " + kv) +
         "      %one = arith.constant 1 : index\n"
         "      scf.for %t = %begin to %end step %one {\n" +
         step("  attn_gpu.wait_tile %t") + step("  attn_gpu.score_mma %t") +
         "        %partial = attn_gpu.tile_is_partial %t : i1\n"
         "        scf.if %partial {\n" +
         step("    attn_gpu.modify_scores %t {masked}") + "        }\n" +
         step("  attn_gpu.softmax_update") + step("  attn_gpu.value_mma %t") +
         "      }\n" + step("attn_gpu.store_state") + "    }\n";
}

} // namespace

std::string generateKernel(Choices &c, const KernelTypes &types) {
  if (c.chance(20))
    return "attn_gpu.merge_kernel @user_kernel input = " +
           c.pick({"f32", "bf16", "i32", "f16"}) +
           " output = " + c.pick({"bf16", "f16", "f32", "i1"}) +
           " v_dim = " + number(c, {"128", "64", "256"}) + "\n";
  std::string kv = type(c, types.key);
  std::string text =
      "attn_gpu.kernel @user_kernel target = #attn_gpu.target<\"" +
      c.pick({"sm_90a", "sm_80", "", "sm_"}) +
      "\", sms = " + number(c, {"132", "1"}) +
      ", smem = " + number(c, {"232448", "101376", "1024"}) +
      "> plan = #attn_gpu.plan<" + c.pick({"prefill", "decode"}) +
      ", block = " + number(c, {"64", "128", "16"}) + " x " +
      number(c, {"64", "32", "16"}) +
      ", warps = " + number(c, {"4", "8", "1"}) + " x " +
      number(c, {"1", "4"}) + ", stages = " + number(c, {"2", "3", "8"}) +
      ", kv_splits = " + number(c, {"1", "16", "32"}) +
      ", q_in_regs = " + c.pick({"true", "false"}) +
      "> masks = #attn_gpu.masks<lower = " + c.pick({"false", "true"}) +
      ", upper = " + c.pick({"false", "true"}) +
      ", sinks = " + number(c, {"0", "4"}) +
      ", partial = " + c.pick({"never", "edges", "always"}) +
      "> query = " + type(c, types.query) + " key = " + kv +
      " value = " + type(c, types.value) +
      " output = " + type(c, types.output) + " captures = [" +
      (c.chance(10) ? c.pick({"memref<?xi32>", "i32", "memref<?x?xf32>"})
                    : "") +
      "] attributes {" + (c.chance(40) ? "has_lse, " : "") +
      (c.chance(30) ? "causal, " : "") +
      (c.chance(15) ? "window = " +
                          c.pick({"#attn.window<64, 0>", "3 : i64",
                                  "#attn.window<-1, 2147483648>"}) +
                          ", "
                    : "") +
      (c.chance(15) ? std::string("softcap = 30.0 : f32, ") : "") +
      (c.chance(10) ? "alibi, " : "") + (c.chance(10) ? "segments, " : "") +
      "scale = " + c.pick({"0.125", "0.0", "-1.0", "0x7FC00000"}) +
      " : f32} {\n" + (c.chance(80) ? body(c, kv) : "") + "}";
  if (c.chance(15))
    text += " " + generateRegion(c, /*score=*/true, {}, "attn_gpu.yield");
  if (c.chance(15))
    text += " " + generateRegion(c, /*score=*/false, {}, "attn_gpu.yield");
  return text + "\n";
}

std::string generateLaunch(Choices &c, const std::string &operands,
                           const std::string &operandTypes,
                           const std::string &resultTypes, int results) {
  std::string names = results == 0 ? ""
                      : results == 1
                          ? "%user = "
                          : "%user:" + std::to_string(results) + " = ";
  return "  " + names + "attn_gpu.launch @" +
         c.pick({"user_kernel", "user_kernel", "nowhere"}) + "(" + operands +
         ") {geometry = #attn_gpu.launch<threads = " +
         number(c, {"128", "256"}) + ", smem = " + number(c, {"0", "102400"}) +
         ", block_m = " + number(c, {"64", "16"}) +
         ", kv_splits = " + number(c, {"1", "16"}) + ">} : (" + operandTypes +
         ") -> (" + resultTypes + ")\n";
}

} // namespace attnc::fuzz
