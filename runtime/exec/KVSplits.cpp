//===- KVSplits.cpp - how split-KV launches cut the keys ------------------===//

#include "exec/KVSplits.h"

#include <algorithm>

namespace attnc {

namespace {
int64_t ceilDiv(int64_t a, int64_t b) {
  return (a + std::max<int64_t>(b, 1) - 1) / std::max<int64_t>(b, 1);
}
} // namespace

KVSplits chooseKVSplits(int64_t ctasPerSplit, int64_t residentCtas,
                        int64_t keyTiles, int64_t maxSplits, int64_t requests,
                        int64_t totalKeyTiles, bool perRequest) {
  int64_t fill = residentCtas / std::max<int64_t>(ctasPerSplit, 1);
  int64_t most = std::max<int64_t>(1, std::min(keyTiles, maxSplits));
  requests = std::max<int64_t>(requests, 1);
  bool ragged = totalKeyTiles > 0 && totalKeyTiles < requests * keyTiles;
  if (!ragged)
    return {std::clamp<int64_t>(fill, 1, most), 0};
  // The tiles every resident CTA would take, were they spread evenly over
  // the CTAs of all requests.
  int64_t ctasPerRequest = std::max<int64_t>(ctasPerSplit / requests, 1);
  int64_t perCta = ceilDiv(totalKeyTiles * ctasPerRequest,
                           std::max<int64_t>(residentCtas, 1));
  if (!perRequest)
    return {
        std::clamp<int64_t>(std::max(fill, ceilDiv(keyTiles, perCta)), 1, most),
        0};
  int64_t share = ceilDiv(perCta, 2);
  int64_t splits = std::clamp<int64_t>(ceilDiv(keyTiles, share), 1, most);
  return {splits, ceilDiv(keyTiles, splits)};
}

} // namespace attnc
