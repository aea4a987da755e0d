# The prebuilt kernel library: the freshly built `attnc library build`
# compiles the common variants (tools/attnc/LibrarySpace.cpp) ahead into
# build/lib/attnc-kernels.bin, beside libattnc.so, where attnc looks it up
# before running NVRTC (runtime/jit/KernelLibrary.h). Installed beside
# libattnc.so. Rebuilt whenever attnc or the device tile library changes
# (a rebuild compiles only the kernels whose CUDA changed: the others are
# taken from the file it replaces); it needs NVRTC at build time, and is
# skipped (with a warning) without it.
option(ATTNC_KERNEL_LIBRARY
  "Compile the common variants ahead into attnc-kernels.bin (minutes of NVRTC)"
  ON)
# Instrumented builds (fuzzing, sanitizers) build their own targets only,
# and their attnc would take many times as long.
if(NOT ATTNC_KERNEL_LIBRARY OR ATTNC_INSTRUMENTED)
  return()
endif()

find_library(ATTNC_NVRTC_LIBRARY
  NAMES nvrtc libnvrtc.so.13 libnvrtc.so.12
  HINTS $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda
  PATH_SUFFIXES lib64 lib)
if(NOT ATTNC_NVRTC_LIBRARY)
  message(WARNING "attnc: no NVRTC found: the prebuilt kernel library "
    "(attnc-kernels.bin) is not built; every kernel is compiled at first use")
  return()
endif()

include(GNUInstallDirs)
include(ProcessorCount)
ProcessorCount(ATTNC_KERNEL_LIBRARY_JOBS)
if(ATTNC_KERNEL_LIBRARY_JOBS EQUAL 0)
  set(ATTNC_KERNEL_LIBRARY_JOBS 1)
endif()
set(ATTNC_KERNEL_LIBRARY_FILE
  "${CMAKE_LIBRARY_OUTPUT_DIRECTORY}/attnc-kernels.bin")
# attnc embeds the device headers, so it relinks when one changes; they are
# named too, so that the dependency does not rest on that.
file(GLOB_RECURSE ATTNC_KERNEL_LIBRARY_HEADERS CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/device/attnc/device/*.h)
add_custom_command(
  OUTPUT ${ATTNC_KERNEL_LIBRARY_FILE}
  COMMAND attnc library build --arch sm_90a
          --out ${ATTNC_KERNEL_LIBRARY_FILE} --jobs ${ATTNC_KERNEL_LIBRARY_JOBS}
  DEPENDS attnc ${ATTNC_KERNEL_LIBRARY_HEADERS}
  COMMENT "Compiling the prebuilt kernel library (attnc-kernels.bin; "
          "-DATTNC_KERNEL_LIBRARY=OFF skips it)"
  USES_TERMINAL)
add_custom_target(attnc-kernel-library ALL
  DEPENDS ${ATTNC_KERNEL_LIBRARY_FILE})
install(FILES ${ATTNC_KERNEL_LIBRARY_FILE}
  DESTINATION "${CMAKE_INSTALL_LIBDIR}")
