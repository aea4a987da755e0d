// A forward reference to result #N makes MLIR's parser allocate N
// placeholder results before it reports the error; attnc refuses large N
// (lib/Driver/ParserHazards.cpp).
func.func @f() {
  "test.use"(%x#4000000000) : (i32) -> ()
  %x = "test.def"() : () -> i32
  return
}
