//===- ParserHazards.h - input that crashes MLIR's parser -------*- C++ -*-===//
//
// MLIR 22's parser crashes the process on a few inputs instead of reporting
// an error (docs/UPSTREAM.md lists them with reproducers). attnc is a library
// inside other people's processes, so it reads the text's tokens first and
// refuses those inputs with a diagnostic at their location; what it lets
// through is parsed on a stack sized for it (ParserStack.h).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DRIVER_PARSERHAZARDS_H
#define ATTNC_DRIVER_PARSERHAZARDS_H

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace attnc {

struct ParserHazard {
  size_t offset; // into the source
  std::string message;
};

/// Deepest bracket nesting attnc lets the parser see: the parser recurses
/// once per level and overflows the stack at a few thousand.
constexpr int kMaxParserNesting = 256;
/// Largest result number in a use `%v#N`: the parser allocates N results
/// for a forward reference before it can report an error.
constexpr long long kMaxResultNumber = 4096;

/// The first construct of `source` that would crash the parser, if any.
std::optional<ParserHazard> findParserHazard(std::string_view source);

} // namespace attnc

#endif // ATTNC_DRIVER_PARSERHAZARDS_H
