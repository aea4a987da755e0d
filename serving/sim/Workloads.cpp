//===- Workloads.cpp - synthetic serving workloads ------------------------===//

#include "sim/Workloads.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

namespace attnc {

namespace {

class Generator {
public:
  Generator(uint64_t seed, double arrivalsPerSecond)
      : rng_(seed), rate_(arrivalsPerSecond) {}

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  std::vector<Token> tokens(int64_t count) {
    std::vector<Token> out(count);
    // Prompt tokens stay under 2^20; synthetic outputs live above it.
    for (Token &token : out)
      token = static_cast<Token>(uniform(1, 50000));
    return out;
  }
  /// Arrival of the next independent request.
  double nextArrival() {
    if (rate_ > 0)
      clock_ += std::exponential_distribution<double>(rate_)(rng_);
    return clock_;
  }

  TracedRequest &add(std::vector<Token> prompt, int64_t outputLen) {
    TracedRequest request;
    request.id = static_cast<RequestId>(workload.requests.size());
    request.prompt = std::move(prompt);
    request.outputLen = outputLen;
    request.maxTokens = std::max(maxTokens, outputLen);
    workload.requests.push_back(std::move(request));
    return workload.requests.back();
  }
  /// A request continuing `previous`: its prompt and output, then more.
  TracedRequest &follow(RequestId previous, int64_t newTokens,
                        int64_t outputLen, double thinkTime) {
    std::vector<Token> prompt = fullSequence(workload.requests[previous]);
    std::vector<Token> more = tokens(newTokens);
    prompt.insert(prompt.end(), more.begin(), more.end());
    TracedRequest &request = add(std::move(prompt), outputLen);
    request.after = previous;
    request.thinkTime = rate_ > 0 ? thinkTime : 0;
    return request;
  }
  double think() { return 0.5 + uniform(0, 2000) / 1000.0; }

  Workload workload;
  /// The limit each request sets, as an application does: its answers'
  /// lengths are the model's business (docs/SIMULATOR.md).
  int64_t maxTokens = kDefaultTraceMaxTokens;

private:
  std::mt19937_64 rng_;
  double rate_;
  double clock_ = 0;
};

// 300 questions after one 2000-token block of examples.
// Short answers (20-80 tokens) under a 256-token limit.
void fewShot(Generator &g) {
  g.maxTokens = 256;
  std::vector<Token> examples = g.tokens(2000);
  for (int i = 0; i < 300; ++i) {
    std::vector<Token> prompt = examples;
    std::vector<Token> question = g.tokens(g.uniform(50, 250));
    prompt.insert(prompt.end(), question.begin(), question.end());
    g.add(std::move(prompt), g.uniform(20, 80)).arrival = g.nextArrival();
  }
}

// 40 conversations of 5 turns under one 300-token system prompt; each turn
// quotes the whole conversation so far.
// Chat answers (50-200 tokens) under a 1024-token limit.
void multiTurn(Generator &g) {
  g.maxTokens = 1024;
  std::vector<Token> system = g.tokens(300);
  for (int c = 0; c < 40; ++c) {
    std::vector<Token> prompt = system;
    std::vector<Token> first = g.tokens(g.uniform(50, 200));
    prompt.insert(prompt.end(), first.begin(), first.end());
    TracedRequest &opening = g.add(std::move(prompt), g.uniform(50, 200));
    opening.arrival = g.nextArrival();
    RequestId previous = opening.id;
    for (int turn = 1; turn < 5; ++turn)
      previous =
          g.follow(previous, g.uniform(50, 200), g.uniform(50, 200), g.think())
              .id;
  }
}

// Tree-of-thought: 12 problems, each expanded three ways three levels deep;
// a thought's prompt is its parent's prompt and output plus a step.
// A thought (60-120 tokens) under a 512-token limit.
void branching(Generator &g) {
  g.maxTokens = 512;
  for (int tree = 0; tree < 12; ++tree) {
    TracedRequest &root = g.add(g.tokens(400), g.uniform(60, 120));
    root.arrival = g.nextArrival();
    std::vector<RequestId> level{root.id};
    for (int depth = 1; depth <= 3; ++depth) {
      std::vector<RequestId> next;
      for (RequestId parent : level)
        for (int branch = 0; branch < 3; ++branch)
          next.push_back(
              g.follow(parent, g.uniform(30, 60), g.uniform(60, 120), 0.05).id);
      level = std::move(next);
    }
  }
}

// 320 tasks for 8 agents: one 200-token header for all, a 1500-token system
// prompt per agent, then the task.
// A tool call or reply (30-100 tokens) under a 1024-token limit.
void agents(Generator &g) {
  g.maxTokens = 1024;
  std::vector<Token> header = g.tokens(200);
  std::vector<std::vector<Token>> systems;
  for (int agent = 0; agent < 8; ++agent)
    systems.push_back(g.tokens(1500));
  for (int i = 0; i < 320; ++i) {
    std::vector<Token> prompt = header;
    const std::vector<Token> &system = systems[g.uniform(0, 7)];
    prompt.insert(prompt.end(), system.begin(), system.end());
    std::vector<Token> task = g.tokens(g.uniform(100, 300));
    prompt.insert(prompt.end(), task.begin(), task.end());
    g.add(std::move(prompt), g.uniform(30, 100)).arrival = g.nextArrival();
  }
}

} // namespace

const std::vector<std::string> &workloadNames() {
  static const std::vector<std::string> names = {"few-shot", "multi-turn",
                                                 "branching", "agents"};
  return names;
}

StatusOr<Workload> makeWorkload(const std::string &name, uint64_t seed,
                                double arrivalsPerSecond) {
  // A NaN or infinite rate would make every arrival NaN or 0, and a tiny
  // one infinite: the simulator would wait forever or never.
  if (arrivalsPerSecond != 0 && !(arrivalsPerSecond >= kMinArrivalRate &&
                                  arrivalsPerSecond <= kMaxArrivalRate)) {
    std::ostringstream message;
    message << "arrivals per second must be 0 (offline) or in ["
            << kMinArrivalRate << ", " << kMaxArrivalRate << "], got "
            << arrivalsPerSecond;
    return Status::error(ErrorCode::InvalidArgument, message.str());
  }
  Generator generator(seed, arrivalsPerSecond);
  if (name == "few-shot")
    fewShot(generator);
  else if (name == "multi-turn")
    multiTurn(generator);
  else if (name == "branching")
    branching(generator);
  else if (name == "agents")
    agents(generator);
  else
    return Status::error(ErrorCode::InvalidArgument,
                         "unknown workload '" + name +
                             "': expected few-shot, multi-turn, branching or "
                             "agents");
  generator.workload.name = name;
  return std::move(generator.workload);
}

} // namespace attnc
