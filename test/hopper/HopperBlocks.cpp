//===- HopperBlocks.cpp - instances of the Hopper blocks test kernel ------===//

#include "HopperBlocks.h"

#include "HopperBlocksKernel.cuh"
#include "attnc/Driver/Pipeline.h"

namespace attnc::hopper_test {

/// The kernel's text and the widths probe's, embedded at build time
/// (cmake/EmbedText.cmake).
extern const char kHopperBlocksKernelSource[];
extern const char kWgmmaWidthsProbeSource[];

namespace {
// X(d, n, dv): the grid. Head dims 64 and 128 with KV tiles of 64 and 128
// tokens; 256 with 64 and 80 (FlashAttention-3's d256 tile; with 128, S,
// P and O of d256 need more registers than a warpgroup has, and spill);
// and DeepSeek's qk 192 / v 128 (three column blocks of Q and K, two of V).
#define ATTNC_HOPPER_TEST_SHAPES(X)                                            \
  X(64, 64, 64)                                                                \
  X(64, 128, 64)                                                               \
  X(128, 64, 128)                                                              \
  X(128, 128, 128)                                                             \
  X(256, 64, 256)                                                              \
  X(256, 80, 256)                                                              \
  X(192, 64, 128)                                                              \
  X(192, 128, 128)

int layoutBytes(int d, int n, int dv, int stages) {
#define ATTNC_LAYOUT_CASE(D, N, DV)                                            \
  if (d == D && n == N && dv == DV)                                            \
    return stages == 1   ? BlocksLayout<D, N, DV, 1>::kSmemBytes               \
           : stages == 2 ? BlocksLayout<D, N, DV, 2>::kSmemBytes               \
                         : -1;
  ATTNC_HOPPER_TEST_SHAPES(ATTNC_LAYOUT_CASE)
#undef ATTNC_LAYOUT_CASE
  return -1;
}
} // namespace

int sm90SharedOptin() { return int(CompileOptions().smem); }

std::string BlocksConfig::name() const {
  return std::string("hopper_blocks_") + keyword(type) + "_d" +
         std::to_string(d) + "_n" + std::to_string(n) + "_v" +
         std::to_string(dv) + "_s" + std::to_string(stages);
}

void PrintTo(const BlocksConfig &config, std::ostream *os) {
  *os << config.name();
}

int BlocksConfig::smemBytes() const { return layoutBytes(d, n, dv, stages); }

std::vector<BlocksConfig> testConfigs(int smemLimit) {
  std::vector<BlocksConfig> configs;
  for (DType type : {DType::BF16, DType::F16}) {
#define ATTNC_CONFIG(D, N, DV)                                                 \
  for (int stages = 2; stages >= 1; --stages)                                  \
    if (layoutBytes(D, N, DV, stages) <= smemLimit) {                          \
      configs.push_back({type, D, N, DV, stages});                             \
      break;                                                                   \
    }
    ATTNC_HOPPER_TEST_SHAPES(ATTNC_CONFIG)
#undef ATTNC_CONFIG
  }
  return configs;
}

std::string kernelSource(const std::vector<BlocksConfig> &configs) {
  std::string source = kHopperBlocksKernelSource;
  source += "\n";
  for (const BlocksConfig &c : configs)
    source += "ATTNC_HOPPER_BLOCKS_KERNEL(" + c.name() +
              ", attnc::" + std::string(keyword(c.type)) + ", " +
              std::to_string(c.d) + ", " + std::to_string(c.n) + ", " +
              std::to_string(c.dv) + ", " + std::to_string(c.stages) + ")\n";
  return source;
}

StatusOr<jit::CompiledCode>
compileKernels(jit::Nvrtc &nvrtc, const std::vector<BlocksConfig> &configs) {
  return nvrtc.compile(kernelSource(configs), "sm_90a", /*ptx=*/false,
                       /*driverCache=*/true);
}

std::string widthsProbeSource() { return kWgmmaWidthsProbeSource; }

int widthsProbeCount() {
  // Every width of wgmma_widths.h, SS and RS, bf16 and f16.
#define ATTNC_COUNT(N) +4
  return 0 ATTNC_WGMMA_WIDTHS(ATTNC_COUNT);
#undef ATTNC_COUNT
}

} // namespace attnc::hopper_test
