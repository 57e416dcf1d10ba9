# SPDX-License-Identifier: Apache-2.0
# The image-filter family: its launcher (the step kernels are headers it
# includes), and step 6 (tma_sm90a.cu: the TMA pipeline), compiled for sm_90a
# alone (cmake/kernelforge_sm90a.cmake).
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/filter2d.cu")
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/validate.cpp")
kernelforge_add_sm90a_sources("TMA pipeline filter2d" "${CMAKE_CURRENT_LIST_DIR}/tma_sm90a.cu")
