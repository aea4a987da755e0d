// The document mask of document_mask.mlir in declarative form: segment ids
// per token of a ragged batch, so mask analysis can skip whole tiles.
func.func @document_segments(
    %q: !attn.q<?x16x128xbf16, ragged>,
    %k: !attn.kv<?x16x128xbf16, ragged>,
    %v: !attn.kv<?x16x128xbf16, ragged>,
    %q_docs: memref<?xi32>, %kv_docs: memref<?xi32>)
    -> !attn.out<?x16x128xbf16, ragged> {
  %out = attn.attention(%q, %k, %v)
      segments(%q_docs, %kv_docs : memref<?xi32>, memref<?xi32>) {causal}
      : !attn.q<?x16x128xbf16, ragged>,
        !attn.kv<?x16x128xbf16, ragged>,
        !attn.kv<?x16x128xbf16, ragged>
      -> !attn.out<?x16x128xbf16, ragged>
  return %out : !attn.out<?x16x128xbf16, ragged>
}
