//===- hopper/cluster.h - CTAs of a cluster sharing their loads -----------===//
//
// A kernel declared with __cluster_dims__ runs its CTAs in clusters whose
// shared memories can reach each other. The latent kernel's clusters of two
// load each KV tile once for both CTAs (the copy engine multicasts each
// CTA's half into both), so a stage is free for a refill only once the
// consumers of both CTAs are done with it: they arrive on the stage's
// empty barrier in every CTA of the cluster.
//
// A CTA must not exit while another CTA of its cluster may still write its
// shared memory or arrive on its barriers, nor may a CTA touch another's
// barriers before that CTA has initialized them: a cluster barrier follows
// the barriers' initialization and precedes the exit.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_HOPPER_CLUSTER_H
#define ATTNC_DEVICE_HOPPER_CLUSTER_H

#include "attnc/device/hopper/mbarrier.h"
#include "attnc/device/prelude.h"

namespace attnc {
namespace hopper {

#if ATTNC_IS_DEVICE

/// Every thread of every CTA of the cluster: what each did before is
/// visible to all after (release and acquire at cluster scope).
ATTNC_DEVICE void clusterSync() {
  asm volatile("barrier.cluster.arrive.release;\n"
               "barrier.cluster.wait.acquire;" ::
                   : "memory");
}

/// Arrives on the barrier at the same shared-memory offset as `bar` in the
/// cluster's CTA `rank` (this CTA's own included). The arrival is ordered
/// at CTA scope only: a consumer releasing a stage has already waited for
/// its wgmma reads of it, so no write of the peer's copy engine can reach
/// them, and a release at cluster scope would cost a MEMBAR.ALL.GPU per
/// arrival (measured: the clustered kernel 45 % slower).
ATTNC_DEVICE void arriveInCta(const Mbarrier &bar, u32 rank) {
  asm volatile("{\n"
               ".reg .b32 remote;\n"
               "mapa.shared::cluster.u32 remote, %0, %1;\n"
               "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
               "}" ::"r"(bar.address()),
               "r"(rank)
               : "memory");
}

#endif // ATTNC_IS_DEVICE

} // namespace hopper
} // namespace attnc

#endif // ATTNC_DEVICE_HOPPER_CLUSTER_H
