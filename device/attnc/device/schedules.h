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

// X(enumerator, IR keyword, device header, CTA class template,
//   warp-specialized: a producer warpgroup and wgmma consumers, whose
//     persistent CTAs walk a work order and load through tensor maps,
//   packs the GQA group: a CTA holds every query head of a KV head,
//   merges its own splits: a split-KV kernel of it merges its partial
//     states itself (merge_splits),
//   merges in a second launch: ... in a second launch of itself, spread
//     over the grid, rather than in the CTA that stores the last split,
//   rows of a query tile one warp's products hold,
//   shared-memory layout (shared_storage.h): one per CTA class)
#define ATTNC_SCHEDULES(X)                                                     \
  X(Prefill, "prefill", "attnc/device/attention.h", "attnc::AttentionCta",     \
    false, true, true, false, 16, Pipelined)                                   \
  X(Decode, "decode", "attnc/device/attention.h", "attnc::AttentionCta",       \
    false, true, true, false, 16, Pipelined)                                   \
  X(WarpSpecialized, "warp_specialized", "attnc/device/hopper/prefill.h",      \
    "attnc::WarpSpecializedCta", true, false, false, false, 16,                \
    WarpSpecialized)                                                           \
  X(Latent, "latent", "attnc/device/hopper/latent.h", "attnc::LatentCta",      \
    true, true, true, true, 16, Latent)                                        \
  X(TransposedDecode, "transposed_decode", "attnc/device/transposed_decode.h", \
    "attnc::TransposedDecodeCta", false, true, true, false, 8, Pipelined)

#define ATTNC_SCHEDULE_ENUMERATOR(name, ...) name,
/// A kernel schedule: the CTA class that runs a kernel and how its grid is
/// laid out.
enum class Schedule : i32 { ATTNC_SCHEDULES(ATTNC_SCHEDULE_ENUMERATOR) };
#undef ATTNC_SCHEDULE_ENUMERATOR

/// What the layers know of a schedule: one row of ATTNC_SCHEDULES.
struct ScheduleTraits {
  const char *header;
  const char *ctaClass;
  bool warpSpecialized;
  bool packsGroup;
  bool mergesOwnSplits;
  bool mergesInSecondLaunch;
  i32 rowsPerWarp;
  SharedStorage storage;
};

#define ATTNC_SCHEDULE_TRAITS(name, keyword, header, cta, warpSpecialized,     \
                              packsGroup, mergesOwn, secondLaunch, rows,       \
                              storage)                                         \
  ScheduleTraits{                                                              \
      header,       cta,  warpSpecialized,       packsGroup, mergesOwn,        \
      secondLaunch, rows, SharedStorage::storage},
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
