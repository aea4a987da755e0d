//===- AttnGPUOps.td - operations of the attn_gpu dialect --*- tablegen -*-===//

#ifndef ATTNC_DIALECT_ATTNGPU_OPS_TD
#define ATTNC_DIALECT_ATTNGPU_OPS_TD

include "AttnGPUAttrs.td"
include "AttnGPUInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

// The attn dialect's window, as a kernel carries it from attn.attention.
def AttnGPU_WindowAttr
    : Attr<CPred<"::llvm::isa<::mlir::attn::WindowAttr>($_self)">,
           "an #attn.window"> {
  let storageType = "::mlir::attn::WindowAttr";
  let returnType = "::mlir::attn::WindowAttr";
  let convertFromStorage = "$_self";
}

def AttnGPU_KernelOp : AttnGPU_Op<"kernel", [
    Symbol, IsolatedFromAbove, NoTerminator, SingleBlock]> {
  let summary = "one attention kernel: the program of one CTA";
  let description = [{
    The body runs once per CTA; a CTA owns `block_m` rows (query tokens times
    the query heads of one KV head) of one request and, under split-KV, one
    share of its visible KV tiles. The variant's description (types, masks,
    modifiers) and the `score_mod` / `mask_mod` regions come from the
    `attn.attention` it implements; `plan`, `target` and `masks` say how it
    is tiled. With `merge_splits`, a split-KV kernel merges its own splits
    (in its launch, `attn_gpu.merge_splits`, or in a second launch of
    itself: `PlanAttr::mergesInSecondLaunch`): its output is the final one,
    and its partial states are the launch's workspace.

    ```mlir
    attn_gpu.kernel @attention_0 target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448>
        plan = #attn_gpu.plan<prefill, block = 64x64, warps = 4x1, stages = 2, kv_splits = 1, q_in_regs = true>
        masks = #attn_gpu.masks<lower = false, upper = true, sinks = 0, partial = edges>
        query = !attn.q<?x32x128xbf16> key = !attn.kv<?x8x128xbf16>
        value = !attn.kv<?x8x128xbf16> output = !attn.out<?x32x128xbf16>
        attributes {causal, scale = 0.0883883461 : f32} {
      ...
    }
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    AttnGPU_TargetAttr:$target,
    AttnGPU_PlanAttr:$plan,
    AttnGPU_MaskAnalysisAttr:$masks,
    TypeAttr:$query,
    TypeAttr:$key,
    TypeAttr:$value,
    TypeAttr:$output,
    UnitAttr:$has_lse,
    UnitAttr:$causal,
    OptionalAttr<AttnGPU_WindowAttr>:$window,
    F32Attr:$scale,
    OptionalAttr<F32Attr>:$softcap,
    UnitAttr:$alibi,
    UnitAttr:$segments,
    UnitAttr:$merge_splits,
    OptionalAttr<TypeAttr>:$key_scale,
    OptionalAttr<TypeAttr>:$value_scale,
    TypeArrayAttr:$capture_types
  );
  let regions = (region SizedRegion<1>:$body,
                        MaxSizedRegion<1>:$score_mod,
                        MaxSizedRegion<1>:$mask_mod);
  let assemblyFormat = [{
    $sym_name `target` `=` $target `plan` `=` $plan `masks` `=` $masks
    `query` `=` $query `key` `=` $key `value` `=` $value `output` `=` $output
    `captures` `=` $capture_types
    attr-dict-with-keyword $body
    (`score_mod` $score_mod^)? (`mask_mod` $mask_mod^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes of dynamic shared memory the kernel needs.
    int64_t getSharedMemoryBytes();
    /// Keys per bulk tensor copy of a warp-specialized kernel's K/V tiles
    /// (0 for other schedules): the whole tile, or for a paged cache the
    /// largest count that divides both the page and the tile, so that a
    /// copy stays inside one page; 1 for an fp8 cache, whose rows the
    /// producer stages and widens itself (no tensor map).
    int64_t getKVBoxRows();
  }];
}

def AttnGPU_MergeKernelOp : AttnGPU_Op<"merge_kernel", [Symbol]> {
  let summary = "a kernel that merges attention states row by row";
  let description = [{
    Merges `(out_i, lse_i)` states of the same rows over disjoint key sets
    (split-KV partials or the operands of `attn.merge_states`); one warp per
    `(token, head)` row.

    ```mlir
    attn_gpu.merge_kernel @merge_1 input = f32 output = bf16 v_dim = 128
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttr:$input,
                       TypeAttr:$output, I64Attr:$v_dim);
  let assemblyFormat = [{
    $sym_name `input` `=` $input `output` `=` $output `v_dim` `=` $v_dim
    attr-dict
  }];
}

def AttnGPU_YieldOp : AttnGPU_Op<"yield", [
    Pure, Terminator, HasParent<"KernelOp">]> {
  let summary = "the value of a kernel's score_mod or mask_mod region";
  let arguments = (ins AnyTypeOf<[F32, I1]>:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

def AttnGPU_LaunchOp : AttnGPU_Op<"launch", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "run a kernel over the whole batch";
  let description = [{
    Launches `kernel` on the operands (an attention's query, key, value,
    segments and captures, or the states a merge kernel merges). A launch of
    an attention whose plan has `kv_splits > 1` produces that many partial
    states, which the merge launch that follows consumes.

    ```mlir
    %o, %l = attn_gpu.launch @attention_0(%q, %k, %v)
        {geometry = #attn_gpu.launch<threads = 128, smem = 16896, block_m = 16, kv_splits = 16>}
        : (!attn.q<1x32x128xbf16>, !attn.kv<?x8x128xbf16>, !attn.kv<?x8x128xbf16>)
        -> (!attn.out<1x32x128xf32>, !attn.lse<1x32>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel, Variadic<AnyType>:$args,
                       AttnGPU_LaunchAttr:$geometry);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $kernel `(` $args `)` attr-dict `:` functional-type($args, $results)
  }];
}

//===----------------------------------------------------------------------===//
// Device ops: the steps of one CTA, inside an attn_gpu.kernel
//===----------------------------------------------------------------------===//

// A step of the CTA: a call of the CTA object's member `libraryCall`
// (AttnGPU_CtaCallOpInterface). `callInterface` is the interface trait, for
// an op that overrides one of its methods (DeclareOpInterfaceMethods).
class AttnGPU_DeviceOp<string mnemonic, string libraryCall,
                       list<Trait> traits = [],
                       Trait callInterface = AttnGPU_CtaCallOpInterface>
    : AttnGPU_Op<mnemonic, traits # [callInterface,
        ParentOneOf<["KernelOp", "::mlir::scf::ForOp", "::mlir::scf::IfOp",
                     "::mlir::scf::WhileOp"]>]> {
  let extraClassDeclaration = [{
    static constexpr ::llvm::StringLiteral kLibraryCall = "}] # libraryCall
      # [{";
  }];
}

def AttnGPU_BeginOp : AttnGPU_DeviceOp<"begin", "begin", [],
    DeclareOpInterfaceMethods<AttnGPU_CtaCallOpInterface,
                              ["bindsKernelArguments"]>> {
  let summary = "set up the CTA; for mma.sync, locate its rows and KV range";
  let description = [{
    For the mma.sync schedules, reads the request's lengths (dense, ragged
    index pointers or page tables) and plans the CTA's visible KV tiles;
    false for a CTA past the end of its request, which does nothing. For
    the warp-specialized schedule, whose CTAs walk work items
    (`begin_item`), sets up the shared memory and its barriers; true.
  }];
  let results = (outs I1:$live);
  let assemblyFormat = "attr-dict `:` type($live)";
}

def AttnGPU_LoadQueryOp : AttnGPU_DeviceOp<"load_query", "loadQuery"> {
  let summary = "asynchronously load the CTA's query rows into shared memory";
  let assemblyFormat = "attr-dict";
}

def AttnGPU_TilesBeginOp : AttnGPU_DeviceOp<"tiles_begin", "tilesBegin",
                                            [Pure]> {
  let summary = "the CTA's first KV tile, from the closed-form mask bounds";
  let description = [{
    Tiles are numbered in visiting order: sink tiles first, then the tiles
    between the kernel's `masks` bounds; under split-KV the CTA gets its
    share of that sequence, `[tiles_begin, tiles_end)`.
  }];
  let results = (outs Index:$begin);
  let assemblyFormat = "attr-dict";
}

def AttnGPU_TilesEndOp : AttnGPU_DeviceOp<"tiles_end", "tilesEnd", [Pure]> {
  let summary = "one past the CTA's last KV tile in visiting order";
  let results = (outs Index:$end);
  let assemblyFormat = "attr-dict";
}

def AttnGPU_PrefetchTileOp : AttnGPU_DeviceOp<"prefetch_tile", "prefetch"> {
  let summary = "start the cp.async load of a K/V tile into its stage";
  let description = [{
    Loads key and value rows of visiting-order tile `tile` (nothing past the
    CTA's last tile) into pipeline stage `tile % stages`, gathering rows
    through the page table when the cache is paged.
  }];
  let arguments = (ins Index:$tile, TypeAttr:$kv);
  let assemblyFormat = "$tile `from` $kv attr-dict";
}

def AttnGPU_WaitTileOp : AttnGPU_DeviceOp<"wait_tile", "waitTile"> {
  let summary = "wait for a K/V tile and release the stage it replaces";
  let arguments = (ins Index:$tile);
  let assemblyFormat = "$tile attr-dict";
}

def AttnGPU_ScoreMmaOp : AttnGPU_DeviceOp<"score_mma", "scores"> {
  let summary = "S = Q K^T on tensor cores (mma.sync m16n8k16)";
  let arguments = (ins Index:$tile);
  let assemblyFormat = "$tile attr-dict";
}

def AttnGPU_TileIsPartialOp
    : AttnGPU_DeviceOp<"tile_is_partial", "visitsPartialTile", [Pure]> {
  let summary = "whether a tile needs the per-element mask";
  let arguments = (ins Index:$tile);
  let results = (outs I1:$partial);
  let assemblyFormat = "$tile attr-dict `:` type($partial)";
}

def AttnGPU_ModifyScoresOp : AttnGPU_DeviceOp<"modify_scores", "modifyScores",
    [], DeclareOpInterfaceMethods<AttnGPU_CtaCallOpInterface,
                                  ["getTemplateArguments"]>> {
  let summary = "scale, soft-cap, ALiBi, score_mod, then (if masked) masks";
  let arguments = (ins Index:$tile, UnitAttr:$masked);
  let assemblyFormat = "$tile attr-dict";
}

def AttnGPU_SoftmaxUpdateOp
    : AttnGPU_DeviceOp<"softmax_update", "onlineSoftmax"> {
  let summary = "online softmax: new row maxima, rescale, exponentiate";
  let assemblyFormat = "attr-dict";
}

def AttnGPU_ValueMmaOp : AttnGPU_DeviceOp<"value_mma", "accumulateValues"> {
  let summary = "O += P V on tensor cores, P straight from registers";
  let arguments = (ins Index:$tile);
  let assemblyFormat = "$tile attr-dict";
}

//===----------------------------------------------------------------------===//
// Device ops of the warp-specialized schedule (sm_90a)
//===----------------------------------------------------------------------===//

def AttnGPU_IsProducerOp
    : AttnGPU_DeviceOp<"is_producer", "isProducer", [Pure]> {
  let summary = "whether this thread is in the producer warpgroup";
  let description = [{
    The producer and consumer roles are the two branches of one `scf.if`,
    as `setmaxnreg` requires.
  }];
  let results = (outs I1:$producer);
  let assemblyFormat = "attr-dict `:` type($producer)";
}

def AttnGPU_IsScorerOp : AttnGPU_DeviceOp<"is_scorer", "isScorer", [Pure]> {
  let summary = "whether this consumer computes the scores (latent plans)";
  let description = [{
    A `latent` plan's consumers have different programs: the scorer
    computes S = Q K^T, the softmax and its half of the output's columns;
    the value consumer only adds P V into the other half. The two programs
    are the branches of one `scf.if`, so that no wgmma of one is in flight
    on the other's paths (ptxas would serialize them).
  }];
  let results = (outs I1:$scorer);
  let assemblyFormat = "attr-dict `:` type($scorer)";
}

def AttnGPU_AwaitProbabilitiesOp
    : AttnGPU_DeviceOp<"await_probabilities", "awaitProbabilities"> {
  let summary = "wait for the scorer's P of a tile and rescale the output";
  let description = [{
    The value consumer of a `latent` plan: waits until the scorer has
    written the tile's probabilities and the rows' rescale factors to shared
    memory, and rescales its output columns by them.
  }];
  let arguments = (ins Index:$tile);
  let assemblyFormat = "$tile attr-dict";
}

def AttnGPU_WaitValuesOp : AttnGPU_DeviceOp<"wait_values", "waitValues"> {
  let summary = "wait for this consumer's P V and release what it read";
  let description = [{
    The value consumer of a `latent` plan: once its P V is done, the KV
    stage is released to the producer and P to the scorer.
  }];
  let assemblyFormat = "attr-dict";
}

def AttnGPU_BeginProducerOp
    : AttnGPU_DeviceOp<"begin_producer", "beginProducer"> {
  let summary = "give the registers away; whether this thread copies";
  let description = [{
    The producer warpgroup lowers its register limit for the consumers;
    one of its threads, for which the result is true, issues every copy.
  }];
  let results = (outs I1:$issuer);
  let assemblyFormat = "attr-dict `:` type($issuer)";
}

def AttnGPU_WorkItemsOp : AttnGPU_DeviceOp<"work_items", "workItems", [Pure]> {
  let summary = "how many work-item slots this CTA walks";
  let description = [{
    A warp-specialized launch is persistent: at most as many CTAs as fit on
    the GPU at once, walking an order of work items (a row block of one
    query head of one request, and a KV split) that puts the longest items
    first and keeps CTAs that run together on the same keys
    (device/attnc/device/hopper/work_order.h). Prefill CTAs claim
    the order's next item for each slot with an atomic counter, up to a
    bound a quarter above an even share; latent CTAs take one slot per
    round of a static share. A slot may hold no item.
  }];
  let results = (outs Index:$count);
  let assemblyFormat = "attr-dict";
}

def AttnGPU_BeginItemOp : AttnGPU_DeviceOp<"begin_item", "beginItem"> {
  let summary = "locate the item in the CTA's k-th slot: rows, KV range";
  let description = [{
    Reads the item's request lengths and plans its visible KV tiles; false
    when the slot is empty (the items ran out) or the item's rows are past
    the end of their request (a shorter request of a ragged batch), and
    both roles skip it.
  }];
  let arguments = (ins Index:$index);
  let results = (outs I1:$live);
  let assemblyFormat = "$index attr-dict `:` type($live)";
}

def AttnGPU_ProduceTilesOp : AttnGPU_DeviceOp<"produce_tiles", "produce"> {
  let summary = "load the item's Q and every visible K/V tile with TMA";
  let description = [{
    Copies each consumer's 64 query rows once the consumers have released
    the previous item's, then the K and V tiles in visiting order into the
    ring of stages, each after its empty barrier. The ring runs on across
    items.
  }];
  let assemblyFormat = "attr-dict";
}

def AttnGPU_BeginConsumerOp
    : AttnGPU_DeviceOp<"begin_consumer", "beginConsumer"> {
  let summary = "take the registers for the consumer warpgroups";
  let assemblyFormat = "attr-dict";
}

def AttnGPU_BeginRowsOp : AttnGPU_DeviceOp<"begin_rows", "beginRows"> {
  let summary = "clear the rows' state and wait for the item's Q";
  let assemblyFormat = "attr-dict";
}

def AttnGPU_ReleaseQueryOp : AttnGPU_DeviceOp<"release_query", "releaseQuery"> {
  let summary = "hand the item's query tile back to the producer";
  let description = [{
    Follows the item's last `wait_scores`: no product reads Q after it, so
    the producer may load the next item's rows while this item's last P V
    and its epilogue run. With two query tiles per consumer
    (`q_buffers = 2`) it follows `store_state` instead, whose epilogue
    stages the output through the tile.
  }];
  let assemblyFormat = "attr-dict";
}

def AttnGPU_IssueScoresOp : AttnGPU_DeviceOp<"issue_scores", "issueScores"> {
  let summary = "S = Q K^T on wgmma, asynchronously, once K has landed";
  let arguments = (ins Index:$tile);
  let assemblyFormat = "$tile attr-dict";
}

def AttnGPU_MaskScoresOp : AttnGPU_DeviceOp<"mask_scores", "maskScores"> {
  let summary = "hide the keys a partial tile's rows do not see";
  let description = [{
    After `modify_scores` without `masked`, on a tile `tile_is_partial`
    says needs it (or on every tile, where the mask analysis says all are
    partial): each score whose row does not see its key becomes -inf. The
    warp-specialized consumers mask apart from the modifiers, so that a
    tile loop builds its modifiers (a `score_mod` region among them) once
    rather than once for partial tiles and once for full ones.
  }];
  let arguments = (ins Index:$tile);
  let assemblyFormat = "$tile attr-dict";
  let hasVerifier = 1;
}

def AttnGPU_IssueValuesOp : AttnGPU_DeviceOp<"issue_values", "issueValues"> {
  let summary = "O += P V on wgmma, asynchronously, once V has landed";
  let description = [{
    P is the previous tile's probabilities, rounded in registers by
    `softmax_update`; a tile before the CTA's first issues nothing.
  }];
  let arguments = (ins Index:$tile);
  let assemblyFormat = "$tile attr-dict";
}

def AttnGPU_AwaitTurnOp : AttnGPU_DeviceOp<"await_turn", "awaitTurn"> {
  let summary = "wait for this consumer's turn to issue products";
  let description = [{
    Consumers issue their wgmma products in turns (a named barrier each),
    so that one's softmax overlaps the others' products instead of all
    competing for the tensor cores at once. A no-op with one consumer.
  }];
  let assemblyFormat = "attr-dict";
}

def AttnGPU_PassTurnOp : AttnGPU_DeviceOp<"pass_turn", "passTurn"> {
  let summary = "hand the turn to the next consumer";
  let description = [{
    The turns run on from one work item to the next: the last consumer's
    last pass of an item opens the first consumer's first turn of the next,
    so that the first consumer starts the next item while the others finish
    their epilogues. The CTA's first item with tiles opens the first turn.
  }];
  let assemblyFormat = "attr-dict";
}

def AttnGPU_EndTurnsOp : AttnGPU_DeviceOp<"end_turns", "endTurns"> {
  let summary = "take the turn the CTA's last pass left open";
  let description = [{
    Follows a consumer's loop over its work items: the first consumer takes
    the turn that the last consumer's last pass opened, so that every turn
    opened is taken. A no-op in the other consumers and where the CTA had
    no tiles.
  }];
  let assemblyFormat = "attr-dict";
}

def AttnGPU_WaitScoresOp : AttnGPU_DeviceOp<"wait_scores", "waitScores", [],
    DeclareOpInterfaceMethods<AttnGPU_CtaCallOpInterface,
                              ["getTemplateArguments"]>> {
  let summary = "wait for the scores, not for the P V issued after them";
  let description = [{
    Waits until at most `pending` wgmma groups (the P V issued after the
    scores) are in flight, then releases the scored tile's K stage to the
    producer. `softmax_update` waits for the P V before it rescales the
    output.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<0>,
                                              IntMaxValue<1>]>:$pending);
  let assemblyFormat = "`pending` `=` $pending attr-dict";
}

def AttnGPU_StoreStateOp : AttnGPU_DeviceOp<"store_state", "finish"> {
  let summary = "merge the warps' states, normalize, store output and LSE";
  let description = [{
    Under split-KV the CTA's state goes, in f32, to the partial buffers that
    a merge kernel (or `merge_splits`) reads. In a kernel that merges its
    splits in its launch, a request whose keys fit one split stores its
    output directly; a kernel that merges in a second launch does so when
    the run has one split.
  }];
  let assemblyFormat = "attr-dict";
}

def AttnGPU_MergeSplitsOp : AttnGPU_DeviceOp<"merge_splits", "mergeSplits"> {
  let summary = "the CTA that stores a row block's last split merges them all";
  let description = [{
    After `store_state` in a kernel with `merge_splits` of the mma.sync
    schedules: the CTA counts its partial state in on its row block's
    arrival counter; the one that arrives last merges every split's state
    into the output and LSE and puts the counter back to zero, so that a
    split-KV step is one launch and the next launch (or a replayed CUDA
    graph) starts clean. A latent kernel merges its splits in a second
    launch of itself instead, and has no such op.
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

#endif // ATTNC_DIALECT_ATTNGPU_OPS_TD
