//===- SimCommandTest.cpp - attnc sim's flags and traces ------------------===//
//
// Runs the attnc binary: flag checking lives in the command, and its exit
// codes are part of the interface (2 for a bad flag, 1 for a bad trace).
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace {

struct Outcome {
  int exitCode = -1;
  std::string output;
};

/// Runs `attnc sim ARGS` with stdout and stderr together. The arguments
/// are fixed strings of these tests, so the shell needs no quoting beyond
/// what they carry.
Outcome runSim(const std::string &args) {
  std::string command = "'" ATTNC_BINARY "' sim " + args + " 2>&1";
  Outcome outcome;
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return outcome;
  std::array<char, 4096> buffer;
  size_t read;
  while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    outcome.output.append(buffer.data(), read);
  int status = pclose(pipe);
  if (WIFEXITED(status))
    outcome.exitCode = WEXITSTATUS(status);
  return outcome;
}

std::string writeTrace(const std::string &name, const std::string &text) {
  std::string path = testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

} // namespace

// Out-of-range values used to be replaced by defaults without a word
// (--cache-tokens -5, --rate -1), or accepted (--rate nan, --seed -1).
TEST(SimCommand, RejectsEveryBadNumericFlag) {
  const std::string cache = "attnc sim: --cache-tokens must be an integer in "
                            "[16, 67108864] (at least one page of "
                            "--page-size 16), got '";
  const std::string page =
      "attnc sim: --page-size must be an integer in [1, 256], got '";
  const std::string seed = "attnc sim: --seed must be an integer in [0, "
                           "18446744073709551615], got '";
  const std::string rate = "attnc sim: --rate must be a number of arrivals "
                           "per second in [0.001, 1e+06], got '";
  const std::string maxTokens = "attnc sim: --default-max-tokens must be an "
                                "integer in [1, 1048576], got '";
  const std::string host = "attnc sim: --host-tokens must be 0 (no host "
                           "tier) or an integer in [16, 67108864] (at least "
                           "one page of --page-size 16), got '";
  const std::string sharers = "attnc sim: --cascade-min-sharers must be an "
                              "integer in [1, 2^31), got '";
  const std::string sharedTokens = "attnc sim: --cascade-min-tokens must be "
                                   "an integer in [1, 2^31), got '";
  struct Case {
    std::string args;
    std::string message;
  } cases[] = {
      {"--cascade-min-sharers 0", sharers + "0'"},
      {"--cascade-min-sharers 2147483648", sharers + "2147483648'"},
      {"--cascade-min-tokens -3", sharedTokens + "-3'"},
      {"--host-tokens -1", host + "-1'"},
      {"--host-tokens 15", host + "15'"},
      {"--host-tokens 67108865", host + "67108865'"},
      {"--host-tokens 1e6", host + "1e6'"},
      {"--cache-tokens -5", cache + "-5'"},
      {"--cache-tokens=-5", cache + "-5'"},
      {"--cache-tokens 0", cache + "0'"},
      {"--cache-tokens 15", cache + "15'"},
      {"--cache-tokens 67108865", cache + "67108865'"},
      {"--cache-tokens 99999999999999999999", cache + "99999999999999999999'"},
      {"--cache-tokens 1e3", cache + "1e3'"},
      {"--cache-tokens 4096.0", cache + "4096.0'"},
      {"--cache-tokens abc", cache + "abc'"},
      {"--cache-tokens ''", cache + "'"},
      {"--page-size 0", page + "0'"},
      {"--page-size 257", page + "257'"},
      {"--page-size -16", page + "-16'"},
      {"--page-size 16x", page + "16x'"},
      {"--page-size 8 --cache-tokens 7",
       "attnc sim: --cache-tokens must be an integer in [8, 67108864] (at "
       "least one page of --page-size 8), got '7'"},
      {"--seed -1", seed + "-1'"},
      {"--seed +1", seed + "+1'"},
      {"--seed 18446744073709551616", seed + "18446744073709551616'"},
      {"--seed 1.5", seed + "1.5'"},
      {"--rate -1", rate + "-1'"},
      {"--rate=-1", rate + "-1'"},
      {"--rate 0", rate + "0'"},
      {"--rate nan", rate + "nan'"},
      {"--rate inf", rate + "inf'"},
      {"--rate -inf", rate + "-inf'"},
      {"--rate 1e400", rate + "1e400'"},
      {"--rate 1e-400", rate + "1e-400'"},
      {"--rate 2e6", rate + "2e6'"},
      {"--rate ' 5'", rate + " 5'"},
      {"--rate 5x", rate + "5x'"},
      {"--aging-steps -1",
       "attnc sim: --aging-steps must be an integer in [0, 2^40], got '-1'"},
      {"--aging-steps 2.5",
       "attnc sim: --aging-steps must be an integer in [0, 2^40], got '2.5'"},
      {"--new-token-ratio 1.5",
       "attnc sim: --new-token-ratio must be a number in [0, 1], got '1.5'"},
      {"--new-token-ratio nan",
       "attnc sim: --new-token-ratio must be a number in [0, 1], got 'nan'"},
      {"--default-max-tokens 0", maxTokens + "0'"},
      {"--default-max-tokens -5", maxTokens + "-5'"},
      {"--default-max-tokens 1048577", maxTokens + "1048577'"},
      {"--default-max-tokens 4e3", maxTokens + "4e3'"},
      {"--default-max-tokens ''", maxTokens + "'"},
  };
  for (const Case &c : cases) {
    Outcome outcome = runSim("--workload few-shot " + c.args);
    EXPECT_EQ(outcome.exitCode, 2) << c.args;
    EXPECT_EQ(outcome.output, c.message + "\n") << c.args;
  }
  Outcome workload = runSim("--workload chat");
  EXPECT_EQ(workload.exitCode, 2);
  EXPECT_EQ(workload.output, "attnc sim: --workload is few-shot, multi-turn, "
                             "branching or agents, got 'chat'\n");
}

TEST(SimCommand, AcceptsFlagsAtTheirBounds) {
  Outcome outcome =
      runSim("--workload branching --policy lpm --arrival online --json "
             "--page-size 256 --cache-tokens 67108864 --rate 0.001 --seed "
             "18446744073709551615 --host-tokens 256");
  EXPECT_EQ(outcome.exitCode, 0) << outcome.output;
  EXPECT_NE(outcome.output.find("\"cache_tokens\": 67108864"),
            std::string::npos)
      << outcome.output;
}

// A trace that hung (nan), crashed (deep nesting) or cast out of range
// (1e300) now fails with the line, column and field.
TEST(SimCommand, BadTracesFailWithTheirPosition) {
  struct Case {
    std::string text;
    std::string message;
  } cases[] = {
      {"{\"prompt\": [1], \"output_len\": 1}\n"
       "{\"arrival\": nan, \"prompt\": [1, 2], \"output_len\": 2}\n",
       "line 2, column 13: \"arrival\" must be a number of seconds in [0, "
       "1e+09], got nan"},
      {"{\"prompt\": [1], \"output_len\": 1, \"x\": " +
           std::string(100000, '[') + std::string(100000, ']') + "}\n",
       "line 1, column 294: values nest deeper than 256 levels"},
      {"{\"prompt\": [1, 2, 3], \"output_len\": 1e300}\n",
       "line 1, column 37: \"output_len\" must be an integer in [1, 1048576], "
       "got 1e300"},
      {"{\"prompt\": [1], \"output_len\": 1}\n"
       "{\"prompt\": [1], \"output_len\": 4, \"max_tokens\": 2.5}\n",
       "line 2, column 48: \"max_tokens\" must be an integer in [1, 1048576], "
       "got 2.5"},
      {"{\"prompt\": [1], \"output_len\": 4, \"max_tokens\": 3}\n",
       "line 1, column 48: \"max_tokens\" 3 is less than \"output_len\" 4"},
  };
  int index = 0;
  for (const Case &c : cases) {
    std::string path =
        writeTrace("bad-" + std::to_string(index++) + ".jsonl", c.text);
    for (const char *arrival : {"offline", "online"}) {
      Outcome outcome = runSim("--trace '" + path + "' --arrival " + arrival);
      EXPECT_EQ(outcome.exitCode, 1) << c.message;
      EXPECT_EQ(outcome.output, "attnc sim: parse error: " + c.message + "\n");
    }
  }
}

/// The value of `"key": ` in a JSON line of attnc sim, as a number.
static double jsonNumber(const std::string &line, const std::string &key) {
  size_t at = line.find("\"" + key + "\": ");
  EXPECT_NE(at, std::string::npos) << key << " in " << line;
  if (at == std::string::npos)
    return -1;
  return std::strtod(line.c_str() + at + key.size() + 4, nullptr);
}

// Makespan, TTFT and TPOT beside the hit rate, in the text table and the
// JSON; a trace without max_tokens reserves the default, not the answer.
TEST(SimCommand, ReportsLatencyBesideTheHitRate) {
  std::string path =
      writeTrace("latency.jsonl", "{\"prompt\": [1, 2, 3], \"output_len\": 4}\n"
                                  "{\"prompt\": [1, 2, 4], \"output_len\": 2, "
                                  "\"arrival\": 0.5}\n");
  Outcome text = runSim("--trace '" + path + "' --policy lpm");
  ASSERT_EQ(text.exitCode, 0) << text.output;
  for (const char *column : {"hit rate", "makespan", "TTFT s (mean/p50/p99)",
                             "TPOT ms (mean/p50/p99)"})
    EXPECT_NE(text.output.find(column), std::string::npos) << text.output;

  Outcome json = runSim("--trace '" + path + "' --policy lpm --json");
  ASSERT_EQ(json.exitCode, 0) << json.output;
  for (const char *key : {"hit_rate", "makespan", "ttft_mean", "ttft_p50",
                          "ttft_p99", "tpot_mean", "tpot_p50", "tpot_p99"})
    EXPECT_GE(jsonNumber(json.output, key), 0) << key;
  EXPECT_LE(jsonNumber(json.output, "ttft_p50"),
            jsonNumber(json.output, "ttft_p99"));
  EXPECT_GT(jsonNumber(json.output, "makespan"), 0);
  // The default cache holds twice the longest request: its prompt and the
  // default max_tokens (4096, or the flag's), not its 4-token answer.
  auto cache = [](int64_t maxTokens) {
    return std::to_string((2 * (3 + maxTokens) + 15) / 16 * 16);
  };
  EXPECT_NE(json.output.find("\"cache_tokens\": " + cache(4096) + ","),
            std::string::npos)
      << json.output;
  Outcome flag = runSim("--trace '" + path +
                        "' --policy lpm --json --default-max-tokens 64");
  ASSERT_EQ(flag.exitCode, 0) << flag.output;
  EXPECT_NE(flag.output.find("\"cache_tokens\": " + cache(64) + ","),
            std::string::npos)
      << flag.output;
}

// With cascade levels, the steps of a workload whose prompts share a
// system prompt read some of their listed pages once for several
// requests: the JSON counts both, the table says the share.
TEST(SimCommand, ReportsTheKVCascadeLevelsReadOnce) {
  std::string shared = "\"prompt\": [" + [] {
    std::string tokens;
    for (int t = 1; t <= 64; ++t)
      tokens += (t > 1 ? ", " : "") + std::to_string(t);
    return tokens;
  }();
  std::string trace;
  for (int r = 0; r < 6; ++r)
    trace += "{" + shared + ", " + std::to_string(100 + r) +
             "], \"output_len\": 8, \"arrival\": " +
             std::to_string(r == 0 ? 0.0 : 1.0) + "}\n";
  std::string path = writeTrace("cascade.jsonl", trace);
  std::string flags = "--trace '" + path + "' --policy lpm --page-size 16 " +
                      "--arrival online --cascade --cascade-min-sharers 2 " +
                      "--cascade-min-tokens 16";
  Outcome json = runSim(flags + " --json");
  ASSERT_EQ(json.exitCode, 0) << json.output;
  double listed = jsonNumber(json.output, "kv_pages_listed");
  double read = jsonNumber(json.output, "kv_pages_read");
  EXPECT_GT(listed, 0) << json.output;
  EXPECT_LT(read, listed) << json.output;
  Outcome text = runSim(flags);
  ASSERT_EQ(text.exitCode, 0) << text.output;
  EXPECT_NE(text.output.find("read once for several requests"),
            std::string::npos)
      << text.output;
  // Without cascade every listed page is read per request.
  Outcome plain = runSim("--trace '" + path + "' --policy lpm --json");
  ASSERT_EQ(plain.exitCode, 0) << plain.output;
  EXPECT_EQ(jsonNumber(plain.output, "kv_pages_read"),
            jsonNumber(plain.output, "kv_pages_listed"));
}
