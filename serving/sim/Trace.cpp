//===- Trace.cpp - replaying request logs ---------------------------------===//
//
// A JSON-lines reader for exactly what a trace holds: one object per line
// with numbers, strings, arrays and nested values (skipped unless known).
// It accepts strict JSON (RFC 8259) only, checks every known field against
// its range before converting it, and skips nested values with an explicit
// depth counter, so no line can overflow the stack, hang the simulator or
// reach an undefined conversion. Errors name the line, the byte column and
// the field.
//
//===----------------------------------------------------------------------===//

#include "sim/Workloads.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

namespace attnc {

namespace {

bool isJsonSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/// Characters that end a bare word (a number or a literal) in JSON.
bool endsWord(char c) {
  return isJsonSpace(c) || c == ',' || c == ':' || c == '[' || c == ']' ||
         c == '{' || c == '}' || c == '"';
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

/// Whether `word` is a number in JSON's grammar: strtod alone would also
/// take "nan", "inf", hex, a leading '+' or "1." and stop early in "1e".
bool isJsonNumber(const std::string &word) {
  size_t i = 0, n = word.size();
  if (i < n && word[i] == '-')
    ++i;
  if (i == n || !isDigit(word[i]))
    return false;
  if (word[i] == '0')
    ++i;
  else
    while (i < n && isDigit(word[i]))
      ++i;
  if (i < n && word[i] == '.') {
    if (++i == n || !isDigit(word[i]))
      return false;
    while (i < n && isDigit(word[i]))
      ++i;
  }
  if (i < n && (word[i] == 'e' || word[i] == 'E')) {
    if (++i < n && (word[i] == '+' || word[i] == '-'))
      ++i;
    if (i == n || !isDigit(word[i]))
      return false;
    while (i < n && isDigit(word[i]))
      ++i;
  }
  return i == n;
}

struct Number {
  double value = 0;
  /// Too large for a double: a range error for every field.
  bool overflow = false;
  /// Nonzero but rounded to zero or a subnormal: never an integer.
  bool underflow = false;
};

/// How a field's value is allowed to look, for its error message.
struct Field {
  std::string name;
  std::string expected;
};

std::string formatDouble(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string arrivalRange() {
  return "a number of seconds in [0, " + formatDouble(kMaxTraceArrival) + "]";
}
std::string outputRange() {
  return "an integer in [1, " + std::to_string(kMaxTraceOutputLen) + "]";
}
std::string tokenRange() {
  return "integers in [0, " + std::to_string(kMaxTraceTokenId) + "]";
}
std::string namespaceRange() {
  return "an integer in [0, " + std::to_string(kMaxTraceId) + "]";
}
std::string idRange() {
  return "a string or an integer in [0, " + std::to_string(kMaxTraceId) + "]";
}

class LineParser {
public:
  /// Parsing starts at byte `start` (after a byte order mark).
  LineParser(const std::string &text, int64_t line, size_t start,
             int64_t defaultMaxTokens)
      : text_(text), line_(line), pos_(start),
        defaultMaxTokens_(defaultMaxTokens) {}

  /// `idKey` is set to a key naming the request's "id" (number and string
  /// ids apart) and `idColumn` to its column when the line has one.
  Status parseRequest(TracedRequest &request, std::string &idKey,
                      size_t &idColumn) {
    bool hasPrompt = false, hasOutput = false, hasMaxTokens = false;
    size_t maxTokensAt = 0;
    skipSpace();
    size_t start = pos_;
    if (!consume('{'))
      return error("expected '{' to start a request");
    skipSpace();
    if (consume('}'))
      return errorAt(start,
                     "empty request: needs \"prompt\" and \"output_len\"");
    std::set<std::string> keys;
    while (true) {
      skipSpace();
      size_t keyAt = pos_;
      std::string key;
      if (atEnd() || peek() != '"')
        return error("expected a key string");
      if (Status status = parseString(key); !status.ok())
        return status;
      // Later duplicates would silently override earlier values in most
      // JSON readers, and differently in each: refuse them.
      if (!keys.insert(key).second)
        return errorAt(keyAt, "duplicate key \"" + key + "\"");
      skipSpace();
      if (!consume(':'))
        return error("expected ':' after \"" + key + "\"");
      skipSpace();
      Status status;
      if (key == "id") {
        idColumn = pos_ + 1;
        status = parseId(idKey);
      } else if (key == "arrival") {
        status = parseArrival(request.arrival);
      } else if (key == "prompt") {
        hasPrompt = true;
        status = parseTokens(request.prompt);
      } else if (key == "output_len") {
        hasOutput = true;
        status = parseOutputLen(request.outputLen);
      } else if (key == "max_tokens") {
        hasMaxTokens = true;
        maxTokensAt = pos_;
        status = parseInteger({"max_tokens", outputRange()}, 1,
                              double(kMaxTraceOutputLen), request.maxTokens);
      } else if (key == "n") {
        int64_t n = 1;
        status =
            parseInteger({"n", "an integer in [1, " +
                                   std::to_string(kMaxParallelSamples) + "]"},
                         1, kMaxParallelSamples, n);
        request.n = int32_t(n);
      } else if (key == "priority") {
        int64_t priority = 0;
        status = parseInteger({"priority", "an integer in [-1000000, 1000000]"},
                              -1e6, 1e6, priority);
        request.priority = int32_t(priority);
      } else if (key == "namespace") {
        int64_t space = 0;
        status = parseInteger({"namespace", namespaceRange()}, 0,
                              double(kMaxTraceId), space);
        request.cacheNamespace = CacheNamespace(space);
      } else {
        status = skipValue();
      }
      if (!status.ok())
        return status;
      skipSpace();
      if (consume('}'))
        break;
      if (!consume(','))
        return error("expected ',' or '}'");
    }
    skipSpace();
    if (!atEnd())
      return error("unexpected text after the request");
    if (!hasPrompt || !hasOutput)
      return error(std::string("missing \"") +
                   (hasPrompt ? "output_len" : "prompt") + "\"");
    // A request that gives no limit gets the server's default, never the
    // answer's length (which no scheduler knows); the answer a trace
    // records was generated within its limit, so the default is raised to
    // it when shorter.
    if (!hasMaxTokens)
      request.maxTokens = std::max(defaultMaxTokens_, request.outputLen);
    else if (request.maxTokens < request.outputLen)
      return errorAt(maxTokensAt, "\"max_tokens\" " +
                                      std::to_string(request.maxTokens) +
                                      " is less than \"output_len\" " +
                                      std::to_string(request.outputLen));
    // "arrival" defaults to 0: all queued at the start.
    return Status();
  }

private:
  Status errorAt(size_t pos, const std::string &message) const {
    return Status::error(ErrorCode::ParseError,
                         "line " + std::to_string(line_) + ", column " +
                             std::to_string(pos + 1) + ": " + message);
  }
  Status error(const std::string &message) const {
    return errorAt(pos_, message);
  }
  Status fieldError(const Field &field, size_t at,
                    const std::string &got) const {
    return errorAt(at, "\"" + field.name + "\" must be " + field.expected +
                           ", got " + got);
  }

  bool atEnd() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  bool consume(char c) {
    if (atEnd() || peek() != c)
      return false;
    ++pos_;
    return true;
  }
  void skipSpace() {
    while (!atEnd() && isJsonSpace(peek()))
      ++pos_;
  }

  /// The value at pos_ as an error message shows it: what kind of
  /// compound value it is, or the bare word, shortened.
  std::string describeValue() const {
    if (atEnd())
      return "the end of the line";
    switch (peek()) {
    case '"':
      return "a string";
    case '[':
      return "an array";
    case '{':
      return "an object";
    }
    std::string text = word();
    if (text.empty())
      return "'" + std::string(1, peek()) + "'";
    constexpr size_t kShown = 32;
    if (text.size() > kShown)
      return text.substr(0, kShown) + "...";
    return text;
  }

  /// A bare word (number or literal) at pos_, up to the next delimiter.
  std::string word() const {
    size_t end = pos_;
    while (end < text_.size() && !endsWord(text_[end]))
      ++end;
    return text_.substr(pos_, end - pos_);
  }

  /// Reads a JSON number at pos_; leaves pos_ alone and returns false if
  /// the word there is not one.
  bool parseNumber(Number &out) {
    std::string text = word();
    if (!isJsonNumber(text))
      return false;
    errno = 0;
    out.value = std::strtod(text.c_str(), nullptr);
    out.overflow = errno == ERANGE && std::isinf(out.value);
    out.underflow = errno == ERANGE && !out.overflow;
    // -0 is 0 for every field; keep it from printing as "-0".
    out.value += 0.0;
    pos_ += text.size();
    return true;
  }

  /// An integer field in [lo, hi], checked as a double so that nothing out
  /// of range is ever converted.
  Status parseInteger(const Field &field, double lo, double hi, int64_t &out) {
    size_t at = pos_;
    std::string got = describeValue();
    Number number;
    if (!parseNumber(number) || number.overflow || number.underflow ||
        !(number.value >= lo && number.value <= hi) ||
        number.value != std::floor(number.value))
      return fieldError(field, at, got);
    out = static_cast<int64_t>(number.value);
    return Status();
  }

  Status parseArrival(double &out) {
    Field field{"arrival", arrivalRange()};
    size_t at = pos_;
    std::string got = describeValue();
    Number number;
    if (!parseNumber(number) || number.overflow ||
        !(number.value >= 0 && number.value <= kMaxTraceArrival))
      return fieldError(field, at, got);
    out = number.value;
    return Status();
  }

  Status parseOutputLen(int64_t &out) {
    return parseInteger({"output_len", outputRange()}, 1,
                        double(kMaxTraceOutputLen), out);
  }

  /// Ids are renumbered in arrival order, so only their uniqueness is
  /// checked; `key` keeps 7 and "7" apart.
  Status parseId(std::string &key) {
    Field field{"id", idRange()};
    if (!atEnd() && peek() == '"') {
      std::string id;
      if (Status status = parseString(id); !status.ok())
        return status;
      key = "s" + id;
      return Status();
    }
    int64_t id;
    if (Status status = parseInteger(field, 0, double(kMaxTraceId), id);
        !status.ok())
      return status;
    key = "n" + std::to_string(id);
    return Status();
  }

  Status parseTokens(std::vector<Token> &out) {
    Field field{"prompt", "an array of token ids"};
    size_t start = pos_;
    if (!consume('['))
      return fieldError(field, start, describeValue());
    auto countError = [&](const std::string &got) {
      return errorAt(start, "\"prompt\" must hold between 1 and " +
                                std::to_string(kMaxTracePromptTokens) +
                                " token ids, got " + got);
    };
    skipSpace();
    if (consume(']'))
      return countError("0");
    Field element{"prompt", "an array of token ids, " + tokenRange()};
    while (true) {
      skipSpace();
      if (static_cast<int64_t>(out.size()) == kMaxTracePromptTokens)
        return countError("more");
      int64_t token;
      if (Status status =
              parseInteger(element, 0, double(kMaxTraceTokenId), token);
          !status.ok())
        return status;
      out.push_back(static_cast<Token>(token));
      skipSpace();
      if (consume(']'))
        return Status();
      if (!consume(','))
        return error("expected ',' or ']' in \"prompt\"");
    }
  }

  static int hexValue(char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  }

  /// Four hex digits after "\u" at pos_; -1 if they are not there.
  int32_t readHex4() {
    if (text_.size() - pos_ < 4)
      return -1;
    int32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      int digit = hexValue(text_[pos_ + i]);
      if (digit < 0)
        return -1;
      value = value * 16 + digit;
    }
    pos_ += 4;
    return value;
  }

  static void appendUtf8(uint32_t code, std::string &out) {
    if (code < 0x80) {
      out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (code >> 6)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (code >> 12)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (code >> 18)));
      out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  /// A string at pos_ (which must be '"'), escapes decoded so that keys
  /// and ids compare by what they spell.
  Status parseString(std::string &out) {
    size_t start = pos_;
    if (!consume('"'))
      return error("expected a string");
    while (true) {
      if (atEnd())
        return errorAt(start, "unterminated string");
      char c = peek();
      if (c == '"') {
        ++pos_;
        return Status();
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02x", static_cast<unsigned>(c));
        return error(std::string("control character ") + hex +
                     " in a string: escape it");
      }
      if (c != '\\') {
        out.push_back(c);
        ++pos_;
        continue;
      }
      size_t escape = pos_++;
      if (atEnd())
        return errorAt(start, "unterminated string");
      char kind = text_[pos_++];
      switch (kind) {
      case '"':
      case '\\':
      case '/':
        out.push_back(kind);
        continue;
      case 'b':
        out.push_back('\b');
        continue;
      case 'f':
        out.push_back('\f');
        continue;
      case 'n':
        out.push_back('\n');
        continue;
      case 'r':
        out.push_back('\r');
        continue;
      case 't':
        out.push_back('\t');
        continue;
      case 'u':
        break;
      default:
        return errorAt(escape, std::string("invalid escape '\\") + kind + "'");
      }
      int32_t code = readHex4();
      if (code < 0)
        return errorAt(escape, "\\u needs four hex digits");
      if (code >= 0xDC00 && code <= 0xDFFF)
        return errorAt(escape, "unpaired UTF-16 surrogate in \\u escape");
      if (code >= 0xD800 && code <= 0xDBFF) {
        int32_t low = -1;
        if (text_.compare(pos_, 2, "\\u") == 0) {
          pos_ += 2;
          low = readHex4();
        }
        if (low < 0xDC00 || low > 0xDFFF)
          return errorAt(escape, "unpaired UTF-16 surrogate in \\u escape");
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
      }
      appendUtf8(static_cast<uint32_t>(code), out);
    }
  }

  /// Skips any JSON value. Iterative: `closers` is the stack of the
  /// arrays and objects open, so depth costs heap, not stack, and is
  /// capped at kMaxTraceNesting all the same.
  Status skipValue() {
    std::string closers;
    // Before a value: after '[', ',' in an array, or ':' in an object.
    while (true) {
      skipSpace();
      if (atEnd())
        return error("expected a value");
      char c = peek();
      if (c == '[' || c == '{') {
        // The request object is the first level.
        if (closers.size() + 2 > static_cast<size_t>(kMaxTraceNesting))
          return error("values nest deeper than " +
                       std::to_string(kMaxTraceNesting) + " levels");
        ++pos_;
        closers.push_back(c == '[' ? ']' : '}');
        skipSpace();
        if (consume(closers.back())) {
          closers.pop_back();
        } else if (closers.back() == '}') {
          if (Status status = skipKey(); !status.ok())
            return status;
          continue;
        } else {
          continue;
        }
      } else if (c == '"') {
        std::string ignored;
        if (Status status = parseString(ignored); !status.ok())
          return status;
      } else {
        // Skipped numbers need not fit a double: they are never converted.
        std::string text = word();
        if (text != "true" && text != "false" && text != "null" &&
            !isJsonNumber(text))
          return error("invalid value " + describeValue());
        pos_ += text.size();
      }
      // After a value: close what is complete, or go on to the next one.
      while (true) {
        if (closers.empty())
          return Status();
        skipSpace();
        if (consume(closers.back())) {
          closers.pop_back();
          continue;
        }
        if (!consume(','))
          return error(std::string("expected ',' or '") + closers.back() + "'");
        if (closers.back() == '}')
          if (Status status = skipKey(); !status.ok())
            return status;
        break;
      }
    }
  }

  /// A key and its ':' inside a skipped object.
  Status skipKey() {
    skipSpace();
    if (atEnd() || peek() != '"')
      return error("expected a key string");
    std::string ignored;
    if (Status status = parseString(ignored); !status.ok())
      return status;
    skipSpace();
    if (!consume(':'))
      return error("expected ':'");
    return Status();
  }

  const std::string &text_;
  int64_t line_;
  size_t pos_;
  int64_t defaultMaxTokens_;
};

} // namespace

StatusOr<Workload> parseTrace(const std::string &text, const std::string &name,
                              int64_t defaultMaxTokens) {
  if (defaultMaxTokens < 1 || defaultMaxTokens > kMaxTraceOutputLen)
    return Status::error(ErrorCode::InvalidArgument,
                         "the default max_tokens must be in [1, " +
                             std::to_string(kMaxTraceOutputLen) + "], got " +
                             std::to_string(defaultMaxTokens));
  Workload workload;
  workload.name = name;
  std::istringstream lines(text);
  std::string line;
  int64_t number = 0;
  std::vector<std::pair<double, TracedRequest>> requests;
  std::unordered_map<std::string, int64_t> idLines;
  while (std::getline(lines, line)) {
    ++number;
    // A byte order mark may start the file (RFC 8259 section 8.1), nowhere
    // else; columns still count it.
    size_t start =
        number == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
    if (std::all_of(line.begin() + start, line.end(), isJsonSpace))
      continue;
    TracedRequest request;
    std::string idKey;
    size_t idColumn = 0;
    if (Status status = LineParser(line, number, start, defaultMaxTokens)
                            .parseRequest(request, idKey, idColumn);
        !status.ok())
      return status;
    if (!idKey.empty()) {
      auto [it, inserted] = idLines.emplace(idKey, number);
      if (!inserted)
        return Status::error(ErrorCode::ParseError,
                             "line " + std::to_string(number) + ", column " +
                                 std::to_string(idColumn) +
                                 ": \"id\" repeats line " +
                                 std::to_string(it->second) + "'s");
    }
    requests.push_back({request.arrival, std::move(request)});
  }
  if (requests.empty())
    return Status::error(ErrorCode::ParseError, "the trace holds no request");
  // Replay in arrival order; ids are renumbered densely in that order.
  std::stable_sort(
      requests.begin(), requests.end(),
      [](const auto &a, const auto &b) { return a.first < b.first; });
  for (auto &[arrival, request] : requests) {
    request.id = static_cast<RequestId>(workload.requests.size());
    workload.requests.push_back(std::move(request));
  }
  return workload;
}

StatusOr<Workload> readTrace(const std::string &path,
                             int64_t defaultMaxTokens) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return Status::error(ErrorCode::NotFound,
                         "cannot open trace '" + path + "'");
  std::stringstream text;
  text << file.rdbuf();
  return parseTrace(text.str(), path, defaultMaxTokens);
}

} // namespace attnc
