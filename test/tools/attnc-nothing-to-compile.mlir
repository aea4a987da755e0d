// RUN: not attnc compile %s --emit=cuda 2>&1 | FileCheck %s

// A module without attention compiles to nothing: that is an error, not an
// empty kernel file.
// CHECK: attnc-nothing-to-compile.mlir:[[# @LINE + 1]]:1: error: nothing to compile: the module has no attn.attention or attn.merge_states
func.func @f() {
  return
}
