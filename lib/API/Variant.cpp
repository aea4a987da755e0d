//===- Variant.cpp - variants from MLIR text or from a spec ---------------===//
//
// A spec becomes MLIR text of the attn dialect, so that both ways into the
// compiler meet at the same verified function and share one cache key.
//
//===----------------------------------------------------------------------===//

#include "attnc/attnc.h"

#include "attnc/Driver/Pipeline.h"

#include <cctype>
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

Status checkSpec(const VariantSpec &s) {
  if (s.queryHeads <= 0 || s.kvHeads <= 0 || s.headDim <= 0)
    return invalid("query heads, KV heads and head dim must be positive");
  if (s.queryHeads % s.kvHeads != 0)
    return invalid("query heads (" + std::to_string(s.queryHeads) +
                   ") must be a multiple of KV heads (" +
                   std::to_string(s.kvHeads) + ")");
  if (s.queryLayout == TokenLayout::Paged)
    return invalid("queries are dense or ragged, never paged");
  if (s.queriesPerRequest < 0)
    return invalid("queries per request must be 0 (any) or positive");
  if (s.kvLayout == TokenLayout::Paged && (s.pageSize < 1 || s.pageSize > 256))
    return invalid("page size must be in 1..256, got " +
                   std::to_string(s.pageSize));
  if (s.window && (s.window->first < 0 || s.window->second < 0))
    return invalid("window sizes must be non-negative");
  if (s.sinks < 0)
    return invalid("sinks must be non-negative");
  if (!s.captureTypes.empty() && s.scoreMod.empty() && s.maskMod.empty())
    return invalid("captured buffers need a score_mod or mask_mod to read "
                   "them");
  for (char c : s.name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return invalid("variant name '" + s.name +
                     "' must be letters, digits and underscores");
  return Status();
}

std::string joined(const std::vector<std::string> &parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i ? ", " : "") + parts[i];
  return out;
}

} // namespace

namespace {

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
  if (mlir::failed(requireSomethingToCompile(*module)))
    return Status::error(ErrorCode::InvalidArgument, diagnostics.text());
  return Status();
}

} // namespace

StatusOr<Variant> Variant::fromSpec(const VariantSpec &s) {
  if (Status status = checkSpec(s); !status.ok())
    return status;
  std::string dims = "x" + std::to_string(s.queryHeads) + "x" +
                     std::to_string(s.headDim) + "x" + keyword(s.dtype);
  std::string queryLen = s.queryLayout == TokenLayout::Ragged
                             ? std::string("?")
                             : seq(s.queriesPerRequest);
  std::string qType =
      "!attn.q<" + queryLen + dims + layoutSuffix(s.queryLayout) + ">";
  std::string outType =
      "!attn.out<" + queryLen + dims + layoutSuffix(s.queryLayout) + ">";
  std::string lseType = "!attn.lse<" + queryLen + "x" +
                        std::to_string(s.queryHeads) +
                        layoutSuffix(s.queryLayout) + ">";
  std::string kvLayout = layoutSuffix(s.kvLayout, s.pageSize, s.pageOrder);
  std::string kvType = "!attn.kv<?x" + std::to_string(s.kvHeads) + "x" +
                       std::to_string(s.headDim) + "x" + keyword(s.dtype) +
                       kvLayout + ">";

  std::vector<std::string> attrs;
  if (s.causal)
    attrs.push_back("causal");
  if (s.window)
    attrs.push_back("window = #attn.window<" + std::to_string(s.window->first) +
                    ", " + std::to_string(s.window->second) + ">");
  if (s.sinks)
    attrs.push_back("sinks = " + std::to_string(s.sinks));
  auto f32 = [](float x) {
    std::ostringstream os;
    os.precision(9);
    os << std::scientific << x;
    return os.str() + " : f32";
  };
  if (s.scale)
    attrs.push_back("scale = " + f32(*s.scale));
  if (s.softcap)
    attrs.push_back("softcap = " + f32(*s.softcap));
  if (s.alibi)
    attrs.push_back("alibi");

  std::vector<std::string> captureNames;
  for (size_t i = 0; i < s.captureTypes.size(); ++i)
    captureNames.push_back("%capture" + std::to_string(i));
  std::vector<std::string> args = {"%q: " + qType, "%k: " + kvType,
                                   "%v: " + kvType};
  for (size_t i = 0; i < s.captureTypes.size(); ++i)
    args.push_back(captureNames[i] + ": " + s.captureTypes[i]);
  std::string results = s.returnLse ? outType + ", " + lseType : outType;

  std::ostringstream os;
  os << "func.func @" << s.name << "(" << joined(args) << ") -> (" << results
     << ") {\n";
  os << "  " << (s.returnLse ? "%out, %lse" : "%out")
     << " = attn.attention(%q, %k, %v)";
  if (!captureNames.empty())
    os << " captures(" << joined(captureNames) << " : "
       << joined(s.captureTypes) << ")";
  if (!attrs.empty())
    os << " {" << joined(attrs) << "}";
  os << "\n      : " << qType << ", " << kvType << ", " << kvType
     << "\n      -> " << results << "\n";
  if (!s.scoreMod.empty())
    os << "      score_mod {\n" << s.scoreMod << "\n      }\n";
  if (!s.maskMod.empty())
    os << "      mask_mod {\n" << s.maskMod << "\n      }\n";
  os << "  return " << (s.returnLse ? "%out, %lse" : "%out") << " : " << results
     << "\n}\n";
  Variant variant;
  variant.text_ = os.str();
  variant.fileName_ = "<" + s.name + ">";
  if (Status status = checkVariantText(variant.text_, variant.fileName_,
                                       ErrorCode::InvalidArgument);
      !status.ok())
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
