//===- TensorMap.h - tensor maps for the bulk tensor copy -------*- C++ -*-===//
//
// A tensor map tells Hopper's copy engine (TMA) the shape, strides and
// element type of a tensor in global memory and the box it copies into
// shared memory, with the shared-memory swizzle. The arguments of
// cuTensorMapEncodeTiled are computed and checked here, without a GPU, so
// tests can see them; Driver::encodeTensorMap hands them to the driver.
//
// The box and swizzle of an attention operand come from the device tiles
// (attnc/device/hopper/smem_layout.h): the box's inner extent is one
// column block of a Sw128Tile, so a load lands exactly where wgmma's
// descriptors read.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_CUDA_TENSORMAP_H
#define ATTNC_RUNTIME_CUDA_TENSORMAP_H

#include "attnc/Status.h"
#include "attnc/device/abi.h"
#include "attnc/device/hopper/smem_layout.h"
#include "attnc/device/hopper/tma.h"

#include <cstdint>
#include <string>

namespace attnc::cuda {

/// CUtensorMapDataType values attnc uses.
enum class TensorMapDataType : int { F16 = 6, BF16 = 9 };

/// The arguments of one cuTensorMapEncodeTiled call, in its order and with
/// its units: dimensions innermost first, strides in bytes of every
/// dimension but the innermost, box extents in elements.
struct TensorMapArgs {
  TensorMapDataType dataType = TensorMapDataType::BF16;
  unsigned rank = 0;
  uint64_t globalAddress = 0;
  uint64_t globalDim[5] = {};
  uint64_t globalStrides[4] = {};
  uint32_t boxDim[5] = {};
  uint32_t elementStrides[5] = {1, 1, 1, 1, 1};
  int interleave = 0; // CU_TENSOR_MAP_INTERLEAVE_NONE
  hopper::Swizzle swizzle = hopper::kTileSwizzle;
  int l2Promotion = 3; // CU_TENSOR_MAP_L2_PROMOTION_L2_256B: whole tile rows
  int oobFill = 0;     // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros
};

/// Bytes of one element of a map's type.
int elementBytes(TensorMapDataType type);

/// Checks `args` against what cuTensorMapEncodeTiled accepts (CUDA's
/// documentation of it), so a bad map is an InvalidArgument naming the
/// field rather than an opaque CUDA_ERROR_INVALID_VALUE.
Status validate(const TensorMapArgs &args);

/// The map of an attention operand: a row-major [tokens, heads, dim]
/// tensor of 16-bit elements (q, k or v) at `address`, read in boxes of
/// [boxRows tokens, 1 head, one 64-element column block of the head],
/// 128-byte swizzled: the tiles of hopper::Sw128Tile<boxRows, dim>.
StatusOr<TensorMapArgs> attentionOperandMap(uint64_t address, DType type,
                                            int64_t tokens, int64_t heads,
                                            int64_t dim, int boxRows);

/// The map of a paged attention operand: `pageStride` elements between
/// pages of `pageSize` slots, each [pageSize, heads, dim] (NHD) or [heads,
/// pageSize, dim] (HND) 16-bit elements, read in boxes of boxRows slots of
/// one head and one 64-element column block. The page count is left
/// unbounded: page tables say which pages exist.
StatusOr<TensorMapArgs> pagedOperandMap(uint64_t address, DType type,
                                        PageOrder order, int64_t pageSize,
                                        int64_t heads, int64_t dim,
                                        int64_t pageStride, int boxRows);

/// The map of a row-major [rows, cols] matrix of 16-bit elements whose rows
/// are `rowStride` elements apart, read in boxes of [boxRows, 64 columns]
/// into hopper::Sw128Tile<boxRows, ...> tiles.
StatusOr<TensorMapArgs> matrixMap(uint64_t address, DType type, int64_t rows,
                                  int64_t cols, int64_t rowStride, int boxRows);

/// cuTensorMapEncodeTiled's signature, with enums as ints.
using EncodeTiledFn = int (*)(void *tensorMap, int dataType, unsigned rank,
                              void *globalAddress, const uint64_t *globalDim,
                              const uint64_t *globalStrides,
                              const uint32_t *boxDim,
                              const uint32_t *elementStrides, int interleave,
                              int swizzle, int l2Promotion, int oobFill);

/// Validates `args` and encodes them into `map` with `encode` (the driver's
/// entry point, or a test's stand-in). A null `encode` is an Unsupported
/// error: a driver older than CUDA 12 has no tensor maps.
Status encodeTensorMap(EncodeTiledFn encode, hopper::TensorMap &map,
                       const TensorMapArgs &args);

/// "rank 3, dims [128, 8, 4096], strides [256, 2048], box [64, 1, 128],
/// swizzle 128B": for error messages and test output.
std::string describe(const TensorMapArgs &args);

} // namespace attnc::cuda

#endif // ATTNC_RUNTIME_CUDA_TENSORMAP_H
