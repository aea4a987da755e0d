//===- CascadeLevelsCheck.h - a step's cascade levels' contract -*- C++ -*-===//
//
// Checks a step's cascade attention levels (EngineBatch::cascade, the C
// API's cascade_* step arrays) against the contract EngineBatch states:
// FlashInfer's MultiLevelCascadeAttentionWrapper form (each level's
// entries partition the step's rows at request bounds, its index pointers
// and last page lengths sized alike), shared entries of full pages that
// precede their rows, read only by decodes and worth the cost rule, a last
// level of one causal entry per request, and every request's pages, level
// by level, its page table's.
//
// Shared by the unit test (CascadeLevelsTest.cpp, over EngineBatch) and the
// serving fuzz target (FuzzServing.cpp, over attnc_step_info): both see a
// step as plain arrays, so the header needs neither attnc's serving headers
// nor gtest, and says what broke as a string either reports.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_SUPPORT_CASCADELEVELSCHECK_H
#define ATTNC_TEST_SUPPORT_CASCADELEVELSCHECK_H

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace attnc::check {

/// A step's rows and page table, as EngineBatch and attnc_step_info hold
/// them. The caller has checked them: qoIndptr and pageIndptr run from 0,
/// non-decreasing, to numRows and to the page table's size.
struct CascadeBatchView {
  int64_t numRequests = 0;
  int64_t numDecodes = 0; // the first numDecodes requests decode
  int64_t numRows = 0;
  const int32_t *qoIndptr = nullptr;    // numRequests + 1
  const int32_t *pageIndptr = nullptr;  // numRequests + 1
  const int32_t *pageIndices = nullptr; // pageIndptr[numRequests]
  const int32_t *lastPageLen = nullptr; // numRequests
  const int32_t *positions = nullptr;   // numRows
};

/// One level (CascadeLevel): `entries` entries, their index pointers
/// entries + 1 long, their last page lengths, numKvIndices pages.
struct CascadeLevelView {
  int64_t entries = 0;
  const int32_t *qoIndptr = nullptr;
  const int32_t *kvIndptr = nullptr;
  const int32_t *kvLastPageLen = nullptr;
  const int32_t *kvIndices = nullptr;
  int64_t numKvIndices = 0;
};

/// The cost rule and the level cap the planner keeps (CascadeCost).
struct CascadeRules {
  int64_t minSharers = 2;
  int64_t minSharedTokens = 1;
  int64_t maxLevels = 32;
};

/// What the checked steps' levels held: page reads shared entries save (one
/// per request but the first), shared entries, entries of a level reading
/// the same pages as another (a group split into runs of rows), shared
/// levels at most.
struct CascadeLevelStats {
  int64_t steps = 0, stepsWithLevels = 0, savedPages = 0, sharedEntries = 0,
          deepest = 0, splitEntries = 0;
};

/// The first rule `levels` break, or "" when they keep the contract.
inline std::string checkCascadeLevels(
    const CascadeBatchView &batch, const std::vector<CascadeLevelView> &levels,
    int64_t pageSize, const CascadeRules &rules, CascadeLevelStats &stats) {
  auto at = [](size_t l, int64_t e) {
    return " (level " + std::to_string(l) + ", entry " + std::to_string(e) +
           ")";
  };
  ++stats.steps;
  if (levels.empty())
    return ""; // plain paged attention: nothing shared
  ++stats.stepsWithLevels;
  if (levels.size() < 2)
    return "one level: a shared level and the last are the fewest";
  if (int64_t(levels.size()) > rules.maxLevels)
    return std::to_string(levels.size()) + " levels, past one merge's " +
           std::to_string(rules.maxLevels);
  stats.deepest = std::max(stats.deepest, int64_t(levels.size()) - 1);
  int64_t requests = batch.numRequests;
  const int32_t *qoBegin = batch.qoIndptr, *qoEnd = qoBegin + requests + 1;
  // Rows to requests: the last request whose first row is at or before.
  auto requestOfRow = [&](int32_t row) {
    return int64_t(std::upper_bound(qoBegin, qoEnd, row) - qoBegin) - 1;
  };
  std::set<int32_t> bounds(qoBegin, qoEnd);
  std::vector<std::vector<int32_t>> rebuilt(
      size_t(std::max<int64_t>(requests, 0)));
  bool anyShared = false;
  for (size_t l = 0; l < levels.size(); ++l) {
    const CascadeLevelView &level = levels[l];
    bool last = l + 1 == levels.size();
    int64_t entries = level.entries;
    if (entries < 1)
      return "a level of no entries" + at(l, 0);
    // The sizes first: everything below reads within them.
    if (level.qoIndptr[0] != 0 || level.qoIndptr[entries] != batch.numRows)
      return "qo_indptr does not run from 0 to the step's " +
             std::to_string(batch.numRows) + " rows" + at(l, entries);
    if (level.kvIndptr[0] != 0 || level.kvIndptr[entries] != level.numKvIndices)
      return "kv_indptr does not run from 0 to the level's " +
             std::to_string(level.numKvIndices) + " pages" + at(l, entries);
    for (int64_t e = 0; e < entries; ++e) {
      // Every entry feeds rows: the entries partition the step's rows.
      if (level.qoIndptr[e] >= level.qoIndptr[e + 1])
        return "qo_indptr not increasing" + at(l, e);
      if (level.kvIndptr[e] > level.kvIndptr[e + 1])
        return "kv_indptr decreasing" + at(l, e);
    }
    if (last) {
      if (entries != requests)
        return "the last level has " + std::to_string(entries) +
               " entries for " + std::to_string(requests) + " requests";
      for (int64_t e = 0; e <= entries; ++e)
        if (level.qoIndptr[e] != batch.qoIndptr[e])
          return "the last level's qo_indptr is not the step's" + at(l, e);
      for (int64_t e = 0; e < entries; ++e)
        if (level.kvLastPageLen[e] != batch.lastPageLen[e])
          return "the last level's last page length is not the page "
                 "table's" +
                 at(l, e);
    }
    std::set<std::vector<int32_t>> read;
    for (int64_t e = 0; e < entries; ++e) {
      int32_t begin = level.qoIndptr[e], end = level.qoIndptr[e + 1];
      // Entries cut rows at requests' bounds only.
      if (!bounds.count(begin) || !bounds.count(end))
        return "rows [" + std::to_string(begin) + ", " + std::to_string(end) +
               ") cut a request's rows" + at(l, e);
      std::vector<int32_t> pages(level.kvIndices + level.kvIndptr[e],
                                 level.kvIndices + level.kvIndptr[e + 1]);
      int64_t first = requestOfRow(begin), past = requestOfRow(end - 1) + 1;
      int32_t lastLen = level.kvLastPageLen[e];
      if (last) {
        if (pages.empty())
          return "a request's last-level entry has no page" + at(l, e);
        // Causal, bottom-right aligned: its keys hold every row's.
        int64_t keys = int64_t(pages.size() - 1) * pageSize + lastLen;
        if (keys < end - begin)
          return std::to_string(keys) + " keys for " +
                 std::to_string(end - begin) + " rows" + at(l, e);
      } else if (pages.empty()) {
        if (lastLen != 0)
          return "an entry of no pages with last page length " +
                 std::to_string(lastLen) + at(l, e);
      } else {
        anyShared = true;
        ++stats.sharedEntries;
        stats.savedPages += int64_t(pages.size()) * (past - first - 1);
        if (lastLen != pageSize)
          return "a shared entry's last page holds " + std::to_string(lastLen) +
                 " of " + std::to_string(pageSize) + at(l, e);
        if (past - first < rules.minSharers)
          return std::to_string(past - first) + " sharers, fewer than " +
                 std::to_string(rules.minSharers) + at(l, e);
        if (int64_t(pages.size()) * pageSize < rules.minSharedTokens)
          return std::to_string(pages.size()) + " pages shared, fewer than " +
                 std::to_string(rules.minSharedTokens) + " tokens" + at(l, e);
        // Only decodes share levels (a prompt chunk's rows are
        // compute-bound against their prefix).
        if (past > batch.numDecodes)
          return "request " + std::to_string(past - 1) +
                 " of a shared entry is not among the " +
                 std::to_string(batch.numDecodes) + " decodes" + at(l, e);
        stats.splitEntries += !read.insert(pages).second;
        // Not causal: every key precedes each request's first row.
        for (int64_t r = first; r < past; ++r)
          if (int64_t(rebuilt[size_t(r)].size() + pages.size()) * pageSize >
              batch.positions[batch.qoIndptr[r]])
            return "request " + std::to_string(r) +
                   "'s shared keys reach its first row, position " +
                   std::to_string(batch.positions[batch.qoIndptr[r]]) +
                   at(l, e);
      }
      for (int64_t r = first; r < past; ++r)
        rebuilt[size_t(r)].insert(rebuilt[size_t(r)].end(), pages.begin(),
                                  pages.end());
    }
  }
  if (!anyShared)
    return "levels with nothing shared";
  for (int64_t r = 0; r < requests; ++r) {
    std::vector<int32_t> table(batch.pageIndices + batch.pageIndptr[r],
                               batch.pageIndices + batch.pageIndptr[r + 1]);
    if (rebuilt[size_t(r)] != table)
      return "request " + std::to_string(r) +
             "'s pages level by level are not its page table's";
  }
  return "";
}

} // namespace attnc::check

#endif // ATTNC_TEST_SUPPORT_CASCADELEVELSCHECK_H
