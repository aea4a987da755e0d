//===- RegionGenerator.h - random score_mod / mask_mod bodies ---*- C++ -*-===//

#ifndef ATTNC_TEST_FUZZ_REGIONGENERATOR_H
#define ATTNC_TEST_FUZZ_REGIONGENERATOR_H

#include "Choices.h"

#include <string>
#include <vector>

namespace attnc::fuzz {

/// A captured buffer as a region sees it: its block argument's name, its
/// memref type, element type and rank.
struct Capture {
  std::string name, type, element;
  int rank;
};

/// A `score_mod { ... }` (f32 score and four indices in, f32 out) or
/// `mask_mod { ... }` (four indices in, i1 out) region, captures last,
/// ended by `yieldOp`.
std::string generateRegion(Choices &c, bool score,
                           const std::vector<Capture> &captures,
                           const std::string &yieldOp = "attn.yield");

} // namespace attnc::fuzz

#endif // ATTNC_TEST_FUZZ_REGIONGENERATOR_H
