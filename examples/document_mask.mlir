// Packed-document training batch: a query sees only earlier keys of its own
// document. The document ids are read through mask_mod from a captured
// buffer ([batch, seq], by position in the sequence); the declarative form
// is document_segments.mlir. The query's position is qi + kv_len - q_len,
// which is qi itself when a request's queries are all its tokens and stays
// right under chunked prefill.
func.func @document_mask(
    %q: !attn.q<?x16x128xbf16>,
    %k: !attn.kv<?x16x128xbf16>,
    %v: !attn.kv<?x16x128xbf16>,
    %doc: memref<?x?xi32>) -> !attn.out<?x16x128xbf16> {
  %out = attn.attention(%q, %k, %v) captures(%doc : memref<?x?xi32>) {causal}
      : !attn.q<?x16x128xbf16>, !attn.kv<?x16x128xbf16>, !attn.kv<?x16x128xbf16>
      -> !attn.out<?x16x128xbf16>
      mask_mod {
      ^bb0(%batch: index, %head: index, %qi: index, %kvi: index,
           %q_len: index, %kv_len: index, %ids: memref<?x?xi32>):
        %end = arith.addi %qi, %kv_len : index
        %pos = arith.subi %end, %q_len : index
        %qdoc = memref.load %ids[%batch, %pos] : memref<?x?xi32>
        %kvdoc = memref.load %ids[%batch, %kvi] : memref<?x?xi32>
        %same = arith.cmpi eq, %qdoc, %kvdoc : i32
        attn.yield %same : i1
      }
  return %out : !attn.out<?x16x128xbf16>
}
