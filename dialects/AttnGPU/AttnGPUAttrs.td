//===- AttnGPUAttrs.td - target, plan and mask analysis ----*- tablegen -*-===//

#ifndef ATTNC_DIALECT_ATTNGPU_ATTRS_TD
#define ATTNC_DIALECT_ATTNGPU_ATTRS_TD

include "AttnGPUDialect.td"

// The schedules and what every layer knows of each: one table, in
// device/attnc/device/schedules.h, spelled by its keywords here.
def AttnGPU_ScheduleParameter
    : AttrParameter<"::attnc::Schedule", "kernel schedule"> {
  let parser = [{ ::mlir::attn_gpu::parseSchedule($_parser) }];
  let printer = [{ $_printer << ::attnc::keyword($_self) }];
}

// The classification the device library is instantiated with: defined once,
// in device/attnc/device/abi.h, and spelled by its keywords here.
def AttnGPU_PartialTilesParameter
    : AttrParameter<"::attnc::PartialTiles",
                    "which KV tiles need the per-element mask"> {
  let parser = [{ ::mlir::attn_gpu::parsePartialTiles($_parser) }];
  let printer = [{ $_printer << ::attnc::keyword($_self) }];
}

def AttnGPU_TargetAttr : AttnGPU_Attr<"Target", "target"> {
  let summary = "the GPU a variant is compiled for";
  let description = [{
    Architecture (`sm_90a`), number of multiprocessors and the shared memory
    one CTA may use, in bytes. `attn-plan` sizes tiles and splits from it.
  }];
  let parameters = (ins StringRefParameter<>:$arch, "int64_t":$sms,
                        "int64_t":$smem);
  let assemblyFormat = "`<` $arch `,` `sms` `=` $sms `,` `smem` `=` $smem `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The architectures attnc plans and compiles for.
    static ::llvm::ArrayRef<::llvm::StringLiteral> getSupportedArchs();
    static bool isSupportedArch(::llvm::StringRef arch);
    /// Whether `arch` converts fp8 pairs to f16 in one instruction (sm_89
    /// and newer), which the widening of an fp8 KV cache takes.
    static bool hasFp8Conversions(::llvm::StringRef arch);
  }];
}

def AttnGPU_PlanAttr : AttnGPU_Attr<"Plan", "plan"> {
  let summary = "how one attention is tiled and launched";
  let description = [{
    `prefill` gives each of its warps (8 unless tuned) 16 query rows and the
    whole KV tile;
    `decode` gives one 16-row tile (a request's GQA heads) to warps that each
    take a slice of the KV tile, so few rows still keep every warp loading.
    `transposed_decode` is decode for a GQA group of up to 8 query heads:
    the products are transposed (S^T = K Q^T, O^T += V^T P^T), so the keys
    fill mma's 16 rows and the group its 8 columns (`block = 8 x N`),
    rather than the group filling 16 rows of which it leaves most empty.
    All three run on mma.sync (sm_80 and later). `warp_specialized` (sm_90a) is
    FlashAttention-3's: `warps = 4(c + 1) x 1` are a producer warpgroup that
    loads tiles with the bulk tensor copy engine and `c` consumer warpgroups
    of 64 rows each (`block = 64c x N`) computing with wgmma; a CTA's rows
    are one query head's tokens.
    `latent` (sm_90a) is multi-head latent attention: `warps = 12 x 1` are a
    producer, a scorer and a value warpgroup; a CTA's 64 rows are a
    request's (token, head) pairs, every query head packed, and the scorer
    hands each tile's probabilities to the value warpgroup through shared
    memory, each keeping half of the output's columns.
    `kv_splits` is the most KV splits a launch may use (split-KV decode).
    `q_buffers = 2` (warp_specialized only; 1 when omitted) gives each
    consumer two query tiles: the producer loads an item's queries while
    the item before runs, and the consumer stages its output through the
    item's own tile (its queries are dead by then) to store whole rows.
    A `warp_specialized` launch's persistent CTAs claim the work order's
    items one by one (a CTA whose items ran fast takes more);
    `static_order = true` walks a static share of it instead, for a plan
    whose consumers the claims' registers would spill (attn-plan chooses
    it nowhere: its narrower tiles leave them room).
    A `warp_specialized` consumer's tile loop does a tile's modifiers,
    masks and softmax and then issues the next tile's scores and this
    tile's P.V, so the softmax is built once, and its modifiers are built
    once with the masks apart (`mask_scores`). `lean_tile_loop = true`
    takes the form that holds fewer registers instead, with a slower
    compile: the first tile's softmax built apart before a loop that
    issues first, and the masks in the modifiers' pass on partial tiles
    (twice the score code), for a plan whose consumers the other form
    would spill (attn-plan chooses it nowhere: its narrower tiles leave
    them room).
    `cluster_ctas = 2` (latent only; 1 when omitted) launches the CTAs in
    clusters of two that take the two row blocks of one token's 128 heads:
    both see the same keys, so each CTA's producer loads half of every KV
    tile and the copy engine multicasts it into both, and every tile is
    read from L2 once instead of twice.
  }];
  let parameters = (ins
    AttnGPU_ScheduleParameter:$schedule,
    "int64_t":$blockM, "int64_t":$blockN,
    "int64_t":$warpsM, "int64_t":$warpsN,
    "int64_t":$stages, "int64_t":$kvSplits,
    "bool":$queryInRegisters,
    DefaultValuedParameter<"int64_t", "1">:$queryBuffers,
    DefaultValuedParameter<"bool", "false">:$staticOrder,
    DefaultValuedParameter<"int64_t", "1">:$clusterCtas,
    DefaultValuedParameter<"bool", "false">:$leanTileLoop);
  let assemblyFormat = [{
    `<` $schedule `,` `block` `=` $blockM `x` $blockN `,`
        `warps` `=` $warpsM `x` $warpsN `,` `stages` `=` $stages `,`
        `kv_splits` `=` $kvSplits `,` `q_in_regs` `=` $queryInRegisters ``
        custom<PlanOptions>($queryBuffers, $staticOrder, $clusterCtas,
                            $leanTileLoop) `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getThreads() const { return 32 * getWarpsM() * getWarpsN(); }
    /// The schedule's row of the table (attnc/device/schedules.h).
    const ::attnc::ScheduleTraits &traits() const {
      return ::attnc::traits(getSchedule());
    }
    /// Whether this is an sm_90a producer/consumer schedule: the
    /// FlashAttention-3 one or the latent one.
    bool isWarpSpecialized() const {
      return traits().has(::attnc::schedule_feature::WarpSpecialized);
    }
    /// Rows of the mma.sync schedules' query tile a warp's products hold:
    /// 16 (the M side) or, transposed, 8 (the N side).
    int64_t getRowsPerWarp() const { return traits().rowsPerWarp; }
    /// Whether this is the multi-head latent attention schedule.
    bool isLatent() const { return getSchedule() == ::attnc::Schedule::Latent; }
    /// Whether a split-KV kernel of this schedule can merge its own splits
    /// (`merge_splits`): the mma.sync schedules' and the latent one's; the
    /// planner never splits the warp-specialized prefill's keys.
    bool mergesOwnSplits() const {
      return traits().has(::attnc::schedule_feature::MergesOwnSplits);
    }
    /// Whether such a kernel merges its splits in a second launch of
    /// itself, spread over the whole grid, rather than in the CTA that
    /// stores a row block's last split (`attn_gpu.merge_splits`): the
    /// latent kernel's persistent CTAs end together, and that CTA would
    /// merge a row block alone in the launch's tail.
    bool mergesInSecondLaunch() const {
      return traits().has(::attnc::schedule_feature::MergesInSecondLaunch);
    }
    /// Whether the schedule's kernels wait on the grids before them
    /// (`griddepcontrol.wait`) before they touch global memory and let the
    /// grid after them launch early, so that a launch may overlap the
    /// drain of the kernel before it in the stream (programmatic dependent
    /// launch): the sm_90a schedules, whose launch and barrier setup (and
    /// the launch of the latent kernel's merge pass) then overlap the
    /// launch before.
    bool overlapsPreviousLaunch() const { return isWarpSpecialized(); }
    /// Whether the CTAs claim their work items with an atomic counter
    /// rather than walking a static share of them.
    bool claimsItems() const {
      return traits().has(::attnc::schedule_feature::ClaimsItems) &&
             !getStaticOrder();
    }
    /// Rows of one query tile the producer loads: a consumer's 64, or the
    /// latent CTA's whole block (its value warpgroup reads no queries).
    int64_t getQueryBoxRows() const {
      return traits().has(::attnc::schedule_feature::QueryTilePerConsumer)
                 ? getBlockM() / getConsumers()
                 : getBlockM();
    }
    /// Consumer warpgroups of a warp-specialized plan (0 otherwise).
    int64_t getConsumers() const {
      return isWarpSpecialized() ? getWarpsM() / 4 - 1 : 0;
    }
    /// Query heads whose rows one CTA holds: a KV head's GQA group for the
    /// mma.sync schedules and the latent one (every query head), one head
    /// for the warp-specialized one.
    int64_t getPackedHeads(int64_t group) const {
      return traits().has(::attnc::schedule_feature::PacksGroup) ? group : 1;
    }
    /// Dynamic shared memory of a kernel with this plan, in bytes, for
    /// keys and values stored in `kvBytes` bytes per element: the layout
    /// of the schedule's CTA class (attnc/device/shared_storage.h).
    int64_t getSharedMemoryBytes(int64_t qkDim, int64_t vDim,
                                 int64_t kvBytes = 2) const;
  }];
}

def AttnGPU_MaskAnalysisAttr : AttnGPU_Attr<"MaskAnalysis", "masks"> {
  let summary = "closed-form classification of KV tiles";
  let description = [{
    For the query rows of one CTA, keys outside `[lower, upper)` are hidden
    for every row (tiles there are empty and skipped); `lower` comes from a
    window's left extent (`sinks` keys before it stay visible), `upper` from
    causality or a window's right extent. `partial` says which visited tiles
    need the per-element mask: `never` (no mask and whole tiles), `edges`
    (tiles that cross a bound, decided per tile at run time) or `always`
    (a `mask_mod` or document segments, which have no closed form).
  }];
  let parameters = (ins "bool":$lowerBound, "bool":$upperBound,
                        "int64_t":$sinks,
                        AttnGPU_PartialTilesParameter:$partial);
  let genVerifyDecl = 1;
  let assemblyFormat = [{
    `<` `lower` `=` $lowerBound `,` `upper` `=` $upperBound `,`
        `sinks` `=` $sinks `,` `partial` `=` $partial `>`
  }];
}

def AttnGPU_LaunchAttr : AttnGPU_Attr<"Launch", "launch"> {
  let summary = "launch geometry of one kernel";
  let parameters = (ins "int64_t":$threads, "int64_t":$smem,
                        "int64_t":$blockM, "int64_t":$kvSplits);
  let genVerifyDecl = 1;
  let assemblyFormat = [{
    `<` `threads` `=` $threads `,` `smem` `=` $smem `,` `block_m` `=` $blockM
        `,` `kv_splits` `=` $kvSplits `>`
  }];
}

#endif // ATTNC_DIALECT_ATTNGPU_ATTRS_TD
