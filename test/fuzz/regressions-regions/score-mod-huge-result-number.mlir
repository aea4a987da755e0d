
// A score_mod (after the empty line of spec choices: the plain spec)
// naming result #2147483647 of a value: MLIR's parser allocates that many
// placeholder results before it reports the error ("LLVM ERROR: out of
// memory"). Pasted by attnc_variant_from_spec into the variant it writes,
// the region text meets the parse entry's guard (ParserHazards.cpp).
^bb0(%score: f32, %b: index, %h: index, %qi: index, %kvi: index,
     %q_len: index, %kv_len: index):
  "func.return"(%0 #2147483647) : (i32) -> ()
