//===- ReferenceTest.cpp - the CPU reference on hand-computed cases -------===//

#include "attnc/Check/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace attnc::reference {
namespace {

/// One head of dim 1: q . k is q * k, and with scale 1 the score is exact.
Variant scalarVariant() {
  Variant v;
  v.qHeads = v.kvHeads = 1;
  v.qkDim = v.vDim = 1;
  v.scale = 1.0;
  return v;
}

Request request(std::vector<double> q, std::vector<double> k,
                std::vector<double> v) {
  Request r;
  r.qLen = int64_t(q.size());
  r.kvLen = int64_t(k.size());
  r.q = std::move(q);
  r.k = std::move(k);
  r.v = std::move(v);
  return r;
}

TEST(Reference, SoftmaxWeightsValues) {
  // Scores 0 and ln 3: weights 1/4 and 3/4.
  State s =
      attention(scalarVariant(), request({1}, {0, std::log(3.0)}, {1, 5}), 0);
  EXPECT_NEAR(s.out[0], 0.25 * 1 + 0.75 * 5, 1e-12);
  EXPECT_NEAR(s.lse[0], std::log(4.0), 1e-12);
}

TEST(Reference, CausalIsAlignedBottomRight) {
  Variant v = scalarVariant();
  v.causal = true;
  // Two queries over two keys: query 0 sits at position 0 and sees key 0.
  State s = attention(v, request({1, 1}, {0, std::log(3.0)}, {1, 5}), 0);
  EXPECT_NEAR(s.out[0], 1.0, 1e-12);
  EXPECT_NEAR(s.lse[0], 0.0, 1e-12);
  EXPECT_NEAR(s.out[1], 4.0, 1e-12);
  // One query over two keys sits at position 1 and sees both.
  State decode = attention(v, request({1}, {0, std::log(3.0)}, {1, 5}), 0);
  EXPECT_NEAR(decode.out[0], 4.0, 1e-12);
}

TEST(Reference, WindowKeepsSinks) {
  Variant v = scalarVariant();
  v.causal = true;
  v.windowLeft = 1;
  v.windowRight = 0;
  v.sinks = 1;
  // Position 3 sees keys 2, 3 (window) and 0 (sink), not 1; equal scores.
  State s = attention(v, request({0}, {0, 0, 0, 0}, {1, 2, 3, 4}), 0);
  EXPECT_NEAR(s.out[0], (1.0 + 3.0 + 4.0) / 3.0, 1e-12);
  EXPECT_NEAR(s.lse[0], std::log(3.0), 1e-12);
}

TEST(Reference, SoftcapBoundsScores) {
  Variant v = scalarVariant();
  v.softcap = 2.0;
  State s = attention(v, request({1}, {10}, {7}), 0);
  EXPECT_NEAR(s.out[0], 7.0, 1e-12);
  EXPECT_NEAR(s.lse[0], 2.0 * std::tanh(5.0), 1e-12);
}

TEST(Reference, AlibiBiasesByDistance) {
  Variant v = scalarVariant();
  v.alibi = true;
  EXPECT_DOUBLE_EQ(alibiSlope(0, 1), 1.0 / 256.0);
  EXPECT_DOUBLE_EQ(alibiSlope(0, 8), 0.5);
  EXPECT_DOUBLE_EQ(alibiSlope(7, 8), 1.0 / 256.0);
  EXPECT_DOUBLE_EQ(alibiSlope(8, 12), std::exp2(-0.5)); // interleaved extra
  // Zero products: scores are the biases -1/256 (key 0) and 0 (key 1).
  State s = attention(v, request({0}, {0, 0}, {2, 6}), 0);
  double w0 = std::exp(-1.0 / 256.0);
  EXPECT_NEAR(s.out[0], (w0 * 2 + 6) / (w0 + 1), 1e-12);
}

TEST(Reference, GroupedHeadsShareKeys) {
  Variant v = scalarVariant();
  v.qHeads = 4;
  v.kvHeads = 2;
  // Query heads 0, 1 read KV head 0 (value 1); heads 2, 3 read head 1 (9).
  Request r = request({1, 1, 1, 1}, {0, 0}, {1, 9});
  r.qLen = 1; // one token of four heads over one key of two heads
  r.kvLen = 1;
  State s = attention(v, r, 0);
  EXPECT_NEAR(s.out[0], 1.0, 1e-12);
  EXPECT_NEAR(s.out[1], 1.0, 1e-12);
  EXPECT_NEAR(s.out[2], 9.0, 1e-12);
  EXPECT_NEAR(s.out[3], 9.0, 1e-12);
}

TEST(Reference, ModifierRegionsSeeTheirRequest) {
  Variant v = scalarVariant();
  v.maskMod = [](const Position &at) {
    return !(at.batch == 1 && at.key == 0);
  };
  v.scoreMod = [](double s, const Position &at) {
    return s + (at.key == 1 ? std::log(3.0) : 0.0);
  };
  Request r = request({0}, {0, 0}, {1, 5});
  EXPECT_NEAR(attention(v, r, 0).out[0], 4.0, 1e-12);
  EXPECT_NEAR(attention(v, r, 1).out[0], 5.0, 1e-12); // key 0 hidden
}

TEST(Reference, ModifierRegionsSeeTheRequestLengths) {
  // Two queries (a chunk) over five keys: the regions see q_len 2, kv_len 5.
  Variant v = scalarVariant();
  std::vector<Position> seen;
  v.maskMod = [&](const Position &at) {
    seen.push_back(at);
    return true;
  };
  attention(v, request({1, 1}, {0, 0, 0, 0, 0}, {1, 2, 3, 4, 5}), 3);
  ASSERT_EQ(seen.size(), 10u);
  for (const Position &at : seen) {
    EXPECT_EQ(at.batch, 3);
    EXPECT_EQ(at.qLen, 2);
    EXPECT_EQ(at.kvLen, 5);
  }
  EXPECT_EQ(seen.back().query, 1);
  EXPECT_EQ(seen.back().key, 4);
}

TEST(Reference, MaskModAtTheAlignedPositionIsCausal) {
  // kvi <= qi + kv_len - q_len is the declarative causal mask, in prefill,
  // chunked prefill and decode alike; kvi <= qi is not once q_len < kv_len.
  Variant declarative = scalarVariant();
  declarative.causal = true;
  Variant written = scalarVariant();
  written.maskMod = [](const Position &at) {
    return at.key <= at.query + at.kvLen - at.qLen;
  };
  Variant naive = scalarVariant();
  naive.maskMod = [](const Position &at) { return at.key <= at.query; };
  std::vector<double> keys{0.3, -0.2, 0.9, 0.1, -0.7}, values{1, 2, 3, 4, 5};
  for (std::vector<double> queries :
       {std::vector<double>{1, -1, 2, 0.5, 1}, {1, -1}, {2}}) {
    Request r = request(queries, keys, values);
    State expected = attention(declarative, r, 0);
    EXPECT_EQ(relativeError(attention(written, r, 0).out, expected.out), 0.0)
        << queries.size() << " queries";
    if (queries.size() < keys.size())
      EXPECT_GT(relativeError(attention(naive, r, 0).out, expected.out), 0.1)
          << queries.size() << " queries";
  }
}

TEST(Reference, RaggedRequestsAreIndependent) {
  Variant v = scalarVariant();
  v.causal = true;
  State shortOne = attention(v, request({1}, {0}, {3}), 0);
  State longOne = attention(v, request({1, 1, 1}, {0, 0, 0}, {3, 6, 9}), 1);
  EXPECT_NEAR(shortOne.out[0], 3.0, 1e-12);
  EXPECT_NEAR(longOne.out[2], 6.0, 1e-12);
  EXPECT_NEAR(longOne.out[1], 4.5, 1e-12);
}

TEST(Reference, DocumentSegmentsMask) {
  Variant v = scalarVariant();
  v.segments = true;
  Request r = request({0}, {0, 0, 0}, {1, 2, 4});
  r.qSegments = {7};
  r.kvSegments = {3, 7, 7};
  EXPECT_NEAR(attention(v, r, 0).out[0], 3.0, 1e-12);
}

TEST(Reference, QueryWithoutKeysGivesZeroAndMinusInfinity) {
  Variant v = scalarVariant();
  v.causal = true;
  // Two queries over one key: query 0 sits at position -1 and sees nothing.
  State s = attention(v, request({1, 1}, {0}, {5}), 0);
  EXPECT_EQ(s.out[0], 0.0);
  EXPECT_EQ(s.lse[0], -std::numeric_limits<double>::infinity());
  EXPECT_NEAR(s.out[1], 5.0, 1e-12);
}

TEST(Reference, MergeStatesWeightsByLse) {
  State a{{1.0}, {0.0}}, b{{3.0}, {std::log(3.0)}};
  State m = mergeStates({a, b}, 1);
  EXPECT_NEAR(m.out[0], 0.25 * 1 + 0.75 * 3, 1e-12);
  EXPECT_NEAR(m.lse[0], std::log(4.0), 1e-12);
  // A state over no keys contributes nothing, whatever its output holds.
  State empty{{std::nan("")}, {-std::numeric_limits<double>::infinity()}};
  State same = mergeStates({a, empty}, 1);
  EXPECT_NEAR(same.out[0], 1.0, 1e-12);
  EXPECT_NEAR(same.lse[0], 0.0, 1e-12);
}

TEST(Reference, MergeOfSplitsEqualsTheWhole) {
  Variant v = scalarVariant();
  Request whole = request({0.5}, {0.1, -2, 3, 0.7}, {1, 2, 3, 4});
  Request left = request({0.5}, {0.1, -2}, {1, 2});
  Request right = request({0.5}, {3, 0.7}, {3, 4});
  State expected = attention(v, whole, 0);
  State merged =
      mergeStates({attention(v, left, 0), attention(v, right, 0)}, 1);
  EXPECT_NEAR(merged.out[0], expected.out[0], 1e-12);
  EXPECT_NEAR(merged.lse[0], expected.lse[0], 1e-12);
}

TEST(Reference, RelativeErrorFailsOnNaN) {
  EXPECT_EQ(relativeError({std::nan("")}, {1.0}),
            std::numeric_limits<double>::infinity());
  EXPECT_NEAR(relativeError({1.01, 2.0}, {1.0, 2.0}), 0.005, 1e-12);
}

} // namespace
} // namespace attnc::reference
