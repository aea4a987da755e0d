//===- KVSplits.cpp - how many parts a split-KV launch cuts keys into -----===//

#include "exec/KVSplits.h"

#include <algorithm>

namespace attnc {

int64_t chooseKVSplits(int64_t ctasPerSplit, int64_t residentCtas,
                       int64_t keyTiles, int64_t maxSplits, int64_t requests,
                       int64_t totalKeyTiles) {
  int64_t fill = residentCtas / std::max<int64_t>(ctasPerSplit, 1);
  int64_t most = std::max<int64_t>(1, std::min(keyTiles, maxSplits));
  requests = std::max<int64_t>(requests, 1);
  if (totalKeyTiles > 0 && totalKeyTiles < requests * keyTiles) {
    // The tiles every resident CTA would take, were they spread evenly over
    // the CTAs of all requests.
    int64_t ctasPerRequest = std::max<int64_t>(ctasPerSplit / requests, 1);
    int64_t perCta = (totalKeyTiles * ctasPerRequest +
                      std::max<int64_t>(residentCtas, 1) - 1) /
                     std::max<int64_t>(residentCtas, 1);
    int64_t balance = (keyTiles + perCta - 1) / std::max<int64_t>(perCta, 1);
    fill = std::max(fill, balance);
  }
  return std::clamp<int64_t>(fill, 1, most);
}

} // namespace attnc
