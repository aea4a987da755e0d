// RUN: not attn-opt %s 2>&1 | FileCheck %s

// A malformed type is an error at its parameter list, and the driver
// exits non-zero.
// CHECK: attn-opt-parse-error.mlir:[[# @LINE + 1]]:33: error: page size must be between 1 and 256, got 300
func.func @bad_page(%k: !attn.kv<?x8x128xbf16, paged<300, nhd>>) {
  return
}
