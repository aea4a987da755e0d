//===- SyntheticModel.h - a stand-in for a model's sampling -----*- C++ -*-===//
//
// What the simulator and the tests put where an engine's model would be:
// it samples each traced request's synthetic output tokens (outputToken) in
// order and says stop at its outputLen, the only place outputLen is read.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_SIM_SYNTHETICMODEL_H
#define ATTNC_RUNTIME_SIM_SYNTHETICMODEL_H

#include "sched/Scheduler.h"

#include <unordered_map>
#include <vector>

namespace attnc {

/// A step the scheduler formed and the requests its samples finished.
struct SimulatedStep {
  StepStats stats;
  std::vector<RequestId> finished;
};

class SyntheticModel {
public:
  /// Answers `request` from now on; a request added again starts over.
  void add(const TracedRequest &request);

  /// One sample per sampler of `batch`: each request's next output token,
  /// stop at its outputLen.
  std::vector<Sample> sample(const EngineBatch &batch);

  /// Forms a step, samples it and commits the samples.
  StatusOr<SimulatedStep> step(Scheduler &scheduler);

  /// Output tokens sampled for `request` so far.
  int64_t sampled(RequestId request) const;

private:
  struct Answer {
    RequestId id = 0;
    int64_t outputLen = 1;
    int64_t sampled = 0;
  };
  std::unordered_map<RequestId, Answer> answers_;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_SIM_SYNTHETICMODEL_H
