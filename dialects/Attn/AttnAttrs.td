//===- AttnAttrs.td - attributes of the attn dialect -------*- tablegen -*-===//

#ifndef ATTNC_DIALECT_ATTN_ATTRS_TD
#define ATTNC_DIALECT_ATTN_ATTRS_TD

include "AttnDialect.td"
include "mlir/IR/AttrTypeBase.td"

def Attn_WindowAttr : AttrDef<Attn_Dialect, "Window"> {
  let mnemonic = "window";
  let summary = "sliding window of keys around each query's position";
  let description = [{
    `#attn.window<left, right>` lets the query at position `p` see the keys
    `j` with `p - left <= j <= p + right`. Positions are aligned bottom-right:
    query `i` of a request with `q_len` queries and `kv_len` keys sits at
    `p = i + kv_len - q_len`. A window whose right extent is 0 is causal.

    ```mlir
    #attn.window<1024, 0>   // Mistral-style causal sliding window
    #attn.window<128, 128>  // local bidirectional attention
    ```
  }];
  let parameters = (ins "int64_t":$left, "int64_t":$right);
  let assemblyFormat = "`<` $left `,` $right `>`";
  let genVerifyDecl = 1;
}

#endif // ATTNC_DIALECT_ATTN_ATTRS_TD
