# SPDX-License-Identifier: Apache-2.0
# install(): headers (include/: the API and, under kernelforge/kernels/, the device templates),
# the library, and a relocatable CMake package (kernelforgeConfig + version file).
include(CMakePackageConfigHelpers)

set(KERNELFORGE_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/kernelforge")

install(TARGETS kernelforge EXPORT kernelforgeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY "${KERNELFORGE_GENERATED_INCLUDE_DIR}/" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT kernelforgeTargets NAMESPACE kernelforge:: DESTINATION ${KERNELFORGE_CMAKE_DIR})

configure_package_config_file(cmake/kernelforgeConfig.cmake.in
  "${CMAKE_CURRENT_BINARY_DIR}/kernelforgeConfig.cmake"
  INSTALL_DESTINATION ${KERNELFORGE_CMAKE_DIR})
write_basic_package_version_file("${CMAKE_CURRENT_BINARY_DIR}/kernelforgeConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES "${CMAKE_CURRENT_BINARY_DIR}/kernelforgeConfig.cmake"
              "${CMAKE_CURRENT_BINARY_DIR}/kernelforgeConfigVersion.cmake"
        DESTINATION ${KERNELFORGE_CMAKE_DIR})
