// RUN: not attnc cache --cache-dir %t prune --max-age-days 36501 2>&1 | FileCheck %s

// `attnc cache prune` takes ages of 0 to 36500 days (and sizes of 0 to
// 2^62 bytes): anything else, a number too large for a day count included,
// is refused by name before the cache is touched (exit 2).
// CHECK: --max-age-days: Value 36501 not in range 0 to 36500
func.func @unused() {
  return
}
