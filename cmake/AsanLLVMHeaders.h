// Included first in every attnc source of an AddressSanitizer build
// (cmake/Sanitizers.cmake).
//
// Under ASan, LLVM's headers poison and unpoison the slabs of
// BumpPtrAllocator around each allocation. Debian's LLVM/MLIR archives were
// built without ASan, so their inlined copies of the allocator do not
// unpoison, while the linker may pick attnc's poisoning copy of the
// out-of-line AllocateSlow for everyone: MLIR then writes into memory ASan
// believes poisoned (a false use-after-poison in MLIRContext's
// constructor). Making these annotations no-ops keeps every copy alike;
// ASan still checks every access against the heap, stack and globals.
#ifndef ATTNC_CMAKE_ASANLLVMHEADERS_H
#define ATTNC_CMAKE_ASANLLVMHEADERS_H

#include <sanitizer/asan_interface.h>

#define __asan_poison_memory_region(addr, size) ((void)(addr), (void)(size))
#define __asan_unpoison_memory_region(addr, size) ((void)(addr), (void)(size))

#endif // ATTNC_CMAKE_ASANLLVMHEADERS_H
