# SPDX-License-Identifier: Apache-2.0
# kernelforge_add_library(<name> [ARCHITECTURES <list>] [SOURCES <files...>])
# The library target from src/: one definition, used for the shipped
# library and for test builds with a deliberately narrow architecture list
# (tests/no_kernel_image, which also takes a narrower set of SOURCES).
set(KERNELFORGE_SOURCES
    src/runtime/error.cpp
    src/runtime/launch_plan.cpp
    src/runtime/device.cpp
    src/runtime/device_buffer.cpp
    src/runtime/pinned_buffer.cpp
    src/runtime/architectures.cu)
list(TRANSFORM KERNELFORGE_SOURCES PREPEND "${CMAKE_CURRENT_LIST_DIR}/../")
set(KERNELFORGE_RUNTIME_SOURCES ${KERNELFORGE_SOURCES})  # the runtime alone (tests/no_kernel_image)
# The fatbin's compression: every cubin, in nvcc's default codec (LZ4), which
# every driver reads. nvcc's default compresses only cubins above a size
# threshold; after matmul's steps moved to translation units of their own most
# cubins fell below it and the default-list library grew from 89.6 MB to 146 MB.
# Measured on src/matmul/tensor_core_tf32.cu, default list, 2 cores: uncompressed
# 8.2 MB in 36.7 s, -Xfatbin=-compress-all 0.89 MB in 38.6 s, CUDA 12.8+'s
# -compress-mode=size 0.70 MB in 44.7 s (and newer drivers on CUDA 12). The
# driver decompresses a module when it first loads it, once per process.
set(KERNELFORGE_FATBIN_COMPRESSION "$<$<COMPILE_LANGUAGE:CUDA>:-Xfatbin=-compress-all>")

# Each further family lists its launcher sources in src/<family>/sources.cmake
# (absolute paths appended to KERNELFORGE_SOURCES), its sm_90a-only sources
# through kernelforge_add_sm90a_sources (kernelforge_sm90a.cmake).
include("${CMAKE_CURRENT_LIST_DIR}/kernelforge_sm90a.cmake")
foreach(family IN ITEMS elementwise matmul filter2d conv2d)
  include("${CMAKE_CURRENT_LIST_DIR}/../src/${family}/sources.cmake")
endforeach()
kernelforge_finish_sm90a_sources()

set(KERNELFORGE_GENERATED_INCLUDE_DIR "${CMAKE_BINARY_DIR}/generated-include")
configure_file("${CMAKE_CURRENT_LIST_DIR}/version.hpp.in" "${KERNELFORGE_GENERATED_INCLUDE_DIR}/kernelforge/version.hpp" @ONLY)

# The CUDA runtime the library links: shared by default; the Python module's build
# sets CUDA::cudart_static (top-level CMakeLists.txt, KERNELFORGE_BUILD_PYTHON).
if(NOT KERNELFORGE_CUDART_TARGET)
  set(KERNELFORGE_CUDART_TARGET CUDA::cudart)
endif()

function(kernelforge_add_library name)
  cmake_parse_arguments(arg "" "" "ARCHITECTURES;SOURCES" ${ARGN})
  if(NOT arg_SOURCES)
    set(arg_SOURCES ${KERNELFORGE_SOURCES})
  endif()
  add_library(${name} STATIC ${arg_SOURCES})
  target_compile_features(${name} PUBLIC cxx_std_17)
  target_include_directories(${name}
    PUBLIC
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
      $<BUILD_INTERFACE:${KERNELFORGE_GENERATED_INCLUDE_DIR}>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${name} PUBLIC ${KERNELFORGE_CUDART_TARGET})
  set_target_properties(${name} PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(arg_ARCHITECTURES)
    set_target_properties(${name} PROPERTIES CUDA_ARCHITECTURES "${arg_ARCHITECTURES}")
  endif()
  target_compile_options(${name} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=all-warnings>
    # One nvcc thread per architecture of the fatbin: a big translation unit
    # (matmul's large_tile.cu) otherwise compiles its ~10 architectures one after another.
    $<$<COMPILE_LANGUAGE:CUDA>:--threads=0>
    ${KERNELFORGE_FATBIN_COMPRESSION})
endfunction()
