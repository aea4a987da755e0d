//===- GeneratorCheck.cpp - the variant generator still writes variants ---===//
//
// `attnc-fuzz-generator-check [N [DIR]]` compiles N (default 3000) variants
// from fixed pseudo-random bytes and says how far they got; with DIR, writes
// each into it (scripts/fuzz.sh seeds attnc-fuzz with some). A generator that
// drifted from the dialect's syntax would make attnc-fuzz-variants fuzz the
// parser's first error only, silently: the test fails when fewer than half
// the variants parse or fewer than an eighth reach CUDA. (Drift drops these
// to near zero; about a fifth reach CUDA today, since the generator also
// draws what the verifier and planner must refuse.) It is also a small fuzz
// run of its own, in every build.
//
//===----------------------------------------------------------------------===//

#include "FuzzPipeline.h"
#include "VariantGenerator.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  using attnc::fuzz::Reached;
  int count = argc > 1 ? std::atoi(argv[1]) : 3000;
  std::string dir = argc > 2 ? argv[2] : "";
  std::mt19937 random(20261122);
  int parsed = 0, cuda = 0;
  for (int i = 0; i < count; ++i) {
    std::vector<uint8_t> bytes(random() % 96);
    for (uint8_t &b : bytes)
      b = static_cast<uint8_t>(random());
    std::string variant =
        attnc::fuzz::generateVariant(bytes.data(), bytes.size());
    if (!dir.empty())
      std::ofstream(dir + "/variant-" + std::to_string(i) + ".mlir") << variant;
    Reached reached = attnc::fuzz::compileForFuzzing(variant);
    parsed += reached != Reached::ParseError;
    cuda += reached == Reached::Cuda;
  }
  std::printf("variant generator: %d variants, %d parse and verify, %d reach "
              "CUDA\n",
              count, parsed, cuda);
  bool ok = count > 0 && parsed * 2 >= count && cuda * 8 >= count;
  if (!ok)
    std::printf("FAIL: the generator no longer writes what attnc reads: "
                "check test/fuzz/VariantGenerator.cpp against the dialect\n");
  return ok ? 0 : 1;
}
