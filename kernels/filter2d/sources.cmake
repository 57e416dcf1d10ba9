# SPDX-License-Identifier: Apache-2.0
# The image-filter family: its launcher (the step kernels are headers it includes).
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/filter2d.cu")
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/validate.cpp")
# Step 6 (TMA pipeline, sm_90a only) brings the matmul wgmma steps' rules.
include("${CMAKE_CURRENT_LIST_DIR}/tma_sources.cmake")
