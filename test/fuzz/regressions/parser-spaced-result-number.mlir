// The result number may stand apart from its value (spaces, a comment):
// MLIR's parser still allocates that many results ("LLVM ERROR: out of
// memory"); the guard reads tokens, so it refuses this too.
func.func @f() {
 "func.return"(%0 // apart
 #2147483647) : (i32) -> ()
}
