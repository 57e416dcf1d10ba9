# SPDX-License-Identifier: Apache-2.0
# The matrix-product family: its launcher (the kernels are headers it includes),
# and the tensor-core steps, which bring their own rules (an sm_90a-only object).
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/matmul.cu")
include("${CMAKE_CURRENT_LIST_DIR}/tensor_core_sources.cmake")
