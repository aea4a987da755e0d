//===- shared_storage.h - each CTA's shared memory, defined once ----------===//
//
// Where every region of a CTA's dynamic shared memory starts and how many
// bytes the launch needs, one layout per CTA class (FlashAttention-3's
// SharedStorage, as constexpr arithmetic on plain numbers). The planner
// sizes a plan with it (PlanAttr::getSharedMemoryBytes, through the
// schedule's row of ATTNC_SCHEDULES) and the emitter prints that size into
// the config as kSmemBytes; the device's Shape structs take their offsets
// from the same layout and static_assert the config's size against it.
//
// Compiled by the host compiler and by NVRTC.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_SHARED_STORAGE_H
#define ATTNC_DEVICE_SHARED_STORAGE_H

#include "attnc/device/abi.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/hopper/work_order.h"
#include "attnc/device/prelude.h"

namespace attnc {

/// The shared-memory layouts, one per CTA class; the schedules that share
/// a CTA class share its layout (a column of ATTNC_SCHEDULES).
enum class SharedStorage : i32 { Pipelined, WarpSpecialized, Latent };

/// The mma.sync CTAs' (pipelined_cta.h). During the K/V loop: the query
/// tile (16-bit), `stages` K stages, then `stages` V stages as the cache
/// stores them, then, over an fp8 cache, the 16-bit K tile (none where the
/// keys widen in registers) and V tile a stage is widened into. In the
/// epilogue, once the pipeline drained, the same bytes hold each warp
/// column's f32 share of the output [warpsN][blockM][vDim], then the row
/// maxima and the row sums [warpsN][blockM], then the rows' LSEs.
struct PipelinedStorage {
  i64 q, k, v;            // the query tile, K stage 0, V stage 0
  i64 kStage, vStage;     // bytes of one K or V stage
  i64 widenedK, widenedV; // the 16-bit tiles an fp8 stage widens into
  i64 loopBytes;
  i64 shares, maxes, sums, lses; // the epilogue's view
  i64 epilogueBytes;
  i64 bytes; // the larger of the two views
};

/// For `kvBytes`-byte cached elements (1: fp8, widened).
constexpr PipelinedStorage pipelinedStorage(i64 blockM, i64 blockN, i64 qkDim,
                                            i64 vDim, i64 kvBytes, i64 stages,
                                            i64 warpsN) {
  PipelinedStorage s{};
  bool widen = kvBytes < 2;
  s.q = 0;
  s.k = s.q + 2 * blockM * qkDim;
  s.kStage = blockN * qkDim * kvBytes;
  s.v = s.k + stages * s.kStage;
  s.vStage = blockN * vDim * kvBytes;
  s.widenedK = s.v + stages * s.vStage;
  s.widenedV =
      s.widenedK +
      (widen && !limits::fp8KeysInRegisters(qkDim) ? 2 * blockN * qkDim : 0);
  s.loopBytes = s.widenedV + (widen ? 2 * blockN * vDim : 0);
  s.shares = 0;
  s.maxes = s.shares + 4 * warpsN * blockM * vDim;
  s.sums = s.maxes + 4 * warpsN * blockM;
  s.lses = s.sums + 4 * warpsN * blockM;
  s.epilogueBytes = s.lses + 4 * warpsN * blockM;
  s.bytes = s.loopBytes > s.epilogueBytes ? s.loopBytes : s.epilogueBytes;
  return s;
}

/// The warp-specialized prefill CTA's (hopper/prefill.h), from a 1024-byte
/// aligned base: the consumers' query tiles of blockM / consumers rows
/// (consumer c's buffer b is tile c * queryBuffers + b), the K stages, the
/// V stages, the barriers (Q full and empty per query tile; K full, V
/// full, K empty and V empty per stage; item full and empty per item
/// slot), then the item slots (one decoded WorkItem each). Tiles are
/// 128-byte swizzled (smem_layout.h).
struct WarpSpecializedStorage {
  i64 queryTiles;
  i64 q, k, v; // query tile 0, K stage 0, V stage 0
  i64 barriers, barrierCount;
  i64 itemSlots;
  i64 bytes;
};

constexpr WarpSpecializedStorage
warpSpecializedStorage(i64 blockM, i64 blockN, i64 qkDim, i64 vDim, i64 stages,
                       i64 consumers, i64 queryBuffers) {
  WarpSpecializedStorage s{};
  i64 queryRows = consumers > 0 ? blockM / consumers : 0;
  s.queryTiles = consumers * queryBuffers;
  s.q = 0;
  s.k = s.q + s.queryTiles * hopper::sw128TileBytes(queryRows, qkDim);
  s.v = s.k + stages * hopper::sw128TileBytes(blockN, qkDim);
  s.barriers = s.v + stages * hopper::sw128TileBytes(blockN, vDim);
  s.barrierCount = 2 * s.queryTiles + 4 * stages + 2 * kItemSlots;
  s.itemSlots = s.barriers + 8 * s.barrierCount;
  // Dynamic shared memory is only 16-byte aligned: one atom of slack.
  s.bytes = s.itemSlots + kItemSlotBytes * kItemSlots + hopper::kAtomBytes;
  return s;
}

/// The latent CTA's (hopper/latent.h), from a 1024-byte aligned base: the
/// query tile, the KV stages (keys and values are one tile of whole cache
/// rows; an fp8 cache is widened in place, so the stages hold 16-bit
/// elements whatever the cache stores), the probabilities' tile, the
/// rows' rescale factors and normalizers (f32), then the barriers (Q full
/// and empty; KV full and empty per stage).
struct LatentStorage {
  i64 q, kv, p; // the query tile, KV stage 0, the probabilities
  i64 alphas, norms;
  i64 barriers, barrierCount;
  i64 bytes;
};

constexpr LatentStorage latentStorage(i64 blockM, i64 blockN, i64 qkDim,
                                      i64 stages) {
  LatentStorage s{};
  s.q = 0;
  s.kv = s.q + hopper::sw128TileBytes(blockM, qkDim);
  s.p = s.kv + stages * hopper::sw128TileBytes(blockN, qkDim);
  s.alphas = s.p + hopper::sw128TileBytes(blockM, blockN);
  s.norms = s.alphas + 4 * blockM;
  s.barriers = s.norms + 4 * blockM;
  s.barrierCount = 2 + 2 * stages;
  // Dynamic shared memory is only 16-byte aligned: one atom of slack.
  s.bytes = s.barriers + 8 * s.barrierCount + hopper::kAtomBytes;
  return s;
}

/// What a layout is sized from: a plan's numbers and the kernel's head
/// dims and cached element size. Each layout reads the fields it needs.
struct StorageShape {
  i64 blockM = 0, blockN = 0;
  i64 qkDim = 0, vDim = 0;
  i64 kvBytes = 2;      // bytes of a cached K/V element
  i64 stages = 1;       // K/V stages
  i64 warpsN = 1;       // Pipelined: warp columns, an epilogue share each
  i64 consumers = 0;    // WarpSpecialized: consumer warpgroups
  i64 queryBuffers = 1; // WarpSpecialized: query tiles a consumer
};

/// Dynamic shared memory, in bytes, of a CTA with layout `layout`.
constexpr i64 sharedStorageBytes(SharedStorage layout,
                                 const StorageShape &shape) {
  switch (layout) {
  case SharedStorage::WarpSpecialized:
    return warpSpecializedStorage(shape.blockM, shape.blockN, shape.qkDim,
                                  shape.vDim, shape.stages, shape.consumers,
                                  shape.queryBuffers)
        .bytes;
  case SharedStorage::Latent:
    return latentStorage(shape.blockM, shape.blockN, shape.qkDim, shape.stages)
        .bytes;
  case SharedStorage::Pipelined:
    break;
  }
  return pipelinedStorage(shape.blockM, shape.blockN, shape.qkDim, shape.vDim,
                          shape.kvBytes, shape.stages, shape.warpsN)
      .bytes;
}

} // namespace attnc

#endif // ATTNC_DEVICE_SHARED_STORAGE_H
