// SPDX-License-Identifier: Apache-2.0
// Split-k for warp_tiled: when the m x n tiles of a product cannot fill the
// GPU (e.g. 128 x 8192 x 8192: 64 tiles of 128 x 128 on a 132-SM H200), k is
// cut into `split` slices computed by separate blocks. Each writes its partial
// tile to a workspace (split x m x n floats, dense); this reduction then sums
// the slices in a fixed order -- the result is deterministic, unlike atomics --
// and applies the BLAS epilogue C = alpha * sum + beta * C, then the epilogue
// functor -- here, once per element of C, never to a partial sum.
//
// The workspace comes from a stream-ordered memory pool that the library owns,
// one per device, created on first use and never trimmed (its release
// threshold is unlimited), so after the first call an allocation is a cheap,
// enqueue-only operation; it keeps at most split_k_max_workspace_bytes
// (tuning.hpp) per concurrent call. Devices without memory-pool support get no
// split (pooled_workspace gives no memory).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "../common/kernel.cuh"
#include "../runtime/launcher.hpp"
#include "gemm_args.cuh"
#include "operand.cuh"

namespace kf::detail {

constexpr int split_k_reduce_block = 256;
constexpr std::size_t split_k_reduce_max_grid_rows = 4096;

template <class T, class Epilogue>
KF_KERNEL void matmul_split_k_reduce(gemm_args<T> g, const T* workspace, int split, Epilogue ep) {
  const std::size_t j = blockIdx.x * std::size_t(split_k_reduce_block) + threadIdx.x;
  if (j >= g.n) return;
  const std::size_t slice = g.m * g.n;
  for (std::size_t i = blockIdx.y; i < g.m; i += gridDim.y) {
    const T* w = workspace + i * g.n + j;
    T sum = 0;
    for (int z = 0; z < split; ++z) sum += w[z * slice];
    store_c(g, i, j, sum, ep);
  }
}

template <class Epilogue>
void launch_split_k_reduce(const gemm_args<float>& g, const float* workspace, int split, const Epilogue& ep,
                           cudaStream_t stream) {
  const std::size_t rows = g.m < split_k_reduce_max_grid_rows ? g.m : split_k_reduce_max_grid_rows;
  const dim3 grid = grid_2d(ceil_div(g.n, split_k_reduce_block), rows, "split-k reduction");
  matmul_split_k_reduce<float, Epilogue><<<grid, split_k_reduce_block, 0, stream>>>(g, workspace, split, ep);
  check_launch("kf::matmul (split-k reduction)");
}

}  // namespace kf::detail
