//===- AttnTypes.td - operand descriptors of attn ops ------*- tablegen -*-===//
//
// Each type describes a batch of requests' tokens: the per-request sequence
// length (`?` when it varies), head count, head dim, element type and how the
// tokens are laid out in memory. Only the shapes that never change between
// launches are in the type; pointers, lengths and page tables are bound when
// the kernel runs.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DIALECT_ATTN_TYPES_TD
#define ATTNC_DIALECT_ATTN_TYPES_TD

include "AttnDialect.td"
include "mlir/IR/AttrTypeBase.td"

class Attn_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Attn_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

// Parameters shared by the per-head token tensors (queries, keys/values and
// outputs): `seq x heads x dim x element`, then the layout.
defvar Attn_HeadTensorParameters = (ins
  "int64_t":$seqLen,
  "int64_t":$numHeads,
  "int64_t":$headDim,
  "::mlir::Type":$elementType,
  "::mlir::attn::TokenLayout":$layout,
  DefaultValuedParameter<"int64_t", "0">:$pageSize,
  DefaultValuedParameter<"::mlir::attn::PageOrder",
                         "::mlir::attn::PageOrder::NHD">:$pageOrder
);

def Attn_QueryType : Attn_Type<"Query", "q"> {
  let summary = "queries of a batch of requests";
  let description = [{
    `!attn.q<SEQ x HEADS x DIM x ELT [, ragged]>`: `SEQ` queries per request
    (`?` when it varies; `1` is decode), `HEADS` query heads of `DIM`
    elements. Dense queries are stored `[batch, seq, heads, dim]`; ragged ones
    `[total_tokens, heads, dim]` with an index pointer per request.

    ```mlir
    !attn.q<1x32x128xbf16>          // decode: one query token per request
    !attn.q<?x32x128xbf16, ragged>  // prefill of a packed batch
    ```
  }];
  let parameters = Attn_HeadTensorParameters;
}

def Attn_KVType : Attn_Type<"KV", "kv"> {
  let summary = "keys or values of a batch of requests";
  let description = [{
    `!attn.kv<SEQ x HEADS x DIM x ELT [, ragged | paged<PAGE, nhd|hnd>]>`.
    Paged keys live in fixed-size pages addressed through a CSR page table
    (indptr, indices, last_page_len) bound at run time; `nhd` stores a page as
    `[page, heads, dim]`, `hnd` as `[heads, page, dim]`. Keys may be stored in
    fp8 (`f8E4M3FN`, `f8E5M2`) while queries stay in bf16 or f16.

    ```mlir
    !attn.kv<?x8x128xbf16, paged<16, nhd>>
    !attn.kv<4096x8x128xbf16>  // every request holds exactly 4096 keys
    ```
  }];
  let parameters = Attn_HeadTensorParameters;
}

def Attn_OutputType : Attn_Type<"Output", "out"> {
  let summary = "attention output of a batch of requests";
  let description = [{
    `!attn.out<SEQ x HEADS x DIM x ELT [, ragged]>`, laid out like the queries
    it answers; `DIM` is the value head dim. `f32` outputs hold partial states
    that a later `attn.merge_states` combines.
  }];
  let parameters = Attn_HeadTensorParameters;
}

def Attn_LseType : Attn_Type<"Lse", "lse"> {
  let summary = "log-sum-exp of the scores of each query and head";
  let description = [{
    `!attn.lse<SEQ x HEADS [, ragged]>`: the natural logarithm of the sum of
    the exponentiated (scaled, modified, masked) scores, one `f32` per query
    and head. Together with an output it forms an attention state.
  }];
  let parameters = (ins "int64_t":$seqLen, "int64_t":$numHeads,
                        "::mlir::attn::TokenLayout":$layout);
}

def Attn_LatentKVType : Attn_Type<"LatentKV", "latent_kv"> {
  let summary = "multi-head latent attention (MLA) KV cache";
  let description = [{
    `!attn.latent_kv<SEQ x DIM x ELT, rope = R [, layout]>`: one compressed
    vector of `DIM` elements per token, shared by every query head. Its first
    `DIM - R` elements are the latent part, which serves as the value; the
    last `R` are the decoupled rotary part, used by the keys only. With the
    up-projections absorbed into the queries, queries have `DIM` elements and
    outputs `DIM - R`.

    ```mlir
    !attn.latent_kv<?x576xbf16, rope = 64, paged<64, nhd>>  // DeepSeek-V3
    ```
  }];
  let parameters = (ins
    "int64_t":$seqLen,
    "int64_t":$headDim,
    "int64_t":$ropeDim,
    "::mlir::Type":$elementType,
    "::mlir::attn::TokenLayout":$layout,
    DefaultValuedParameter<"int64_t", "0">:$pageSize,
    DefaultValuedParameter<"::mlir::attn::PageOrder",
                           "::mlir::attn::PageOrder::NHD">:$pageOrder
  );
  let extraClassDeclaration = [{
    int64_t getLatentDim() const { return getHeadDim() - getRopeDim(); }
    /// The cache as the kernels read it: one key head of every column, and
    /// one value head of the latent columns of the same rows.
    KVType asKeys() const {
      return KVType::get(getContext(), getSeqLen(), 1, getHeadDim(),
                         getElementType(), getLayout(), getPageSize(),
                         getPageOrder());
    }
    KVType asValues() const {
      return KVType::get(getContext(), getSeqLen(), 1, getLatentDim(),
                         getElementType(), getLayout(), getPageSize(),
                         getPageOrder());
    }
  }];
}

def Attn_AnyKV : AnyTypeOf<[Attn_KVType, Attn_LatentKVType]>;

#endif // ATTNC_DIALECT_ATTN_TYPES_TD
