//===- TensorMap.cpp - tensor maps for the bulk tensor copy ---------------===//

#include "cuda/TensorMap.h"

namespace attnc::cuda {

namespace {
Status invalid(const std::string &message) {
  return Status::error(ErrorCode::InvalidArgument, "tensor map: " + message);
}

/// The 16-bit types the Hopper tiles hold.
StatusOr<TensorMapDataType> mapType(DType type) {
  switch (type) {
  case DType::BF16:
    return TensorMapDataType::BF16;
  case DType::F16:
    return TensorMapDataType::F16;
  default:
    return invalid(std::string("no 16-bit tile type for ") + keyword(type));
  }
}

int swizzleSpan(hopper::Swizzle mode) {
  switch (mode) {
  case hopper::Swizzle::B32:
    return 32;
  case hopper::Swizzle::B64:
    return 64;
  case hopper::Swizzle::B128:
    return 128;
  default:
    return 0;
  }
}
} // namespace

int elementBytes(TensorMapDataType type) {
  switch (type) {
  case TensorMapDataType::F16:
  case TensorMapDataType::BF16:
    return 2;
  }
  return 0;
}

Status validate(const TensorMapArgs &a) {
  if (a.rank < 1 || a.rank > 5)
    return invalid("rank must be 1 to 5, got " + std::to_string(a.rank));
  if (a.globalAddress % 16 != 0)
    return invalid("the global address must be 16-byte aligned");
  int bytes = elementBytes(a.dataType);
  for (unsigned i = 0; i < a.rank; ++i) {
    std::string dim = "dimension " + std::to_string(i);
    if (a.globalDim[i] < 1 || a.globalDim[i] > (uint64_t(1) << 32))
      return invalid(dim + " must have 1 to 2^32 elements, got " +
                     std::to_string(a.globalDim[i]));
    if (a.boxDim[i] < 1 || a.boxDim[i] > 256)
      return invalid(dim + "'s box must be 1 to 256 elements, got " +
                     std::to_string(a.boxDim[i]));
    if (a.elementStrides[i] < 1 || a.elementStrides[i] > 8)
      return invalid(dim + "'s element stride must be 1 to 8");
  }
  for (unsigned i = 0; i + 1 < a.rank; ++i) {
    uint64_t stride = a.globalStrides[i];
    if (stride % 16 != 0 || stride >= (uint64_t(1) << 40))
      return invalid("stride " + std::to_string(i) +
                     " must be a multiple of 16 bytes below 2^40, got " +
                     std::to_string(stride));
    // A stride shorter than the dimension below it would make rows
    // overlap: not a layout attnc means to describe.
    uint64_t below = i == 0 ? a.globalDim[0] * bytes
                            : a.globalStrides[i - 1] * a.globalDim[i];
    if (stride < below)
      return invalid("stride " + std::to_string(i) + " (" +
                     std::to_string(stride) +
                     " bytes) is shorter than the dimension it steps over (" +
                     std::to_string(below) + " bytes)");
  }
  uint64_t innerBytes = uint64_t(a.boxDim[0]) * bytes;
  if (innerBytes % 16 != 0)
    return invalid("the box's inner extent must be a multiple of 16 bytes");
  int span = swizzleSpan(a.swizzle);
  if (span && innerBytes > uint64_t(span))
    return invalid("the box's inner extent (" + std::to_string(innerBytes) +
                   " bytes) exceeds the swizzle span of " +
                   std::to_string(span));
  return Status();
}

namespace {
/// The part every attention map shares: a `rank`-dimensional map of 16-bit
/// elements at `address` whose box's inner extent is one column block of a
/// Sw128Tile (it spans the swizzle). The caller fills dims, strides and the
/// outer box extents.
StatusOr<TensorMapArgs> swizzledTileMap(uint64_t address, DType type,
                                        unsigned rank) {
  StatusOr<TensorMapDataType> dataType = mapType(type);
  if (!dataType.ok())
    return dataType.status();
  TensorMapArgs a;
  a.dataType = *dataType;
  a.rank = rank;
  a.globalAddress = address;
  a.boxDim[0] = hopper::kSwizzleBytes / elementBytes(a.dataType);
  for (unsigned i = 1; i < rank; ++i)
    a.boxDim[i] = 1;
  a.swizzle = hopper::kTileSwizzle;
  return a;
}

StatusOr<TensorMapArgs> validated(const TensorMapArgs &a) {
  if (Status s = validate(a); !s.ok())
    return s;
  return a;
}
} // namespace

StatusOr<TensorMapArgs> attentionOperandMap(uint64_t address, DType type,
                                            int64_t tokens, int64_t heads,
                                            int64_t dim, int boxRows) {
  StatusOr<TensorMapArgs> a = swizzledTileMap(address, type, 3);
  if (!a.ok())
    return a;
  if (tokens < 1 || heads < 1 || dim < 1)
    return invalid("an attention operand needs tokens, heads and a dim, "
                   "got [" +
                   std::to_string(tokens) + ", " + std::to_string(heads) +
                   ", " + std::to_string(dim) + "]");
  a->globalDim[0] = uint64_t(dim);
  a->globalDim[1] = uint64_t(heads);
  a->globalDim[2] = uint64_t(tokens);
  a->globalStrides[0] = uint64_t(dim) * elementBytes(a->dataType);
  a->globalStrides[1] = a->globalStrides[0] * uint64_t(heads);
  a->boxDim[2] = uint32_t(boxRows);
  return validated(*a);
}

StatusOr<TensorMapArgs> pagedOperandMap(uint64_t address, DType type,
                                        PageOrder order, int64_t pageSize,
                                        int64_t heads, int64_t dim,
                                        int64_t pageStride, int boxRows) {
  StatusOr<TensorMapArgs> a = swizzledTileMap(address, type, 4);
  if (!a.ok())
    return a;
  if (pageSize < 1 || heads < 1 || dim < 1 || pageStride < 1)
    return invalid("a paged operand needs pages, heads, a dim and a page "
                   "stride");
  uint64_t bytes = uint64_t(elementBytes(a->dataType));
  bool headMajor = order == PageOrder::HND;
  a->globalDim[0] = uint64_t(dim);
  a->globalDim[1] = uint64_t(headMajor ? pageSize : heads);
  a->globalDim[2] = uint64_t(headMajor ? heads : pageSize);
  // Page tables index the pages: the map does not bound them.
  a->globalDim[3] = uint64_t(1) << 31;
  a->globalStrides[0] = uint64_t(dim) * bytes;
  a->globalStrides[1] = a->globalStrides[0] * a->globalDim[1];
  a->globalStrides[2] = uint64_t(pageStride) * bytes;
  a->boxDim[headMajor ? 1 : 2] = uint32_t(boxRows);
  return validated(*a);
}

StatusOr<TensorMapArgs> matrixMap(uint64_t address, DType type, int64_t rows,
                                  int64_t cols, int64_t rowStride,
                                  int boxRows) {
  StatusOr<TensorMapArgs> a = swizzledTileMap(address, type, 2);
  if (!a.ok())
    return a;
  if (rows < 1 || cols < 1)
    return invalid("a matrix needs rows and columns");
  a->globalDim[0] = uint64_t(cols);
  a->globalDim[1] = uint64_t(rows);
  a->globalStrides[0] = uint64_t(rowStride) * elementBytes(a->dataType);
  a->boxDim[1] = uint32_t(boxRows);
  return validated(*a);
}

Status encodeTensorMap(EncodeTiledFn encode, hopper::TensorMap &map,
                       const TensorMapArgs &args) {
  if (Status s = validate(args); !s.ok())
    return s;
  if (!encode)
    return Status::error(ErrorCode::Unsupported,
                         "this CUDA driver has no cuTensorMapEncodeTiled "
                         "(tensor maps need CUDA 12 or later)");
  int result = encode(&map, int(args.dataType), args.rank,
                      reinterpret_cast<void *>(args.globalAddress),
                      args.globalDim, args.globalStrides, args.boxDim,
                      args.elementStrides, args.interleave, int(args.swizzle),
                      args.l2Promotion, args.oobFill);
  if (result != 0)
    return Status::error(ErrorCode::CudaError,
                         "cuTensorMapEncodeTiled failed with " +
                             std::to_string(result) + " for " + describe(args));
  return Status();
}

std::string describe(const TensorMapArgs &a) {
  auto list = [&](auto *values, unsigned count) {
    std::string s = "[";
    for (unsigned i = 0; i < count; ++i)
      s += (i ? ", " : "") + std::to_string(values[i]);
    return s + "]";
  };
  unsigned rank = a.rank > 5 ? 5 : a.rank;
  return "rank " + std::to_string(a.rank) + ", dims " +
         list(a.globalDim, rank) + ", strides " +
         list(a.globalStrides, rank ? rank - 1 : 0) + ", box " +
         list(a.boxDim, rank) + ", swizzle " +
         std::to_string(swizzleSpan(a.swizzle)) + "B";
}

} // namespace attnc::cuda
