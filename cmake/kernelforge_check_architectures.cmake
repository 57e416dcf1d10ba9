# SPDX-License-Identifier: Apache-2.0
# KERNELFORGE_CHECK_ARCHITECTURES: the CUDA architectures of the tests', the
# benchmarks' and the in-tree examples' own device code. The library ships a
# fatbin for every architecture in CMAKE_CUDA_ARCHITECTURES; a test or a
# benchmark only runs on the GPU of the machine that builds it, so compiling
# its kernels ten times over buys nothing (it roughly halved the default build).
# Included after project(). Default:
#  * CMAKE_CUDA_ARCHITECTURES set by the user: the same list (unchanged);
#  * the derived default list and a GPU visible at configure time: that GPU's
#    architecture (CMAKE_CUDA_ARCHITECTURES_NATIVE);
#  * the derived default list and no GPU (CI): the list's lowest architecture as
#    PTX only ("75-virtual"), which compiles every test and benchmark once and
#    skips ptxas: those binaries run no device code here, so machine code for
#    them would never be used (it cost a quarter of the largest test unit's
#    time: conv2d_epilogue_gpu_test.cu 41 -> 31 s of CPU). On a GPU the driver
#    compiles the PTX at the first launch; configure on the GPU machine, or set
#    KERNELFORGE_CHECK_ARCHITECTURES, to build them for it.
# Each of tests/, benchmarks/ and examples/ applies it to its directory scope.

if(NOT DEFINED KERNELFORGE_CHECK_ARCHITECTURES)
  set(_kf_check "${CMAKE_CUDA_ARCHITECTURES}")
  if(KERNELFORGE_ARCHITECTURES_SOURCE MATCHES "^derived")
    if(CMAKE_CUDA_ARCHITECTURES_NATIVE)
      set(_kf_check "${CMAKE_CUDA_ARCHITECTURES_NATIVE}")
    else()
      list(GET CMAKE_CUDA_ARCHITECTURES 0 _kf_lowest)
      string(REGEX REPLACE "-(real|virtual)$" "" _kf_lowest "${_kf_lowest}")
      set(_kf_check "${_kf_lowest}-virtual")
    endif()
  endif()
  set(KERNELFORGE_CHECK_ARCHITECTURES "${_kf_check}" CACHE STRING
      "CUDA architectures of the tests', benchmarks' and in-tree examples' own device code")
endif()
message(STATUS "kernelforge: tests, benchmarks and examples compiled for: ${KERNELFORGE_CHECK_ARCHITECTURES}")

# Targets created in the calling directory from here on compile their CUDA sources for those.
macro(kernelforge_use_check_architectures)
  set(CMAKE_CUDA_ARCHITECTURES "${KERNELFORGE_CHECK_ARCHITECTURES}")
endmacro()
