//===- SyntheticModel.cpp - a stand-in for a model's sampling -------------===//

#include "sim/SyntheticModel.h"

namespace attnc {

void SyntheticModel::add(const TracedRequest &request) {
  answers_[request.id] = {request.id, request.outputLen, 0};
}

std::vector<Sample> SyntheticModel::sample(const EngineBatch &batch) {
  std::vector<Sample> samples;
  for (RequestId id : batch.samplers) {
    Sample sample;
    sample.request = id;
    auto it = answers_.find(id);
    if (it == answers_.end()) {
      // Unknown to the model: one token, then stop.
      sample.token = outputToken(id, 0);
      sample.stop = true;
    } else {
      Answer &answer = it->second;
      sample.token = outputToken(id, answer.sampled);
      sample.stop = ++answer.sampled >= answer.outputLen;
    }
    samples.push_back(sample);
  }
  return samples;
}

StatusOr<SimulatedStep> SyntheticModel::step(Scheduler &scheduler) {
  SimulatedStep result;
  StatusOr<StepStats> stats = scheduler.step();
  if (!stats.ok())
    return stats.status();
  result.stats = std::move(*stats);
  StatusOr<std::vector<RequestId>> finished =
      scheduler.commit(sample(result.stats.batch));
  if (!finished.ok())
    return finished.status();
  result.finished = std::move(*finished);
  return result;
}

int64_t SyntheticModel::sampled(RequestId request) const {
  auto it = answers_.find(request);
  return it == answers_.end() ? 0 : it->second.sampled;
}

} // namespace attnc
