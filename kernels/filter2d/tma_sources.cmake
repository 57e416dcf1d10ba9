# SPDX-License-Identifier: Apache-2.0
# Step 6 of filter2d (tma_filter2d.cu: the TMA producer/consumer pipeline)
# follows the rules of the matmul's wgmma steps
# (kernels/matmul/tensor_core_sources.cmake, included before this file): the
# library's TMA and mbarrier wrappers (kernels/arch) are written for the
# architecture-specific target sm_90a, so when the library's architecture list
# has a 9.0 entry (KERNELFORGE_WGMMA_TF32_BUILT, decided there, also honouring
# -DKERNELFORGE_ENABLE_WGMMA=OFF) the file is built on its own, for sm_90a
# alone, as the OBJECT library kernelforge_filter2d_tma whose objects join every
# kernelforge_add_library target. Otherwise it is an ordinary library source
# that compiles to host stubs (filter2d_tma_available() == false).

set(_kf_filter2d_tma_source "${CMAKE_CURRENT_LIST_DIR}/tma_filter2d.cu")

if(KERNELFORGE_WGMMA_TF32_BUILT)
  kf_add_sm90a_objects(kernelforge_filter2d_tma KERNELFORGE_FILTER2D_TMA ${_kf_filter2d_tma_source})
  message(STATUS "kernelforge: TMA pipeline filter2d kernel: built for sm_90a")
else()
  list(APPEND KERNELFORGE_SOURCES ${_kf_filter2d_tma_source})
  message(STATUS "kernelforge: TMA pipeline filter2d kernel: not built")
endif()
