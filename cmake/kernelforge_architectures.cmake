# SPDX-License-Identifier: Apache-2.0
# Default CUDA architectures, derived from the nvcc in use (never a fixed list:
# CUDA 13 rejects compute_50..72, older toolkits reject 100+).
#
# Included before project(): when the user has set neither CMAKE_CUDA_ARCHITECTURES
# nor the CUDAARCHS environment variable, ask nvcc which real architectures it
# can build (`nvcc --list-gpu-code`) and use all of them as machine code, plus
# PTX for the newest so later GPUs can JIT-compile it. Skipped: integrated
# (Tegra/Jetson) variants listed in KERNELFORGE_SKIPPED_ARCHITECTURES, whose
# GPUs already run the machine code of a lower minor version of the same major
# (sm_86 code runs on sm_87 and sm_88). A user's setting always wins.

set(KERNELFORGE_SKIPPED_ARCHITECTURES "53;62;72;87;88" CACHE STRING
    "Architectures left out of the default list (integrated variants covered by a lower minor version)")

function(kernelforge_find_nvcc out_var)
  if(CMAKE_CUDA_COMPILER)
    set(nvcc "${CMAKE_CUDA_COMPILER}")
  elseif(DEFINED ENV{CUDACXX})
    set(nvcc "$ENV{CUDACXX}")
  else()
    find_program(nvcc NAMES nvcc HINTS "$ENV{CUDA_PATH}/bin" "$ENV{CUDA_HOME}/bin" /usr/local/cuda/bin)
  endif()
  set(${out_var} "${nvcc}" PARENT_SCOPE)
endfunction()

function(kernelforge_default_architectures out_var)
  kernelforge_find_nvcc(nvcc)
  if(NOT nvcc)
    message(FATAL_ERROR "kernelforge: nvcc not found; set CMAKE_CUDA_COMPILER or CMAKE_CUDA_ARCHITECTURES")
  endif()
  execute_process(COMMAND "${nvcc}" --list-gpu-code OUTPUT_VARIABLE listed RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0 OR listed STREQUAL "")
    message(FATAL_ERROR "kernelforge: `${nvcc} --list-gpu-code` failed (needs CUDA 11.0 or newer); "
                        "set CMAKE_CUDA_ARCHITECTURES explicitly")
  endif()
  string(REGEX MATCHALL "sm_[0-9]+" codes "${listed}")
  set(archs "")
  foreach(code IN LISTS codes)
    string(REPLACE "sm_" "" arch "${code}")
    if(NOT arch IN_LIST KERNELFORGE_SKIPPED_ARCHITECTURES)
      list(APPEND archs "${arch}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES archs)
  list(SORT archs COMPARE NATURAL)
  list(POP_BACK archs newest)
  list(TRANSFORM archs APPEND "-real")
  list(APPEND archs "${newest}")  # real + virtual (PTX) for the newest
  set(${out_var} "${archs}" PARENT_SCOPE)
endfunction()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  kernelforge_default_architectures(_kf_archs)
  set(CMAKE_CUDA_ARCHITECTURES "${_kf_archs}" CACHE STRING "CUDA architectures (kernelforge default: all the toolkit supports)")
  # Remembered so a re-configure can tell our derived list from a user's choice.
  set(KERNELFORGE_DERIVED_ARCHITECTURES "${_kf_archs}" CACHE INTERNAL "")
endif()
if(DEFINED KERNELFORGE_DERIVED_ARCHITECTURES AND "${CMAKE_CUDA_ARCHITECTURES}" STREQUAL "${KERNELFORGE_DERIVED_ARCHITECTURES}")
  set(KERNELFORGE_ARCHITECTURES_SOURCE "derived from nvcc --list-gpu-code")
else()
  set(KERNELFORGE_ARCHITECTURES_SOURCE "set by the user")
endif()
