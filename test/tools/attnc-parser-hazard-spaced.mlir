// RUN: not attnc compile %s --emit=attn 2>&1 | FileCheck %s

// A result number may stand apart from its value, across spaces and
// comments: MLIR's parser allocates that many results before it reports
// anything, so attnc refuses it, wherever it stands (docs/UPSTREAM.md).
func.func @f() {
  // CHECK: attnc-parser-hazard-spaced.mlir:[[# @LINE + 2]]:3: error: result number #2147483647 is larger than 4096
  "func.return"(%0 // the value
  #2147483647) : (i32) -> ()
}
