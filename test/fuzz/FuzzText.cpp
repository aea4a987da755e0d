//===- FuzzText.cpp - attnc-fuzz: the fuzz input is the variant's text ----===//

#include "FuzzPipeline.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  attnc::fuzz::compileForFuzzing(
      std::string(reinterpret_cast<const char *>(data), size));
  return 0;
}
