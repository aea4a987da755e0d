//===- hopper/mbarrier.h - shared-memory barriers and ring phases --------===//
//
// An mbarrier counts arrivals of threads and bytes of asynchronous copies;
// a phase completes when both reach what was expected, and the barrier
// moves on to the next phase. Waiters name the phase they wait for by its
// parity, so a ring of buffers tracks one bit per pass (RingSlot).
//
// A fresh barrier is in phase 0, and waiting on parity 1 returns at once
// (the phase "before" the first counts as complete): producers wait on
// empty barriers with the opposite parity of the consumers, so their first
// pass over the ring does not wait.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_MBARRIER_H
#define ATTNC_DEVICE_HOPPER_MBARRIER_H

#include "attnc/device/prelude.h"
#if ATTNC_IS_DEVICE
#include "attnc/device/mma.h" // sharedAddress
#endif

namespace attnc {
namespace hopper {

/// A position in a ring of `Stages` buffers: which buffer, and the parity
/// of the phase its barriers are in on this pass.
template <int Stages> struct RingSlot {
  static_assert(Stages >= 1, "a ring has at least one stage");
  u32 index = 0;
  u32 phase = 0;
  ATTNC_DEVICE void advance() {
    if (++index == Stages) {
      index = 0;
      phase ^= 1;
    }
  }
};

#if ATTNC_IS_DEVICE

/// One mbarrier, 8 bytes in shared memory.
struct Mbarrier {
  u64 state;

  ATTNC_DEVICE u32 address() const { return sharedAddress(this); }

  /// By one thread, before any other use; `arrivals` threads arrive per
  /// phase. fenceBarrierInit() and a CTA barrier must follow before others
  /// (or the copy engine) touch it.
  ATTNC_DEVICE void init(u32 arrivals) {
    u32 a = address();
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;"
                 :
                 : "r"(a), "r"(arrivals)
                 : "memory");
  }
  ATTNC_DEVICE void arrive() {
    u32 a = address();
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];"
                 :
                 : "r"(a)
                 : "memory");
  }
  /// Arrives where `arrives` holds, as one predicated instruction: a
  /// branch around arrive() would leave ptxas unsure the warp reconverges
  /// after it, and at a loop's back edge that costs every shuffle and wgmma
  /// after it a divergence check (and the registers of its slow path).
  ATTNC_DEVICE void arriveIf(bool arrives) {
    u32 a = address();
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.u32 p, %1, 0;\n"
                 "@p mbarrier.arrive.shared::cta.b64 _, [%0];\n"
                 "}"
                 :
                 : "r"(a), "r"(u32(arrives))
                 : "memory");
  }
  /// Arrives and adds `bytes` to what this phase expects from copies that
  /// complete on the barrier (TMA's complete_tx). Issue it before the
  /// copies, so the phase cannot complete between them.
  ATTNC_DEVICE void arriveExpectTx(u32 bytes) {
    u32 a = address();
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :
                 : "r"(a), "r"(bytes)
                 : "memory");
  }
  /// Whether the phase of parity `parity` has completed; the hardware may
  /// suspend the thread a while before it answers no.
  ATTNC_DEVICE bool tryWait(u32 parity) {
    u32 done;
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n"
                 "}\n"
                 : "=r"(done)
                 : "r"(address()), "r"(parity)
                 : "memory");
    return done != 0;
  }
  ATTNC_DEVICE void wait(u32 parity) {
    while (!tryWait(parity)) {
    }
  }
  /// wait() that gives up after `tries` unanswered tries and says whether
  /// the phase completed: for tests, where a miscounted phase must fail
  /// rather than hang the GPU.
  ATTNC_DEVICE bool waitAtMost(u32 parity, u32 tries) {
    for (u32 i = 0; i < tries; ++i)
      if (tryWait(parity))
        return true;
    return false;
  }
};
static_assert(sizeof(Mbarrier) == 8, "an mbarrier is 8 bytes");

/// Makes barrier initializations visible to the other threads and to the
/// async proxy (the copy engine completes transactions on them); a CTA
/// barrier follows.
ATTNC_DEVICE void fenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/// Orders this thread's ordinary shared-memory writes (st.shared,
/// stmatrix) before later reads and writes of the async proxy: wgmma
/// operands and TMA stores from shared memory. Each writing thread fences,
/// then a barrier (CTA or named) hands over.
ATTNC_DEVICE void fenceProxyAsync() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/// Named CTA barriers (ids 1..15; 0 is __syncthreads'): `threads` threads
/// complete a phase, some waiting (sync) and some only arriving, so one
/// group of warps can hand a turn to another without waiting itself.
ATTNC_DEVICE void namedBarrierSync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
ATTNC_DEVICE void namedBarrierArrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

#endif // ATTNC_IS_DEVICE

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_MBARRIER_H
