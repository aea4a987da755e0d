//===- VariantGenerator.cpp - fuzz bytes to a well-formed variant ---------===//

#include "VariantGenerator.h"

#include "Choices.h"
#include "KernelGenerator.h"
#include "RegionGenerator.h"

#include <vector>

namespace attnc::fuzz {

namespace {

std::string str(long long n) { return std::to_string(n); }

/// The choices one attn.attention makes beyond the shared operands.
std::string attributes(Choices &c) {
  std::vector<std::string> attrs;
  if (c.chance(50))
    attrs.push_back("causal");
  if (c.chance(25))
    attrs.push_back("window = #attn.window<" +
                    (c.usual(90) ? c.pick({"1024", "64", "1", "0", "100"})
                                 : c.pick({"-1", "2147483647", "4294967296"})) +
                    ", " +
                    (c.usual(90) ? c.pick({"0", "25", "1"})
                                 : c.pick({"-1", "2147483647"})) +
                    ">");
  if (c.chance(15))
    attrs.push_back(
        "sinks = " +
        (c.usual(90) ? c.pick({"4", "1", "0", "64"})
                     : c.pick({"-1", "2147483647", "9223372036854775807"})));
  if (c.chance(15))
    attrs.push_back("scale = " +
                    (c.usual(90) ? c.pick({"0.125", "0.0883883", "1.0"})
                                 : c.pick({"0.0", "-1.0", "1.0e+30",
                                           "0x7FC00000", "1.0e-40"})) +
                    " : f32");
  if (c.chance(15))
    attrs.push_back("softcap = " +
                    (c.usual(90) ? c.pick({"30.0", "5.0", "50.0"})
                                 : c.pick({"0.0", "-1.0", "1.0e+30", "1.0e-30",
                                           "0x7F800000"})) +
                    " : f32");
  if (c.chance(10))
    attrs.push_back("alibi");
  if (c.chance(10))
    attrs.push_back("kv_splits = " + (c.usual(90)
                                          ? c.pick({"2", "3", "16", "1", "32"})
                                          : c.pick({"33", "0", "-1", "1024"})));
  std::string text;
  for (const std::string &attr : attrs)
    text += (text.empty() ? "" : ", ") + attr;
  return text.empty() ? "" : " {" + text + "}";
}

std::string pagedLayout(Choices &c) {
  return ", paged<" +
         (c.usual(90) ? c.pick({"16", "1", "64", "128", "256", "2", "32", "8"})
                      : c.pick({"3", "0", "257", "-1", "100"})) +
         ", " + c.pick({"nhd", "hnd"}) + ">";
}

} // namespace

std::string generateVariant(const uint8_t *data, size_t size) {
  Choices c(data, size);
  std::string text = "// fuzz: arch=" +
                     c.pick({"sm_90a", "sm_80", "sm_86", "sm_89", "sm_90",
                             "sm_100a", "sm_120"}) +
                     " warps=" + str(c.below(9)) +
                     " stages=" + str(c.below(9)) +
                     " sms=" + c.pick({"132", "1", "8", "1000000"}) +
                     " cluster=" + c.pick({"1", "2"}) + "\n";

  // The shapes: queries, keys/values and outputs, GQA group.
  long long qHeads = c.usual(90) ? c.pick({8, 32, 28, 16, 4, 1, 12, 64})
                                 : c.pick({128, 1024, 1025, 3, 0});
  long long group = c.pick({1, 4, 2, 7, 8, 3, 5});
  long long kvHeads =
      qHeads % group == 0 ? qHeads / group : c.pick({1LL, qHeads, 3LL});
  long long qkDim = c.usual(85)
                        ? c.pick({128, 64, 256})
                        : c.pick({96, 192, 576, 32, 512, 1024, 1088, 8, 80, 0});
  long long vDim =
      c.usual(85) ? qkDim : c.pick({128LL, 64LL, 512LL, 96LL, 256LL, 0LL});
  std::string elem = c.usual(95) ? c.pick({"bf16", "f16"})
                                 : c.pick({"f32", "f8E4M3FN", "i8", "f64"});
  std::string kvElem =
      c.usual(90) ? elem : c.pick({"f8E4M3FN", "f8E5M2", "f16", "bf16"});
  bool merge = c.chance(15);
  std::string outElem =
      merge || c.chance(20) ? c.pick({"f32", "bf16", "f16"}) : elem;
  bool decode = c.chance(35);
  std::string qSeq = decode        ? "1"
                     : c.usual(90) ? "?"
                                   : c.pick({"128", "4", "0", "2147483648"});
  std::string qLayout = c.chance(decode ? 10 : 50) ? ", ragged" : "";
  std::string kvLayout =
      c.chance(50) ? (c.chance(40) ? ", ragged" : pagedLayout(c)) : "";
  std::string kvSeq = c.usual(90) ? "?" : c.pick({"4096", "1", "0"});
  bool latent = c.chance(5);
  long long rope = c.pick({64, 0, 576, 32});

  std::string q = "!attn.q<" + qSeq + "x" + str(qHeads) + "x" + str(qkDim) +
                  "x" + elem + qLayout + ">";
  std::string kv = latent
                       ? "!attn.latent_kv<" + kvSeq + "x" + str(qkDim) + "x" +
                             kvElem + ", rope = " + str(rope) + kvLayout + ">"
                       : "!attn.kv<" + kvSeq + "x" + str(kvHeads) + "x" +
                             str(qkDim) + "x" + kvElem + kvLayout + ">";
  std::string v = "!attn.kv<" + kvSeq + "x" + str(kvHeads) + "x" + str(vDim) +
                  "x" + kvElem + kvLayout + ">";
  if (latent)
    vDim = qkDim - rope;
  std::string lse = "!attn.lse<" + qSeq + "x" + str(qHeads) + qLayout + ">";
  auto out = [&](const std::string &element) {
    return "!attn.out<" + qSeq + "x" + str(qHeads) + "x" + str(vDim) + "x" +
           element + qLayout + ">";
  };

  // Operands beyond q, k and v: segment ids and captured buffers.
  std::string args = "%q: " + q + ", %k: " + kv;
  if (!latent)
    args += ", %v: " + v;
  std::string segments;
  if (c.chance(8)) {
    // Ragged batches number their tokens in one row, dense ones per request.
    std::string type = qLayout.empty() ? "memref<?x?xi32>" : "memref<?xi32>";
    std::string keyType =
        kvLayout.empty() ? "memref<?x?xi32>" : "memref<?xi32>";
    if (c.chance(10))
      type = c.pick({"memref<?xi64>", "memref<?xf32>", "memref<?x?xi32>"});
    args += ", %qs: " + type + ", %ks: " + keyType;
    segments = " segments(%qs, %ks : " + type + ", " + keyType + ")";
  }
  // Dequantization scales: mostly with an fp8 cache and of a valid size,
  // now and then on a 16-bit cache, of the wrong size or element type.
  std::string scales;
  if (c.chance(kvElem.rfind("f8", 0) == 0 ? 60 : 4)) {
    auto scaleType = [&] {
      return c.usual(90) ? "memref<" + str(c.chance(50) ? 1 : kvHeads) + "xf32>"
                         : c.pick({"memref<?xf32>", "memref<3xf16>",
                                   "memref<1x1xf32>", "memref<0xf32>"});
    };
    std::string kType = scaleType(), vType = scaleType();
    args += ", %kscale: " + kType + ", %vscale: " + vType;
    scales = " kv_scales(%kscale, %vscale : " + kType + ", " + vType + ")";
  }
  std::vector<Capture> captures;
  std::string captureNames, captureTypes;
  int numCaptures = c.chance(25) ? 1 + c.below(c.chance(5) ? 9 : 3) : 0;
  for (int i = 0; i < numCaptures; ++i) {
    struct Buffer {
      const char *type, *element;
      int rank;
    };
    Buffer b =
        c.usual(90)
            ? c.pick<Buffer>({{"memref<?x?xi32>", "i32", 2},
                              {"memref<16x64xf32>", "f32", 2},
                              {"memref<?xf32>", "f32", 1},
                              {"memref<?xi32>", "i32", 1},
                              {"memref<4xi64>", "i64", 1}})
            : c.pick<Buffer>({{"memref<i32>", "i32", 0},
                              {"memref<2x2x2x2x2xf32>", "f32", 5},
                              {"memref<?x?x?x?xf16>", "f16", 4},
                              {"memref<?x?xf32, strided<[?, 1]>>", "f32", 2}});
    captures.push_back({"%cap" + str(i), b.type, b.element, b.rank});
    args += ", %arg_cap" + str(i) + ": " + b.type;
    captureNames += (i ? ", %arg_cap" : "%arg_cap") + str(i);
    captureTypes += (i ? ", " : "") + std::string(b.type);
  }
  std::string regions;
  if (c.chance(20))
    regions += "      " + generateRegion(c, /*score=*/true, captures);
  if (c.chance(20))
    regions += "      " + generateRegion(c, /*score=*/false, captures);
  std::string captured = captures.empty() ? ""
                                          : " captures(" + captureNames +
                                                " : " + captureTypes + ")";

  // repeat_kv now and then expands the KV heads in front of the attention.
  std::string body, k = "%k", vName = "%v", keyType = kv, valueType = v;
  if (!latent && c.chance(8)) {
    long long by = c.pick({group, 1LL, 2LL, 0LL});
    std::string wide = "!attn.kv<" + kvSeq + "x" + str(kvHeads * by) + "x";
    keyType = wide + str(qkDim) + "x" + kvElem + kvLayout + ">";
    valueType = wide + str(vDim) + "x" + kvElem + kvLayout + ">";
    body += "  %kr = attn.repeat_kv %k by " + str(by) + " : " + kv + " -> " +
            keyType + "\n  %vr = attn.repeat_kv %v by " + str(by) + " : " + v +
            " -> " + valueType + "\n";
    k = "%kr";
    vName = "%vr";
  }

  int states = merge ? 2 + c.below(2) : 1;
  bool withLse = merge || c.chance(50);
  std::string partial = out(outElem);
  // Now and then a hand-written kernel beside the attention, and its launch.
  std::string kernel;
  if (c.chance(12)) {
    kernel = generateKernel(c, {q, kv, v, partial});
    std::string operands = "%q, %k", operandTypes = q + ", " + kv;
    if (!latent && c.usual(80)) {
      operands += ", %v";
      operandTypes += ", " + v;
    }
    int results = c.usual(70) ? (withLse ? 2 : 1) : c.below(3);
    std::string resultTypes = results == 0   ? ""
                              : results == 1 ? partial
                                             : partial + ", " + lse;
    body += generateLaunch(c, operands, operandTypes, resultTypes, results);
  }
  for (int i = 0; i < states; ++i) {
    std::string o = "%o" + str(i), l = "%l" + str(i);
    body += "  " + o + (withLse ? ", " + l : "") + " = attn.attention(%q, " +
            k + (latent ? "" : ", " + vName) + ")" + segments + scales +
            captured + attributes(c) + "\n      : " + q + ", " + keyType +
            (latent ? "" : ", " + valueType) + "\n      -> " + partial +
            (withLse ? ", " + lse : "") + "\n" + regions;
  }
  std::string results = partial + (withLse ? ", " + lse : "");
  std::string returned = "%o0" + std::string(withLse ? ", %l0" : "");
  if (merge) {
    std::string final = out(c.pick({"bf16", "f16", "f32"}));
    body += "  %m, %ml = attn.merge_states ";
    for (int i = 0; i < states; ++i)
      body += (i ? ", (%o" : "(%o") + str(i) + ", %l" + str(i) + ")";
    body += " : " + partial + ", " + lse + " -> " + final + "\n";
    results = final + ", " + lse;
    returned = "%m, %ml";
  }
  return text + kernel + "func.func @variant(" + args + ")\n    -> (" +
         results + ") {\n" + body + "  return " + returned + " : " + results +
         "\n}\n";
}

} // namespace attnc::fuzz
