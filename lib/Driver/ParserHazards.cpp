//===- ParserHazards.cpp - input that crashes MLIR's parser ---------------===//
//
// One pass over the text that splits it into the tokens of MLIR's lexical
// grammar (docs/LangRef: identifiers, literals, punctuation, comments) and
// looks for the constructs listed in ParserHazards.h among the tokens, so
// that spacing, comments and line breaks cannot hide them. MLIR's own lexer
// is not installed with its headers, so this is a small one of our own. It
// never recurses, so it is safe on any input.
//
//===----------------------------------------------------------------------===//

#include "attnc/Driver/ParserHazards.h"

#include <cctype>
#include <vector>

namespace attnc {

namespace {

enum class TokenKind {
  End,
  BareIdentifier, // `func`, `array`, `affine_map`, `index`
  ValueName,      // `%name`, `%0`
  ResultNumber,   // `#` followed by digits only: `%v#N` (or `%v #N`)
  Prefixed,       // `#alias`, `!type`, `^block`, `@symbol`
  Number,
  String,
  Open,  // ( [ { <
  Close, // ) ] } >
  Other, // punctuation that does not nest
};

struct Token {
  TokenKind kind = TokenKind::End;
  size_t offset = 0;
  std::string_view text;
};

bool isLetter(char c) { return std::isalpha(static_cast<unsigned char>(c)); }
bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)); }

/// Characters after the first of a suffix-id (`%`, `^`, `#`, `!`, `@` names).
bool isSuffixChar(char c) {
  return isLetter(c) || isDigit(c) || c == '$' || c == '.' || c == '_' ||
         c == '-';
}

/// Characters after the first of a bare identifier.
bool isBareChar(char c) {
  return isLetter(c) || isDigit(c) || c == '$' || c == '.' || c == '_';
}

class Lexer {
public:
  explicit Lexer(std::string_view source) : s_(source) {}

  Token next() {
    Token token = lexToken();
    bool opensBody =
        bodyNext_ && token.kind == TokenKind::Open && token.text == "<";
    bodyNext_ = false;
    if (opensBody || (bodyDepth_ > 0 && token.kind == TokenKind::Open))
      ++bodyDepth_;
    else if (bodyDepth_ > 0 && token.kind == TokenKind::Close)
      --bodyDepth_;
    // A dialect body starts at a `<` right after a `!` or `#` name.
    if (token.kind == TokenKind::Prefixed &&
        (token.text.front() == '!' || token.text.front() == '#') &&
        i_ < s_.size() && s_[i_] == '<')
      bodyNext_ = true;
    return token;
  }

private:
  Token lexToken() {
    skipSpaceAndComments();
    if (i_ >= s_.size())
      return {TokenKind::End, s_.size(), {}};
    size_t start = i_;
    char c = s_[i_++];
    switch (c) {
    case '"':
      skipStringBody();
      return make(TokenKind::String, start);
    case '%':
      skipSuffix();
      return make(TokenKind::ValueName, start);
    case '#':
      if (i_ < s_.size() && s_[i_] == '-' && i_ + 1 < s_.size() &&
          s_[i_ + 1] == '}') { // `#-}` closes file metadata
        i_ += 2;
        return make(TokenKind::Close, start);
      }
      // MLIR lexes `#` and a digit as digits only (`#4000000000abc` is
      // `#4000000000` and `abc`).
      if (i_ < s_.size() && isDigit(s_[i_])) {
        while (i_ < s_.size() && isDigit(s_[i_]))
          ++i_;
        return make(TokenKind::ResultNumber, start);
      }
      [[fallthrough]];
    case '!':
    case '^':
    case '@':
      if (c == '@' && i_ < s_.size() && s_[i_] == '"') { // @"symbol"
        ++i_;
        skipStringBody();
      } else {
        skipSuffix();
      }
      return make(TokenKind::Prefixed, start);
    case '{':
      if (s_.substr(i_, 2) == "-#") // `{-#` opens file metadata
        i_ += 2;
      return make(TokenKind::Open, start);
    case '(':
    case '[':
    case '<':
      return make(TokenKind::Open, start);
    case ')':
    case ']':
    case '}':
    case '>':
      return make(TokenKind::Close, start);
    case '-':
      if (i_ < s_.size() && s_[i_] == '>') { // `->` is an arrow, not a `>`
        ++i_;
        return make(TokenKind::Other, start);
      }
      return make(TokenKind::Other, start);
    default:
      break;
    }
    if (isLetter(c) || c == '_') {
      while (i_ < s_.size() && isBareChar(s_[i_]))
        ++i_;
      return make(TokenKind::BareIdentifier, start);
    }
    if (isDigit(c)) {
      while (i_ < s_.size() && (isLetter(s_[i_]) || isDigit(s_[i_]) ||
                                s_[i_] == '.' || s_[i_] == '_'))
        ++i_;
      return make(TokenKind::Number, start);
    }
    return make(TokenKind::Other, start);
  }

private:
  Token make(TokenKind kind, size_t start) {
    return {kind, start, s_.substr(start, i_ - start)};
  }

  /// Spaces, NULs (MLIR's lexer skips them) and comments, which end at a
  /// line feed or a carriage return as MLIR's do. Inside a dialect body
  /// (`!dialect.type<...>`, `#dialect.attr<...>`) MLIR finds the body's end
  /// by counting brackets, comments unseen, so there `//` is no comment:
  /// what follows it counts.
  void skipSpaceAndComments() {
    while (i_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[i_])) || s_[i_] == '\0') {
        ++i_;
      } else if (bodyDepth_ == 0 && s_.substr(i_, 2) == "//") {
        while (i_ < s_.size() && s_[i_] != '\n' && s_[i_] != '\r')
          ++i_;
      } else {
        return;
      }
    }
  }

  /// After the opening quote: up to and past the closing one. A line break
  /// ends a string as MLIR's lexer does (with an error the parser reports).
  void skipStringBody() {
    for (; i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\n'; ++i_)
      if (s_[i_] == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] != '\n')
        ++i_;
    if (i_ < s_.size() && s_[i_] == '"')
      ++i_;
  }

  void skipSuffix() {
    while (i_ < s_.size() && isSuffixChar(s_[i_]))
      ++i_;
  }

  std::string_view s_;
  size_t i_ = 0;
  /// Brackets open inside the dialect body the lexer is in, if any; a `>`
  /// of `->` never closes one, so the body may end later than MLIR's does
  /// (counting more), never earlier.
  int bodyDepth_ = 0;
  bool bodyNext_ = false;
};

/// `(`, `[`, `{` and `<` nest; each closer pops back to its own opener, so
/// that a `>` that is a comparison (`>=` in an integer set) or a stray
/// closer cannot lower the depth below what the parser really sees.
class NestingTracker {
public:
  /// The depth after `token`.
  size_t push(const Token &token) {
    char opener = token.text.front();
    stack_.push_back(opener);
    return stack_.size();
  }

  void pop(const Token &token) {
    char closer = token.text.front();
    char opener = closer == ')'   ? '('
                  : closer == ']' ? '['
                  : closer == '}' ? '{'
                  : closer == '#' ? '{' // `#-}`
                                  : '<';
    for (size_t k = stack_.size(); k-- > 0;) {
      if (stack_[k] == opener) {
        stack_.resize(k);
        return;
      }
      // A `>` never closes past a bracket of another kind: it is then a
      // comparison, not a closer.
      if (closer == '>')
        return;
    }
  }

private:
  std::vector<char> stack_;
};

std::optional<ParserHazard> checkResultNumber(const Token &number) {
  std::string_view digits = number.text.substr(1);
  // Compared as text first: the number may not fit any integer.
  if (digits.size() <= 18 &&
      std::stoll(std::string(digits)) <= kMaxResultNumber)
    return std::nullopt;
  return ParserHazard{
      number.offset, "result number #" + std::string(digits) +
                         " is larger than " + std::to_string(kMaxResultNumber) +
                         ", more results than any operation attnc reads"};
}

} // namespace

std::optional<ParserHazard> findParserHazard(std::string_view source) {
  Lexer lexer(source);
  NestingTracker nesting;
  Token previous, beforePrevious;
  for (Token token = lexer.next(); token.kind != TokenKind::End;
       beforePrevious = previous, previous = token, token = lexer.next()) {
    switch (token.kind) {
    case TokenKind::Open:
      if (nesting.push(token) > size_t(kMaxParserNesting))
        return ParserHazard{token.offset,
                            "brackets nest deeper than " +
                                std::to_string(kMaxParserNesting) + " levels"};
      break;
    case TokenKind::Close:
      nesting.pop(token);
      break;
    case TokenKind::ResultNumber:
      // `%v#N` or `%v #N`: the parser allocates N results for it.
      if (previous.kind == TokenKind::ValueName)
        if (std::optional<ParserHazard> hazard = checkResultNumber(token))
          return hazard;
      break;
    case TokenKind::BareIdentifier:
      // `array<index: ...>`
      if (token.text == "index" && previous.text == "<" &&
          beforePrevious.text == "array")
        return ParserHazard{
            beforePrevious.offset,
            "dense arrays of 'index' are not supported (their element "
            "width is unknown to MLIR's parser): use i32 or i64"};
      // Affine expressions recurse once per operator, brackets or not, in
      // the parser and in every pass that walks them; attnc reads none.
      if (token.text == "affine_map" || token.text == "affine_set")
        return ParserHazard{token.offset,
                            "'" + std::string(token.text) +
                                "' is not part of attnc's input: variants "
                                "have no affine maps or integer sets"};
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

} // namespace attnc
