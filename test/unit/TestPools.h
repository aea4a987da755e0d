//===- TestPools.h - pools for the runtime's tests --------------*- C++ -*-===//

#ifndef ATTNC_TEST_UNIT_TESTPOOLS_H
#define ATTNC_TEST_UNIT_TESTPOOLS_H

#include "kv/PagedKVPool.h"

#include <gtest/gtest.h>

namespace attnc {

/// A pool that keeps page accounting only, as the scheduler's tests need.
inline std::unique_ptr<PagedKVPool> makeAccountingPool(int64_t pages,
                                                       int64_t pageSize) {
  PoolConfig config;
  config.numPages = pages;
  config.pageSize = pageSize;
  config.memory = PoolMemory::AccountingOnly;
  StatusOr<std::unique_ptr<PagedKVPool>> pool = PagedKVPool::create(config);
  EXPECT_TRUE(pool.ok()) << pool.status().toString();
  return std::move(*pool);
}

} // namespace attnc

#endif // ATTNC_TEST_UNIT_TESTPOOLS_H
