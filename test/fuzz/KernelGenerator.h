//===- KernelGenerator.h - hand-written attn_gpu kernels --------*- C++ -*-===//

#ifndef ATTNC_TEST_FUZZ_KERNELGENERATOR_H
#define ATTNC_TEST_FUZZ_KERNELGENERATOR_H

#include "Choices.h"

#include <string>

namespace attnc::fuzz {

/// The descriptor types of the attention the kernel stands beside.
struct KernelTypes {
  std::string query, key, value, output;
};

/// An `attn_gpu.kernel @user_kernel` (or a merge kernel of that name) with
/// fuzzed plan, target, masks, types, attributes and body.
std::string generateKernel(Choices &c, const KernelTypes &types);

/// A launch of @user_kernel (or of nothing) inside a function, on
/// `operands`, with `results` results of `resultTypes`.
std::string generateLaunch(Choices &c, const std::string &operands,
                           const std::string &operandTypes,
                           const std::string &resultTypes, int results);

} // namespace attnc::fuzz

#endif // ATTNC_TEST_FUZZ_KERNELGENERATOR_H
