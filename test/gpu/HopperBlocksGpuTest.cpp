//===- HopperBlocksGpuTest.cpp - the Hopper blocks' data path on the GPU --===//
//
// Runs the test kernel of test/hopper (HopperBlocksKernel.cuh: a TMA
// producer warp, a ring of mbarrier-guarded stages, a consumer warpgroup
// computing S = Q.K^T with SS wgmma and O = P.V with RS wgmma) for every
// instance the SASS check compiles, on fresh random inputs, and compares S
// and O with a double-precision product on the CPU. Q, K and V have two
// heads and the kernel reads head 1, through a 2D map for Q (a [tokens,
// heads x dim] matrix) and 3D maps for K and V; three KV tiles go through
// a two-stage ring, so a stage is reused and its barriers change phase.
// Outputs are poisoned with NaN first: an element not written fails.
//
// Skipped without a GPU, or on one that is not sm_90 (wgmma, TMA).
// ATTNC_HOPPER_SEED=N repeats a run's inputs (each run prints its seed).
//
//===----------------------------------------------------------------------===//

#include "HopperBlocks.h"
#include "HopperBlocksKernel.cuh"
#include "attnc/Check/Halves.h"
#include "cuda/CudaDriver.h"
#include "cuda/TensorMap.h"
#include "exec/Executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

namespace attnc::hopper_test {
namespace {

constexpr int kHeads = 2;
constexpr int kHead = 1;
constexpr int kTiles = 3;
constexpr int kQTokens = hopper::kWgmmaM;

/// Every instance compiled once, in one NVRTC program, and loaded.
struct Module {
  Status status;
  std::unique_ptr<LoadedModule> module;
  std::string log;
};
Module &module(cuda::Driver &driver) {
  static Module m = [&] {
    Module result;
    StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
    if (!nvrtc.ok()) {
      result.status = nvrtc.status();
      return result;
    }
    StatusOr<jit::CompiledCode> code =
        compileKernels(**nvrtc, testConfigs(sm90SharedOptin()));
    if (!code.ok()) {
      result.status = code.status();
      return result;
    }
    result.log = code->log;
    StatusOr<LoadedModule> loaded = LoadedModule::load(driver, code->image);
    if (!loaded.ok()) {
      result.status = loaded.status();
      return result;
    }
    result.module = std::make_unique<LoadedModule>(std::move(*loaded));
    return result;
  }();
  return m;
}

/// Random values in [-1, 1] rounded to the element type: their bits for
/// the GPU and their values for the reference.
struct Operand {
  std::vector<uint16_t> bits;
  std::vector<double> values;
};
Operand randomOperand(DType type, size_t count, std::mt19937 &rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  Operand o;
  o.bits.resize(count);
  o.values.resize(count);
  for (size_t i = 0; i < count; ++i) {
    float x = uniform(rng);
    o.bits[i] = type == DType::BF16 ? toBF16(x) : toF16(x);
    o.values[i] =
        type == DType::BF16 ? fromBF16(o.bits[i]) : fromF16(o.bits[i]);
  }
  return o;
}

double roundTo(DType type, double x) {
  return type == DType::BF16 ? fromBF16(toBF16(float(x)))
                             : fromF16(toF16(float(x)));
}

/// max |gpu - reference| / max |reference|, and the count of NaNs.
struct Error {
  double relative = 0;
  size_t nans = 0;
};
Error compare(const std::vector<float> &gpu, const std::vector<double> &ref) {
  Error e;
  double worst = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    scale = std::max(scale, std::fabs(ref[i]));
    if (std::isnan(gpu[i])) {
      ++e.nans;
      continue;
    }
    worst = std::max(worst, std::fabs(double(gpu[i]) - ref[i]));
  }
  e.relative = scale > 0 ? worst / scale : worst;
  return e;
}

class HopperBlocks : public ::testing::TestWithParam<BlocksConfig> {};

#define ASSERT_OK(expr)                                                        \
  do {                                                                         \
    Status s_ = (expr);                                                        \
    ASSERT_TRUE(s_.ok()) << #expr << ": " << s_.toString();                    \
  } while (0)

TEST_P(HopperBlocks, DataPathMatchesReference) {
  StatusOr<cuda::Driver *> got = cuda::Driver::get();
  if (!got.ok())
    GTEST_SKIP() << "no GPU: " << got.status().message();
  cuda::Driver &driver = **got;
  if (driver.device().computeMajor != 9)
    GTEST_SKIP() << "wgmma and TMA need an sm_90 GPU; this one is "
                 << driver.device().arch();
  const BlocksConfig &c = GetParam();
  if (c.smemBytes() > driver.device().sharedMemoryPerBlockOptin)
    GTEST_SKIP() << c.name() << " needs " << c.smemBytes()
                 << " bytes of shared memory; this GPU allows "
                 << driver.device().sharedMemoryPerBlockOptin;
  Module &m = module(driver);
  ASSERT_OK(m.status);

  unsigned seed = std::random_device()();
  if (const char *fixed = std::getenv("ATTNC_HOPPER_SEED"))
    seed = unsigned(std::strtoul(fixed, nullptr, 10));
  std::cout << "[ " << c.name() << " ] seed " << seed << "\n";
  std::mt19937 rng(seed);
  int kvTokens = kTiles * c.n;
  Operand q = randomOperand(c.type, size_t(kQTokens) * kHeads * c.d, rng);
  Operand k = randomOperand(c.type, size_t(kvTokens) * kHeads * c.d, rng);
  Operand v = randomOperand(c.type, size_t(kvTokens) * kHeads * c.dv, rng);

  // The reference: S in double from the rounded inputs, P = S rounded to
  // the element type (as the kernel rounds its f32 S), O = P.V in double.
  int sCols = kTiles * c.n;
  std::vector<double> sRef(size_t(kQTokens) * sCols),
      oRef(size_t(kQTokens) * c.dv);
  for (int i = 0; i < kQTokens; ++i)
    for (int j = 0; j < kvTokens; ++j) {
      double dot = 0;
      for (int e = 0; e < c.d; ++e)
        dot += q.values[(size_t(i) * kHeads + kHead) * c.d + e] *
               k.values[(size_t(j) * kHeads + kHead) * c.d + e];
      sRef[size_t(i) * sCols + j] = dot;
    }
  for (int i = 0; i < kQTokens; ++i)
    for (int j = 0; j < kvTokens; ++j) {
      double p = roundTo(c.type, sRef[size_t(i) * sCols + j]);
      for (int e = 0; e < c.dv; ++e)
        oRef[size_t(i) * c.dv + e] +=
            p * v.values[(size_t(j) * kHeads + kHead) * c.dv + e];
    }

  auto upload = [&](const Operand &o) -> StatusOr<cuda::DeviceBuffer> {
    StatusOr<cuda::DeviceBuffer> b =
        cuda::DeviceBuffer::allocate(driver, o.bits.size() * 2);
    if (b.ok())
      if (Status s =
              driver.copyToDevice(b->get(), o.bits.data(), o.bits.size() * 2);
          !s.ok())
        return s;
    return b;
  };
  StatusOr<cuda::DeviceBuffer> qBuf = upload(q), kBuf = upload(k),
                               vBuf = upload(v);
  ASSERT_OK(qBuf.status());
  ASSERT_OK(kBuf.status());
  ASSERT_OK(vBuf.status());
  StatusOr<cuda::DeviceBuffer> sBuf =
      cuda::DeviceBuffer::allocate(driver, sRef.size() * sizeof(float));
  StatusOr<cuda::DeviceBuffer> oBuf =
      cuda::DeviceBuffer::allocate(driver, oRef.size() * sizeof(float));
  ASSERT_OK(sBuf.status());
  ASSERT_OK(oBuf.status());
  // All-ones bytes are NaN in f32: an element the kernel skips stays NaN.
  ASSERT_OK(driver.fill(sBuf->get(), 0xff, sBuf->size()));
  ASSERT_OK(driver.fill(oBuf->get(), 0xff, oBuf->size()));

  StatusOr<cuda::TensorMapArgs> qArgs =
      cuda::matrixMap(qBuf->get(), c.type, kQTokens, int64_t(kHeads) * c.d,
                      int64_t(kHeads) * c.d, kQTokens);
  StatusOr<cuda::TensorMapArgs> kArgs = cuda::attentionOperandMap(
      kBuf->get(), c.type, kvTokens, kHeads, c.d, c.n);
  StatusOr<cuda::TensorMapArgs> vArgs = cuda::attentionOperandMap(
      vBuf->get(), c.type, kvTokens, kHeads, c.dv, c.n);
  ASSERT_OK(qArgs.status());
  ASSERT_OK(kArgs.status());
  ASSERT_OK(vArgs.status());
  BlocksParams params;
  std::memset(&params, 0, sizeof(params));
  ASSERT_OK(driver.encodeTensorMap(params.q, *qArgs));
  ASSERT_OK(driver.encodeTensorMap(params.k, *kArgs));
  ASSERT_OK(driver.encodeTensorMap(params.v, *vArgs));
  params.s = reinterpret_cast<float *>(sBuf->get());
  params.o = reinterpret_cast<float *>(oBuf->get());
  params.head = kHead;
  params.tiles = kTiles;

  StatusOr<cuda::CUfunction> function =
      m.module->function(c.name(), c.smemBytes());
  ASSERT_OK(function.status());
  ASSERT_OK(driver.launch(*function, 1, 1, 1, kThreads, c.smemBytes(), nullptr,
                          &params, sizeof(params)));
  ASSERT_OK(driver.synchronize());

  std::vector<float> s(sRef.size()), o(oRef.size());
  ASSERT_OK(driver.copyToHost(s.data(), sBuf->get(), s.size() * sizeof(float)));
  ASSERT_OK(driver.copyToHost(o.data(), oBuf->get(), o.size() * sizeof(float)));
  Error sError = compare(s, sRef), oError = compare(o, oRef);
  std::cout << "[ " << c.name() << " ] S error " << sError.relative
            << ", O error " << oError.relative << "\n";
  EXPECT_EQ(sError.nans, 0u) << "S elements left unwritten (or NaN)";
  EXPECT_EQ(oError.nans, 0u) << "O elements left unwritten (or NaN)";
  EXPECT_LT(sError.relative, 1e-2) << "S = Q.K^T (SS wgmma)";
  EXPECT_LT(oError.relative, 1e-2) << "O = P.V (RS wgmma)";
}

INSTANTIATE_TEST_SUITE_P(
    Instances, HopperBlocks,
    ::testing::ValuesIn(testConfigs(sm90SharedOptin())),
    [](const ::testing::TestParamInfo<BlocksConfig> &info) {
      return info.param.name();
    });

} // namespace
} // namespace attnc::hopper_test
