//===- KVSplits.h - how split-KV launches cut the keys ------------*- C++
//-*-===//
//
// A split-KV launch runs a CTA per (row block, head group, request, split).
// Splitting helps only while it fills the GPU: every CTA past what the GPU
// holds at once starts a second, partly empty wave, and a split with no
// key tile of its own is a launch slot spent writing an empty state.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_EXEC_KVSPLITS_H
#define ATTNC_RUNTIME_EXEC_KVSPLITS_H

#include <cstdint>

namespace attnc {

/// How a split-KV launch cuts each request's visible key tiles.
struct KVSplits {
  /// Splits of the longest request: the launch's CTAs per row block.
  int64_t splits = 1;
  /// Tiles of each split, so that a request takes only the splits its
  /// tiles need; 0: every request's tiles in `splits` even shares.
  int64_t tilesPerSplit = 0;
};

/// Splits for `ctasPerSplit` CTAs on a GPU that holds `residentCtas` at
/// once, when the longest request has `keyTiles` tiles and the plan allows
/// `maxSplits`: as many as fit one wave, at least 1, at most one per tile.
///
/// A ragged batch of `requests` whose tiles add up to `totalKeyTiles` (0:
/// unknown) is split further where the longest request would otherwise
/// outlast the rest: until its shares are no longer than what each
/// resident CTA would do if the work were spread evenly. A kernel that
/// merges its own splits (`perRequest`) skips the splits a request does
/// not need, so there every request is cut into shares of half that even
/// load: the GPU's scheduler then balances two waves of shares of equal
/// size, where a request's even shares would leave short requests' CTAs
/// nearly empty.
KVSplits chooseKVSplits(int64_t ctasPerSplit, int64_t residentCtas,
                        int64_t keyTiles, int64_t maxSplits,
                        int64_t requests = 1, int64_t totalKeyTiles = 0,
                        bool perRequest = false);

} // namespace attnc

#endif // ATTNC_RUNTIME_EXEC_KVSPLITS_H
