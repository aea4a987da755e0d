# Instrumented builds of attnc's own code, each in its own build directory:
#
#   -DATTNC_SANITIZE=address,undefined   sanitizers on every attnc target
#   -DATTNC_FUZZ=ON                      the libFuzzer target test/fuzz
#                                        (clang only; implies address,undefined)
#
# Debian's LLVM/MLIR archives stay as Debian built them (uninstrumented,
# assertions off): ASan and UBSan check the code that is compiled with them
# and tolerate the rest, so attnc's code is what these builds examine.

option(ATTNC_FUZZ "Build the libFuzzer target attnc-fuzz (needs clang)" OFF)
set(ATTNC_SANITIZE "" CACHE STRING
  "Comma-separated sanitizers for attnc's targets, e.g. address,undefined")
# On for fuzzing, where inputs are hostile; off by default for the
# sanitizer build, which tests what ships (the runtime's debug invariant
# checks make its simulator tests 100x slower under ASan).
if(ATTNC_FUZZ)
  set(_attnc_assertions_default ON)
else()
  set(_attnc_assertions_default OFF)
endif()
option(ATTNC_ASSERTIONS "Enable assert() in an instrumented build"
  ${_attnc_assertions_default})

if(ATTNC_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "ATTNC_FUZZ needs clang's libFuzzer: configure with "
    "-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22")
endif()
if(ATTNC_FUZZ AND NOT ATTNC_SANITIZE)
  set(ATTNC_SANITIZE "address,undefined")
endif()

set(ATTNC_INSTRUMENTED OFF)
if(ATTNC_SANITIZE)
  set(ATTNC_INSTRUMENTED ON)
  message(STATUS "attnc: instrumented build, -fsanitize=${ATTNC_SANITIZE}, "
    "assertions ${ATTNC_ASSERTIONS}, fuzz target ${ATTNC_FUZZ}")
  add_compile_options(-fsanitize=${ATTNC_SANITIZE} -fno-omit-frame-pointer
    # Undefined behaviour must fail the test or the fuzz run, not scroll by.
    -fno-sanitize-recover=all
    # Fast to compile, fast enough to run, and stack traces with lines.
    -O1 -gline-tables-only)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # clang 22 flags libstdc++ 12's own use of get_temporary_buffer in
    # std::stable_sort; the gcc build reports attnc's deprecations.
    add_compile_options(-Wno-deprecated-declarations)
  endif()
  if(ATTNC_ASSERTIONS)
    # In attnc's code and in the LLVM header code it inlines (cast<>,
    # ArrayRef bounds), a failed assertion is a bug that a release build
    # turns into silent undefined behaviour. Debian's headers have no
    # NDEBUG-dependent layouts (their ABI-breaking checks are off).
    add_compile_options(-UNDEBUG)
  endif()
  add_link_options(-fsanitize=${ATTNC_SANITIZE})
  if(ATTNC_SANITIZE MATCHES "address")
    # Must come before LLVM's headers: see the header.
    add_compile_options(
      "SHELL:-include ${PROJECT_SOURCE_DIR}/cmake/AsanLLVMHeaders.h")
  endif()
  if(ATTNC_FUZZ)
    # Coverage feedback for libFuzzer in every attnc library; only the fuzz
    # target links libFuzzer itself (-fsanitize=fuzzer, test/fuzz).
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
endif()
