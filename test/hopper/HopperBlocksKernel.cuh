//===- HopperBlocksKernel.cuh - the FA3 data path, without the softmax ---===//
//
// A test kernel made of the device library's Hopper blocks, compiled through
// NVRTC by the GPU test (HopperBlocksGpuTest.cpp) and the SASS check
// (HopperSassCheck.cpp). Warp-specialized as FlashAttention-3 is: warpgroup
// 0 is the producer, one of its threads loading a 64 x D Q tile once and
// the K and V tiles of every KV tile with TMA into a ring of shared-memory
// stages guarded by mbarriers; warpgroup 1 is the consumer, computing
// S = Q.K^T with wgmma from shared memory, writing S, rounding it to P in
// registers and accumulating O += P.V with A from registers, then writing
// O. The producer gives registers to the consumer with setmaxnreg.
//
// Host code includes this file for the parameter struct and the layout;
// the kernel body exists only for NVRTC, which compiles this text with one
// ATTNC_HOPPER_BLOCKS_KERNEL line appended per instance.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TEST_HOPPER_BLOCKS_KERNEL_CUH
#define ATTNC_TEST_HOPPER_BLOCKS_KERNEL_CUH

#include "attnc/device/hopper/mbarrier.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/hopper/tma.h"
#include "attnc/device/hopper/wgmma.h"
#include "attnc/device/prelude.h"

namespace attnc {
namespace hopper_test {

/// The kernel's one argument, `const __grid_constant__` so the maps stay
/// in parameter space where TMA reads them.
struct BlocksParams {
  hopper::TensorMap q; // 2D: [q tokens, heads * D], boxes [64, 64]
  hopper::TensorMap k; // 3D: [kv tokens, heads, D], boxes [N, 1, 64]
  hopper::TensorMap v; // 3D: [kv tokens, heads, Dv], boxes [N, 1, 64]
  float *s;            // [64, tiles * N] row-major
  float *o;            // [64, Dv] row-major
  i32 head;            // the head read from q, k and v
  i32 tiles;           // KV tiles of N tokens
};

/// Threads: a producer warpgroup and a consumer warpgroup.
constexpr int kThreads = 2 * hopper::kWarpgroupThreads;
/// setmaxnreg budgets: the producer issues copies; the consumer holds S,
/// P and O. 128 x (40 + 232) registers fit the SM's 64 Ki.
constexpr int kProducerRegisters = 40;
constexpr int kConsumerRegisters = 232;

/// Dynamic shared memory: the Q tile, then `Stages` K tiles and `Stages` V
/// tiles, then the barriers. Tiles are multiples of 1024 bytes, so each
/// starts on a swizzle atom once the base is aligned.
template <int D, int N, int Dv, int Stages> struct BlocksLayout {
  using QTile = hopper::Sw128Tile<hopper::kWgmmaM, D>;
  using KTile = hopper::Sw128Tile<N, D>;
  using VTile = hopper::Sw128Tile<N, Dv>;
  static constexpr int kQ = 0;
  static constexpr int kK = kQ + QTile::kBytes;
  static constexpr int kV = kK + Stages * KTile::kBytes;
  static constexpr int kBarriers = kV + Stages * VTile::kBytes;
  /// qFull, then kFull, vFull and empty per stage.
  static constexpr int kNumBarriers = 1 + 3 * Stages;
  static constexpr int kBytes = kBarriers + 8 * kNumBarriers;
  /// What to launch with: a dynamic shared-memory block is only
  /// guaranteed 16-byte alignment, and the kernel aligns it to 1024.
  static constexpr int kSmemBytes = kBytes + hopper::kAtomBytes;
  static_assert(kK % hopper::kAtomBytes == 0 && kV % hopper::kAtomBytes == 0 &&
                    kBarriers % hopper::kAtomBytes == 0,
                "every tile starts on a swizzle atom");
};

#if ATTNC_IS_DEVICE

extern __shared__ __align__(16) u8 blocksSmem[];

/// Waits for a phase, or traps after 4 Mi unanswered tries (seconds): a
/// kernel whose barriers never complete (miscounted bytes or arrivals)
/// fails its launch instead of hanging the GPU test.
ATTNC_DEVICE void waitOrTrap(hopper::Mbarrier &bar, u32 parity) {
  if (!bar.waitAtMost(parity, 1u << 22))
    __trap();
}

template <typename T, int D, int N, int Dv, int Stages>
ATTNC_DEVICE void blocksKernel(const BlocksParams &p) {
  using namespace hopper;
  using L = BlocksLayout<D, N, Dv, Stages>;
  using QTile = typename L::QTile;
  using KTile = typename L::KTile;
  using VTile = typename L::VTile;

  u32 raw = sharedAddress(blocksSmem);
  u32 pad = (kAtomBytes - raw % kAtomBytes) % kAtomBytes;
  u8 *smem = blocksSmem + pad;
  u32 base = raw + pad;
  Mbarrier *bars = reinterpret_cast<Mbarrier *>(smem + L::kBarriers);
  Mbarrier &qFull = bars[0];
  Mbarrier *kFull = bars + 1;
  Mbarrier *vFull = kFull + Stages;
  Mbarrier *empty = vFull + Stages;

  if (threadIdx.x == 0) {
    qFull.init(1);
    for (int s = 0; s < Stages; ++s) {
      kFull[s].init(1);
      vFull[s].init(1);
      // Every consumer thread arrives once it has read the stage.
      empty[s].init(kWarpgroupThreads);
    }
    fenceBarrierInit();
  }
  __syncthreads();

  if (threadIdx.x < kWarpgroupThreads) {
    // Producer.
    lowerRegisterLimit<kProducerRegisters>();
    if (threadIdx.x == 0) {
      prefetchTensorMap(p.q);
      prefetchTensorMap(p.k);
      prefetchTensorMap(p.v);
      qFull.arriveExpectTx(QTile::kBytes);
      loadTile2D<QTile>(base + L::kQ, p.q, qFull, 0, p.head * D);
      RingSlot<Stages> slot;
      for (int t = 0; t < p.tiles; ++t) {
        waitOrTrap(empty[slot.index], slot.phase ^ 1);
        kFull[slot.index].arriveExpectTx(KTile::kBytes);
        loadHeadTile<KTile>(base + L::kK + slot.index * KTile::kBytes, p.k,
                            kFull[slot.index], t * N, p.head);
        vFull[slot.index].arriveExpectTx(VTile::kBytes);
        loadHeadTile<VTile>(base + L::kV + slot.index * VTile::kBytes, p.v,
                            vFull[slot.index], t * N, p.head);
        slot.advance();
      }
    }
  } else {
    // Consumer.
    raiseRegisterLimit<kConsumerRegisters>();
    int thread = threadIdx.x - kWarpgroupThreads;
    Accumulator<Dv> o;
    zero(o);
    waitOrTrap(qFull, 0);
    RingSlot<Stages> slot;
    for (int t = 0; t < p.tiles; ++t) {
      u32 k = base + L::kK + slot.index * KTile::kBytes;
      u32 v = base + L::kV + slot.index * VTile::kBytes;
      Accumulator<N> s;
      waitOrTrap(kFull[slot.index], slot.phase);
      issueQK<T, QTile, KTile>(s, base + L::kQ, k);
      wgmmaWait<0>(s);

      int sCols = p.tiles * N;
#pragma unroll
      for (int i = 0; i < Accumulator<N>::kRegs; i += 2) {
        int row = AccumulatorLayout::row(thread, i);
        int col = t * N + AccumulatorLayout::col(thread, i);
        float2 pair = make_float2(s.d[i], s.d[i + 1]);
        *reinterpret_cast<float2 *>(p.s + row * sCols + col) = pair;
      }

      AFragment pf[N / kWgmmaK];
      toAFragments<T>(s, pf);
      waitOrTrap(vFull[slot.index], slot.phase);
      issuePV<T, VTile>(o, pf, v);
      wgmmaWait<0>(o);
      empty[slot.index].arrive();
      slot.advance();
    }
#pragma unroll
    for (int i = 0; i < Accumulator<Dv>::kRegs; i += 2) {
      int row = AccumulatorLayout::row(thread, i);
      int col = AccumulatorLayout::col(thread, i);
      *reinterpret_cast<float2 *>(p.o + row * Dv + col) =
          make_float2(o.d[i], o.d[i + 1]);
    }
  }
}

#endif // ATTNC_IS_DEVICE

} // namespace hopper_test
} // namespace attnc

/// One instance: `name` computes with element type T (attnc::bf16 or
/// attnc::f16), head dims D (Q, K) and Dv (V), KV tiles of N tokens and a
/// ring of Stages.
#define ATTNC_HOPPER_BLOCKS_KERNEL(name, T, D, N, Dv, Stages)                  \
  extern "C" __global__ void __launch_bounds__(attnc::hopper_test::kThreads,   \
                                               1)                              \
      name(const __grid_constant__ attnc::hopper_test::BlocksParams p) {       \
    attnc::hopper_test::blocksKernel<T, D, N, Dv, Stages>(p);                  \
  }

#endif // ATTNC_TEST_HOPPER_BLOCKS_KERNEL_CUH
