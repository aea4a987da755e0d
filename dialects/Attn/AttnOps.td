//===- AttnOps.td - operations of the attn dialect ---------*- tablegen -*-===//

#ifndef ATTNC_DIALECT_ATTN_OPS_TD
#define ATTNC_DIALECT_ATTN_OPS_TD

include "AttnAttrs.td"
include "AttnTypes.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// attn.attention
//===----------------------------------------------------------------------===//

def Attn_AttentionOp : Attn_Op<"attention", [
    AttrSizedOperandSegments, IsolatedFromAbove, SingleBlock, Pure,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "one attention variant over a batch of requests";
  let description = [{
    Computes, for every request, query and query head `h`,

    ```
    s_j = mask_j ? score_mod(modifiers(scale * q . k_j)) : -inf
    out = sum_j softmax(s)_j * v_j        lse = log(sum_j exp(s_j))
    ```

    where query head `h` reads key/value head `h / (q_heads / kv_heads)`
    (grouped-query attention; a single KV head is multi-query attention).
    Score modifiers apply in a fixed order: `scale` (default
    `1/sqrt(head_dim)`), tanh soft-cap `softcap * tanh(s / softcap)`, the
    ALiBi bias `slope_h * (j - p)` with the standard geometric slopes, then
    the `score_mod` region. A key is visible when every declarative mask
    admits it (`causal`: `j <= p`; `window<l, r>`: `p - l <= j <= p + r`,
    where the first `sinks` keys are exempt from the window's left bound;
    `segments`: both tokens carry the same document id) and `mask_mod`
    yields true. A query that sees no key produces a zero output and an
    `lse` of `-inf`.

    With a `!attn.latent_kv` key (multi-head latent attention) there is no
    value operand: the value is the latent part of the same cache.

    An fp8 key/value cache (`f8E4M3FN`, `f8E5M2`) stores `k / k_scale` and
    `v / v_scale`: `kv_scales(%k_scale, %v_scale)` are `memref<1xf32>` (one
    scale per tensor) or `memref<KV_HEADS x f32>` (one per KV head), read at
    run time, and the attention is that of the dequantized keys
    `k_scale * k` and values `v_scale * v`. Without `kv_scales` both are 1.

    ```mlir
    %out = attn.attention(%q, %k, %v)
        kv_scales(%ks, %vs : memref<1xf32>, memref<1xf32>)
        : !attn.q<1x32x128xbf16>, !attn.kv<?x8x128xf8E4M3FN, paged<16, nhd>>,
          !attn.kv<?x8x128xf8E4M3FN, paged<16, nhd>> -> !attn.out<1x32x128xbf16>
    ```

    `shared_keys` makes each request a node of cascade attention: its
    queries are the rows of every request that shares its keys (a prefix
    cached once), so every query sees every key and a query's own position
    is not known here. It refuses what reads positions or request indices
    (`causal`, `window`, `sinks`, ALiBi, `segments`, regions reading
    anything but the score and the head), and lets the planner split the
    keys across CTAs however many queries a request has. The partial state
    (`lse` included) is merged with each request's own keys by
    `attn.merge_states`.

    ```mlir
    %out, %lse = attn.attention(%q, %k, %v) {shared_keys}
        : !attn.q<?x32x128xbf16, ragged>,
          !attn.kv<?x8x128xbf16, paged<16, nhd>>,
          !attn.kv<?x8x128xbf16, paged<16, nhd>>
        -> !attn.out<?x32x128xbf16, ragged>, !attn.lse<?x32, ragged>
    ```

    `kv_splits = N` (set by `attn-split-kv`) makes the results up to `N`
    partial states, one per share of each request's keys, in f32; an
    `attn.merge_states` with the same `kv_splits` combines them.

    The `score_mod` region's block takes the modified score and the
    position of the pair, `(%score: f32, %batch: index, %head: index,
    %qi: index, %kvi: index, %q_len: index, %kv_len: index)`; `mask_mod`
    takes the same without the score and yields an `i1`, true where the key
    is visible. `%head` is the query head; `%qi` (in `0..q_len-1`) and `%kvi`
    (in `0..kv_len-1`) index the request's queries and keys, and `%q_len`,
    `%kv_len` are the request's lengths, so `%qi + %kv_len - %q_len` is the
    bottom-right aligned position `p` the declarative masks use (the query's
    position in the sequence under chunked prefill and decode). The regions
    hold the `arith` and `math` ops `docs/regions.md` lists, on `f32`, `i1`,
    `i32`, `i64` and `index` scalars. They are isolated from above; buffers
    they read come in through `captures`, appear as trailing block arguments
    and are read with `memref.load`.

    ```mlir
    %out, %lse = attn.attention(%q, %k, %v) {causal, softcap = 30.0 : f32}
        : !attn.q<?x32x128xbf16, ragged>, !attn.kv<?x8x128xbf16, ragged>,
          !attn.kv<?x8x128xbf16, ragged>
        -> !attn.out<?x32x128xbf16, ragged>, !attn.lse<?x32, ragged>
    ```
  }];

  let arguments = (ins
    Attn_QueryType:$query,
    Attn_AnyKV:$key,
    Optional<Attn_KVType>:$value,
    Optional<AnyMemRef>:$query_segments,
    Optional<AnyMemRef>:$key_segments,
    Optional<AnyMemRef>:$key_scale,
    Optional<AnyMemRef>:$value_scale,
    Variadic<AnyMemRef>:$captures,
    UnitAttr:$causal,
    OptionalAttr<Attn_WindowAttr>:$window,
    OptionalAttr<I64Attr>:$sinks,
    OptionalAttr<F32Attr>:$scale,
    OptionalAttr<F32Attr>:$softcap,
    UnitAttr:$alibi,
    OptionalAttr<I64Attr>:$kv_splits,
    UnitAttr:$shared_keys
  );
  let results = (outs Attn_OutputType:$output, Optional<Attn_LseType>:$lse);
  let regions = (region MaxSizedRegion<1>:$score_mod,
                        MaxSizedRegion<1>:$mask_mod);

  let assemblyFormat = [{
    `(` $query `,` $key (`,` $value^)? `)`
    (`segments` `(` $query_segments^ `,` $key_segments `:`
                    qualified(type($query_segments)) `,` qualified(type($key_segments)) `)`)?
    (`kv_scales` `(` $key_scale^ `,` $value_scale `:`
                     qualified(type($key_scale)) `,` qualified(type($value_scale)) `)`)?
    (`captures` `(` $captures^ `:` qualified(type($captures)) `)`)?
    attr-dict `:` qualified(type($query)) `,` qualified(type($key)) (`,` qualified(type($value))^)?
    `->` qualified(type($output)) (`,` qualified(type($lse))^)?
    custom<ModifierRegions>($score_mod, $mask_mod)
  }];

  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let hasCanonicalizer = 1;

  let extraClassDeclaration = [{
    /// Query heads that share one key/value head (1 for MHA).
    int64_t getGroupSize();
    /// Whether the keys are an MLA latent cache (the value aliases them).
    bool isLatent() { return ::llvm::isa<LatentKVType>(getKey().getType()); }
    /// Number of key/value heads (1 for MLA and MQA).
    int64_t getNumKVHeads();
    int64_t getQKHeadDim() { return getQuery().getType().getHeadDim(); }
    int64_t getVHeadDim() { return getOutput().getType().getHeadDim(); }
    /// The scale applied to q . k, explicit or the default 1/sqrt(qk dim).
    double getEffectiveScale();
    /// The default scale 1/sqrt(qk head dim).
    double getDefaultScale();
    /// Static number of keys per request, or ShapedType::kDynamic.
    int64_t getStaticKVLen();
    /// The element type the keys (and values) are stored in.
    ::mlir::Type getKVElementType();
    /// Block arguments the regions take before the captures: (score,)
    /// batch, head, qi, kvi, q_len, kv_len.
    static constexpr unsigned kScoreModIndexArgs = 7;
    static constexpr unsigned kMaskModIndexArgs = 6;
  }];
}

//===----------------------------------------------------------------------===//
// attn.merge_states
//===----------------------------------------------------------------------===//

def Attn_MergeStatesOp : Attn_Op<"merge_states", [
    Pure, SameVariadicOperandSize,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "merge attention states computed over disjoint key sets";
  let description = [{
    Each operand pair `(out_i, lse_i)` is the attention state of the same
    queries over a disjoint set of keys. The merge is the state over their
    union:

    ```
    lse = log(sum_i exp(lse_i))      out = sum_i exp(lse_i - lse) * out_i
    ```

    The operator is commutative and associative, which is what lets passes
    split, reorder and fuse partial attentions (split-KV decode, cascade over
    shared prefixes, sequence parallelism). A state whose `lse` is `-inf`
    (no visible key) contributes nothing.

    With `kv_splits = N` the single operand pair holds the `N` partial states
    of a split-KV `attn.attention`, which are merged.

    ```mlir
    %out, %lse = attn.merge_states (%o0, %l0), (%o1, %l1)
        : !attn.out<1x32x128xf32>, !attn.lse<1x32> -> !attn.out<1x32x128xbf16>
    ```
  }];
  let arguments = (ins Variadic<Attn_OutputType>:$outputs,
                       Variadic<Attn_LseType>:$lses,
                       OptionalAttr<I64Attr>:$kv_splits);
  let results = (outs Attn_OutputType:$output, Attn_LseType:$lse);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// attn.repeat_kv
//===----------------------------------------------------------------------===//

def Attn_RepeatKVOp : Attn_Op<"repeat_kv", [Pure]> {
  let summary = "repeat each key/value head (a view, never a copy)";
  let description = [{
    Head `h` of the result is head `h / group` of the source, the way
    reference model code expands grouped KV heads to the query head count.
    attnc never materializes it: `attn-canonicalize` folds it into the
    `attn.attention` that reads it, which then reads the grouped heads
    directly; a repeat by 1 folds away.

    ```mlir
    %k32 = attn.repeat_kv %k by 4
        : !attn.kv<?x8x128xbf16> -> !attn.kv<?x32x128xbf16>
    ```
  }];
  let arguments = (ins Attn_KVType:$source, I64Attr:$group);
  let results = (outs Attn_KVType:$result);
  let assemblyFormat = [{
    $source `by` $group attr-dict `:` qualified(type($source)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// attn.yield
//===----------------------------------------------------------------------===//

def Attn_YieldOp : Attn_Op<"yield", [
    Pure, ReturnLike, Terminator, HasParent<"AttentionOp">]> {
  let summary = "result of a score_mod or mask_mod region";
  let description = [{
    Terminates a `score_mod` region with the modified `f32` score, or a
    `mask_mod` region with an `i1` that is true where the key is visible.
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` qualified(type($values)))?";
  let builders = [OpBuilder<(ins), [{ /* nothing */ }]>];
  let hasVerifier = 1;
}

#endif // ATTNC_DIALECT_ATTN_OPS_TD
