//===- HopperBlocks.h - instances of the Hopper blocks test kernel -*- C++
//-*-===//
//
// The shapes the GPU test runs and the SASS check compiles, the NVRTC
// source of their kernels (HopperBlocksKernel.cuh plus one instance line
// each) and the compile through runtime/jit's NVRTC wrapper, shared by
// both so that they test the same kernels.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_HOPPER_HOPPERBLOCKS_H
#define ATTNC_TEST_HOPPER_HOPPERBLOCKS_H

#include "attnc/Status.h"
#include "attnc/device/abi.h"
#include "jit/Nvrtc.h"

#include <ostream>
#include <string>
#include <vector>

namespace attnc::hopper_test {

/// The shared memory an sm_90a CTA may opt into, as the compiler assumes
/// without a GPU (CompileOptions' default target; H100 and H200 alike), so
/// that the SASS check compiles the stages a GPU run chooses.
int sm90SharedOptin();

/// One instance of the test kernel.
struct BlocksConfig {
  DType type = DType::BF16;
  int d = 0;      // Q and K head dim
  int n = 0;      // tokens per KV tile: S is 64 x n
  int dv = 0;     // V head dim: O is 64 x dv
  int stages = 0; // K/V ring depth

  /// The kernel's name: "hopper_blocks_bf16_d128_n64_v128_s2".
  std::string name() const;
  /// Dynamic shared memory to launch with (BlocksLayout::kSmemBytes).
  int smemBytes() const;
};

/// For gtest's names and messages.
void PrintTo(const BlocksConfig &config, std::ostream *os);

/// Every (type, d, n, dv) of the test grid, each with the deepest ring (2
/// or 1 stages) that fits `smemLimit` bytes; shapes that fit no ring are
/// left out.
std::vector<BlocksConfig> testConfigs(int smemLimit);

/// HopperBlocksKernel.cuh followed by one instance per config.
std::string kernelSource(const std::vector<BlocksConfig> &configs);

/// The kernels of `configs` compiled for sm_90a through NVRTC: the cubin
/// and NVRTC's log (ptxas's report of each kernel in it).
StatusOr<jit::CompiledCode> compileKernels(jit::Nvrtc &nvrtc,
                                           const std::vector<BlocksConfig> &c);

/// A probe that instantiates every wgmma width of wgmma_widths.h, SS and RS,
/// bf16 and f16, so each spelling is assembled once: its cubin must hold
/// 4 HGMMA per width.
std::string widthsProbeSource();
int widthsProbeCount();

} // namespace attnc::hopper_test

#endif // ATTNC_TEST_HOPPER_HOPPERBLOCKS_H
