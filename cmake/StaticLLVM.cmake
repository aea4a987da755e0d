# Debian's MLIR CMake package points every MLIR library at the shared
# libLLVM.so ("LLVM" in their INTERFACE_LINK_LIBRARIES), and LLVMSupport at the
# shared zlib, zstd and z3. attnc's binaries must run where no LLVM is
# installed, so replace those entries with static archives.

# add_llvm_executable and add_mlir_library consult these when linking.
set(LLVM_LINK_LLVM_DYLIB OFF)
set(MLIR_LINK_MLIR_DYLIB OFF)

set(ATTNC_STATIC_LLVM_COMPONENTS
  LLVMSupport LLVMDemangle LLVMCore LLVMRemarks LLVMBitstreamReader
  LLVMBinaryFormat LLVMTargetParser)

find_library(ATTNC_ZLIB_STATIC libz.a REQUIRED)
find_library(ATTNC_ZSTD_STATIC libzstd.a REQUIRED)

set(_attnc_rewritten 0)
get_directory_property(_attnc_imported IMPORTED_TARGETS)
foreach(_target IN LISTS _attnc_imported)
  get_target_property(_libs ${_target} INTERFACE_LINK_LIBRARIES)
  if(NOT _libs)
    continue()
  endif()
  set(_new "")
  foreach(_lib IN LISTS _libs)
    if(_lib STREQUAL "LLVM")
      list(APPEND _new ${ATTNC_STATIC_LLVM_COMPONENTS})
    elseif(_lib MATCHES "libz3")
      # Only LLVM's SMT solver interface uses z3, and nothing in attnc calls it.
    elseif(_lib STREQUAL "ZLIB::ZLIB")
      list(APPEND _new ${ATTNC_ZLIB_STATIC})
    elseif(_lib STREQUAL "zstd::libzstd_shared")
      list(APPEND _new ${ATTNC_ZSTD_STATIC})
    else()
      list(APPEND _new ${_lib})
    endif()
  endforeach()
  set_target_properties(${_target} PROPERTIES INTERFACE_LINK_LIBRARIES "${_new}")
  math(EXPR _attnc_rewritten "${_attnc_rewritten} + 1")
endforeach()
message(STATUS "attnc: static LLVM for ${_attnc_rewritten} imported targets")
