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

# Real architectures whose machine code is built from another one's PTX, as
# "<real>:<ptx>" pairs (kernels/arch/ptx_sharing.hpp says why this is exact).
# With CUDA 13.0 the front end writes the same PTX for compute_110 as for
# compute_100 in every translation unit of the library, so one front-end pass
# serves both and ptxas runs once for each: the fatbin keeps sm_110 machine code,
# the same instructions, and the default-list build does one front-end pass per
# file fewer (about 70 s of CPU on two cores; scripts/compare_ptx.py checks a
# toolkit). Not sm_103 from compute_100 nor sm_121 from compute_120 in every
# file: their PTX differs in six (address arithmetic; below for sm_103's other 11);
# nor sm_120 from compute_100: it differs in the three SIMT matrix files (below for the other 14).
# A pair applies where the list has <real> as machine code only ("110-real") and
# <ptx> as machine code.
# Empty: one front-end pass per architecture.
set(KERNELFORGE_PTX_SHARING "110:100" CACHE STRING
    "Real CUDA architectures built from another one's PTX (<real>:<ptx> pairs; empty: none)")
# Pairs that hold in some files only: for a pair <real>:<ptx> here, the files named
# in cmake/ptx_sharing_<real>_<ptx>.txt (their PTX is equal, checked as above) build
# sm_<real> from compute_<ptx>'s PTX, and the others keep their own pass. With CUDA
# 13.0, 103:100 holds in 11 of the library's 17 CUDA files, the heaviest among them
# (the SIMT, mma.sync and FP8 matrix steps, filter2d): about 50 s of CPU fewer on two
# cores for the default list, the same machine code. 89:86 holds in 14 of the 17
# (all but the FP8 mma.sync step and two conv2d files; listed: the 3 that 89:80 does
# not take): the device code may differ between 8.6 and 8.9 (KF_ARCH_SM89), so
# .ci/run compares that list's PTX on every change. 120:100 holds in 14 of the 17 (all but the SIMT matrix steps, whose tuning
# follows the shared memory: warp_tiled_tuning_for), 86:80 and 89:80 in 12 (neither
# the SIMT steps nor conv2d.cu, and either backward_data.cu or the FP8 step), each
# checked by .ci/run likewise: a front-end pass is about 8% of such a file's CPU
# time. Where a file is in several lists of one architecture the first pair takes
# it (89:80 before 89:86: the SIMT steps take sm_89 from compute_86). Empty: none.
set(KERNELFORGE_PTX_SHARING_BY_FILE "103:100;86:80;89:80;89:86;120:100" CACHE STRING
    "Real CUDA architectures built from another one's PTX in the files cmake/ptx_sharing_<real>_<ptx>.txt lists")

# _kf_ptx_pair(<variable> <pair> <list variable>): sets `real` and `ptx` from
# "<real>:<ptx>" (else a FATAL_ERROR naming <variable>), and `applies` to whether
# the pair applies to the list: <real> as machine code only ("110-real") and <ptx>
# as machine code.
macro(_kf_ptx_pair variable pair archs)
  if(NOT "${pair}" MATCHES "^([0-9]+):([0-9]+)$")
    message(FATAL_ERROR "${variable}: '${pair}' is not <real>:<ptx> (e.g. 110:100)")
  endif()
  set(real ${CMAKE_MATCH_1})
  set(ptx ${CMAKE_MATCH_2})
  set(applies OFF)
  if("${real}-real" IN_LIST ${archs} AND ("${ptx}-real" IN_LIST ${archs} OR "${ptx}" IN_LIST ${archs}))
    set(applies ON)
  endif()
endmacro()

# _kf_share_ptx(<target> <architectures>): applies KERNELFORGE_PTX_SHARING and
# KERNELFORGE_PTX_SHARING_BY_FILE to the target's architecture list, and writes
# kernelforge_ptx_sharing.inc (the pairs that apply, each kind under its own macro, for src/runtime/architectures.cu)
# into a folder on its include path.
function(_kf_share_ptx name archs)
  set(kept ${archs})
  set(gencode "")
  set(pairs "")
  foreach(pair IN LISTS KERNELFORGE_PTX_SHARING)
    _kf_ptx_pair(KERNELFORGE_PTX_SHARING "${pair}" kept)
    if(applies)
      list(REMOVE_ITEM kept "${real}-real")
      list(APPEND gencode "--generate-code=arch=compute_${ptx}$<COMMA>code=[sm_${real}]")
      string(APPEND pairs "KF_PTX_SHARED_PAIR(${real}, ${ptx})\n")
      message(STATUS "kernelforge: ${name}: sm_${real} machine code built from compute_${ptx}'s PTX")
    endif()
  endforeach()
  # Per-file pairs: the architecture leaves the target's list, and each CUDA source
  # gets its machine code back through a flag of its own, from compute_<ptx> of the
  # first pair (in the order listed) whose list names it, else from compute_<real>.
  # A pair is checked against the list as configured, so a later pair may take its
  # PTX from an architecture an earlier pair took out (89:86 after 86:80).
  get_target_property(sources ${name} SOURCES)
  set(cuda_sources "")
  foreach(source IN LISTS sources)
    if(source MATCHES "\\.cu$")
      get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${PROJECT_SOURCE_DIR}")
      list(APPEND cuda_sources "${path}")
    endif()
  endforeach()
  list(LENGTH cuda_sources total)
  set(reals "")
  foreach(pair IN LISTS KERNELFORGE_PTX_SHARING_BY_FILE)
    _kf_ptx_pair(KERNELFORGE_PTX_SHARING_BY_FILE "${pair}" archs)
    if(NOT applies)
      continue()
    endif()
    set(list_file "${PROJECT_SOURCE_DIR}/cmake/ptx_sharing_${real}_${ptx}.txt")
    if(NOT EXISTS "${list_file}")
      message(FATAL_ERROR "KERNELFORGE_PTX_SHARING_BY_FILE: ${pair} has no file list ${list_file}")
    endif()
    file(STRINGS "${list_file}" shared REGEX "^[^#]")
    list(TRANSFORM shared PREPEND "${PROJECT_SOURCE_DIR}/")
    list(REMOVE_ITEM kept "${real}-real")
    if(NOT real IN_LIST reals)
      list(APPEND reals ${real})
      set(claimed_${real} "")
    endif()
    set(count 0)
    foreach(path IN LISTS cuda_sources)
      if(path IN_LIST shared AND NOT path IN_LIST claimed_${real})
        set_property(SOURCE "${path}" TARGET_DIRECTORY ${name} APPEND PROPERTY COMPILE_OPTIONS
                     "--generate-code=arch=compute_${ptx}$<COMMA>code=[sm_${real}]")
        list(APPEND claimed_${real} "${path}")
        math(EXPR count "${count} + 1")
      endif()
    endforeach()
    if(count GREATER 0)
      string(APPEND pairs "KF_PTX_SHARED_FILE_PAIR(${real}, ${ptx})\n")
    endif()
    message(STATUS "kernelforge: ${name}: sm_${real} machine code built from compute_${ptx}'s PTX in ${count} of "
                   "${total} CUDA files (cmake/ptx_sharing_${real}_${ptx}.txt)")
  endforeach()
  foreach(real IN LISTS reals)  # the files no pair of `real` took: their own pass
    foreach(path IN LISTS cuda_sources)
      if(NOT path IN_LIST claimed_${real})
        set_property(SOURCE "${path}" TARGET_DIRECTORY ${name} APPEND PROPERTY COMPILE_OPTIONS
                     "--generate-code=arch=compute_${real}$<COMMA>code=[sm_${real}]")
      endif()
    endforeach()
  endforeach()
  if(NOT "${kept}" STREQUAL "${archs}")  # either kind of pair took an architecture out
    set_target_properties(${name} PROPERTIES CUDA_ARCHITECTURES "${kept}")
  endif()
  foreach(flag IN LISTS gencode)
    target_compile_options(${name} PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:${flag}>")
  endforeach()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/kernelforge_ptx_sharing/${name}")
  file(CONFIGURE OUTPUT "${dir}/kernelforge_ptx_sharing.inc" CONTENT
       "// Generated by cmake/kernelforge_library.cmake for ${name}: KF_PTX_SHARED_PAIR(real, ptx) (every file),\n// KF_PTX_SHARED_FILE_PAIR(real, ptx) (the files of cmake/ptx_sharing_<real>_<ptx>.txt).\n${pairs}")
  target_include_directories(${name} PRIVATE "${dir}")
endfunction()

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
  set(archs "${CMAKE_CUDA_ARCHITECTURES}")
  if(arg_ARCHITECTURES)
    set(archs "${arg_ARCHITECTURES}")
    set_target_properties(${name} PROPERTIES CUDA_ARCHITECTURES "${archs}")
  endif()
  # The list the target was asked for, whatever nvcc's flags make of it (read by the
  # doctor and tests/core: CUDA_ARCHITECTURES loses the architectures _kf_share_ptx moves).
  set_target_properties(${name} PROPERTIES KERNELFORGE_ARCHITECTURES "${archs}")
  _kf_share_ptx(${name} "${archs}")
  target_compile_options(${name} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=all-warnings>
    # One nvcc thread per architecture of the fatbin: a big translation unit
    # (matmul's large_tile.cu) otherwise compiles its ~10 architectures one after another.
    $<$<COMPILE_LANGUAGE:CUDA>:--threads=0>
    ${KERNELFORGE_FATBIN_COMPRESSION})
endfunction()
