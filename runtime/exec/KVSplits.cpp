//===- KVSplits.cpp - how many parts a split-KV launch cuts keys into -----===//

#include "exec/KVSplits.h"

#include <algorithm>

namespace attnc {

int64_t chooseKVSplits(int64_t ctasPerSplit, int64_t residentCtas,
                       int64_t keyTiles, int64_t maxSplits) {
  int64_t fill = residentCtas / std::max<int64_t>(ctasPerSplit, 1);
  int64_t most = std::max<int64_t>(1, std::min(keyTiles, maxSplits));
  return std::clamp<int64_t>(fill, 1, most);
}

} // namespace attnc
