# SPDX-License-Identifier: Apache-2.0
# The elementwise family: its launcher (the step kernels are headers it includes).
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/elementwise.cu")
