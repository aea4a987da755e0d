//===- schedules.h - the table of kernel schedules ------------------------===//
//
// Every schedule attn-plan can choose, with the facts about it that the
// layers read: the attn_gpu dialect (its plan attribute's keyword and
// predicates), the emitter (the device header and CTA class to emit), the
// driver and the executor (how a launch's grid walks its work). A new
// schedule is a row here, its device header and its lowering; no layer
// branches on a schedule's name for these facts.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DEVICE_SCHEDULES_H
#define ATTNC_DEVICE_SCHEDULES_H

#include "attnc/device/abi.h"
#include "attnc/device/shared_storage.h"

namespace attnc {

/// What a schedule's kernels do, as the layers ask it: the features of a
/// row of ATTNC_SCHEDULES.
namespace schedule_feature {
enum : u32 {
  /// A producer warpgroup and wgmma consumers, whose persistent CTAs walk
  /// a work order and load through tensor maps.
  WarpSpecialized = 1u << 0,
  /// A CTA holds every query head of a KV head (its GQA group).
  PacksGroup = 1u << 1,
  /// A split-KV kernel of it merges its partial states itself
  /// (merge_splits) ...
  MergesOwnSplits = 1u << 2,
  /// ... in a second launch of itself, spread over the grid, rather than
  /// in the CTA that stores a row block's last split.
  MergesInSecondLaunch = 1u << 3,
  /// Its CTAs claim the work order's items with an atomic counter, unless
  /// the plan says static_order.
  ClaimsItems = 1u << 4,
  /// Each consumer warpgroup has a query tile of its own rows; otherwise
  /// one query tile holds the CTA's whole block.
  QueryTilePerConsumer = 1u << 5,
  /// Its plans may choose the consumers' tile loop: q_buffers,
  /// static_order and lean_tile_loop.
  TunesTileLoop = 1u << 6,
  /// Its plans may launch clusters that share each KV tile's load
  /// (cluster_ctas).
  SharesLoadsInCluster = 1u << 7,
};
} // namespace schedule_feature

// X(enumerator, IR keyword, device header, CTA class template,
//   shared-memory layout (shared_storage.h, one per CTA class),
//   rows of a query tile one warp's mma.sync products hold,
//   features)
#define ATTNC_SCHEDULES(X)                                                     \
  X(Prefill, "prefill", "attnc/device/attention.h", "attnc::AttentionCta",     \
    Pipelined, 16, PacksGroup | MergesOwnSplits)                               \
  X(Decode, "decode", "attnc/device/attention.h", "attnc::AttentionCta",       \
    Pipelined, 16, PacksGroup | MergesOwnSplits)                               \
  X(WarpSpecialized, "warp_specialized", "attnc/device/hopper/prefill.h",      \
    "attnc::WarpSpecializedCta", WarpSpecialized, 16,                          \
    WarpSpecialized | ClaimsItems | QueryTilePerConsumer | TunesTileLoop)      \
  X(Latent, "latent", "attnc/device/hopper/latent.h", "attnc::LatentCta",      \
    Latent, 16,                                                                \
    WarpSpecialized | PacksGroup | MergesOwnSplits | MergesInSecondLaunch |    \
        SharesLoadsInCluster)                                                  \
  X(TransposedDecode, "transposed_decode", "attnc/device/transposed_decode.h", \
    "attnc::TransposedDecodeCta", Pipelined, 8, PacksGroup | MergesOwnSplits)

#define ATTNC_SCHEDULE_ENUMERATOR(name, ...) name,
/// A kernel schedule: the CTA class that runs a kernel and how its grid is
/// laid out.
enum class Schedule : i32 { ATTNC_SCHEDULES(ATTNC_SCHEDULE_ENUMERATOR) };
#undef ATTNC_SCHEDULE_ENUMERATOR

/// What the layers know of a schedule: one row of ATTNC_SCHEDULES.
struct ScheduleTraits {
  const char *header;
  const char *ctaClass;
  SharedStorage storage;
  i32 rowsPerWarp;
  u32 features; // schedule_feature bits

  constexpr bool has(u32 feature) const { return (features & feature) != 0; }
};

#define ATTNC_SCHEDULE_TRAITS(name, keyword, header, cta, storage, rows,       \
                              features)                                        \
  ScheduleTraits{header, cta, SharedStorage::storage, rows, [] {               \
                   using namespace schedule_feature;                           \
                   return u32(features);                                       \
                 }()},
constexpr ScheduleTraits kScheduleTraits[] = {
    ATTNC_SCHEDULES(ATTNC_SCHEDULE_TRAITS)};
#undef ATTNC_SCHEDULE_TRAITS
constexpr i32 kNumSchedules =
    i32(sizeof(kScheduleTraits) / sizeof(kScheduleTraits[0]));

/// The row of `schedule`; callers pass enumerators, which are in range.
constexpr const ScheduleTraits &traits(Schedule schedule) {
  return kScheduleTraits[i32(schedule)];
}

#if !ATTNC_IS_DEVICE
#define ATTNC_SCHEDULE_KEYWORD(name, keyword, ...) keyword,
constexpr const char *kScheduleKeywords[] = {
    ATTNC_SCHEDULES(ATTNC_SCHEDULE_KEYWORD)};
#undef ATTNC_SCHEDULE_KEYWORD

/// The IR keyword of a schedule ("warp_specialized"), or "" if out of
/// range.
inline const char *keyword(Schedule schedule) {
  return detail::nameAt(kScheduleKeywords, int(schedule));
}

/// Parses a schedule's IR keyword (`text` of `length` characters, not
/// necessarily NUL-terminated); false if it names none.
inline bool parseKeyword(const char *text, unsigned long length,
                         Schedule &out) {
  return detail::lookup(kScheduleKeywords, text, length, out);
}
#endif // !ATTNC_IS_DEVICE

} // namespace attnc

#endif // ATTNC_DEVICE_SCHEDULES_H
