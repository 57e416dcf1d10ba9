# SPDX-License-Identifier: Apache-2.0
# The NCHW convolution family: its launcher (the step kernels are headers it includes).
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/conv2d.cu")
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/validate.cpp")
