# SPDX-License-Identifier: Apache-2.0
# The NCHW convolution family: its launcher (the step kernels are headers it
# includes), and step 7 (wgmma_sm90a.cu: the wgmma implicit GEMM), compiled for
# sm_90a alone (cmake/kernelforge_sm90a.cmake).
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/conv2d.cu")
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/validate.cpp")
kernelforge_add_sm90a_sources("wgmma conv2d (TF32)" "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a.cu")
