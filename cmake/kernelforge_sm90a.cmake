# SPDX-License-Identifier: Apache-2.0
# The library's sm_90a objects: one home for every family's Hopper-only kernels
# (wgmma, TMA, mbarrier transactions, clusters, setmaxnreg). Those instructions
# exist only on the architecture-specific target sm_90a, which no other
# architecture accepts, so their sources must not be compiled for the library's
# list (e.g. 75;80;...;120). Included by kernelforge_library.cmake before the
# families, which call kernelforge_add_sm90a_sources(); kernelforge_library.cmake
# then calls kernelforge_finish_sm90a_sources().
#  * 90 in CMAKE_CUDA_ARCHITECTURES (or all / all-major, or native on a cc 9.0
#    GPU) and KERNELFORGE_ENABLE_SM90A on: the sources form the OBJECT library
#    kernelforge_sm90a, compiled for sm_90a alone (CUDA_ARCHITECTURES OFF: the
#    -gencode below is the only architecture flag), with KERNELFORGE_HAS_SM90A=1
#    defined; its objects join every kernelforge_add_library target.
#  * Otherwise they are ordinary library sources that compile to host stubs
#    (each family's <x>_available() returns false), so callers link either way.

option(KERNELFORGE_ENABLE_SM90A "Build the sm_90a kernels (wgmma, TMA) when 90 is in CMAKE_CUDA_ARCHITECTURES" ON)
if(DEFINED KERNELFORGE_ENABLE_WGMMA)
  message(DEPRECATION "kernelforge: KERNELFORGE_ENABLE_WGMMA is now KERNELFORGE_ENABLE_SM90A")
  if(NOT KERNELFORGE_ENABLE_WGMMA)
    set(KERNELFORGE_ENABLE_SM90A OFF)
  endif()
endif()

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

_kf_architectures_include_sm90(KERNELFORGE_SM90A_BUILT)
set(_kf_sm90a_reason "no 90 in CMAKE_CUDA_ARCHITECTURES")
if(NOT KERNELFORGE_ENABLE_SM90A)
  set(KERNELFORGE_SM90A_BUILT OFF)
  set(_kf_sm90a_reason "KERNELFORGE_ENABLE_SM90A=OFF")
endif()
set(KERNELFORGE_SM90A_SOURCES "")

# kernelforge_add_sm90a_sources(<label> <sources...>): a family's sm_90a sources
# (absolute paths); <label> names them in the configure log.
macro(kernelforge_add_sm90a_sources label)
  if(KERNELFORGE_SM90A_BUILT)
    list(APPEND KERNELFORGE_SM90A_SOURCES ${ARGN})
    message(STATUS "kernelforge: ${label}: built for sm_90a")
  else()
    list(APPEND KERNELFORGE_SOURCES ${ARGN})
    message(STATUS "kernelforge: ${label}: not built (${_kf_sm90a_reason})")
  endif()
endmacro()

# After the families: the object library, and its objects in KERNELFORGE_SOURCES.
macro(kernelforge_finish_sm90a_sources)
  if(KERNELFORGE_SM90A_BUILT AND KERNELFORGE_SM90A_SOURCES AND NOT TARGET kernelforge_sm90a)
    add_library(kernelforge_sm90a OBJECT ${KERNELFORGE_SM90A_SOURCES})
    target_include_directories(kernelforge_sm90a PRIVATE
      "${CMAKE_CURRENT_LIST_DIR}/../include")
    target_compile_definitions(kernelforge_sm90a PRIVATE KERNELFORGE_HAS_SM90A=1)
    set_target_properties(kernelforge_sm90a PROPERTIES
      CUDA_ARCHITECTURES OFF
      CUDA_STANDARD 17
      CUDA_STANDARD_REQUIRED ON
      POSITION_INDEPENDENT_CODE ON
      CUDA_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON)
    # The -gencode form: "-arch=sm_90a" would also run a plain sm_90 pass, which rejects wgmma.
    target_compile_options(kernelforge_sm90a PRIVATE
      "-gencode=arch=compute_90a,code=sm_90a"
      -Xcompiler=-Wall,-Wextra --Werror=all-warnings
      ${KERNELFORGE_FATBIN_COMPRESSION})  # kernelforge_library.cmake
  endif()
  if(TARGET kernelforge_sm90a)
    list(APPEND KERNELFORGE_SOURCES "$<TARGET_OBJECTS:kernelforge_sm90a>")
  endif()
endmacro()
