// RUN: not attnc compile %s --emit=attn 2>&1 | FileCheck %s

// MLIR 22's parser segfaults on a dense array of index; attnc refuses it
// with a diagnostic before the parser sees it (docs/UPSTREAM.md).
// CHECK: attnc-parser-hazard.mlir:[[# @LINE + 1]]:32: error: dense arrays of 'index' are not supported
func.func @f() attributes {x = array<index: 1>} {
  return
}
