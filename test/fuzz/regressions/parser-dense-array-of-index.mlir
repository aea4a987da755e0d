// MLIR's parser cannot size the elements of array<index: ...> and crashes;
// attnc refuses it (lib/Driver/ParserHazards.cpp).
func.func @f() attributes {a = array<index: 1, 2>} {
  return
}
