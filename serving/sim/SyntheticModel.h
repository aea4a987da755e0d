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

  /// One sample per sampler of `batch`: each branch's next output token,
  /// stop at its request's outputLen.
  std::vector<Sample> sample(const EngineBatch &batch);

  /// Forms a step, samples it and commits the samples.
  StatusOr<SimulatedStep> step(Scheduler &scheduler);

  /// Output tokens sampled for a branch of `request` so far.
  int64_t sampled(RequestId request, int32_t branch = 0) const;

  /// Token `position` of a branch's answer.
  static Token token(RequestId request, int32_t branch, int64_t position);
  /// Token `position` of the request's prompt followed by a branch's
  /// answer.
  static Token tokenAt(const TracedRequest &request, int64_t position,
                       int32_t branch = 0);

private:
  struct Answer {
    int64_t outputLen = 1;
    std::unordered_map<int32_t, int64_t> sampled;
  };
  std::unordered_map<RequestId, Answer> answers_;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_SIM_SYNTHETICMODEL_H
