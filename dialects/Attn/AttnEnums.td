//===- AttnEnums.td - enums of the attn dialect ------------*- tablegen -*-===//

#ifndef ATTNC_DIALECT_ATTN_ENUMS_TD
#define ATTNC_DIALECT_ATTN_ENUMS_TD

include "mlir/IR/EnumAttr.td"

// How the tokens of a batch of requests are stored.
def Attn_TokenLayout : I32EnumAttr<"TokenLayout", "storage of a batch's tokens", [
    I32EnumAttrCase<"Dense", 0, "dense">,
    I32EnumAttrCase<"Ragged", 1, "ragged">,
    I32EnumAttrCase<"Paged", 2, "paged">
  ]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

// Order of the dimensions inside one KV page.
def Attn_PageOrder : I32EnumAttr<"PageOrder", "dimension order inside a page", [
    I32EnumAttrCase<"NHD", 0, "nhd">,
    I32EnumAttrCase<"HND", 1, "hnd">
  ]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

#endif // ATTNC_DIALECT_ATTN_ENUMS_TD
