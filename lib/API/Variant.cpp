//===- Variant.cpp - variants from MLIR text or from a spec ---------------===//
//
// A spec becomes MLIR text of the attn dialect, so that both ways into the
// compiler meet at the same verified function and share one cache key.
//
//===----------------------------------------------------------------------===//

#include "attnc/attnc.h"

#include "attnc/Dialect/Attn/AttnDialect.h"
#include "attnc/Driver/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <sstream>

namespace attnc {

namespace {

std::string seq(int64_t len) { return len > 0 ? std::to_string(len) : "?"; }

/// The layout part of a descriptor type: "", ", ragged" or
/// ", paged<16, nhd>". The verifier decides which ones a role may have.
std::string layoutSuffix(TokenLayout layout, int64_t pageSize = 0,
                         PageOrder order = PageOrder::NHD) {
  std::string text;
  if (layout != TokenLayout::Dense)
    text = std::string(", ") + keyword(layout);
  if (layout == TokenLayout::Paged)
    text += "<" + std::to_string(pageSize) + ", " + keyword(order) + ">";
  return text;
}

Status invalid(const std::string &message) {
  return Status::error(ErrorCode::InvalidArgument, message);
}

/// What the spec encodes that the IR cannot say: enumerators that exist,
/// the sentinels of its fields, and a name that is a symbol. Everything
/// the IR can say (head counts, their group, page sizes, windows, sinks,
/// scale, element types per role) is the verifier's to check, with its
/// message.
Status checkSpec(const VariantSpec &s) {
  if (!*keyword(s.dtype))
    return invalid("unknown dtype " + std::to_string(int(s.dtype)));
  if (s.kvDtype && !*keyword(*s.kvDtype))
    return invalid("unknown KV dtype " + std::to_string(int(*s.kvDtype)));
  if (!*keyword(s.kvScales))
    return invalid("unknown KV scales " + std::to_string(int(s.kvScales)));
  if (!*keyword(s.queryLayout))
    return invalid("unknown query layout " +
                   std::to_string(int(s.queryLayout)));
  if (!*keyword(s.kvLayout))
    return invalid("unknown KV layout " + std::to_string(int(s.kvLayout)));
  if (!*keyword(s.pageOrder))
    return invalid("unknown page order " + std::to_string(int(s.pageOrder)));
  // The IR has no spelling for a negative size (zero is the verifier's).
  for (auto [name, value] :
       {std::pair<const char *, int64_t>{"query heads", s.queryHeads},
        {"KV heads", s.kvHeads},
        {"head dim", s.headDim},
        {"page size", s.pageSize},
        {"rope dim", s.ropeDim},
        {"value head dim", s.valueHeadDim}})
    if (value < 0)
      return invalid(std::string(name) + " must be positive, got " +
                     std::to_string(value));
  // 0 means "any length": a negative count would silently mean it too.
  if (s.queriesPerRequest < 0)
    return invalid("queries per request must be 0 (any) or positive, got " +
                   std::to_string(s.queriesPerRequest));
  if (s.queriesPerRequest > 0 && s.queryLayout != TokenLayout::Dense)
    return invalid("queries per request applies to dense queries only");
  if (s.ropeDim > 0 && s.kvHeads != 1)
    return invalid("a latent cache (rope dim " + std::to_string(s.ropeDim) +
                   ") is one KV head shared by every query head, got " +
                   std::to_string(s.kvHeads) + " KV heads");
  if (s.ropeDim > 0 && s.valueHeadDim > 0)
    return invalid("a latent cache's values are its first head dim - rope "
                   "dim columns: value head dim must be 0 with rope dim " +
                   std::to_string(s.ropeDim) + ", got " +
                   std::to_string(s.valueHeadDim));
  if (!s.captureTypes.empty() && s.scoreMod.empty() && s.maskMod.empty())
    return invalid("captured buffers need a score_mod or mask_mod to read "
                   "them");
  auto isLetter = [](char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
  };
  bool symbol = !s.name.empty() && isLetter(s.name[0]);
  for (char c : s.name)
    symbol &= isLetter(c) || std::isdigit(static_cast<unsigned char>(c));
  if (!symbol)
    return invalid("variant name '" + s.name +
                   "' must be a letter or underscore followed by letters, "
                   "digits and underscores");
  return Status();
}

std::string joined(const std::vector<std::string> &parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i ? ", " : "") + parts[i];
  return out;
}

/// A float attribute's text. Finite values in decimal with every digit a
/// float needs; NaN and infinities, which have no decimal spelling in MLIR,
/// as their bits, so that the verifier (not the parser) judges them.
std::string f32Attr(float x) {
  std::ostringstream os;
  if (std::isfinite(x)) {
    os.precision(9);
    os << std::scientific << x;
  } else {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    os << "0x" << std::hex << std::uppercase << bits;
  }
  return os.str() + " : f32";
}

/// Parses and verifies `text`; a failure is `code`: ParseError for MLIR
/// text, InvalidArgument for a spec (its text is ours; what is wrong in it
/// is a field, region text included).
Status checkVariantText(const std::string &text, const std::string &fileName,
                        ErrorCode code) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  registerAttncDialects(context);
  DiagnosticCollector diagnostics(context);
  mlir::OwningOpRef<mlir::ModuleOp> module = diagnostics.parse(text, fileName);
  if (!module)
    return Status::error(code, diagnostics.text());
  // A variant that verifies is one the compiler accepts as input (what it
  // cannot compile yet is reported by compile), if it holds anything.
  if (mlir::failed(requireCompilableModule(*module)))
    return Status::error(ErrorCode::InvalidArgument, diagnostics.text());
  return Status();
}

/// Whether the module parsed from a spec's text is the one function the
/// spec describes: region text is pasted between braces, so text that
/// closes them could add operations, functions or the other region.
Status checkSpecShape(mlir::ModuleOp module, const VariantSpec &s) {
  auto wrong = [&](const std::string &what) {
    return invalid("score_mod / mask_mod text must be one block of its "
                   "region: with it, " +
                   what);
  };
  mlir::Block *body = module.getBody();
  auto func = body->getOperations().size() == 1
                  ? llvm::dyn_cast<mlir::func::FuncOp>(body->front())
                  : nullptr;
  if (!func || func.getSymName() != s.name)
    return wrong("the variant is no longer one function");
  if (!func.getBody().hasOneBlock() ||
      func.getBody().front().getOperations().size() != 2)
    return wrong("the function holds other operations than the attention");
  auto attention =
      llvm::dyn_cast<mlir::attn::AttentionOp>(func.getBody().front().front());
  if (!attention)
    return wrong("the function holds other operations than the attention");
  if (attention.getScoreMod().empty() != s.scoreMod.empty() ||
      attention.getMaskMod().empty() != s.maskMod.empty())
    return wrong("the attention's regions are not the spec's score_mod and "
                 "mask_mod");
  return Status();
}

} // namespace

StatusOr<Variant> Variant::fromSpec(const VariantSpec &s) {
  if (Status status = checkSpec(s); !status.ok())
    return status;
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  registerAttncDialects(context);
  DiagnosticCollector diagnostics(context);

  // Capture types enter the text as MLIR prints them after parsing each
  // one alone: a string that is not exactly one memref type (or that
  // would close the signature it is pasted into) never reaches the text.
  std::vector<std::string> captureTypes;
  for (size_t i = 0; i < s.captureTypes.size(); ++i) {
    std::string what = "capture type " + std::to_string(i);
    mlir::Type type = diagnostics.parseType(
        llvm::StringRef(s.captureTypes[i]).trim().str(), "<" + what + ">");
    if (!type)
      return invalid(what + " is not a type:\n" + diagnostics.text());
    if (!llvm::isa<mlir::MemRefType>(type))
      return invalid(what + " must be a memref type, got '" +
                     s.captureTypes[i] + "'");
    std::string printed;
    llvm::raw_string_ostream os(printed);
    type.print(os);
    captureTypes.push_back(printed);
  }

  bool latent = s.ropeDim > 0;
  std::string heads = "x" + std::to_string(s.queryHeads) + "x";
  std::string queryLen = s.queryLayout == TokenLayout::Ragged
                             ? std::string("?")
                             : seq(s.queriesPerRequest);
  std::string qType = "!attn.q<" + queryLen + heads +
                      std::to_string(s.headDim) + "x" + keyword(s.dtype) +
                      layoutSuffix(s.queryLayout) + ">";
  // A latent cache's values are its first headDim - ropeDim columns.
  int64_t valueDim = latent               ? s.headDim - s.ropeDim
                     : s.valueHeadDim > 0 ? s.valueHeadDim
                                          : s.headDim;
  std::string outType = "!attn.out<" + queryLen + heads +
                        std::to_string(valueDim) + "x" + keyword(s.dtype) +
                        layoutSuffix(s.queryLayout) + ">";
  std::string lseType = "!attn.lse<" + queryLen + "x" +
                        std::to_string(s.queryHeads) +
                        layoutSuffix(s.queryLayout) + ">";
  std::string kvLayout = layoutSuffix(s.kvLayout, s.pageSize, s.pageOrder);
  auto cacheType = [&](int64_t dim) {
    return "!attn.kv<?x" + std::to_string(s.kvHeads) + "x" +
           std::to_string(dim) + "x" + keyword(s.kvDtype.value_or(s.dtype)) +
           kvLayout + ">";
  };
  std::string kvType =
      latent ? "!attn.latent_kv<?x" + std::to_string(s.headDim) + "x" +
                   keyword(s.kvDtype.value_or(s.dtype)) +
                   ", rope = " + std::to_string(s.ropeDim) + kvLayout + ">"
             : cacheType(s.headDim);
  std::string vType = latent ? "" : cacheType(valueDim);
  // The cache operands: one latent cache, or keys and values.
  std::string kvOperands = latent ? "%attnc_k" : "%attnc_k, %attnc_v";
  std::string kvTypes = latent ? kvType : kvType + ", " + vType;
  // The verifier says what scales need (an fp8 cache) and may be.
  std::string scaleType =
      s.kvScales == KVScales::None
          ? ""
          : "memref<" +
                std::to_string(s.kvScales == KVScales::PerHead ? s.kvHeads
                                                               : 1) +
                "xf32>";

  // Document ids are indexed like the tokens they label (the verifier
  // says which layouts take them).
  auto segmentType = [](TokenLayout layout) {
    return layout == TokenLayout::Ragged ? std::string("memref<?xi32>")
                                         : std::string("memref<?x?xi32>");
  };
  std::string querySegments = segmentType(s.queryLayout);
  std::string keySegments = segmentType(s.kvLayout);

  std::vector<std::string> attrs;
  if (s.causal)
    attrs.push_back("causal");
  if (s.window)
    attrs.push_back("window = #attn.window<" + std::to_string(s.window->first) +
                    ", " + std::to_string(s.window->second) + ">");
  if (s.sinks)
    attrs.push_back("sinks = " + std::to_string(s.sinks));
  if (s.scale)
    attrs.push_back("scale = " + f32Attr(*s.scale));
  if (s.softcap)
    attrs.push_back("softcap = " + f32Attr(*s.softcap));
  if (s.alibi)
    attrs.push_back("alibi");
  if (s.sharedKeys)
    attrs.push_back("shared_keys");

  // The attention's regions are not isolated from above in the parser's
  // name scope, so the function's value names must not be ones a region
  // would use for its block arguments (%q, %k, %s...).
  std::vector<std::string> captureNames;
  for (size_t i = 0; i < captureTypes.size(); ++i)
    captureNames.push_back("%attnc_capture" + std::to_string(i));
  std::vector<std::string> args = {"%attnc_q: " + qType, "%attnc_k: " + kvType};
  if (!latent)
    args.push_back("%attnc_v: " + vType);
  if (s.segments) {
    args.push_back("%attnc_q_segments: " + querySegments);
    args.push_back("%attnc_kv_segments: " + keySegments);
  }
  if (!scaleType.empty()) {
    args.push_back("%attnc_k_scale: " + scaleType);
    args.push_back("%attnc_v_scale: " + scaleType);
  }
  for (size_t i = 0; i < captureTypes.size(); ++i)
    args.push_back(captureNames[i] + ": " + captureTypes[i]);
  std::string results = s.returnLse ? outType + ", " + lseType : outType;
  std::string values = s.returnLse ? "%attnc_out, %attnc_lse" : "%attnc_out";

  std::ostringstream os;
  os << "func.func @" << s.name << "(" << joined(args) << ") -> (" << results
     << ") {\n";
  os << "  " << values << " = attn.attention(%attnc_q, " << kvOperands << ")";
  if (s.segments)
    os << " segments(%attnc_q_segments, %attnc_kv_segments : " << querySegments
       << ", " << keySegments << ")";
  if (!scaleType.empty())
    os << " kv_scales(%attnc_k_scale, %attnc_v_scale : " << scaleType << ", "
       << scaleType << ")";
  if (!captureNames.empty())
    os << " captures(" << joined(captureNames) << " : " << joined(captureTypes)
       << ")";
  if (!attrs.empty())
    os << " {" << joined(attrs) << "}";
  os << "\n      : " << qType << ", " << kvTypes << "\n      -> " << results
     << "\n";
  if (!s.scoreMod.empty())
    os << "      score_mod {\n" << s.scoreMod << "\n      }\n";
  if (!s.maskMod.empty())
    os << "      mask_mod {\n" << s.maskMod << "\n      }\n";
  os << "  return " << values << " : " << results << "\n}\n";
  Variant variant;
  variant.text_ = os.str();
  variant.fileName_ = "<" + s.name + ">";
  mlir::OwningOpRef<mlir::ModuleOp> module =
      diagnostics.parse(variant.text_, variant.fileName_);
  if (!module)
    return invalid(diagnostics.text());
  if (Status status = checkSpecShape(*module, s); !status.ok())
    return status;
  return variant;
}

StatusOr<Variant> Variant::fromMlir(std::string text, std::string fileName) {
  if (Status status = checkVariantText(text, fileName, ErrorCode::ParseError);
      !status.ok())
    return status;
  Variant variant;
  variant.text_ = std::move(text);
  variant.fileName_ = std::move(fileName);
  return variant;
}

} // namespace attnc
