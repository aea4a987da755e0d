//===- TraceTest.cpp - replaying request logs -----------------------------===//

#include "sim/Simulator.h"

#include <gtest/gtest.h>

using namespace attnc;

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
       "line 1, column 16: token ids are integers in [0, 2^31)"},
      {"{\"prompt\": [1], \"output_len\": 0}",
       "line 1, column 32: \"output_len\" must be a positive integer"},
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
    text += "], \"output_len\": 8}\n";
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
