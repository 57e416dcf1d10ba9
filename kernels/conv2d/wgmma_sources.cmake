# SPDX-License-Identifier: Apache-2.0
# Step 7 of conv2d (wgmma_conv2d.cu: the wgmma implicit GEMM, TF32) follows the
# rules of the matmul's wgmma steps (kernels/matmul/tensor_core_sources.cmake,
# included before this file): wgmma and TMA exist only on the
# architecture-specific target sm_90a, so when the library's architecture list
# has a 9.0 entry (KERNELFORGE_WGMMA_TF32_BUILT, decided there, also honouring
# -DKERNELFORGE_ENABLE_WGMMA=OFF) the file is built on its own, for sm_90a
# alone, as the OBJECT library kernelforge_conv2d_wgmma whose objects join every
# kernelforge_add_library target. Otherwise it is an ordinary library source
# that compiles to host stubs (conv2d_wgmma_available() == false).

set(_kf_conv2d_wgmma_source "${CMAKE_CURRENT_LIST_DIR}/wgmma_conv2d.cu")

if(KERNELFORGE_WGMMA_TF32_BUILT)
  if(NOT TARGET kernelforge_conv2d_wgmma)
    add_library(kernelforge_conv2d_wgmma OBJECT ${_kf_conv2d_wgmma_source})
    target_include_directories(kernelforge_conv2d_wgmma PRIVATE
      "${CMAKE_CURRENT_LIST_DIR}/../../include"
      "${CMAKE_CURRENT_LIST_DIR}/..")
    target_compile_definitions(kernelforge_conv2d_wgmma PRIVATE KERNELFORGE_CONV2D_WGMMA=1)
    set_target_properties(kernelforge_conv2d_wgmma PROPERTIES
      CUDA_ARCHITECTURES OFF
      CUDA_STANDARD 17
      CUDA_STANDARD_REQUIRED ON
      POSITION_INDEPENDENT_CODE ON
      CUDA_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON)
    # The -gencode form: "-arch=sm_90a" would also run a plain sm_90 pass, which rejects wgmma.
    target_compile_options(kernelforge_conv2d_wgmma PRIVATE
      "-gencode=arch=compute_90a,code=sm_90a"
      -Xcompiler=-Wall,-Wextra --Werror=all-warnings)
  endif()
  list(APPEND KERNELFORGE_SOURCES "$<TARGET_OBJECTS:kernelforge_conv2d_wgmma>")
  message(STATUS "kernelforge: wgmma TF32 conv2d kernel: built for sm_90a")
else()
  list(APPEND KERNELFORGE_SOURCES ${_kf_conv2d_wgmma_source})
  message(STATUS "kernelforge: wgmma TF32 conv2d kernel: not built")
endif()
