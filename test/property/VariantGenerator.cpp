//===- VariantGenerator.cpp - random attention variants as attn text ------===//

#include "VariantGenerator.h"

#include "attnc/Check/InputNoise.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace attnc::property {
namespace {

//===----------------------------------------------------------------------===//
// Region snippets: the one place that spells score_mod / mask_mod regions.
//
// A region's block takes the fixed arguments below, then every capture of
// the op (so two regions list the same captures). Snippets use only these
// names and the name of their own capture; a change of the block arguments
// is a change here alone.
//
// Snippets stay within what the C++ emitter lowers: remainders are signed
// (`arith.remui` and `arith.divui` on index have no EmitC lowering yet). A
// tanh cap becomes a `softcap` attribute where attn-canonicalize can raise
// it, and a `tanhf` call behind a softcap or ALiBi (which apply first).
//===----------------------------------------------------------------------===//

const char *const kScoreModArgs =
    "%score: f32, %batch: index, %head: index, %qi: index, %kvi: index, "
    "%q_len: index, %kv_len: index";
const char *const kMaskModArgs = "%batch: index, %head: index, %qi: index, "
                                 "%kvi: index, %q_len: index, %kv_len: index";

/// A buffer a region reads: its block argument name and its memref type,
/// where `{heads}` stands for the query head count.
struct Capture {
  const char *name;
  const char *type;
};

const Capture kBiasTable = {"bias", "memref<{heads}x64xf32>"};
const Capture kDocumentIds = {"docs", "memref<?x?xi32>"};

struct Snippet {
  const char *name;
  const Capture *capture; // null when the region reads no buffer
  const char *body;       // ends with attn.yield; may use `{heads}`
};

const Snippet kScoreMods[] = {
    {"relative_bias", &kBiasTable,
     "    %c63 = arith.constant 63 : index\n"
     "    %far = arith.cmpi ugt, %qi, %kvi : index\n"
     "    %back = arith.subi %qi, %kvi : index\n"
     "    %ahead = arith.subi %kvi, %qi : index\n"
     "    %dist = arith.select %far, %back, %ahead : index\n"
     "    %bucket = arith.minui %dist, %c63 : index\n"
     "    %b = memref.load %bias[%head, %bucket] : memref<{heads}x64xf32>\n"
     "    %r = arith.addf %score, %b : f32\n"
     "    attn.yield %r : f32\n"},
    {"tanh_cap", nullptr,
     "    %cap = arith.constant 12.5 : f32\n"
     "    %x = arith.divf %score, %cap : f32\n"
     "    %t = math.tanh %x : f32\n"
     "    %r = arith.mulf %t, %cap : f32\n"
     "    attn.yield %r : f32\n"},
    {"distance_penalty", nullptr,
     "    %c31 = arith.constant 31 : index\n"
     "    %far = arith.cmpi ugt, %qi, %kvi : index\n"
     "    %back = arith.subi %qi, %kvi : index\n"
     "    %ahead = arith.subi %kvi, %qi : index\n"
     "    %dist = arith.select %far, %back, %ahead : index\n"
     "    %bucket = arith.minui %dist, %c31 : index\n"
     "    %di = arith.index_cast %bucket : index to i32\n"
     "    %df = arith.sitofp %di : i32 to f32\n"
     "    %w = arith.constant -0.0625 : f32\n"
     "    %bias = arith.mulf %df, %w : f32\n"
     "    %r = arith.addf %score, %bias : f32\n"
     "    attn.yield %r : f32\n"},
    {"per_head_temperature", nullptr,
     "    %c3 = arith.constant 3 : index\n"
     "    %m = arith.remsi %head, %c3 : index\n"
     "    %mi = arith.index_cast %m : index to i32\n"
     "    %mf = arith.sitofp %mi : i32 to f32\n"
     "    %quarter = arith.constant 0.25 : f32\n"
     "    %one = arith.constant 1.0 : f32\n"
     "    %step = arith.mulf %mf, %quarter : f32\n"
     "    %t = arith.addf %one, %step : f32\n"
     "    %r = arith.mulf %score, %t : f32\n"
     "    attn.yield %r : f32\n"},
};

const Snippet kMaskMods[] = {
    {"document", &kDocumentIds,
     "    %qd = memref.load %docs[%batch, %qi] : memref<?x?xi32>\n"
     "    %kd = memref.load %docs[%batch, %kvi] : memref<?x?xi32>\n"
     "    %same = arith.cmpi eq, %qd, %kd : i32\n"
     "    attn.yield %same : i1\n"},
    {"key_stride", nullptr,
     "    %c3 = arith.constant 3 : index\n"
     "    %c1 = arith.constant 1 : index\n"
     "    %m = arith.remsi %kvi, %c3 : index\n"
     "    %keep = arith.cmpi ne, %m, %c1 : index\n"
     "    attn.yield %keep : i1\n"},
    {"band", nullptr,
     "    %c48 = arith.constant 48 : index\n"
     "    %far = arith.cmpi ugt, %qi, %kvi : index\n"
     "    %back = arith.subi %qi, %kvi : index\n"
     "    %ahead = arith.subi %kvi, %qi : index\n"
     "    %dist = arith.select %far, %back, %ahead : index\n"
     "    %keep = arith.cmpi ult, %dist, %c48 : index\n"
     "    attn.yield %keep : i1\n"},
};

std::string replaceAll(std::string text, const std::string &from,
                       const std::string &to) {
  for (size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

/// The region `kind { ^bb0(args, captures): body }` as it follows the op.
std::string regionText(const char *kind, const char *fixedArgs,
                       const Snippet &snippet,
                       const std::vector<const Capture *> &captures) {
  std::string args = fixedArgs;
  for (const Capture *c : captures)
    args += std::string(", %") + c->name + ": " + c->type;
  return std::string("  ") + kind + " {\n  ^bb0(" + args + "):\n" +
         snippet.body + "  }\n";
}

/// Captures, their clause and the regions of up to one snippet of each kind.
RegionText regionsOf(const Snippet *scoreMod, const Snippet *maskMod,
                     int heads) {
  std::vector<const Capture *> captures;
  for (const Snippet *s : {scoreMod, maskMod})
    if (s && s->capture &&
        std::find(captures.begin(), captures.end(), s->capture) ==
            captures.end())
      captures.push_back(s->capture);
  RegionText text;
  std::string names, types;
  for (const Capture *c : captures) {
    std::string arg = std::string("%") + c->name + "_arg";
    text.functionArgs += ", " + arg + ": " + c->type;
    names += (names.empty() ? "" : ", ") + arg;
    types += (types.empty() ? "" : ", ") + std::string(c->type);
  }
  if (!captures.empty())
    text.capturesClause = " captures(" + names + " : " + types + ")";
  if (scoreMod)
    text.regions += regionText("score_mod", kScoreModArgs, *scoreMod, captures);
  if (maskMod)
    text.regions += regionText("mask_mod", kMaskModArgs, *maskMod, captures);
  std::string count = std::to_string(heads);
  text.functionArgs = replaceAll(text.functionArgs, "{heads}", count);
  text.capturesClause = replaceAll(text.capturesClause, "{heads}", count);
  text.regions = replaceAll(text.regions, "{heads}", count);
  return text;
}

//===----------------------------------------------------------------------===//
// Drawing
//===----------------------------------------------------------------------===//

/// A portable stream (SplitMix64, InputNoise.h), so a seed means the same
/// variant with every standard library.
class Random {
public:
  explicit Random(uint64_t seed) : bits(seed) {}
  uint64_t next() { return bits.next(); }
  /// Uniform in [lo, hi].
  int range(int lo, int hi) { return lo + int(next() % uint64_t(hi - lo + 1)); }
  bool chance(int percent) { return range(1, 100) <= percent; }
  template <typename T, size_t N> const T &pick(const T (&items)[N]) {
    return items[range(0, int(N) - 1)];
  }
  template <typename T> const T &pick(const std::vector<T> &items) {
    return items[range(0, int(items.size()) - 1)];
  }

private:
  RandomBits bits;
};

struct Draw {
  bool decode = false;
  int qSeq = 0, kvSeq = 0; // 0 is `?`
  bool raggedQ = false;
  std::string kvLayout; // "", "ragged", "paged<P, nhd>"
  bool paged = false;
  int qHeads = 8, kvHeads = 8, qkDim = 128, vDim = 128;
  std::string elem = "bf16", kvElem = "bf16", outElem = "bf16";
  int pageSize = 0;
  bool latent = false;
  int ropeDim = 0;
  std::vector<std::string> attrs;
  std::vector<std::string> features; // for the summary
  const Snippet *scoreMod = nullptr, *maskMod = nullptr;
  bool segments = false, lse = false;
  /// Sizes of an fp8 cache's key and value scales (0: none).
  int kScaleSize = 0, vScaleSize = 0;
};

std::string formatFloat(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  std::string s = text;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

void drawHeads(Random &rng, Draw &d, const GeneratorOptions &options) {
  static const int kKVHeads[] = {1, 1, 2, 3, 4, 8};
  static const int kGroups[] = {1, 1, 2, 3, 4, 5, 7, 8};
  d.kvHeads = rng.pick(kKVHeads);
  int group = rng.pick(kGroups);
  int maxHeads = options.smallProblems ? 16 : 64;
  while (d.kvHeads * group > maxHeads)
    group = std::max(1, group / 2);
  d.qHeads = d.kvHeads * group;
  d.features.push_back(group == 1       ? "mha"
                       : d.kvHeads == 1 ? "mqa " + std::to_string(d.qHeads)
                                        : "gqa " + std::to_string(d.qHeads) +
                                              "/" + std::to_string(d.kvHeads));
}

/// Head dims: mostly the grid, qk == v or the pairs real models use; with
/// `unsupported`, now and then one off the grid.
void drawDims(Random &rng, Draw &d, const GeneratorOptions &options,
              std::vector<std::string> &refusals) {
  std::vector<int> grid = gridHeadDims();
  int roll = rng.range(1, 100);
  if (options.unsupported && roll <= 5) {
    static const int kOffGrid[] = {8, 24, 40, 72, 136, 264, 320, 512};
    d.qkDim = rng.pick(kOffGrid);
    d.vDim = rng.chance(50) ? d.qkDim : rng.pick(grid);
    refusals.push_back("head dim");
    return;
  }
  d.qkDim = rng.pick(grid);
  d.vDim = d.qkDim;
  if (roll <= 15) {
    d.qkDim = 192; // DeepSeek's qk 192 / v 128
    d.vDim = 128;
  } else if (roll <= 25) {
    d.vDim = rng.pick(grid);
  }
}

void drawLayouts(Random &rng, Draw &d) {
  d.decode = rng.chance(40);
  if (d.decode) {
    d.qSeq = 1;
    d.raggedQ = rng.chance(20);
  } else {
    d.raggedQ = rng.chance(50);
    if (!d.raggedQ && rng.chance(15))
      d.qSeq = rng.range(1, 6) * 16 + rng.range(0, 15);
  }
  int kv = rng.range(1, 100);
  if (kv <= 45) {
    static const int kPageSizes[] = {1, 2, 3, 8, 16, 16, 32, 64, 100, 128, 256};
    int page = rng.pick(kPageSizes);
    d.paged = true;
    d.pageSize = page;
    d.kvLayout = "paged<" + std::to_string(page) + ", " +
                 (rng.chance(50) ? "nhd" : "hnd") + ">";
  } else if (kv <= 75) {
    d.kvLayout = "ragged";
  } else if (rng.chance(20)) {
    d.kvSeq = rng.range(40, 300);
  }
}

/// Masks and modifiers: declarative attributes, regions, segments.
void drawSemantics(Random &rng, Draw &d, const GeneratorOptions &options,
                   std::vector<std::string> &refusals) {
  bool causal = rng.chance(50);
  if (causal)
    d.attrs.push_back("causal");
  if (rng.chance(25)) {
    static const int kLeft[] = {0, 1, 7, 33, 64, 100, 1000};
    static const int kRight[] = {0, 5, 31, 64};
    int left = rng.pick(kLeft), right = causal ? 0 : rng.pick(kRight);
    d.attrs.push_back("window = #attn.window<" + std::to_string(left) + ", " +
                      std::to_string(right) + ">");
    if (rng.chance(50)) {
      static const int kSinks[] = {1, 4, 17, 64};
      d.attrs.push_back("sinks = " + std::to_string(rng.pick(kSinks)));
    }
  } else if (rng.chance(5)) {
    d.attrs.push_back("sinks = 3"); // without a window sinks change nothing
  }
  if (rng.chance(20))
    d.attrs.push_back("scale = " + formatFloat(rng.range(20, 300) / 1000.0) +
                      " : f32");
  bool softcap = rng.chance(20), alibi = rng.chance(15);
  if (softcap) {
    static const double kCaps[] = {5.0, 20.0, 50.0};
    d.attrs.push_back("softcap = " + formatFloat(rng.pick(kCaps)) + " : f32");
  }
  if (alibi)
    d.attrs.push_back("alibi");
  if (rng.chance(20))
    d.scoreMod = &rng.pick(kScoreMods);
  if (rng.chance(15))
    d.maskMod = &rng.pick(kMaskMods);
  if (rng.chance(10) && (options.unsupported || !d.paged)) {
    d.segments = true;
    if (d.paged)
      refusals.push_back("document segments with a paged cache");
  }
  d.lse = rng.chance(50);
}

void drawElements(Random &rng, Draw &d) {
  d.elem = rng.chance(70) ? "bf16" : "f16";
  d.kvElem = d.elem;
  d.outElem = rng.chance(15) ? "f32" : d.elem;
  if (rng.chance(12)) {
    // An fp8 cache, mostly with scales, per tensor or per KV head.
    d.kvElem = rng.chance(50) ? "f8E4M3FN" : "f8E5M2";
    if (rng.chance(75)) {
      d.kScaleSize = rng.chance(50) ? 1 : d.kvHeads;
      d.vScaleSize = rng.chance(50) ? 1 : d.kvHeads;
    }
  }
}

/// What the latent schedule refuses by name (attn-plan): ALiBi. Its fp8
/// caches and pages of any size compile.
std::vector<std::string> latentRefusals(const Draw &d) {
  std::vector<std::string> refusals;
  for (const std::string &attr : d.attrs)
    if (attr == "alibi")
      refusals.push_back("ALiBi with a latent cache");
  return refusals;
}

std::string seqText(int seq) { return seq > 0 ? std::to_string(seq) : "?"; }

std::string print(const Draw &d, const std::string &name) {
  std::string qLayout = d.raggedQ ? ", ragged" : "";
  std::string kvLayout = d.kvLayout.empty() ? "" : ", " + d.kvLayout;
  std::string seq = seqText(d.qSeq);
  auto heads = [&](int n, int dim, const std::string &elem) {
    return std::to_string(n) + "x" + std::to_string(dim) + "x" + elem;
  };
  std::string q =
      "!attn.q<" + seq + "x" + heads(d.qHeads, d.qkDim, d.elem) + qLayout + ">";
  std::string out = "!attn.out<" + seq + "x" +
                    heads(d.qHeads, d.vDim, d.outElem) + qLayout + ">";
  std::string lse =
      "!attn.lse<" + seq + "x" + std::to_string(d.qHeads) + qLayout + ">";
  std::string k, v;
  if (d.latent) {
    k = "!attn.latent_kv<?x" + std::to_string(d.qkDim) + "x" + d.kvElem +
        ", rope = " + std::to_string(d.ropeDim) + kvLayout + ">";
  } else {
    std::string kvSeq = seqText(d.kvSeq);
    k = "!attn.kv<" + kvSeq + "x" + heads(d.kvHeads, d.qkDim, d.kvElem) +
        kvLayout + ">";
    v = "!attn.kv<" + kvSeq + "x" + heads(d.kvHeads, d.vDim, d.kvElem) +
        kvLayout + ">";
  }

  RegionText regions = regionsOf(d.scoreMod, d.maskMod, d.qHeads);
  std::string qSegType = d.raggedQ ? "memref<?xi32>" : "memref<?x?xi32>";
  std::string kSegType =
      d.kvLayout == "ragged" ? "memref<?xi32>" : "memref<?x?xi32>";

  std::ostringstream s;
  s << "func.func @" << name << "(%q: " << q << ", %k: " << k;
  if (!d.latent)
    s << ", %v: " << v;
  if (d.segments)
    s << ", %q_docs: " << qSegType << ", %kv_docs: " << kSegType;
  std::string kScaleType = "memref<" + std::to_string(d.kScaleSize) + "xf32>";
  std::string vScaleType = "memref<" + std::to_string(d.vScaleSize) + "xf32>";
  if (d.kScaleSize)
    s << ", %k_scale: " << kScaleType << ", %v_scale: " << vScaleType;
  s << regions.functionArgs;
  std::string results = out + (d.lse ? ", " + lse : "");
  s << ")\n    -> (" << results << ") {\n";
  s << "  %out" << (d.lse ? ", %lse" : "") << " = attn.attention(%q, %k"
    << (d.latent ? "" : ", %v") << ")";
  if (d.segments)
    s << " segments(%q_docs, %kv_docs : " << qSegType << ", " << kSegType
      << ")";
  if (d.kScaleSize)
    s << " kv_scales(%k_scale, %v_scale : " << kScaleType << ", " << vScaleType
      << ")";
  s << regions.capturesClause;
  if (!d.attrs.empty()) {
    s << " {";
    for (size_t i = 0; i < d.attrs.size(); ++i)
      s << (i ? ", " : "") << d.attrs[i];
    s << "}";
  }
  s << "\n      : " << q << ", " << k << (d.latent ? "" : ", " + v)
    << "\n      -> " << results << "\n";
  s << regions.regions;
  s << "  return %out" << (d.lse ? ", %lse" : "") << " : " << results
    << "\n}\n";
  return s.str();
}

std::string summarize(const Draw &d) {
  std::ostringstream s;
  s << (d.decode ? "decode" : "prefill") << " qk " << d.qkDim << " v " << d.vDim
    << " " << d.elem;
  if (d.kvElem != d.elem)
    s << " kv " << d.kvElem;
  if (d.kScaleSize)
    s << " scales " << d.kScaleSize << "/" << d.vScaleSize;
  if (d.outElem != d.elem)
    s << " out " << d.outElem;
  s << (d.raggedQ ? " q ragged" : d.qSeq > 1 ? " q static" : " q dense");
  s << " kv "
    << (d.latent             ? "latent"
        : d.kvLayout.empty() ? (d.kvSeq ? "static" : "dense")
                             : d.kvLayout);
  for (const std::string &f : d.features)
    s << ", " << f;
  for (const std::string &a : d.attrs)
    s << ", " << a;
  if (d.scoreMod)
    s << ", score_mod " << d.scoreMod->name;
  if (d.maskMod)
    s << ", mask_mod " << d.maskMod->name;
  if (d.segments)
    s << ", segments";
  if (d.lse)
    s << ", lse";
  return s.str();
}

/// A small problem for the reference: enough keys for several KV tiles and
/// splits, few enough for a quick double-precision check.
void drawProblem(Random &rng, const Draw &d, const GeneratorOptions &options,
                 Variant &v) {
  v.batch = rng.range(1, 3);
  int maxQ = options.smallProblems ? 96 : 300;
  int maxKV = options.smallProblems ? 320 : 2000;
  v.qLen = d.decode ? 1 : d.qSeq > 0 ? d.qSeq : rng.range(1, maxQ);
  v.kvLen = d.kvSeq > 0 ? d.kvSeq : rng.range(1, maxKV);
}

} // namespace

RegionText menuRegions(const std::string &scoreMod, const std::string &maskMod,
                       int heads) {
  auto find = [](const auto &menu, const std::string &name) {
    const Snippet *found = nullptr;
    for (const Snippet &s : menu)
      if (name == s.name)
        found = &s;
    return found;
  };
  return regionsOf(find(kScoreMods, scoreMod), find(kMaskMods, maskMod), heads);
}

std::vector<int> gridHeadDims() {
  std::vector<int> dims;
  for (int d = 16; d <= 256; d += 16)
    dims.push_back(d);
  return dims;
}

Variant generateVariant(uint64_t seed, uint64_t index,
                        const GeneratorOptions &options) {
  Random rng(seed * 0x100000001b3ull + index);
  Variant v;
  v.seed = seed;
  v.name = "variant_" + std::to_string(index);
  Draw d;
  std::vector<std::string> refusals;
  drawHeads(rng, d, options);
  drawLayouts(rng, d);
  drawDims(rng, d, options, refusals);
  drawSemantics(rng, d, options, refusals);
  drawElements(rng, d);
  if (rng.chance(6)) {
    // A latent (MLA) cache: one KV head whose leading columns are the
    // values, 64 rope columns after them.
    static const int kLatentDims[] = {128, 256, 512};
    d.latent = true;
    d.ropeDim = 64;
    d.vDim = rng.pick(kLatentDims);
    d.qkDim = d.vDim + d.ropeDim;
    d.kvHeads = 1;
    d.segments = false;
    d.kScaleSize = d.vScaleSize = 0;
    d.features.front() = "mla " + std::to_string(d.qHeads);
    if (!options.unsupported) {
      // What the latent schedule compiles, and of it what the GPU stream
      // has always drawn: 16-bit caches over pages of whole swizzle atoms
      // (its fp8 and gathered forms have their own GPU tests).
      d.kvElem = d.elem;
      if (d.paged && d.pageSize % 8 != 0) {
        d.pageSize = 64;
        d.kvLayout = "paged<64, nhd>";
      }
      for (std::vector<std::string> *list : {&d.attrs, &d.features})
        list->erase(std::remove(list->begin(), list->end(), "alibi"),
                    list->end());
    }
    refusals = latentRefusals(d);
  }
  v.decode = d.decode;
  v.expectedRefusals = refusals;
  v.mlir = print(d, v.name);
  v.summary = summarize(d);
  drawProblem(rng, d, options, v);
  return v;
}

} // namespace attnc::property
