//===- Reference.cpp - double-precision attention reference ---------------===//

#include "attnc/Check/Reference.h"

#include <cassert>
#include <cmath>
#include <limits>

namespace attnc::reference {

static constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double alibiSlope(int64_t head, int64_t heads) {
  int64_t pow2 = 1;
  while (pow2 * 2 <= heads)
    pow2 *= 2;
  if (head < pow2)
    return std::exp2(-8.0 * double(head + 1) / double(pow2));
  return std::exp2(-4.0 * double(2 * (head - pow2) + 1) / double(pow2));
}

static bool isVisible(const Variant &variant, const Request &request,
                      int64_t batch, int64_t head, int64_t query, int64_t key) {
  int64_t pos = query + request.kvLen - request.qLen;
  if (variant.causal && key > pos)
    return false;
  if (variant.windowRight && key > pos + *variant.windowRight)
    return false;
  if (variant.windowLeft && key < pos - *variant.windowLeft &&
      key >= variant.sinks)
    return false;
  if (variant.segments && request.qSegments[query] != request.kvSegments[key])
    return false;
  if (variant.maskMod &&
      !variant.maskMod({batch, head, query, key, request.qLen, request.kvLen}))
    return false;
  return true;
}

State attention(const Variant &variant, const Request &request,
                int64_t batchIndex) {
  const int64_t group = variant.qHeads / variant.kvHeads;
  const double scale = variant.scale != 0.0
                           ? variant.scale
                           : 1.0 / std::sqrt(double(variant.qkDim));
  State state;
  state.out.assign(request.qLen * variant.qHeads * variant.vDim, 0.0);
  state.lse.assign(request.qLen * variant.qHeads, kNegInf);
  std::vector<double> logits(request.kvLen);
  for (int64_t i = 0; i < request.qLen; ++i) {
    int64_t pos = i + request.kvLen - request.qLen;
    for (int64_t h = 0; h < variant.qHeads; ++h) {
      int64_t kvHead = h / group;
      const double *q = &request.q[(i * variant.qHeads + h) * variant.qkDim];
      double maxLogit = kNegInf;
      for (int64_t j = 0; j < request.kvLen; ++j) {
        logits[j] = kNegInf;
        if (!isVisible(variant, request, batchIndex, h, i, j))
          continue;
        const double *k =
            &request.k[(j * variant.kvHeads + kvHead) * variant.qkDim];
        double dot = 0.0;
        for (int64_t d = 0; d < variant.qkDim; ++d)
          dot += q[d] * k[d];
        double s = dot * scale;
        if (variant.softcap > 0.0)
          s = variant.softcap * std::tanh(s / variant.softcap);
        if (variant.alibi)
          s += alibiSlope(h, variant.qHeads) * double(j - pos);
        if (variant.scoreMod)
          s = variant.scoreMod(
              s, {batchIndex, h, i, j, request.qLen, request.kvLen});
        logits[j] = s;
        maxLogit = std::max(maxLogit, s);
      }
      if (maxLogit == kNegInf)
        continue;
      double sum = 0.0;
      double *out = &state.out[(i * variant.qHeads + h) * variant.vDim];
      for (int64_t j = 0; j < request.kvLen; ++j) {
        if (logits[j] == kNegInf)
          continue;
        double w = std::exp(logits[j] - maxLogit);
        sum += w;
        const double *v =
            &request.v[(j * variant.kvHeads + kvHead) * variant.vDim];
        for (int64_t d = 0; d < variant.vDim; ++d)
          out[d] += w * v[d];
      }
      for (int64_t d = 0; d < variant.vDim; ++d)
        out[d] /= sum;
      state.lse[i * variant.qHeads + h] = maxLogit + std::log(sum);
    }
  }
  return state;
}

State mergeStates(const std::vector<State> &states, int64_t vDim) {
  assert(!states.empty() && "merging nothing");
  State merged;
  const size_t rows = states.front().lse.size();
  merged.out.assign(rows * vDim, 0.0);
  merged.lse.assign(rows, kNegInf);
  for (size_t r = 0; r < rows; ++r) {
    double maxLse = kNegInf;
    for (const State &s : states)
      maxLse = std::max(maxLse, s.lse[r]);
    if (maxLse == kNegInf)
      continue;
    double sum = 0.0;
    for (const State &s : states)
      sum += std::exp(s.lse[r] - maxLse);
    for (const State &s : states) {
      double w = std::exp(s.lse[r] - maxLse) / sum;
      if (w == 0.0)
        continue;
      for (int64_t d = 0; d < vDim; ++d)
        merged.out[r * vDim + d] += w * s.out[r * vDim + d];
    }
    merged.lse[r] = maxLse + std::log(sum);
  }
  return merged;
}

double relativeError(const std::vector<double> &a,
                     const std::vector<double> &b) {
  assert(a.size() == b.size() && "comparing different sizes");
  double maxDiff = 0.0, maxRef = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]))
      return std::numeric_limits<double>::infinity();
    if (std::isinf(b[i]) || std::isinf(a[i])) {
      if (a[i] != b[i])
        return std::numeric_limits<double>::infinity();
      continue;
    }
    maxDiff = std::max(maxDiff, std::abs(a[i] - b[i]));
    maxRef = std::max(maxRef, std::abs(b[i]));
  }
  return maxRef > 0.0 ? maxDiff / maxRef : maxDiff;
}

} // namespace attnc::reference
