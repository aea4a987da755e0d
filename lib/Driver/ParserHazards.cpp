//===- ParserHazards.cpp - input that crashes MLIR's parser ---------------===//
//
// A single pass over the text that skips string literals and comments, the
// way MLIR's lexer does, and looks for the constructs listed in
// ParserHazards.h. It never recurses, so it is safe on any input.
//
//===----------------------------------------------------------------------===//

#include "ParserHazards.h"

#include <cctype>

namespace attnc {

namespace {

bool isIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         c == '.' || c == '-';
}

size_t skipSpaces(std::string_view s, size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
    ++i;
  return i;
}

bool startsWord(std::string_view s, size_t i, std::string_view word) {
  if (s.substr(i, word.size()) != word)
    return false;
  bool before = i == 0 || !isIdentifierChar(s[i - 1]);
  size_t end = i + word.size();
  bool after = end >= s.size() || !isIdentifierChar(s[end]);
  return before && after;
}

} // namespace

std::optional<ParserHazard> findParserHazard(std::string_view s) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') { // a string literal: skip it, escapes included
      for (++i; i < s.size() && s[i] != '"' && s[i] != '\n'; ++i)
        if (s[i] == '\\')
          ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') { // a comment
      while (i < s.size() && s[i] != '\n')
        ++i;
      continue;
    }
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > kMaxParserNesting)
        return ParserHazard{i, "brackets nest deeper than " +
                                   std::to_string(kMaxParserNesting) +
                                   " levels"};
      continue;
    }
    if (c == ')' || c == ']' || c == '}' ||
        (c == '>' && (i == 0 || s[i - 1] != '-'))) {
      if (depth > 0)
        --depth;
      continue;
    }
    if (c == '%' || c == '^') { // a value or block name, maybe `%v#N`
      size_t j = i + 1;
      while (j < s.size() && isIdentifierChar(s[j]))
        ++j;
      if (j < s.size() && s[j] == '#') {
        size_t end = j + 1;
        while (end < s.size() &&
               std::isdigit(static_cast<unsigned char>(s[end])))
          ++end;
        std::string_view digits = s.substr(j + 1, end - (j + 1));
        // Compared as text first: the number may not fit any integer.
        if (digits.size() > 18 ||
            (!digits.empty() &&
             std::stoll(std::string(digits)) > kMaxResultNumber))
          return ParserHazard{
              j, "result number #" + std::string(digits) + " is larger than " +
                     std::to_string(kMaxResultNumber) +
                     ", more results than any operation attnc reads"};
      }
      i = j - 1;
      continue;
    }
    if (startsWord(s, i, "array")) { // `array<index: ...>`
      size_t j = skipSpaces(s, i + 5);
      if (j < s.size() && s[j] == '<') {
        j = skipSpaces(s, j + 1);
        if (startsWord(s, j, "index"))
          return ParserHazard{
              i, "dense arrays of 'index' are not supported (their element "
                 "width is unknown to MLIR's parser): use i32 or i64"};
      }
      i += 4;
    }
  }
  return std::nullopt;
}

} // namespace attnc
