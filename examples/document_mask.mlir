// Packed-document training batch: a query sees only earlier keys of its own
// document. The document ids are read through mask_mod from a captured
// buffer ([batch, seq]); the declarative form is document_segments.mlir.
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
           %ids: memref<?x?xi32>):
        %qdoc = memref.load %ids[%batch, %qi] : memref<?x?xi32>
        %kvdoc = memref.load %ids[%batch, %kvi] : memref<?x?xi32>
        %same = arith.cmpi eq, %qdoc, %kvdoc : i32
        attn.yield %same : i1
      }
  return %out : !attn.out<?x16x128xbf16>
}
