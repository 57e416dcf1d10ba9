// SPDX-License-Identifier: Apache-2.0
// The launchers of matmul's heavy fp32 and 16-bit steps, each explicitly
// instantiated in one translation unit of its own (named on its line) so that
// nvcc compiles them in parallel, and declared `extern template` here for the
// others: matmul.cu's dispatch calls them without compiling their kernels, and
// a kernel two of them share (the split-k reduction, the warp_tiled probe that
// selects the tuning) is compiled once. Every .cu of this family includes this
// file, so each explicit instantiation definition follows its declaration.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "kernelforge/epilogue.cuh"
#include "kernelforge/kernels/matmul/gemm_args.cuh"
#include "kernelforge/kernels/matmul/large_tile_launch.cuh"
#include "kernelforge/kernels/matmul/split_k.cuh"
#include "kernelforge/kernels/matmul/tensor_core_f16_launch.cuh"
#include "kernelforge/kernels/matmul/tensor_core_tf32_launch.cuh"
#include "kernelforge/kernels/matmul/warp_tiled_launch.cuh"
#include "split_k_instances.cuh"  // the split-k reductions' declarations (large_tile.cu, warp_tiled.cu)

namespace kf::detail {

/// The precompiled epilogue behind options.bias / options.relu (float).
using fused_epilogue = epilogue::bias_relu_threshold<float>;

// warp_tiled.cu: step 7, the tuning probe, and the split-k reduction that steps 7 and 8 share.
extern template warp_tiled_tuning_id warp_tiled_tuning_of<fused_epilogue>(int, const char*);
extern template void launch_warp_tiled<float, fused_epilogue>(const gemm_args<float>&, cudaStream_t,
                                                              const fused_epilogue&, const char*);

// large_tile.cu and large_tile_fused.cu: step 8, half of the family's kernels, one epilogue each.
// The identity kernels are the 16-byte ones alone (matmul.cu gives misaligned plain calls the fused ones).
extern template void launch_large_tile<epilogue::identity, true>(const gemm_args<float>&, cudaStream_t,
                                                                 const epilogue::identity&);
extern template void launch_large_tile<fused_epilogue>(const gemm_args<float>&, cudaStream_t, const fused_epilogue&);

// tensor_core_tf32.cu: step 9 (mma.sync TF32).
extern template void launch_tensor_core_tf32<fused_epilogue>(const gemm_args<float>&, cudaStream_t,
                                                             const fused_epilogue&, const char*);

// tensor_core_f16.cu: step 10 (mma.sync fp16 / bf16).
extern template void launch_tensor_core_f16<__half>(const gemm_args<__half>&, cudaStream_t);
extern template void launch_tensor_core_f16<__nv_bfloat16>(const gemm_args<__nv_bfloat16>&, cudaStream_t);

}  // namespace kf::detail
