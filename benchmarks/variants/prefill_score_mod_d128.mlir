// A score_mod region at head dim 128 (two consumers): examples/custom_score_mod.mlir's
// relative-position bias table with 16 heads of 128, the region kernel whose
// cold compile docs/PERFORMANCE.md tracks (fifteenth session: csm128).
//
// A score function no fixed kernel offers: a relative-position bias read
// from a learned table of 64 buckets per head, clamped by distance.
//
// The distance is from the query's position in the sequence, not from %qi:
// a request's queries are its last q_len tokens of kv_len (chunked prefill,
// decode), so query %qi sits at %qi + %kv_len - %q_len, the bottom-right
// aligned position the declarative masks use. With %qi alone, a decode step
// would measure every key's distance from position 0.
func.func @prefill_score_mod_d128(
    %q: !attn.q<?x16x128xbf16>,
    %k: !attn.kv<?x16x128xbf16>,
    %v: !attn.kv<?x16x128xbf16>,
    %bias: memref<16x64xf32>) -> !attn.out<?x16x128xbf16> {
  %out = attn.attention(%q, %k, %v) captures(%bias : memref<16x64xf32>)
      : !attn.q<?x16x128xbf16>, !attn.kv<?x16x128xbf16>, !attn.kv<?x16x128xbf16>
      -> !attn.out<?x16x128xbf16>
      score_mod {
      ^bb0(%score: f32, %batch: index, %head: index, %qi: index, %kvi: index,
           %q_len: index, %kv_len: index, %table: memref<16x64xf32>):
        %end = arith.addi %qi, %kv_len : index
        %pos = arith.subi %end, %q_len : index
        %rel = arith.subi %pos, %kvi : index
        %dist = math.absi %rel : index
        %c63 = arith.constant 63 : index
        %bucket = arith.minui %dist, %c63 : index
        %b = memref.load %table[%head, %bucket] : memref<16x64xf32>
        %biased = arith.addf %score, %b : f32
        attn.yield %biased : f32
      }
  return %out : !attn.out<?x16x128xbf16>
}
