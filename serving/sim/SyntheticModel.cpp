//===- SyntheticModel.cpp - a stand-in for a model's sampling -------------===//

#include "sim/SyntheticModel.h"

namespace attnc {

void SyntheticModel::add(const TracedRequest &request) {
  answers_[request.id] = {request.outputLen, {}};
}

Token SyntheticModel::token(RequestId request, int32_t branch,
                            int64_t position) {
  if (branch == 0)
    return outputToken(request, position);
  // Other branches: ids no request has (negative), one per branch.
  return outputToken(-(request * kMaxParallelSamples + branch), position);
}

Token SyntheticModel::tokenAt(const TracedRequest &request, int64_t position,
                              int32_t branch) {
  int64_t prompt = static_cast<int64_t>(request.prompt.size());
  return position < prompt ? request.prompt[size_t(position)]
                           : token(request.id, branch, position - prompt);
}

std::vector<Sample> SyntheticModel::sample(const EngineBatch &batch) {
  std::vector<Sample> samples;
  for (size_t k = 0; k < batch.samplers.size(); ++k) {
    Sample sample;
    sample.request = batch.samplers[k];
    sample.branch = batch.samplerBranches[k];
    // A request the model was not told of answers one token (a default
    // Answer).
    Answer &answer = answers_[sample.request];
    int64_t &sampled = answer.sampled[sample.branch];
    sample.token = token(sample.request, sample.branch, sampled);
    sample.stop = ++sampled >= answer.outputLen;
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

int64_t SyntheticModel::sampled(RequestId request, int32_t branch) const {
  auto it = answers_.find(request);
  if (it == answers_.end())
    return 0;
  auto count = it->second.sampled.find(branch);
  return count == it->second.sampled.end() ? 0 : count->second;
}

} // namespace attnc
