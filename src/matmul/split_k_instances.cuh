// SPDX-License-Identifier: Apache-2.0
// The float split-k reductions of matmul, each compiled in one translation unit
// for every architecture of the library (the identity one in large_tile.cu, the
// fused bias / ReLU one in warp_tiled.cu) and declared `extern template` here for
// every other unit that reduces, the sm_90a-only ones (the wgmma TF32 and fp32
// emulation steps) included. An sm_90a unit that compiled its own copy would
// register the same kernel symbol with an image that holds sm_90a code alone:
// the linker keeps one copy of the kernel's host stub for both images, so on
// another GPU the warp_tiled / large_tile split-k launch could find the sm_90a
// image and fail with "no kernel image".
#pragma once

#include <cuda_runtime_api.h>

#include "kernelforge/epilogue.cuh"
#include "kernelforge/kernels/matmul/gemm_args.cuh"
#include "kernelforge/kernels/matmul/split_k.cuh"

namespace kf::detail {

extern template void split_k_workspace::reduce<float, epilogue::identity>(const gemm_args<float>&,
                                                                          const epilogue::identity&,
                                                                          cudaStream_t) const;
extern template void split_k_workspace::reduce<float, epilogue::bias_relu_threshold<float>>(
    const gemm_args<float>&, const epilogue::bias_relu_threshold<float>&, cudaStream_t) const;

}  // namespace kf::detail
