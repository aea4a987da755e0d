//===- Reference.h - double-precision attention reference -----------------===//
//
// The oracle every kernel is checked against. It works on logical
// per-request arrays (whatever the device layout: ragged, paged...), so the
// conversion from a device layout is written once, in the test, and checked
// independently of the kernel.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CHECK_REFERENCE_H
#define ATTNC_CHECK_REFERENCE_H

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace attnc::reference {

/// One request: q [qLen][qHeads][qkDim], k [kvLen][kvHeads][qkDim],
/// v [kvLen][kvHeads][vDim], optional document ids per token.
struct Request {
  int64_t qLen = 0, kvLen = 0;
  std::vector<double> q, k, v;
  std::vector<int32_t> qSegments, kvSegments;
};

/// Where a score sits, as score_mod / mask_mod regions see it: query and
/// key index the request's tokens, which has qLen queries and kvLen keys.
struct Position {
  int64_t batch = 0, head = 0, query = 0, key = 0, qLen = 0, kvLen = 0;
};

struct Variant {
  int64_t qHeads = 1, kvHeads = 1, qkDim = 64, vDim = 64;
  bool causal = false;
  std::optional<int64_t> windowLeft, windowRight; // unbounded when empty
  int64_t sinks = 0;
  double scale = 0.0; // 0: 1/sqrt(qkDim)
  double softcap = 0.0;
  bool alibi = false;
  bool segments = false;
  std::function<double(double score, const Position &)> scoreMod;
  std::function<bool(const Position &)> maskMod; // true: visible
};

/// Attention state of one request: out [qLen][qHeads][vDim] and
/// lse [qLen][qHeads] (natural log; -inf for a query that sees no key).
struct State {
  std::vector<double> out, lse;
};

/// The ALiBi slope of `head` among `heads` (geometric, interleaved for head
/// counts that are not powers of two).
double alibiSlope(int64_t head, int64_t heads);

State attention(const Variant &variant, const Request &request,
                int64_t batchIndex);

/// Merges states of the same queries over disjoint key sets.
State mergeStates(const std::vector<State> &states, int64_t vDim);

/// Largest |a - b| over max |b|, the error measure the tests bound; NaN in
/// `a` gives +inf.
double relativeError(const std::vector<double> &a,
                     const std::vector<double> &b);

} // namespace attnc::reference

#endif // ATTNC_CHECK_REFERENCE_H
