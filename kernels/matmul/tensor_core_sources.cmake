# SPDX-License-Identifier: Apache-2.0
# The tensor-core steps of the matrix-product family. Included from
# kernels/matmul/sources.cmake, i.e. while cmake/kernelforge_library.cmake
# collects KERNELFORGE_SOURCES, before any library target exists.
#
# tensor_core_tf32.cuh (mma.sync, sm_80+) is a header: the launcher matmul.cu
# instantiates it for the library's whole architecture list.
#
# wgmma_tf32.cu holds the Hopper kernel. wgmma and setmaxnreg exist only on the
# architecture-specific target sm_90a, which no other architecture accepts, so
# the file must not be compiled for the library's list (e.g. 75;80;...;120). When
# that list has a 9.0 entry, the file is built on its own, for sm_90a alone, as
# the OBJECT library kernelforge_wgmma_tf32 (CUDA_ARCHITECTURES OFF: CMake adds
# no architecture flags, the -gencode below is the only one; the same on CMake
# 3.24+ and 4.x), and its objects join every kernelforge_add_library target.
# Without 90 in the list the file is an ordinary library source that compiles to
# two host stubs (wgmma_tf32_available() == false), so callers link either way.
#
# -DKERNELFORGE_ENABLE_WGMMA=OFF leaves the Hopper kernel out on purpose.

option(KERNELFORGE_ENABLE_WGMMA "Build the sm_90a wgmma TF32 matmul kernel when 90 is in CMAKE_CUDA_ARCHITECTURES" ON)

# wgmma_f16.cu (step 11, fp16 / bf16) follows the same rules, in the same object library.
set(_kf_wgmma_source "${CMAKE_CURRENT_LIST_DIR}/wgmma_tf32.cu" "${CMAKE_CURRENT_LIST_DIR}/wgmma_f16.cu")

# True when CMAKE_CUDA_ARCHITECTURES asks for compute capability 9.0 (90,
# 90-real, 90-virtual, 90a...), or for every architecture, and nvcc knows sm_90a.
function(_kf_architectures_include_sm90 out_var)
  set(archs "${CMAKE_CUDA_ARCHITECTURES}")
  if(archs STREQUAL "native")
    set(archs "${CMAKE_CUDA_ARCHITECTURES_NATIVE}")  # resolved by CMake, e.g. 90-real
  endif()
  set(found OFF)
  foreach(arch IN LISTS archs)
    if(arch MATCHES "^90" OR arch STREQUAL "all" OR arch STREQUAL "all-major")
      set(found ON)
    endif()
  endforeach()
  if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 12.0)
    set(found OFF)  # sm_90a arrived with CUDA 12.0
  endif()
  set(${out_var} ${found} PARENT_SCOPE)
endfunction()

_kf_architectures_include_sm90(KERNELFORGE_WGMMA_TF32_BUILT)
set(_kf_wgmma_reason "no 90 in CMAKE_CUDA_ARCHITECTURES")
if(NOT KERNELFORGE_ENABLE_WGMMA)
  set(KERNELFORGE_WGMMA_TF32_BUILT OFF)
  set(_kf_wgmma_reason "KERNELFORGE_ENABLE_WGMMA=OFF")
endif()

# Sources compiled for sm_90a alone: where KERNELFORGE_WGMMA_TF32_BUILT, the
# OBJECT library `target` (with `definition`=1 set) whose objects join
# KERNELFORGE_SOURCES; otherwise ordinary library sources that compile to host
# stubs. `label` names them in the configure log. Also used by
# kernels/conv2d/wgmma_sources.cmake and kernels/filter2d/tma_sources.cmake.
set(_kf_kernels_dir "${CMAKE_CURRENT_LIST_DIR}/..")
macro(kf_add_sm90a_sources target definition label)
  if(NOT KERNELFORGE_WGMMA_TF32_BUILT)
    list(APPEND KERNELFORGE_SOURCES ${ARGN})
    message(STATUS "kernelforge: ${label}: not built (${_kf_wgmma_reason})")
  else()
    if(NOT TARGET ${target})
      add_library(${target} OBJECT ${ARGN})
      target_include_directories(${target} PRIVATE
        "${_kf_kernels_dir}/../include"
        "${_kf_kernels_dir}")
      target_compile_definitions(${target} PRIVATE ${definition}=1)
      set_target_properties(${target} PROPERTIES
        CUDA_ARCHITECTURES OFF
        CUDA_STANDARD 17
        CUDA_STANDARD_REQUIRED ON
        POSITION_INDEPENDENT_CODE ON
        CUDA_VISIBILITY_PRESET hidden
        VISIBILITY_INLINES_HIDDEN ON)
      # The -gencode form: "-arch=sm_90a" would also run a plain sm_90 pass, which rejects wgmma.
      target_compile_options(${target} PRIVATE
        "-gencode=arch=compute_90a,code=sm_90a"
        -Xcompiler=-Wall,-Wextra --Werror=all-warnings)
    endif()
    list(APPEND KERNELFORGE_SOURCES "$<TARGET_OBJECTS:${target}>")
    message(STATUS "kernelforge: ${label}: built for sm_90a")
  endif()
endmacro()

kf_add_sm90a_sources(kernelforge_wgmma_tf32 KERNELFORGE_WGMMA_TF32 "wgmma TF32 and f16/bf16 matmul kernels"
  ${_kf_wgmma_source})
