# SPDX-License-Identifier: Apache-2.0
# The convolution family: the forward launcher (the step kernels are headers it
# includes), its checks, the gradients' launchers (backward_data.cu, backward_filter.cu,
# backward_filter_fp32.cu: exact-fp32 NCHW dw on the CUDA cores, backward_filter_sm90.cu:
# dw's sm_90 routes),
# step 10 (few_channels.cu: C <= 4 NHWC layers on mma.sync; built for every architecture
# like the launcher, its kernel's body for sm_80+), and the sm_90a sources, compiled for
# sm_90a alone (cmake/kernelforge_sm90a.cmake): step 7 (wgmma_sm90a.cu: the wgmma implicit
# GEMM for float NCHW; wgmma_sm90a_nhwc_<type>.cu: NHWC, a unit per element type), step 9
# (wgmma_sm90a_fp32_emulated.cu: math_mode::fp32_emulated), gradient
# steps 3 and 4 (backward_sm90a.cu: the wgmma filter gradient) and gradient step 9
# (backward_pointwise_sm90a.cu: the TF32 pointwise filter gradient on mma.sync).
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/conv2d.cu")
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/validate.cpp")
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/backward_data.cu")
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/backward_filter.cu")
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/backward_filter_fp32.cu")
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/backward_filter_sm90.cu")
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/few_channels.cu")
kernelforge_add_sm90a_sources("wgmma conv2d (TF32)"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a.cu"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a_nhwc_f32.cu"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a_nhwc_f16.cu"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a_nhwc_bf16.cu")
kernelforge_add_sm90a_sources("wgmma conv2d (fp32 emulation)" "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a_fp32_emulated.cu")
kernelforge_add_sm90a_sources("wgmma conv2d wgrad (fp16, bf16)" "${CMAKE_CURRENT_LIST_DIR}/backward_sm90a.cu")
kernelforge_add_sm90a_sources("conv2d wgrad (TF32 pointwise)" "${CMAKE_CURRENT_LIST_DIR}/backward_pointwise_sm90a.cu")
