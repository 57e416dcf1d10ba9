// SPDX-License-Identifier: Apache-2.0
// Step 1 -- naive: one thread per element of C, the kernel of every tutorial.
//
//   i = blockIdx.x * 32 + threadIdx.x;  j = blockIdx.y * 8 + threadIdx.y;
//   C(i, j) = alpha * sum_p op(A)(i, p) * op(B)(p, j) + beta * C(i, j)
//
// Correct for every shape (one bounds check per thread) and every transpose;
// __half and __nv_bfloat16 accumulate in fp32 (the fallback for GPUs below sm_80).
// What it leaves on the table: consecutive threads of a warp (threadIdx.x)
// walk down a column of C, so with row-major A each thread of the warp reads a
// different row of A (32 cache lines per load instruction, one useful word in
// each) and the warp's stores to C are scattered the same way. Every operand is
// fetched from global memory (or L1/L2) once per multiply-add: 2 loads per
// FMA, an arithmetic intensity of 1/4 FLOP per byte.
// Its measured speed: the docs site's learning path (docs/build_site.py) and benchmarks/tuning/matmul.md
// (bench_matmul).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "../common/kernel.cuh"
#include "../runtime/launcher.hpp"
#include "gemm_args.cuh"
#include "launch_util.hpp"
#include "operand.cuh"

namespace kf::detail {

/// Block shape: 32 threads along the rows of C (a warp), 8 along its columns.
constexpr int naive_block_rows = 32;
constexpr int naive_block_cols = 8;

template <class T, bool TransA, bool TransB>
KF_KERNEL void matmul_naive(gemm_args<T> g) {
  const std::size_t i = blockIdx.x * std::size_t(naive_block_rows) + threadIdx.x;  // row: varies fastest in a warp
  const std::size_t j = blockIdx.y * std::size_t(naive_block_cols) + threadIdx.y;
  if (i >= g.m || j >= g.n) return;
  compute_t<T> acc = 0;  // fp32 for the 16-bit types
  for (std::size_t p = 0; p < g.k; ++p) acc += load_op_a_compute<TransA>(g, i, p) * load_op_b_compute<TransB>(g, p, j);
  store_c(g, i, j, acc);
}

template <class T>
void launch_naive(const gemm_args<T>& g, cudaStream_t stream) {
  const dim3 block(naive_block_rows, naive_block_cols);
  const dim3 grid = grid_2d(ceil_div(g.m, naive_block_rows), ceil_div(g.n, naive_block_cols), "naive");
  dispatch_transposes(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    matmul_naive<T, decltype(ta)::value, decltype(tb)::value><<<grid, block, 0, stream>>>(g);
  });
  check_launch("kf::matmul (naive)");
}

}  // namespace kf::detail
