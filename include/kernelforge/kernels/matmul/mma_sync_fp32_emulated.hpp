// SPDX-License-Identifier: Apache-2.0
// Step 16 -- math_mode::fp32_emulated on mma.sync, declaration: what the
// matmul launcher (matmul.cu), the tests and the benchmarks call. The kernel
// (16_mma_sync_fp32_emulated.cuh) and its host side
// (mma_sync_fp32_emulated_launch.cuh) are compiled in
// src/matmul/mma_sync_fp32_emulated.cu for every architecture of the library.
// Host-only: compiles without nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include "gemm_args.cuh"
#include "kernelforge/epilogue.cuh"

namespace kf::detail {

/// Step 16 (16_mma_sync_fp32_emulated.cuh): C = fused(alpha * op(A) * op(B) +
/// beta * C) with fp32 accuracy from three TF32 mma.sync products per element
/// pair, each operand split into TF32 hi and lo parts by step 15's pre-pass
/// into a pooled workspace of (m + n) x 2 round_up(k, 32) floats, partial sums
/// promoted into fp32 every 32 of k. On `device` (the current one) of compute
/// capability 8.0 or newer (errc::unsupported below, naming it); every shape,
/// transpose, leading dimension and alignment, k > 0. Returns false, having
/// enqueued nothing, where the workspace cannot be allocated. Pass a default
/// bias_relu_threshold for no epilogue. What kf::matmul runs under
/// math_mode::fp32_emulated where step 15 does not (plan.hpp:
/// choose_fp32_emulated_route); tests and benchmarks call it on any such GPU.
bool mma_sync_fp32_emulated_try_launch(const gemm_args<float>& args, const epilogue::bias_relu_threshold<float>& fused,
                                       int device, cudaStream_t stream);

}  // namespace kf::detail
