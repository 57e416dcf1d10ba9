# SPDX-License-Identifier: Apache-2.0
# The matrix-product family: its launchers (kf::matmul, the FP8 kf::scaled_matmul)
# and argument checks, the heavy steps
# 07-10 in translation units of their own so that they compile in parallel
# (instances.cuh; the kernels are headers they include), the fp32-emulation
# pre-pass (split_tf32.cu, the one copy of its kernel, which the sm_90a objects
# enqueue too) and mma.sync step 16, and the Hopper steps
# 11-14 (wgmma: TF32 identity and fused, fp16 and bf16 in four translation
# units), the fp32-emulation steps 15 and 17 (one unit each) and the FP8
# wgmma step (one translation unit per operand pair and output type: 5
# kernels each, the longest unit of the sm_90 build when it was one per output
# type), which compile in parallel, for sm_90a alone.
list(APPEND KERNELFORGE_SOURCES
  "${CMAKE_CURRENT_LIST_DIR}/matmul.cu"
  "${CMAKE_CURRENT_LIST_DIR}/validate.cpp"
  "${CMAKE_CURRENT_LIST_DIR}/warp_tiled.cu"
  "${CMAKE_CURRENT_LIST_DIR}/large_tile.cu"
  "${CMAKE_CURRENT_LIST_DIR}/large_tile_fused.cu"
  "${CMAKE_CURRENT_LIST_DIR}/tensor_core_tf32.cu"
  "${CMAKE_CURRENT_LIST_DIR}/split_tf32.cu"
  "${CMAKE_CURRENT_LIST_DIR}/mma_sync_fp32_emulated.cu"
  "${CMAKE_CURRENT_LIST_DIR}/tensor_core_f16.cu"
  "${CMAKE_CURRENT_LIST_DIR}/scaled_matmul.cu"
  "${CMAKE_CURRENT_LIST_DIR}/scaled_validate.cpp")
kernelforge_add_sm90a_sources("wgmma matmul (TF32, fp16, bf16, fp32 emulation, FP8)"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a_tf32.cu"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a_tf32_fused.cu"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a_f16.cu"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a_bf16.cu"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_steps_sm90a.cu"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a_fp32_emulated.cu"
  "${CMAKE_CURRENT_LIST_DIR}/wgmma_sm90a_fp32_emulated_skinny.cu"
  "${CMAKE_CURRENT_LIST_DIR}/scaled_wgmma_sm90a_bf16_e4m3_e4m3.cu"
  "${CMAKE_CURRENT_LIST_DIR}/scaled_wgmma_sm90a_bf16_e4m3_e5m2.cu"
  "${CMAKE_CURRENT_LIST_DIR}/scaled_wgmma_sm90a_bf16_e5m2_e4m3.cu"
  "${CMAKE_CURRENT_LIST_DIR}/scaled_wgmma_sm90a_f16_e4m3_e4m3.cu"
  "${CMAKE_CURRENT_LIST_DIR}/scaled_wgmma_sm90a_f16_e4m3_e5m2.cu"
  "${CMAKE_CURRENT_LIST_DIR}/scaled_wgmma_sm90a_f16_e5m2_e4m3.cu"
  "${CMAKE_CURRENT_LIST_DIR}/scaled_wgmma_sm90a_f32_e4m3_e4m3.cu"
  "${CMAKE_CURRENT_LIST_DIR}/scaled_wgmma_sm90a_f32_e4m3_e5m2.cu"
  "${CMAKE_CURRENT_LIST_DIR}/scaled_wgmma_sm90a_f32_e5m2_e4m3.cu")
