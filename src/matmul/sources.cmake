# SPDX-License-Identifier: Apache-2.0
# The matrix-product family: its launcher (the kernels of steps 01-10 are
# headers it includes), and the Hopper steps 11-14 (wgmma), compiled for sm_90a alone.
list(APPEND KERNELFORGE_SOURCES "${CMAKE_CURRENT_LIST_DIR}/matmul.cu")
kernelforge_add_sm90a_sources("wgmma matmul (TF32, fp16, bf16)"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a_tf32.cu"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a_f16.cu"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_steps_sm90a.cu")
