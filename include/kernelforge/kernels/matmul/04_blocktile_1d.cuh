// SPDX-License-Identifier: Apache-2.0
// Step 4 -- blocktile_1d: each thread computes a column of TM outputs in registers.
//
// The block computes a BM x BN tile of C with BM * BN / TM threads; thread t
// owns rows TM*(t / BN) .. +TM-1 of column t % BN. Per k-slice of BK the block
// stages op(A) (BM x BK) and op(B) (BK x BN) in shared memory as in
// smem_tiled, then for each p every thread loads ONE value of B into a
// register and reuses it for TM multiply-adds with TM values of A.
//
// What changed from smem_tiled, and why it is faster: smem_tiled needs two
// shared loads per FMA and so is bound by the shared-memory pipe. Here the B
// value is loaded once per TM = 8 FMAs, and the A values As[row][p] are
// broadcasts (every thread of a warp shares the same rows), so shared traffic
// per FMA drops ~4x and each thread now has TM independent accumulators to
// keep the FMA pipe busy (instruction-level parallelism). The larger work per
// thread also halves the number of blocks and of __syncthreads per output.
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

/// 64 x 64 tile of C, k-slices of 8, 8 outputs per thread: 512 threads.
struct blocktile_1d_tile {
  static constexpr int bm = 64, bn = 64, bk = 8, tm = 8;
  static constexpr int threads = bm * bn / tm;
};

template <class T, bool TransA, bool TransB>
KF_KERNEL void __launch_bounds__(blocktile_1d_tile::threads) matmul_blocktile_1d(gemm_args<T> g) {
  constexpr int BM = blocktile_1d_tile::bm, BN = blocktile_1d_tile::bn, BK = blocktile_1d_tile::bk;
  constexpr int TM = blocktile_1d_tile::tm, THREADS = blocktile_1d_tile::threads;
  __shared__ T As[BM * BK];  // As[row * BK + p]
  __shared__ T Bs[BK * BN];  // Bs[p * BN + col]
  const int tid = threadIdx.x;
  const int col = tid % BN, row0 = (tid / BN) * TM;
  const std::size_t i0 = blockIdx.y * std::size_t(BM), j0 = blockIdx.x * std::size_t(BN);

  T acc[TM] = {};
  for (std::size_t p0 = 0; p0 < g.k; p0 += BK) {
    load_tile<TransA, BM, BK, THREADS, BK, 1>(g.A, g.lda, g.m, g.k, i0, p0, As, tid);
    load_tile<TransB, BK, BN, THREADS, BN, 1>(g.B, g.ldb, g.k, g.n, p0, j0, Bs, tid);
    __syncthreads();
#pragma unroll
    for (int p = 0; p < BK; ++p) {
      const T b = Bs[p * BN + col];
#pragma unroll
      for (int r = 0; r < TM; ++r) acc[r] += As[(row0 + r) * BK + p] * b;
    }
    __syncthreads();
  }
  const std::size_t j = j0 + col;
#pragma unroll
  for (int r = 0; r < TM; ++r) {
    const std::size_t i = i0 + row0 + r;
    if (i < g.m && j < g.n) store_c(g, i, j, acc[r]);
  }
}

template <class T>
void launch_blocktile_1d(const gemm_args<T>& g, cudaStream_t stream) {
  using tile = blocktile_1d_tile;
  const dim3 grid = grid_2d(ceil_div(g.n, tile::bn), ceil_div(g.m, tile::bm), "blocktile_1d");
  dispatch_transposes(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    matmul_blocktile_1d<T, decltype(ta)::value, decltype(tb)::value><<<grid, tile::threads, 0, stream>>>(g);
  });
  check_launch("kf::matmul (blocktile_1d)");
}

}  // namespace kf::detail
