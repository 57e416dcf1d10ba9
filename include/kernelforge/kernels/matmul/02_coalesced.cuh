// SPDX-License-Identifier: Apache-2.0
// Step 2 -- coalesced: the same one-thread-per-output kernel, with the thread
// mapping turned around so that threadIdx.x walks along a ROW of C.
//
// What changed from naive, and why it is faster: the 32 threads of a warp now
// compute C(i, j..j+31). For every p they read the same op(A)(i, p) (one
// broadcast load) and 32 consecutive op(B)(p, j..j+31) (one 128-byte line when
// B is stored untransposed), and the warp stores one contiguous 128-byte run
// of C. Global memory serves whole 32-byte sectors, so the naive mapping used
// 1/8 of every sector it fetched; this one uses all of it.
// Still 2 loads per FMA (intensity 1/4 FLOP per byte): the caches, not DRAM,
// absorb the reuse, and the load pipeline is the limit. With B stored
// transposed the B reads are strided again; the tiled steps that follow load
// every layout along its contiguous dimension.
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

/// Block shape: 32 threads (a warp) along the columns of C, 8 along its rows.
constexpr int coalesced_block_cols = 32;
constexpr int coalesced_block_rows = 8;

template <class T, bool TransA, bool TransB>
KF_KERNEL void matmul_coalesced(gemm_args<T> g) {
  const std::size_t j = blockIdx.x * std::size_t(coalesced_block_cols) + threadIdx.x;  // column: fastest in a warp
  const std::size_t i = blockIdx.y * std::size_t(coalesced_block_rows) + threadIdx.y;
  if (i >= g.m || j >= g.n) return;
  T acc = 0;
  for (std::size_t p = 0; p < g.k; ++p) acc += load_op_a<TransA>(g, i, p) * load_op_b<TransB>(g, p, j);
  store_c(g, i, j, acc);
}

template <class T>
void launch_coalesced(const gemm_args<T>& g, cudaStream_t stream) {
  const dim3 block(coalesced_block_cols, coalesced_block_rows);
  const dim3 grid = grid_2d(ceil_div(g.n, coalesced_block_cols), ceil_div(g.m, coalesced_block_rows), "coalesced");
  dispatch_transposes(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    matmul_coalesced<T, decltype(ta)::value, decltype(tb)::value><<<grid, block, 0, stream>>>(g);
  });
  check_launch("kf::matmul (coalesced)");
}

}  // namespace kf::detail
