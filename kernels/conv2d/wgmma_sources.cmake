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
  kf_add_sm90a_objects(kernelforge_conv2d_wgmma KERNELFORGE_CONV2D_WGMMA ${_kf_conv2d_wgmma_source})
  message(STATUS "kernelforge: wgmma TF32 conv2d kernel: built for sm_90a")
else()
  list(APPEND KERNELFORGE_SOURCES ${_kf_conv2d_wgmma_source})
  message(STATUS "kernelforge: wgmma TF32 conv2d kernel: not built")
endif()
