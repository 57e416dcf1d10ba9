# SPDX-License-Identifier: Apache-2.0
# Step 7 of conv2d (wgmma_conv2d.cu: the wgmma implicit GEMM, TF32): wgmma and
# TMA exist only on sm_90a, so it is built as the matmul's wgmma steps are
# (kf_add_sm90a_sources in kernels/matmul/tensor_core_sources.cmake, included
# before this file): for sm_90a alone where the architecture list has 9.0, else
# as host stubs (conv2d_wgmma_available() == false).
kf_add_sm90a_sources(kernelforge_conv2d_wgmma KERNELFORGE_CONV2D_WGMMA "wgmma TF32 conv2d kernel"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_conv2d.cu")
