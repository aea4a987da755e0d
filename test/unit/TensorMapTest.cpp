//===- TensorMapTest.cpp - tensor-map arguments, without a GPU ------------===//
//
// The arguments attnc hands cuTensorMapEncodeTiled for an attention operand
// must describe the [tokens, heads, dim] tensor and a box that fills one
// column block of the device tile; arguments the driver would refuse are
// refused here by name; and the encode call passes every argument through
// (checked with a stand-in for the driver's entry point).
//
//===----------------------------------------------------------------------===//

#include "cuda/TensorMap.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace attnc::cuda {
namespace {

constexpr uint64_t kAddress = 0x7f0000001000;

TEST(TensorMap, AttentionOperandDescribesTokensHeadsDim) {
  StatusOr<TensorMapArgs> a =
      attentionOperandMap(kAddress, DType::BF16, 300, 8, 128, 64);
  ASSERT_TRUE(a.ok()) << a.status().toString();
  EXPECT_EQ(a->dataType, TensorMapDataType::BF16);
  EXPECT_EQ(int(a->dataType), 9); // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
  EXPECT_EQ(a->rank, 3u);
  EXPECT_EQ(a->globalAddress, kAddress);
  EXPECT_EQ(std::vector<uint64_t>(a->globalDim, a->globalDim + 3),
            (std::vector<uint64_t>{128, 8, 300}));
  EXPECT_EQ(std::vector<uint64_t>(a->globalStrides, a->globalStrides + 2),
            (std::vector<uint64_t>{128 * 2, 8 * 128 * 2}));
  EXPECT_EQ(std::vector<uint32_t>(a->boxDim, a->boxDim + 3),
            (std::vector<uint32_t>{64, 1, 64}));
  EXPECT_EQ(std::vector<uint32_t>(a->elementStrides, a->elementStrides + 3),
            (std::vector<uint32_t>{1, 1, 1}));
  EXPECT_EQ(int(a->swizzle), 3); // CU_TENSOR_MAP_SWIZZLE_128B
  EXPECT_EQ(a->interleave, 0);
  EXPECT_EQ(a->oobFill, 0); // zeros beyond the tensor
  // The box is one column block of the tile the device declares.
  using Tile = hopper::Sw128Tile<64, 128>;
  EXPECT_EQ(int(a->boxDim[0]), Tile::kBlockCols);
  EXPECT_EQ(a->boxDim[0] * 2 * a->boxDim[2], uint32_t(Tile::kBlockBytes));

  StatusOr<TensorMapArgs> h =
      attentionOperandMap(kAddress, DType::F16, 17, 1, 192, 128);
  ASSERT_TRUE(h.ok()) << h.status().toString();
  EXPECT_EQ(int(h->dataType), 6); // CU_TENSOR_MAP_DATA_TYPE_FLOAT16
  EXPECT_EQ(h->globalDim[0], 192u);
  EXPECT_EQ(h->boxDim[2], 128u);
  EXPECT_EQ(describe(*h), "rank 3, dims [192, 1, 17], strides [384, 384], "
                          "box [64, 1, 128], swizzle 128B");
}

// A paged cache is four-dimensional: dim, then heads and slots in the page
// order's nesting, then pages (unbounded: the page table names them), with
// the page stride the caller gives (an interleaved K/V cache's is twice the
// packed one).
TEST(TensorMap, PagedOperandNestsSlotsAndHeadsByPageOrder) {
  StatusOr<TensorMapArgs> nhd = pagedOperandMap(
      kAddress, DType::BF16, PageOrder::NHD, 16, 8, 128, 2 * 16 * 8 * 128, 16);
  ASSERT_TRUE(nhd.ok()) << nhd.status().toString();
  EXPECT_EQ(describe(*nhd),
            "rank 4, dims [128, 8, 16, 2147483648], strides [256, 2048, "
            "65536], box [64, 1, 16, 1], swizzle 128B");
  StatusOr<TensorMapArgs> hnd = pagedOperandMap(
      kAddress, DType::F16, PageOrder::HND, 64, 8, 128, 64 * 8 * 128, 32);
  ASSERT_TRUE(hnd.ok()) << hnd.status().toString();
  EXPECT_EQ(describe(*hnd),
            "rank 4, dims [128, 64, 8, 2147483648], strides [256, 16384, "
            "131072], box [64, 32, 1, 1], swizzle 128B");
  // A page stride shorter than a page would overlap pages.
  EXPECT_FALSE(pagedOperandMap(kAddress, DType::BF16, PageOrder::NHD, 16, 8,
                               128, 16 * 8 * 128 - 1, 16)
                   .ok());
}

TEST(TensorMap, MatrixViewOfHeads) {
  // Q [64 tokens, 4 heads x 128] as a matrix: rows 1024 bytes apart.
  StatusOr<TensorMapArgs> a =
      matrixMap(kAddress, DType::BF16, 64, 4 * 128, 4 * 128, 64);
  ASSERT_TRUE(a.ok()) << a.status().toString();
  EXPECT_EQ(a->rank, 2u);
  EXPECT_EQ(a->globalDim[0], 512u);
  EXPECT_EQ(a->globalDim[1], 64u);
  EXPECT_EQ(a->globalStrides[0], 1024u);
  EXPECT_EQ(a->boxDim[0], 64u);
  EXPECT_EQ(a->boxDim[1], 64u);
}

void expectInvalid(const StatusOr<TensorMapArgs> &a, const std::string &part) {
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), ErrorCode::InvalidArgument);
  EXPECT_NE(a.status().message().find(part), std::string::npos)
      << a.status().message();
}

TEST(TensorMap, RefusesWhatTheDriverWould) {
  expectInvalid(attentionOperandMap(kAddress + 8, DType::BF16, 64, 8, 128, 64),
                "16-byte aligned");
  // 100 halves: rows 200 bytes apart, not a multiple of 16.
  expectInvalid(attentionOperandMap(kAddress, DType::BF16, 64, 8, 100, 64),
                "multiple of 16 bytes");
  expectInvalid(attentionOperandMap(kAddress, DType::BF16, 64, 8, 128, 512),
                "1 to 256");
  expectInvalid(attentionOperandMap(kAddress, DType::BF16, 64, 8, 128, 0),
                "1 to 256");
  expectInvalid(attentionOperandMap(kAddress, DType::F32, 64, 8, 128, 64),
                "f32");
  expectInvalid(attentionOperandMap(kAddress, DType::BF16, 0, 8, 128, 64),
                "tokens");
  expectInvalid(
      attentionOperandMap(kAddress, DType::BF16, int64_t(1) << 33, 1, 64, 64),
      "2^32");
  // Rows shorter than the matrix is wide would overlap.
  expectInvalid(matrixMap(kAddress, DType::BF16, 64, 512, 256, 64), "shorter");

  StatusOr<TensorMapArgs> a =
      attentionOperandMap(kAddress, DType::BF16, 64, 8, 128, 64);
  ASSERT_TRUE(a.ok());
  TensorMapArgs wide = *a;
  wide.boxDim[0] = 128; // 256 bytes: wider than the 128-byte swizzle
  EXPECT_NE(validate(wide).message().find("swizzle span"), std::string::npos);
  TensorMapArgs odd = *a;
  odd.boxDim[0] = 4; // 8 bytes
  EXPECT_NE(validate(odd).message().find("multiple of 16 bytes"),
            std::string::npos);
  TensorMapArgs rank = *a;
  rank.rank = 6;
  EXPECT_FALSE(validate(rank).ok());
}

// What the stand-in for cuTensorMapEncodeTiled saw.
struct Seen {
  int calls = 0;
  int dataType = -1, interleave = -1, swizzle = -1, l2 = -1, oob = -1;
  unsigned rank = 0;
  void *address = nullptr;
  std::vector<uint64_t> dims, strides;
  std::vector<uint32_t> box, elementStrides;
  int result = 0;
} seen;

int fakeEncode(void *map, int dataType, unsigned rank, void *address,
               const uint64_t *dims, const uint64_t *strides,
               const uint32_t *box, const uint32_t *elementStrides,
               int interleave, int swizzle, int l2, int oob) {
  ++seen.calls;
  seen.dataType = dataType;
  seen.rank = rank;
  seen.address = address;
  seen.dims.assign(dims, dims + rank);
  seen.strides.assign(strides, strides + rank - 1);
  seen.box.assign(box, box + rank);
  seen.elementStrides.assign(elementStrides, elementStrides + rank);
  seen.interleave = interleave;
  seen.swizzle = swizzle;
  seen.l2 = l2;
  seen.oob = oob;
  std::memset(map, 0xab, 128);
  return seen.result;
}

TEST(TensorMap, EncodePassesEveryArgument) {
  StatusOr<TensorMapArgs> a =
      attentionOperandMap(kAddress, DType::F16, 4096, 8, 128, 128);
  ASSERT_TRUE(a.ok());
  hopper::TensorMap map = {};
  seen = Seen();
  ASSERT_TRUE(encodeTensorMap(fakeEncode, map, *a).ok());
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(seen.dataType, 6);
  EXPECT_EQ(seen.rank, 3u);
  EXPECT_EQ(seen.address, reinterpret_cast<void *>(kAddress));
  EXPECT_EQ(seen.dims, (std::vector<uint64_t>{128, 8, 4096}));
  EXPECT_EQ(seen.strides, (std::vector<uint64_t>{256, 2048}));
  EXPECT_EQ(seen.box, (std::vector<uint32_t>{64, 1, 128}));
  EXPECT_EQ(seen.elementStrides, (std::vector<uint32_t>{1, 1, 1}));
  EXPECT_EQ(seen.interleave, 0);
  EXPECT_EQ(seen.swizzle, 3);
  EXPECT_EQ(seen.l2, 3);
  EXPECT_EQ(seen.oob, 0);
  EXPECT_EQ(map.opaque[0], 0xababababababababull) << "the map was written";
  EXPECT_EQ(reinterpret_cast<uintptr_t>(&map) % 128, 0u);

  // The driver's refusal and a driver without the entry point are errors.
  seen.result = 1; // CUDA_ERROR_INVALID_VALUE
  Status refused = encodeTensorMap(fakeEncode, map, *a);
  EXPECT_EQ(refused.code(), ErrorCode::CudaError);
  EXPECT_NE(refused.message().find("box [64, 1, 128]"), std::string::npos)
      << refused.message();
  Status missing = encodeTensorMap(nullptr, map, *a);
  EXPECT_EQ(missing.code(), ErrorCode::Unsupported);
  EXPECT_NE(missing.message().find("cuTensorMapEncodeTiled"),
            std::string::npos);
  // Invalid arguments never reach the driver.
  seen = Seen();
  TensorMapArgs bad = *a;
  bad.globalAddress += 2;
  EXPECT_EQ(encodeTensorMap(fakeEncode, map, bad).code(),
            ErrorCode::InvalidArgument);
  EXPECT_EQ(seen.calls, 0);
}

} // namespace
} // namespace attnc::cuda
