# SPDX-License-Identifier: Apache-2.0
# The NCHW convolution family: its launcher (the step kernels are headers it includes).
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/conv2d.cu")
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/validate.cpp")
# Step 7 (wgmma, sm_90a only) brings the matmul wgmma steps' rules.
include("${CMAKE_CURRENT_LIST_DIR}/wgmma_sources.cmake")
