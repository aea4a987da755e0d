//===- RegionInterpreter.h - score_mod / mask_mod in double -----*- C++ -*-===//

#ifndef ATTNC_CHECK_REGIONINTERPRETER_H
#define ATTNC_CHECK_REGIONINTERPRETER_H

#include "mlir/IR/Region.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnc {

/// A captured buffer on the host: row-major data and sizes.
struct HostBuffer {
  std::vector<double> data;
  std::vector<int64_t> sizes;
};

/// Evaluates a modifier region of attn.attention in double precision.
/// Leading block arguments get `scalars` (the score as a double, then the
/// indices), the trailing ones `captures`; returns the yielded value (a
/// score, or 1/0 for a mask).
/// Returns nothing (and says why in `error`) for an op it cannot evaluate.
std::optional<double>
evaluateRegion(mlir::Region &region, const std::vector<double> &scalars,
               const std::vector<const HostBuffer *> &captures,
               std::string &error);

} // namespace attnc

#endif // ATTNC_CHECK_REGIONINTERPRETER_H
