// A score function no fixed kernel offers: a relative-position bias read
// from a learned table of 64 buckets per head, clamped by distance.
func.func @relative_bias(
    %q: !attn.q<?x16x64xbf16>,
    %k: !attn.kv<?x16x64xbf16>,
    %v: !attn.kv<?x16x64xbf16>,
    %bias: memref<16x64xf32>) -> !attn.out<?x16x64xbf16> {
  %out = attn.attention(%q, %k, %v) captures(%bias : memref<16x64xf32>)
      : !attn.q<?x16x64xbf16>, !attn.kv<?x16x64xbf16>, !attn.kv<?x16x64xbf16>
      -> !attn.out<?x16x64xbf16>
      score_mod {
      ^bb0(%score: f32, %batch: index, %head: index, %qi: index, %kvi: index,
           %table: memref<16x64xf32>):
        %c63 = arith.constant 63 : index
        %far = arith.cmpi ugt, %qi, %kvi : index
        %back = arith.subi %qi, %kvi : index
        %ahead = arith.subi %kvi, %qi : index
        %dist = arith.select %far, %back, %ahead : index
        %bucket = arith.minui %dist, %c63 : index
        %b = memref.load %table[%head, %bucket] : memref<16x64xf32>
        %biased = arith.addf %score, %b : f32
        attn.yield %biased : f32
      }
  return %out : !attn.out<?x16x64xbf16>
}
