// MLIR lexes `#` and a digit as digits only: `%a#4000000000overflow` is
// result number 4000000000 of %a, then `overflow`. The guard once took the
// whole suffix as a name and let the number through (LLVM's out of memory).
func.func @f(%a: i32) -> i32 {
  %r = arith.addi %a, %a#4000000000overflow<nsw> : i32
  return %r : i32
}
