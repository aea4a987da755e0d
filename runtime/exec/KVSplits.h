//===- KVSplits.h - how many parts split-KV cuts the keys into --*- C++ -*-===//
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

/// Splits for `ctasPerSplit` CTAs on a GPU that holds `residentCtas` at
/// once, when the longest request has `keyTiles` tiles and the plan allows
/// `maxSplits`: as many as fit one wave, at least 1, at most one per tile.
/// A ragged batch of `requests` whose tiles add up to `totalKeyTiles` (0:
/// unknown) is split further where the longest request would otherwise
/// outlast the rest: until its shares are no longer than what each
/// resident CTA would do if the work were spread evenly.
int64_t chooseKVSplits(int64_t ctasPerSplit, int64_t residentCtas,
                       int64_t keyTiles, int64_t maxSplits,
                       int64_t requests = 1, int64_t totalKeyTiles = 0);

} // namespace attnc

#endif // ATTNC_RUNTIME_EXEC_KVSPLITS_H
