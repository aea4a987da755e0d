# What `cmake --install <build> --prefix P` puts under P: the JIT API's
# headers, libattnc.so, the attnc CLI, a CMake package (find_package(attnc
# CONFIG), target attnc::attnc) and a pkg-config file (attnc.pc). Nothing
# else: the static libraries and the generated dialect headers stay in the
# build tree (the top-level CMakeLists.txt turns off add_mlir_library's
# install rules). The device tile library is not installed either: NVRTC
# gets it from the copy embedded in the library (runtime/CMakeLists.txt),
# so an installed libattnc.so needs no file of the source tree.
# scripts/install-check.sh builds consumers against such a tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ATTNC_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/attnc")

# The target is libattnc in the build (a target named attnc is the CLI);
# consumers see attnc::attnc.
set_target_properties(libattnc PROPERTIES EXPORT_NAME attnc)
# attnc.h is C++17 (std::optional, std::variant): consumers get it from the
# target. Only in the installed target: the build's own C++ is C++17 already.
set_property(TARGET libattnc APPEND PROPERTY INTERFACE_COMPILE_FEATURES
  $<INSTALL_INTERFACE:cxx_std_17>)
install(TARGETS libattnc EXPORT attncTargets
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  INCLUDES DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS attnc RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

# attnc.h and what it includes; the other directories of include/attnc
# (Dialect, Driver, Transforms, Check) are the compiler's internals.
install(FILES
  ${PROJECT_SOURCE_DIR}/include/attnc/attnc.h
  ${PROJECT_SOURCE_DIR}/include/attnc/attnc_c.h
  ${PROJECT_SOURCE_DIR}/include/attnc/attnc_variant_fields.h
  ${PROJECT_SOURCE_DIR}/include/attnc/Status.h
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/attnc")
# attnc.h's enums and limits are abi.h's, the one definition the device
# shares; abi.h needs prelude.h. They keep their include names, so the
# installed include dir alone is what a consumer puts on its path.
install(FILES
  ${PROJECT_SOURCE_DIR}/device/attnc/device/abi.h
  ${PROJECT_SOURCE_DIR}/device/attnc/device/prelude.h
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/attnc/device")

install(EXPORT attncTargets NAMESPACE attnc::
  DESTINATION "${ATTNC_INSTALL_CMAKEDIR}")
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/attncConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/attncConfig.cmake
  INSTALL_DESTINATION "${ATTNC_INSTALL_CMAKEDIR}")
# 0.x: a minor release may change the C++ API's classes (and so the ABI),
# so a consumer asking for 0.6 takes any 0.6.z and nothing else.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/attncConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/attncConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/attncConfigVersion.cmake
  DESTINATION "${ATTNC_INSTALL_CMAKEDIR}")

# attnc.pc finds the prefix from its own place (${pcfiledir}), as the CMake
# package does, so that the tree works wherever --prefix put it. (Absolute
# install dirs, which GNUInstallDirs allows, are written as they are.)
set(ATTNC_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(ATTNC_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH ATTNC_PC_PREFIX "/prefix/${ATTNC_PC_DIR}" "/prefix")
  string(REGEX REPLACE "/$" "" ATTNC_PC_PREFIX "\${pcfiledir}/${ATTNC_PC_PREFIX}")
endif()
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(ATTNC_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(ATTNC_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/attnc.pc.in
  ${PROJECT_BINARY_DIR}/cmake/attnc.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/attnc.pc
  DESTINATION "${ATTNC_PC_DIR}")
