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

const char *elementName(ElementType type) {
  return type == ElementType::BF16 ? "bf16" : "f16";
}

std::string seq(int64_t len) { return len > 0 ? std::to_string(len) : "?"; }

std::string layoutSuffix(TokenLayout layout) {
  return layout == TokenLayout::Ragged ? ", ragged" : "";
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

StatusOr<Variant> Variant::fromSpec(const VariantSpec &s) {
  if (Status status = checkSpec(s); !status.ok())
    return status;
  std::string dims = "x" + std::to_string(s.queryHeads) + "x" +
                     std::to_string(s.headDim) + "x" + elementName(s.dtype);
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
  std::string kvLayout = layoutSuffix(s.kvLayout);
  if (s.kvLayout == TokenLayout::Paged)
    kvLayout = ", paged<" + std::to_string(s.pageSize) + ", " +
               (s.hnd ? "hnd" : "nhd") + ">";
  std::string kvType = "!attn.kv<?x" + std::to_string(s.kvHeads) + "x" +
                       std::to_string(s.headDim) + "x" + elementName(s.dtype) +
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
  return fromMlir(os.str(), "<" + s.name + ">");
}

StatusOr<Variant> Variant::fromMlir(std::string text, std::string fileName) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  registerAttncDialects(context);
  DiagnosticCollector diagnostics(context);
  // Parsing verifies: a variant that parses is one the compiler accepts as
  // input (what it cannot compile yet is reported by compile).
  mlir::OwningOpRef<mlir::ModuleOp> module = diagnostics.parse(text, fileName);
  if (!module)
    return Status::error(ErrorCode::ParseError, diagnostics.text());
  if (module->getBody()->empty())
    return Status::error(ErrorCode::InvalidArgument,
                         fileName + ": the variant defines no function");
  Variant variant;
  variant.text_ = std::move(text);
  variant.fileName_ = std::move(fileName);
  return variant;
}

} // namespace attnc
