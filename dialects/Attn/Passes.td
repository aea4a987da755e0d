//===- Passes.td - passes over the attn dialect ------------*- tablegen -*-===//

#ifndef ATTNC_DIALECT_ATTN_PASSES_TD
#define ATTNC_DIALECT_ATTN_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnCanonicalize : Pass<"attn-canonicalize"> {
  let summary = "Bring every attention variant into one normal form";
  let description = [{
    Rewrites equivalent spellings of a variant into one, so that the planner
    and mask analysis see every variant the same way, and folds constants
    inside the `score_mod` and `mask_mod` regions. The normal form:

    - key/value heads expanded with `attn.repeat_kv` are read grouped, never
      copied (grouped-query attention); a repeat by 1 disappears (MHA);
    - a `score_mod` that is exactly a tanh soft-cap `c * tanh(s / c)` becomes
      the `softcap` attribute, and one that only multiplies by a constant
      is folded into `scale`; an identity `score_mod` and a `mask_mod` that
      is always true are dropped;
    - a sliding window with right extent 0 is marked `causal`; a window whose
      left extent covers every key (static `kv_len`) gives way to `causal`
      or to no mask; `sinks` without a window, or of 0, are dropped;
    - a `scale` equal to the default `1/sqrt(head_dim)` is dropped;
    - captures that no region reads are dropped.

    Before:

    ```mlir
    %k32 = attn.repeat_kv %k by 4 : !attn.kv<?x8x128xbf16> -> !attn.kv<?x32x128xbf16>
    %v32 = attn.repeat_kv %v by 4 : !attn.kv<?x8x128xbf16> -> !attn.kv<?x32x128xbf16>
    %o = attn.attention(%q, %k32, %v32) {window = #attn.window<4096, 0>}
        : !attn.q<?x32x128xbf16>, !attn.kv<4096x32x128xbf16>, ...
        score_mod {
        ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
          %c = arith.constant 30.0 : f32
          %d = arith.divf %s, %c : f32
          %t = math.tanh %d : f32
          %r = arith.mulf %t, %c : f32
          attn.yield %r : f32
        }
    ```

    After:

    ```mlir
    %o = attn.attention(%q, %k, %v) {causal, softcap = 3.000000e+01 : f32}
        : !attn.q<?x32x128xbf16>, !attn.kv<4096x8x128xbf16>, ...
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}


def AttnPlan : Pass<"attn-plan", "::mlir::ModuleOp"> {
  let summary = "Choose the target, schedule, tiles, warps, stages and splits";
  let description = [{
    Marks the module with the target (`attn_gpu.target`) and each
    `attn.attention` with a plan (`attn_gpu.plan`). One query token per
    request is the `decode` schedule: a 16-row M tile (the query heads of a
    GQA group share each K/V tile), four warps splitting each KV tile, as
    many pipeline stages as shared memory allows and up to `max-splits` KV
    splits, chosen per launch from the batch; queries stay in registers
    unless per-score work (regions, declarative masks and modifiers) beside
    wide output accumulators would spill. Anything else is `prefill`: eight
    warps of 16 query rows, 64-key tiles, two stages, queries in registers
    up to head dim 128; past head dim 128, or with enough per-score work,
    32-key tiles and fewer queries in registers. On sm_90a a prefill over
    a 16-bit cache is `warp_specialized` instead: a producer and consumer
    warpgroups of 64 rows, three with 128-key tiles up to head dim 64 where
    their registers hold the work (no heavy score work, no gathered
    pages; 96-key tiles beside a region, whose captures and per-score
    work leave the wider tiles no registers),
    else two with KV tiles from 192 keys at head dim 64 (128 beside a
    region) to 80 at 256, two
    query tiles per consumer where they fit (the next
    item's queries load while one runs, and its output is staged through
    the other), then as many stages as fit, up to three. A `!attn.latent_kv`
    cache (multi-head latent attention) takes the `latent` schedule on
    sm_90a: every query head of a token packed into 64-row blocks, 64-key
    tiles of whole cache rows, as many stages as fit. A `shared_keys`
    attention (a shared level of cascade attention, whose few rows per
    request face a long prefix) splits its keys up to `max-splits` ways: on
    sm_90a over a 16-bit cache `warp_specialized`, each split's state
    merged by a second launch; elsewhere (and on sm_90a with
    `prefill-warps`) `prefill`, whose CTAs merge their own splits; over a
    latent cache `latent`.

    The plan's register model is measured, not exact: where ptxas still
    reports local memory (spills or a stack frame), the driver compiles
    again with `register-relief` one step higher (heavier score work, then
    narrower tiles), and keeps the first cubin without any.

    Features the verifier accepts but the GPU pipeline cannot compile yet
    (latent caches off sm_90a, with ALiBi or with document segments; fp8
    caches before sm_89; head dims that are not multiples of 16 from 16 to
    256; segments with a paged cache) are reported here, by name.

    Before:

    ```mlir
    %out = attn.attention(%q, %k, %v) : !attn.q<1x32x128xbf16>, ... -> !attn.out<1x32x128xbf16>
    ```

    After:

    ```mlir
    module attributes {attn_gpu.target = #attn_gpu.target<"sm_90a", sms = 132, smem = 232448>} {
      %out = attn.attention(%q, %k, %v) {attn_gpu.plan = #attn_gpu.plan<decode, block = 16x64,
          warps = 1x4, stages = 4, kv_splits = 16, q_in_regs = true>} : ...
    }
    ```
  }];
  let options = [
    Option<"arch", "arch", "std::string", "\"sm_90a\"", "GPU architecture">,
    Option<"sms", "sms", "int64_t", "132", "number of multiprocessors">,
    Option<"smem", "smem", "int64_t", "232448",
           "shared memory one CTA may use, in bytes">,
    Option<"maxSplits", "max-splits", "int64_t", "16",
           "most KV splits of a decode or shared_keys launch">,
    Option<"prefillWarps", "prefill-warps", "int64_t", "0",
           "warps of a prefill CTA, 16 query rows each; 0 for the "
           "planner's choice (tuning; on sm_90a it puts a shared_keys "
           "attention on the mma.sync prefill CTA)">,
    Option<"decodeStages", "decode-stages", "int64_t", "0",
           "pipeline stages of a decode or shared_keys CTA; 0 for the "
           "planner's choice (tuning)">,
    Option<"consumers", "consumers", "int64_t", "0",
           "consumer warpgroups of a warp-specialized (sm_90a) prefill CTA, "
           "64 query rows each; 0 for the planner's choice (tuning)">,
    Option<"queryBuffers", "query-buffers", "int64_t", "0",
           "query tiles per consumer of a warp-specialized (sm_90a) prefill "
           "CTA, 1 or 2; 0 for the planner's choice (tuning)">,
    Option<"clusterCtas", "cluster-ctas", "int64_t", "1",
           "2 runs a latent kernel whose query heads fill pairs of 64-row "
           "blocks, over a cache the copy engine loads, in clusters of two "
           "CTAs that each load half of every KV tile for both; 1 in none "
           "(tuning)">,
    Option<"registerRelief", "register-relief", "int64_t", "0",
           "steps of register room the plan leaves a kernel beyond its "
           "measured needs: 1 plans its score work as heavy (on sm_90a "
           "narrower KV tiles, two consumers, no third stage; mma.sync "
           "prefill 32-key tiles; decode rereads its queries from shared "
           "memory), 2 narrows a warp-specialized KV tile one step more "
           "and keeps one query tile a consumer; the driver takes a step "
           "while ptxas reports local memory">
  ];
  let dependentDialects = ["::mlir::attn_gpu::AttnGPUDialect"];
}

def AttnAnalyzeMasks : Pass<"attn-analyze-masks"> {
  let summary = "Classify KV tiles as empty, full or partial in closed form";
  let description = [{
    From `causal`, `window`, `sinks`, `segments` and `mask_mod`, derives which
    keys are hidden from every query of a tile of rows (skipped tiles) and
    which tiles need the per-element mask, and records it as
    `attn_gpu.masks` on each planned `attn.attention`:

    - `lower`: a window's left extent hides keys before `p - left` (except
      `sinks` keys); `upper`: causality or a window's right extent hides
      keys after `p (+ right)`;
    - `partial = never` when nothing is masked and every tile is whole
      (static key count that is a multiple of the tile); `always` with a
      `mask_mod` or `segments`, which have no closed form; `edges`
      otherwise: only tiles that cross a bound are masked.

    Before:

    ```mlir
    %out = attn.attention(%q, %k, %v) {attn_gpu.plan = #attn_gpu.plan<...>, causal} : ...
    ```

    After:

    ```mlir
    %out = attn.attention(%q, %k, %v) {attn_gpu.masks = #attn_gpu.masks<lower = false,
        upper = true, sinks = 0, partial = edges>, attn_gpu.plan = ..., causal} : ...
    ```
  }];
  let dependentDialects = ["::mlir::attn_gpu::AttnGPUDialect"];
}

def AttnSplitKV : Pass<"attn-split-kv"> {
  let summary = "Split each request's keys into partial attentions and a merge";
  let description = [{
    An attention whose plan allows more than one KV split becomes an
    attention with `kv_splits` whose results are f32 partial states, one per
    share of the keys, followed by an `attn.merge_states` of those splits
    that produces the original output (and LSE). Decode with few requests
    then still fills the GPU.

    Before:

    ```mlir
    %out = attn.attention(%q, %k, %v) {attn_gpu.plan = #attn_gpu.plan<decode, ..., kv_splits = 16, ...>}
        : ... -> !attn.out<1x32x128xbf16>
    ```

    After:

    ```mlir
    %o, %l = attn.attention(%q, %k, %v) {attn_gpu.plan = ..., kv_splits = 16 : i64}
        : ... -> !attn.out<1x32x128xf32>, !attn.lse<1x32>
    %out, %lse = attn.merge_states (%o, %l) {kv_splits = 16 : i64}
        : !attn.out<1x32x128xf32>, !attn.lse<1x32> -> !attn.out<1x32x128xbf16>
    ```
  }];
}

def AttnLowerToGPU : Pass<"attn-lower-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Turn planned attn ops into attn_gpu kernels and launches";
  let description = [{
    Each planned `attn.attention` becomes an `attn_gpu.kernel` (one CTA's
    program: load the query rows, walk the visible KV tiles through a
    `stages`-deep cp.async pipeline, two tensor-core products per tile,
    modifiers everywhere and the mask only where `attn_gpu.masks` says a
    tile can be partial, the online softmax, the store) and each
    `attn.merge_states` an `attn_gpu.merge_kernel`; the ops themselves
    become `attn_gpu.launch`es of those kernels.

    Before:

    ```mlir
    %out = attn.attention(%q, %k, %v) {attn_gpu.masks = ..., attn_gpu.plan = ..., causal} : ...
    ```

    After:

    ```mlir
    %out = attn_gpu.launch @attention_0(%q, %k, %v) {geometry = #attn_gpu.launch<...>} : ...
    attn_gpu.kernel @attention_0 target = ... plan = ... masks = ... {
      %live = attn_gpu.begin : i1
      scf.if %live {
        attn_gpu.load_query
        %begin = attn_gpu.tiles_begin
        %end = attn_gpu.tiles_end
        attn_gpu.prefetch_tile %begin from !attn.kv<?x8x128xbf16>
        scf.for %t = %begin to %end step %c1 {
          attn_gpu.wait_tile %t
          ...
        }
        attn_gpu.store_state
      }
    }
    ```
  }];
  let dependentDialects = ["::mlir::attn_gpu::AttnGPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def AttnFuseSplitMerge : Pass<"attn-fuse-split-merge", "::mlir::ModuleOp"> {
  let summary = "Let a split-KV kernel merge its own splits: one launch";
  let description = [{
    A launch of a split-KV attention kernel whose partial states feed only
    the launch of a merge kernel becomes one launch of the attention kernel
    with `merge_splits`. Its results are the merge's; the partial states
    become the launch's workspace, and a run with one split stores the
    results directly. Splits that the merge does not read alone (another
    use of the partial states) are left as they are.

    How the kernel merges is its schedule's (`PlanAttr`):
    - the mma.sync CTA that stores a row block's last split merges them
      (`attn_gpu.merge_splits` after each `store_state`), so a decode step
      pays no second launch and no round trip of its states through a
      second grid;
    - a latent kernel's persistent CTAs end together, and the last CTA of a
      row block would merge it alone in the launch's tail: the runtime
      launches the kernel a second time in its merge pass, which spreads
      the rows over the whole grid (no `attn_gpu.merge_splits`).

    Before:

    ```mlir
    %0:2 = attn_gpu.launch @attention(%q, %k, %v) {geometry = #attn_gpu.launch<..., kv_splits = 16>}
        : (...) -> (!attn.out<1x32x128xf32>, !attn.lse<1x32>)
    %1:2 = attn_gpu.launch @merge(%0#0, %0#1) {...}
        : (...) -> (!attn.out<1x32x128xbf16>, !attn.lse<1x32>)
    attn_gpu.kernel @attention ... output = !attn.out<1x32x128xf32> ... {
      ...
      attn_gpu.store_state
    }
    attn_gpu.merge_kernel @merge input = f32 output = bf16 v_dim = 128
    ```

    After:

    ```mlir
    %0:2 = attn_gpu.launch @attention(%q, %k, %v) {geometry = #attn_gpu.launch<..., kv_splits = 16>}
        : (...) -> (!attn.out<1x32x128xbf16>, !attn.lse<1x32>)
    attn_gpu.kernel @attention ... output = !attn.out<1x32x128xbf16> ...
        attributes {merge_splits, ...} {
      ...
      attn_gpu.store_state
      attn_gpu.merge_splits
    }
    ```
  }];
}

def AttnGPUToEmitC : Pass<"attn-gpu-to-emitc", "::mlir::ModuleOp"> {
  let summary = "Lower attn_gpu kernels to EmitC for MLIR's C++ printer";
  let description = [{
    Moves every kernel into `emitc.file "attnc_device"`: a compile-time
    configuration struct for the device tile library, `__device__`
    functions for the `score_mod` / `mask_mod` regions (every op
    `docs/regions.md` lists: math functions become calls of CUDA's, the rest
    goes through the upstream arith conversion; loads from captured buffers
    read the launch's strided views), and an `extern "C" __global__` function per
    kernel whose body calls one tile-library function per `attn_gpu` op.
    Host-side `attn_gpu.launch` ops stay. `mlir-translate
    --mlir-to-cpp --file-id=attnc_device`, or `attnc compile --emit=cuda`,
    prints the CUDA C++.

    Before:

    ```mlir
    attn_gpu.kernel @attention_0 ... {
      %live = attn_gpu.begin : i1
      ...
    }
    ```

    After:

    ```mlir
    emitc.file "attnc_device" {
      emitc.include "attnc/device/attention.h"
      emitc.verbatim "struct attention_0_config { ... };"
      emitc.func @attention_0(%params: !emitc.opaque<"const attnc::AttnParams">)
          attributes {specifiers = ["extern \"C\" __global__ __launch_bounds__(128, 1)"]} {
        emitc.verbatim "attnc::AttentionCta<attention_0_config> cta;"
        %live = emitc.call_opaque "cta.begin"(%params) {args = [0 : index, #emitc.opaque<"attnc_smem">]} ...
        ...
      }
    }
    ```
  }];
  let dependentDialects = ["::mlir::emitc::EmitCDialect"];
}

#endif // ATTNC_DIALECT_ATTN_PASSES_TD
