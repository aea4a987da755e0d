//===- Workloads.h - synthetic serving workloads ----------------*- C++ -*-===//
//
// Deterministic (per seed) request streams with the prefix-sharing shapes
// that make a prefix cache and its scheduling policy matter. Prompts of
// later requests may quote earlier ones' outputs (a conversation, a branch
// of thought); such a request names the one it follows in `after`.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_SIM_WORKLOADS_H
#define ATTNC_RUNTIME_SIM_WORKLOADS_H

#include "sched/Request.h"

#include <string>
#include <vector>

namespace attnc {

struct Workload {
  std::string name;
  /// In id order; a request comes after the one it follows.
  std::vector<Request> requests;
};

/// Names accepted by makeWorkload: few-shot, multi-turn, branching, agents.
const std::vector<std::string> &workloadNames();

/// `arrivalsPerSecond` spaces independent requests as a Poisson process
/// (online mode); 0 queues them all at time 0 (offline mode).
StatusOr<Workload> makeWorkload(const std::string &name, uint64_t seed,
                                double arrivalsPerSecond);

/// One request per line: {"id": …, "arrival": seconds, "prompt": [token
/// ids], "output_len": n}.
StatusOr<Workload> readTrace(const std::string &path);
StatusOr<Workload> parseTrace(const std::string &text, const std::string &name);

} // namespace attnc

#endif // ATTNC_RUNTIME_SIM_WORKLOADS_H
