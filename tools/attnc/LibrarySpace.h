//===- LibrarySpace.h - the variants the prebuilt library holds -*- C++ -*-===//
//
// The one list of what `attnc library build` compiles ahead: the
// structures common models call, spelled as the Python API spells them
// (attnc.attention, attnc.PagedAttention), so that their kernels are the
// ones users' first calls look up.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TOOLS_ATTNC_LIBRARYSPACE_H
#define ATTNC_TOOLS_ATTNC_LIBRARYSPACE_H

#include "attnc/attnc.h"

#include <string>
#include <vector>

namespace attnc {

struct LibraryVariant {
  /// "prefill.bf16.d128.h32x8.causal": what --list prints and progress
  /// names.
  std::string name;
  VariantSpec spec;
};

/// Every variant of the library, each once.
std::vector<LibraryVariant> libraryVariants();

} // namespace attnc

#endif // ATTNC_TOOLS_ATTNC_LIBRARYSPACE_H
