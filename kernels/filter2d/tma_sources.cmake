# SPDX-License-Identifier: Apache-2.0
# Step 6 of filter2d (tma_filter2d.cu: the TMA producer/consumer pipeline): the
# library's TMA and mbarrier wrappers (kernels/arch) are written for sm_90a, so
# it is built as the matmul's wgmma steps are (kf_add_sm90a_sources in
# kernels/matmul/tensor_core_sources.cmake, included before this file): for
# sm_90a alone where the architecture list has 9.0, else as host stubs
# (filter2d_tma_available() == false).
kf_add_sm90a_sources(kernelforge_filter2d_tma KERNELFORGE_FILTER2D_TMA "TMA pipeline filter2d kernel"
  "${CMAKE_CURRENT_LIST_DIR}/tma_filter2d.cu")
