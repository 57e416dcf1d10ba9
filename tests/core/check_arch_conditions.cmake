# SPDX-License-Identifier: Apache-2.0
# cmake -DROOT=<source dir> -P check_arch_conditions.cmake
# Fails when the library's code tests __CUDA_ARCH__ in a way that
# kernels/arch/ptx_sharing.hpp's same_device_code() does not know about: the
# library builds sm_110's machine code from compute_100's PTX
# (KERNELFORGE_PTX_SHARING), which is exact only while the device code reads the
# architecture through these forms alone:
#   defined(__CUDA_ARCH__), #ifdef / #ifndef __CUDA_ARCH__,
#   __CUDA_ARCH__ compared with 800, 890 or 900 (guards.cuh's thresholds),
#   warp_tiled_tuning_for(__CUDA_ARCH__ / 10).
# Comment lines are skipped. A new form: teach same_device_code() about it, then here.
cmake_minimum_required(VERSION 3.24)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<kernelforge source dir> -P check_arch_conditions.cmake")
endif()
file(GLOB_RECURSE files "${ROOT}/include/*.hpp" "${ROOT}/include/*.cuh" "${ROOT}/include/*.h"
     "${ROOT}/src/*.cu" "${ROOT}/src/*.cuh" "${ROOT}/src/*.hpp" "${ROOT}/src/*.cpp")
set(allowed_thresholds 800 890 900)
set(bad "")
set(count 0)
foreach(file IN LISTS files)
  file(STRINGS "${file}" lines REGEX "__CUDA_ARCH__([^A-Za-z0-9_]|$)")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*//")
      continue()
    endif()
    math(EXPR count "${count} + 1")
    # Remove the forms that are allowed; whatever mentions __CUDA_ARCH__ after that is not.
    set(rest "${line}")
    string(REGEX REPLACE "defined[ \t]*\\([ \t]*__CUDA_ARCH__[ \t]*\\)" "" rest "${rest}")
    string(REGEX REPLACE "#[ \t]*if(n?def)[ \t]+__CUDA_ARCH__" "" rest "${rest}")
    string(REGEX REPLACE "warp_tiled_tuning_for\\([ \t]*__CUDA_ARCH__[ \t]*/[ \t]*10[ \t]*\\)" "" rest "${rest}")
    string(REGEX MATCHALL "__CUDA_ARCH__[ \t]*(<=|>=|<|>|==|!=)[ \t]*[0-9]+" comparisons "${rest}")
    foreach(c IN LISTS comparisons)
      string(REGEX MATCH "[0-9]+$" value "${c}")
      if(value IN_LIST allowed_thresholds)
        string(REPLACE "${c}" "" rest "${rest}")
      endif()
    endforeach()
    if(rest MATCHES "__CUDA_ARCH__([^A-Za-z0-9_]|$)")
      file(RELATIVE_PATH rel "${ROOT}" "${file}")
      string(APPEND bad "\n  ${rel}: ${line}")
    endif()
  endforeach()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "no __CUDA_ARCH__ test found under ${ROOT}/include and ${ROOT}/src: wrong ROOT?")
endif()
if(bad)
  message(FATAL_ERROR "__CUDA_ARCH__ read in a form kernels/arch/ptx_sharing.hpp (same_device_code) does not "
                      "know, so KERNELFORGE_PTX_SHARING may pair architectures whose code differs:${bad}")
endif()
message(STATUS "${count} lines test __CUDA_ARCH__, all in the forms same_device_code() knows")
