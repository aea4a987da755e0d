//===- AttnGPUDialect.h - the attn_gpu dialect ------------------*- C++ -*-===//
//
// Entry point for users of the attn_gpu dialect: the dialect, its enums,
// attributes and operations.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DIALECT_ATTNGPU_ATTNGPUDIALECT_H
#define ATTNC_DIALECT_ATTNGPU_ATTNGPUDIALECT_H

#include "attnc/Dialect/Attn/AttnDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

#include "attnc/Dialect/AttnGPU/AttnGPUDialect.h.inc"
#include "attnc/device/schedules.h"

namespace mlir::attn_gpu {
using ::attnc::PartialTiles;
using ::attnc::Schedule;
/// Parses a PartialTiles keyword (`never`, `edges`, `always`).
FailureOr<PartialTiles> parsePartialTiles(AsmParser &parser);
/// Parses a schedule's keyword (`decode`, `warp_specialized`, ...).
FailureOr<::attnc::Schedule> parseSchedule(AsmParser &parser);
/// Key rows of each box in which a warp-specialized producer fills a
/// `blockN`-key tile of `key`: the whole tile, a page's part of it, or one
/// row of an fp8 cache (widened row by row). Boxes that are not whole
/// swizzle atoms (hopper::boxesFillAtoms) are gathered row by row instead.
int64_t kvBoxRows(attn::KVType key, int64_t blockN);
/// CTAs of a latent kernel's cluster (PlanAttr's cluster_ctas) for
/// `queryHeads` query heads over the cache `keys` in tiles of `blockN`
/// keys: 2 where a token's heads fill whole pairs of 64-row blocks (so both
/// CTAs of a pair see the same keys) and the copy engine loads the tiles
/// (whole swizzle atoms of a 16-bit cache), so that it can multicast each
/// half into both; 1 otherwise.
int64_t latentClusterCtas(int64_t queryHeads, attn::KVType keys,
                          int64_t blockN);
} // namespace mlir::attn_gpu

#define GET_ATTRDEF_CLASSES
#include "attnc/Dialect/AttnGPU/AttnGPUAttrs.h.inc"

#include "attnc/Dialect/AttnGPU/AttnGPUInterfaces.h.inc"

#define GET_OP_CLASSES
#include "attnc/Dialect/AttnGPU/AttnGPUOps.h.inc"

#endif // ATTNC_DIALECT_ATTNGPU_ATTNGPUDIALECT_H
