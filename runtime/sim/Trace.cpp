//===- Trace.cpp - replaying request logs ---------------------------------===//
//
// A JSON-lines reader for exactly what a trace holds: one object per line
// with numbers, strings, arrays and nested values (skipped unless known).
// Errors name the line and column.
//
//===----------------------------------------------------------------------===//

#include "sim/Workloads.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace attnc {

namespace {

class LineParser {
public:
  LineParser(const std::string &text, int64_t line)
      : text_(text), line_(line) {}

  Status parseRequest(Request &request, bool &hasId) {
    bool hasArrival = false, hasPrompt = false, hasOutput = false;
    skipSpace();
    if (!consume('{'))
      return error("expected '{' to start a request");
    skipSpace();
    if (consume('}'))
      return error("empty request: needs \"prompt\" and \"output_len\"");
    while (true) {
      skipSpace();
      std::string key;
      if (Status status = parseString(key); !status.ok())
        return status;
      skipSpace();
      if (!consume(':'))
        return error("expected ':' after \"" + key + "\"");
      skipSpace();
      Status status;
      if (key == "id") {
        hasId = true;
        if (peek() == '"') {
          std::string ignored;
          status = parseString(ignored);
        } else {
          double id;
          status = parseNumber(id);
          request.id = static_cast<RequestId>(id);
        }
      } else if (key == "arrival") {
        hasArrival = true;
        status = parseNumber(request.arrival);
        if (status.ok() && request.arrival < 0)
          return error("\"arrival\" must be non-negative");
      } else if (key == "prompt") {
        hasPrompt = true;
        status = parseTokens(request.prompt);
      } else if (key == "output_len") {
        hasOutput = true;
        double value;
        status = parseNumber(value);
        request.outputLen = static_cast<int64_t>(value);
        if (status.ok() && (value < 1 || value != std::floor(value)))
          return error("\"output_len\" must be a positive integer");
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
    if (pos_ != text_.size())
      return error("unexpected text after the request");
    if (!hasPrompt || !hasOutput)
      return error(std::string("missing \"") +
                   (hasPrompt ? "output_len" : "prompt") + "\"");
    if (request.prompt.empty())
      return error("\"prompt\" is empty");
    (void)hasArrival; // defaults to 0: all queued at the start
    return Status();
  }

private:
  Status error(const std::string &message) const {
    return Status::error(ErrorCode::ParseError,
                         "line " + std::to_string(line_) + ", column " +
                             std::to_string(pos_ + 1) + ": " + message);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    if (peek() != c)
      return false;
    ++pos_;
    return true;
  }
  void skipSpace() {
    while (pos_ < text_.size() &&
           std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  Status parseString(std::string &out) {
    if (!consume('"'))
      return error("expected a string");
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\')
        ++pos_;
      if (pos_ < text_.size())
        out.push_back(text_[pos_++]);
    }
    if (!consume('"'))
      return error("unterminated string");
    return Status();
  }
  Status parseNumber(double &out) {
    const char *begin = text_.c_str() + pos_;
    char *end = nullptr;
    out = std::strtod(begin, &end);
    if (end == begin)
      return error("expected a number");
    pos_ += static_cast<size_t>(end - begin);
    return Status();
  }
  Status parseTokens(std::vector<Token> &out) {
    if (!consume('['))
      return error("\"prompt\" must be an array of token ids");
    skipSpace();
    if (consume(']'))
      return Status();
    while (true) {
      skipSpace();
      double value;
      if (Status status = parseNumber(value); !status.ok())
        return status;
      if (value < 0 || value > 2147483647.0 || value != std::floor(value))
        return error("token ids are integers in [0, 2^31)");
      out.push_back(static_cast<Token>(value));
      skipSpace();
      if (consume(']'))
        return Status();
      if (!consume(','))
        return error("expected ',' or ']' in \"prompt\"");
    }
  }
  Status skipValue() {
    char c = peek();
    if (c == '"') {
      std::string ignored;
      return parseString(ignored);
    }
    if (c == '[' || c == '{') {
      char close = c == '[' ? ']' : '}';
      ++pos_;
      skipSpace();
      if (consume(close))
        return Status();
      while (true) {
        skipSpace();
        if (close == '}') {
          std::string key;
          if (Status status = parseString(key); !status.ok())
            return status;
          skipSpace();
          if (!consume(':'))
            return error("expected ':'");
          skipSpace();
        }
        if (Status status = skipValue(); !status.ok())
          return status;
        skipSpace();
        if (consume(close))
          return Status();
        if (!consume(','))
          return error("expected ','");
      }
    }
    for (const char *word : {"true", "false", "null"})
      if (text_.compare(pos_, std::strlen(word), word) == 0) {
        pos_ += std::strlen(word);
        return Status();
      }
    double ignored;
    return parseNumber(ignored);
  }

  const std::string &text_;
  int64_t line_;
  size_t pos_ = 0;
};

} // namespace

StatusOr<Workload> parseTrace(const std::string &text,
                              const std::string &name) {
  Workload workload;
  workload.name = name;
  std::istringstream lines(text);
  std::string line;
  int64_t number = 0;
  std::vector<std::pair<double, Request>> requests;
  while (std::getline(lines, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    Request request;
    bool hasId = false;
    if (Status status = LineParser(line, number).parseRequest(request, hasId);
        !status.ok())
      return status;
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

StatusOr<Workload> readTrace(const std::string &path) {
  std::ifstream file(path);
  if (!file)
    return Status::error(ErrorCode::NotFound,
                         "cannot open trace '" + path + "'");
  std::stringstream text;
  text << file.rdbuf();
  return parseTrace(text.str(), path);
}

} // namespace attnc
