//===- TraceTest.cpp - replaying request logs -----------------------------===//

#include "sim/Simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace attnc;

namespace {

/// The message of parsing `text`, which must fail with a ParseError.
std::string parseError(const std::string &text) {
  StatusOr<Workload> trace = parseTrace(text, "t");
  if (trace.ok())
    return "parsed";
  EXPECT_EQ(trace.status().code(), ErrorCode::ParseError) << text;
  return trace.status().message();
}

/// A request line with `field` (a key and its value) before the required
/// fields.
std::string line(const std::string &field) {
  return "{" + field + ", \"prompt\": [1], \"output_len\": 1}";
}

} // namespace

TEST(Trace, ParsesRequestsInArrivalOrder) {
  StatusOr<Workload> trace =
      parseTrace("{\"id\": \"b\", \"arrival\": 0.5, \"prompt\": [1, 2, 3], "
                 "\"output_len\": 4}\n"
                 "\n"
                 "{\"arrival\": 0.1, \"prompt\": [7], \"output_len\": 1, "
                 "\"meta\": {\"x\": [1, null]}}\n",
                 "t");
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  ASSERT_EQ(trace->requests.size(), 2u);
  EXPECT_EQ(trace->requests[0].prompt, (std::vector<Token>{7}));
  EXPECT_DOUBLE_EQ(trace->requests[1].arrival, 0.5);
  EXPECT_EQ(trace->requests[1].outputLen, 4);
  EXPECT_EQ(trace->requests[1].id, 1);
}

TEST(Trace, ErrorsNameTheLine) {
  struct Case {
    const char *text;
    const char *message;
  } cases[] = {
      {"{\"prompt\": [1], \"output_len\": 2}\n{\"prompt\": [1]}",
       "line 2, column 16: missing \"output_len\""},
      {"{\"prompt\": [1.5], \"output_len\": 2}",
       "line 1, column 13: \"prompt\" must be an array of token ids, "
       "integers in [0, 2147483647], got 1.5"},
      {"{\"prompt\": [1], \"output_len\": 0}",
       "line 1, column 31: \"output_len\" must be an integer in [1, "
       "1048576], got 0"},
      {"[1, 2]", "line 1, column 1: expected '{' to start a request"},
      {"{\"prompt\": [1], \"output_len\": 2} x",
       "line 1, column 34: unexpected text after the request"},
      {"", "the trace holds no request"},
  };
  for (const Case &c : cases) {
    StatusOr<Workload> trace = parseTrace(c.text, "t");
    ASSERT_FALSE(trace.ok()) << c.text;
    EXPECT_EQ(trace.status().code(), ErrorCode::ParseError);
    EXPECT_EQ(trace.status().message(), c.message);
  }
}

TEST(Trace, MissingFileIsAnError) {
  EXPECT_EQ(readTrace("/nonexistent/trace.jsonl").status().code(),
            ErrorCode::NotFound);
}

TEST(Trace, ReplaysThroughTheSimulator) {
  std::string text;
  for (int i = 0; i < 20; ++i) {
    text += "{\"id\": " + std::to_string(i) +
            ", \"arrival\": " + std::to_string(i * 0.01) + ", \"prompt\": [";
    for (int t = 0; t < 64; ++t)
      text +=
          std::to_string(t < 48 ? t : 1000 + i * 64 + t) + (t < 63 ? "," : "");
    text += "], \"output_len\": 8, \"max_tokens\": 64}\n";
  }
  StatusOr<Workload> trace = parseTrace(text, "shared-48");
  ASSERT_TRUE(trace.ok());
  SimOptions options;
  options.cacheTokens = 4096;
  options.arrival = ArrivalMode::Online;
  StatusOr<SimResult> result = simulate(*trace, options);
  ASSERT_TRUE(result.ok()) << result.status().toString();
  // 48 shared tokens (3 pages) hit for all but the first request.
  EXPECT_NEAR(result->optimalHitRate, 19.0 * 48 / (20 * 64), 1e-9);
  EXPECT_NEAR(result->hitRate, result->optimalHitRate, 1e-9);
}

// Numbers strtod takes but JSON does not (nan, inf) and numbers out of
// range hung the online simulation (a NaN arrival never comes) or were cast
// without a check.
TEST(Trace, RejectsNonFiniteAndOutOfRangeArrivals) {
  const std::string range =
      "\"arrival\" must be a number of seconds in [0, 1e+09], got ";
  for (const char *value :
       {"nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "-1",
        "-0.5", "1000000001", "1e10", "\"5\"", "null", "[1]", "0x10", "+1"}) {
    std::string got = value[0] == '"'   ? "a string"
                      : value[0] == '[' ? "an array"
                                        : value;
    EXPECT_EQ(parseError(line(std::string("\"arrival\": ") + value)),
              "line 1, column 13: " + range + got)
        << value;
  }
  // The last line's error, not the first one's.
  EXPECT_EQ(
      parseError("{\"prompt\": [1], \"output_len\": 1}\n\n"
                 "{\"prompt\": [1], \"output_len\": 1, \"arrival\": nan}"),
      "line 3, column 45: " + range + "nan");
}

TEST(Trace, AcceptsArrivalsAtTheBounds) {
  StatusOr<Workload> trace =
      parseTrace(line("\"arrival\": 1e9") + "\n" + line("\"arrival\": -0") +
                     "\n" + line("\"arrival\": 1e-400"),
                 "t");
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  ASSERT_EQ(trace->requests.size(), 3u);
  EXPECT_EQ(trace->requests[2].arrival, 1e9);
  // -0 is 0, not a negative time that sorts or prints differently.
  for (int i : {0, 1}) {
    EXPECT_EQ(trace->requests[i].arrival, 0);
    EXPECT_FALSE(std::signbit(trace->requests[i].arrival));
  }
}

// 1e300 was cast to int64_t before the range check (undefined), and the
// error then named the pool.
TEST(Trace, ChecksOutputLenBeforeConverting) {
  const std::string range =
      "\"output_len\" must be an integer in [1, 1048576], got ";
  for (const char *value : {"1e300", "1e400", "-1", "0", "-0", "1.5", "1e-400",
                            "1048577", "9223372036854775808", "\"8\"", "true",
                            "1e", "-", "01", "1.", ".5", "--1"}) {
    EXPECT_EQ(parseError("{\"prompt\": [1], \"output_len\": " +
                         std::string(value) + "}"),
              "line 1, column 31: " + range +
                  (value[0] == '"' ? std::string("a string") : value))
        << value;
  }
  StatusOr<Workload> trace =
      parseTrace("{\"prompt\": [1], \"output_len\": 1048576}\n"
                 "{\"prompt\": [1], \"output_len\": 2.0}\n"
                 "{\"prompt\": [1], \"output_len\": 3e0}",
                 "t");
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  EXPECT_EQ(trace->requests[0].outputLen, 1048576);
  EXPECT_EQ(trace->requests[1].outputLen, 2);
  EXPECT_EQ(trace->requests[2].outputLen, 3);
}

TEST(Trace, ChecksTokenIds) {
  const std::string range = "\"prompt\" must be an array of token ids, "
                            "integers in [0, 2147483647], got ";
  for (const char *value :
       {"-1", "2147483648", "1e300", "1e-400", "0.5", "nan", "null", "[1]"}) {
    EXPECT_EQ(parseError("{\"prompt\": [5, " + std::string(value) +
                         "], \"output_len\": 1}"),
              "line 1, column 16: " + range +
                  (value[0] == '[' ? std::string("an array") : value))
        << value;
  }
  EXPECT_EQ(parseError("{\"prompt\": 5, \"output_len\": 1}"),
            "line 1, column 12: \"prompt\" must be an array of token ids, "
            "got 5");
  EXPECT_EQ(parseError("{\"prompt\": [], \"output_len\": 1}"),
            "line 1, column 12: \"prompt\" must hold between 1 and 1048576 "
            "token ids, got 0");
  EXPECT_EQ(parseError("{\"prompt\": [1 2], \"output_len\": 1}"),
            "line 1, column 15: expected ',' or ']' in \"prompt\"");
  EXPECT_EQ(parseError("{\"prompt\": [1,], \"output_len\": 1}"),
            "line 1, column 15: \"prompt\" must be an array of token ids, "
            "integers in [0, 2147483647], got ']'");

  StatusOr<Workload> trace =
      parseTrace("{\"prompt\": [2147483647, 0, -0], \"output_len\": 1}", "t");
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  EXPECT_EQ(trace->requests[0].prompt, (std::vector<Token>{2147483647, 0, 0}));
}

TEST(Trace, LimitsThePromptLength) {
  std::string tokens;
  for (int64_t i = 0; i < kMaxTracePromptTokens; ++i)
    tokens += "7,";
  tokens.pop_back();
  StatusOr<Workload> longest =
      parseTrace("{\"prompt\": [" + tokens + "], \"output_len\": 1}", "t");
  ASSERT_TRUE(longest.ok()) << longest.status().toString();
  EXPECT_EQ(static_cast<int64_t>(longest->requests[0].prompt.size()),
            kMaxTracePromptTokens);
  EXPECT_EQ(parseError("{\"prompt\": [" + tokens + ",7], \"output_len\": 1}"),
            "line 1, column 12: \"prompt\" must hold between 1 and 1048576 "
            "token ids, got more");
}

TEST(Trace, ChecksIds) {
  const std::string range = "\"id\" must be a string or an integer in [0, "
                            "9007199254740991], got ";
  for (const char *value :
       {"-1", "1.5", "9007199254740992", "1e300", "nan", "null", "{}"}) {
    EXPECT_EQ(parseError(line(std::string("\"id\": ") + value)),
              "line 1, column 8: " + range +
                  (value[0] == '{' ? std::string("an object") : value))
        << value;
  }
  // Ids are renumbered, but one id on two lines is a broken trace.
  EXPECT_EQ(parseError(line("\"id\": 7") + "\n" + line("\"id\": \"7\"") + "\n" +
                       line("\"id\": 7.0")),
            "line 3, column 8: \"id\" repeats line 1's");
  EXPECT_EQ(
      parseError(line("\"id\": \"a\\u0062\"") + "\n" + line("\"id\": \"ab\"")),
      "line 2, column 8: \"id\" repeats line 1's");
  StatusOr<Workload> trace = parseTrace(
      line("\"id\": 9007199254740991") + "\n" + line("\"id\": \"x\""), "t");
  EXPECT_TRUE(trace.ok()) << trace.status().toString();
}

// skipValue recursed once per level: 100,000 nested arrays overflowed the
// stack. The skipper keeps its own stack now and caps the depth.
TEST(Trace, DeepNestingIsAnErrorNotACrash) {
  const std::string head = "{\"prompt\": [1], \"output_len\": 1, \"x\": ";
  for (const char *open : {"[", "{\"a\":"}) {
    std::string deep = head, close = open[0] == '[' ? "]" : "}";
    for (int i = 0; i < 100000; ++i)
      deep += open;
    std::string unterminated = deep;
    for (int i = 0; i < 100000; ++i)
      deep += close;
    deep += "}";
    int step = static_cast<int>(std::strlen(open));
    std::string at =
        "line 1, column " + std::to_string(head.size() + 1 + 255 * step);
    EXPECT_EQ(parseError(deep), at + ": values nest deeper than 256 levels");
    EXPECT_EQ(parseError(unterminated),
              at + ": values nest deeper than 256 levels");
  }
  // The request is the first level: 255 more still parse, arrays and
  // objects alternating, with values beside the nested ones.
  std::string deepest = head, closing;
  for (int i = 0; i < 255; ++i) {
    deepest += i % 2 ? "{\"k\": \"]}\", \"v\": " : "[null, -0.5e-3, ";
    closing = (i % 2 ? "}" : "]") + closing;
  }
  StatusOr<Workload> trace = parseTrace(deepest + "1" + closing + "}", "t");
  EXPECT_TRUE(trace.ok()) << trace.status().toString();
}

// Every malformed line is a ParseError at the byte where it goes wrong,
// never a crash, a hang or a read past the end of the line.
TEST(Trace, MalformedJsonNamesTheColumn) {
  const std::string head = "{\"prompt\": [1], \"output_len\": 1, ";
  const std::string at = "line 1, column " + std::to_string(head.size() + 1);
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      // Strings: unterminated, an escape at the end, bad escapes, raw
      // control characters.
      {head + "\"x\": \"abc", "line 1, column 39: unterminated string"},
      {head + "\"x\": \"abc\\", "line 1, column 39: unterminated string"},
      {head + "\"x\": \"a\\q\"}", "line 1, column 41: invalid escape '\\q'"},
      {head + "\"x\": \"\\u12\"}",
       "line 1, column 40: \\u needs four hex digits"},
      {head + "\"x\": \"\\u12g4\"}",
       "line 1, column 40: \\u needs four hex digits"},
      {head + "\"x\": \"\\ud800\"}",
       "line 1, column 40: unpaired UTF-16 surrogate in \\u escape"},
      {head + "\"x\": \"\\ud800\\u0041\"}",
       "line 1, column 40: unpaired UTF-16 surrogate in \\u escape"},
      {head + "\"x\": \"\\udc00\"}",
       "line 1, column 40: unpaired UTF-16 surrogate in \\u escape"},
      {head + "\"x\": \"a\tb\"}",
       "line 1, column 41: control character 0x09 in a string: escape it"},
      {head + "\"x\": \"", "line 1, column 39: unterminated string"},
      // Bare words that are not JSON.
      {head + "\"x\": 1e}", "line 1, column 39: invalid value 1e"},
      {head + "\"x\": -}", "line 1, column 39: invalid value -"},
      {head + "\"x\": +1}", "line 1, column 39: invalid value +1"},
      {head + "\"x\": 01}", "line 1, column 39: invalid value 01"},
      {head + "\"x\": nan}", "line 1, column 39: invalid value nan"},
      {head + "\"x\": tru}", "line 1, column 39: invalid value tru"},
      {head + "\"x\": truefalse}",
       "line 1, column 39: invalid value truefalse"},
      {head + "\"x\": '1'}", "line 1, column 39: invalid value '1'"},
      {head + "\"x\": }", "line 1, column 39: invalid value '}'"},
      {head + "\"x\": ", "line 1, column 39: expected a value"},
      {head + "\"x\": [1}", "line 1, column 41: expected ',' or ']'"},
      {head + "\"x\": {\"a\" 1}}", "line 1, column 44: expected ':'"},
      {head + "\"x\": {1: 1}}", "line 1, column 40: expected a key string"},
      {head + "\"x\": [1,]}", "line 1, column 42: invalid value ']'"},
      // The request object itself.
      {head + "}", at + ": expected a key string"},
      {head + "x: 1}", at + ": expected a key string"},
      {head + "\"x\" 1}", "line 1, column 38: expected ':' after \"x\""},
      {"{\"prompt\": [1], \"output_len\": 1 \"x\": 1}",
       "line 1, column 33: expected ',' or '}'"},
      {"{\"prompt\": [1], \"output_len\": 1", "line 1, column 32: expected "
                                              "',' or '}'"},
      {"{\"prompt\": [1], \"output_len\": 1}}",
       "line 1, column 33: unexpected text after the request"},
      {"{\"prompt\": [1], \"output_len\": 1}{}",
       "line 1, column 33: unexpected text after the request"},
      {"{}", "line 1, column 1: empty request: needs \"prompt\" and "
             "\"output_len\""},
      {"{", "line 1, column 2: expected a key string"},
      {"\"x\"", "line 1, column 1: expected '{' to start a request"},
      {"42", "line 1, column 1: expected '{' to start a request"},
      {"null", "line 1, column 1: expected '{' to start a request"},
      {"\v{\"prompt\": [1], \"output_len\": 1}",
       "line 1, column 1: expected '{' to start a request"},
      // Duplicate keys are refused, whichever way they are spelled.
      {"{\"prompt\": [1], \"output_len\": 1, \"prompt\": [2]}",
       "line 1, column 34: duplicate key \"prompt\""},
      {"{\"prompt\": [1], \"output_len\": 1, \"output\\u005flen\": 2}",
       "line 1, column 34: duplicate key \"output_len\""},
      {head + "\"x\": 1, \"x\": 1}", "line 1, column 42: duplicate key \"x\""},
      // A byte order mark only at the start of the file.
      {"{\"prompt\": [1], \"output_len\": 1}\n\xEF\xBB\xBF{\"prompt\": [1], "
       "\"output_len\": 1}",
       "line 2, column 1: expected '{' to start a request"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(parseError(c.text), c.message) << c.text;
}

TEST(Trace, ToleratesWhitespaceLineEndingsAndUnknownFields) {
  std::string huge(100000, '9');
  StatusOr<Workload> trace = parseTrace(
      "\xEF\xBB\xBF \r\n"
      "\r\n"
      " \t{ \"prompt\" : [ 1 , 2 ] , \"output_len\" : 1 } \r\n"
      "{\"prompt\": [3], \"output_len\": 2, \"arrival\": 0.25, \"meta\": "
      "{\"s\": \"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\", "
      "\"n\": [-0, 1E+2, 1e-400, " +
          huge + ", " + huge + ".5e99999], \"e\": [], \"o\": {}}}\r\n" +
          "{\"prompt\": [4], \"output_len\": 3, \"note\": \"" +
          std::string(1 << 20, 'x') + "\"}",
      "t");
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  ASSERT_EQ(trace->requests.size(), 3u);
  EXPECT_EQ(trace->requests[0].prompt, (std::vector<Token>{1, 2}));
  EXPECT_EQ(trace->requests[1].prompt, (std::vector<Token>{4}));
  EXPECT_EQ(trace->requests[2].outputLen, 2);
  EXPECT_EQ(trace->requests[2].arrival, 0.25);
  // A huge number is only an error where it is read.
  EXPECT_EQ(parseError("{\"prompt\": [1], \"output_len\": " + huge + "}"),
            "line 1, column 31: \"output_len\" must be an integer in [1, "
            "1048576], got " +
                huge.substr(0, 32) + "...");
}

// The simulator still replays a small online trace whose values are all in
// range, -0 and float-spelled integers included.
TEST(Trace, ReplaysAValidOnlineTrace) {
  std::string text;
  double last = 0;
  for (int i = 0; i < 12; ++i) {
    double arrival = i * 0.125;
    last = std::max(last, arrival);
    text += "{\"id\": \"r" + std::to_string(i) +
            "\", \"arrival\": " + (i ? std::to_string(arrival) : "-0") +
            ", \"prompt\": [" + std::to_string(i % 3) + ", 5, 6, 7, 8e0, " +
            std::to_string(100 + i) +
            "], \"output_len\": " + std::to_string(1 + i % 4) + ".0}\r\n";
  }
  // No line gives max_tokens: each gets the default asked for.
  StatusOr<Workload> trace = parseTrace(text, "small", 8);
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  for (const TracedRequest &request : trace->requests)
    EXPECT_EQ(request.maxTokens, 8);
  SimOptions options;
  options.cacheTokens = 64;
  options.pageSize = 2;
  options.arrival = ArrivalMode::Online;
  StatusOr<SimResult> result = simulate(*trace, options);
  ASSERT_TRUE(result.ok()) << result.status().toString();
  EXPECT_EQ(result->requests, 12);
  EXPECT_EQ(result->promptTokens, 12 * 6);
  EXPECT_GE(result->seconds, last);
  EXPECT_LE(result->hitRate, result->optimalHitRate + 1e-9);
}

// "namespace" (a LoRA adapter, a tenant) keeps requests from sharing KV;
// absent, it is 0.
TEST(Trace, ReadsNamespaces) {
  StatusOr<Workload> trace = parseTrace(
      line("\"namespace\": 12") + "\n" + line("\"arrival\": 1"), "t");
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  EXPECT_EQ(trace->requests[0].cacheNamespace, 12u);
  EXPECT_EQ(trace->requests[1].cacheNamespace, 0u);
  for (auto [value, got] : {std::pair{"-1", "-1"},
                            {"0.5", "0.5"},
                            {"9007199254740992", "9007199254740992"},
                            {"\"a\"", "a string"}})
    EXPECT_EQ(parseError(line(std::string("\"namespace\": ") + value)),
              std::string("line 1, column 15: \"namespace\" must be an integer "
                          "in [0, 9007199254740991], got ") +
                  got)
        << value;
}

// "priority" orders requests before the policy does; absent, it is 0.
TEST(Trace, ReadsPriorities) {
  StatusOr<Workload> trace =
      parseTrace(line("\"priority\": -3") + "\n" + line("\"arrival\": 1"), "t");
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  EXPECT_EQ(trace->requests[0].priority, -3);
  EXPECT_EQ(trace->requests[1].priority, 0);
  EXPECT_EQ(parseError(line("\"priority\": 1.5")),
            "line 1, column 14: \"priority\" must be an integer in "
            "[-1000000, 1000000], got 1.5");
}

// max_tokens is the request's limit, output_len the answer the trace
// recorded within it: max_tokens may not be less, and when a line gives
// none it is the server's default (kDefaultTraceMaxTokens, or the one
// asked for), never the answer's length, which would tell the scheduler
// what no engine knows.
TEST(Trace, ReadsMaxTokens) {
  StatusOr<Workload> trace =
      parseTrace("{\"prompt\": [1, 2], \"output_len\": 4, \"max_tokens\": 9}\n"
                 "{\"prompt\": [3], \"output_len\": 5}\n",
                 "t");
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  EXPECT_EQ(trace->requests[0].maxTokens, 9);
  EXPECT_EQ(trace->requests[0].outputLen, 4);
  EXPECT_EQ(trace->requests[1].outputLen, 5);
  EXPECT_NE(trace->requests[1].maxTokens, trace->requests[1].outputLen);
  EXPECT_EQ(trace->requests[1].maxTokens, kDefaultTraceMaxTokens);
  EXPECT_EQ(trace->requests[1].n, 1);
  StatusOr<Workload> sampled =
      parseTrace("{\"prompt\": [1, 2], \"output_len\": 4, \"n\": 3}\n", "t");
  ASSERT_TRUE(sampled.ok()) << sampled.status().toString();
  EXPECT_EQ(sampled->requests[0].n, 3);
  EXPECT_EQ(parseError("{\"prompt\": [1], \"output_len\": 4, \"n\": 0}"),
            "line 1, column 39: \"n\" must be an integer in [1, 256], got 0");
}

TEST(Trace, DefaultMaxTokensIsTheCallersAndNeverBelowTheAnswer) {
  const std::string text = "{\"prompt\": [1], \"output_len\": 40}\n"
                           "{\"prompt\": [2], \"output_len\": 3}\n"
                           "{\"prompt\": [3], \"output_len\": 3, "
                           "\"max_tokens\": 3}\n";
  StatusOr<Workload> trace = parseTrace(text, "t", 32);
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  // The recorded answer fit its limit: the default rises to it.
  EXPECT_EQ(trace->requests[0].maxTokens, 40);
  EXPECT_EQ(trace->requests[1].maxTokens, 32);
  // A limit the line gives is kept, even one equal to the answer.
  EXPECT_EQ(trace->requests[2].maxTokens, 3);
  for (int64_t bad : {int64_t(0), int64_t(-1), kMaxTraceOutputLen + 1}) {
    StatusOr<Workload> refused = parseTrace(text, "t", bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), ErrorCode::InvalidArgument);
    EXPECT_EQ(refused.status().message(),
              "the default max_tokens must be in [1, 1048576], got " +
                  std::to_string(bad));
  }
}

// A bad max_tokens names its line and the column of its value.
TEST(Trace, BadMaxTokensFailWithTheirPosition) {
  const std::string head = "{\"prompt\": [1], \"output_len\": 4, "
                           "\"max_tokens\": ";
  const std::string range =
      "\"max_tokens\" must be an integer in [1, 1048576], got ";
  // The value starts after the head, on the second line.
  const std::string at =
      "line 2, column " + std::to_string(head.size() + 1) + ": ";
  struct Case {
    std::string value, got;
  } cases[] = {
      {"0", "0"},           {"-1", "-1"},       {"1048577", "1048577"},
      {"1e300", "1e300"},   {"1e400", "1e400"}, {"2.5", "2.5"},
      {"1e-400", "1e-400"}, {"nan", "nan"},     {"\"8\"", "a string"},
      {"null", "null"},     {"true", "true"},   {"[8]", "an array"},
      {"{}", "an object"},
  };
  for (const Case &c : cases)
    EXPECT_EQ(parseError("{\"prompt\": [9], \"output_len\": 1}\n" + head +
                         c.value + "}"),
              at + range + c.got)
        << c.value;
  EXPECT_EQ(parseError("{\"prompt\": [9], \"output_len\": 1}\n" + head + "3}"),
            at + "\"max_tokens\" 3 is less than \"output_len\" 4");
  // Before output_len on its line: checked once the line is read, still
  // pointing at the value.
  EXPECT_EQ(parseError("{\"max_tokens\": 2, \"prompt\": [1], "
                       "\"output_len\": 4}"),
            "line 1, column 16: \"max_tokens\" 2 is less than "
            "\"output_len\" 4");
  EXPECT_EQ(parseError("{\"prompt\": [1], \"output_len\": 4, "
                       "\"max_tokens\": 8, \"max_tokens\": 9}"),
            "line 1, column 51: duplicate key \"max_tokens\"");
}

// The bundled trace gives every request a limit above its answer, as a
// client does: replaying it must not tell the scheduler the answers.
TEST(Trace, TheBundledTraceSetsRealisticLimits) {
  // A default of 1 would leave a line without max_tokens at its answer.
  StatusOr<Workload> trace =
      readTrace(ATTNC_EXAMPLES_DIR "/serve_trace.jsonl", 1);
  ASSERT_TRUE(trace.ok()) << trace.status().toString();
  ASSERT_FALSE(trace->requests.empty());
  for (const TracedRequest &request : trace->requests)
    EXPECT_GT(request.maxTokens, request.outputLen) << request.id;
}
