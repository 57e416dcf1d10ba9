// SPDX-License-Identifier: Apache-2.0
// Step 5 -- blocktile_2d: each thread computes a TM x TN tile of outputs in registers.
//
// The block computes a BM x BN tile of C; thread (tr, tc) owns rows
// tr*TM .. +TM-1 and columns tc*TN .. +TN-1. Per k-slice the block stages
// op(A) and op(B) in shared memory; then for each p a thread loads TM values
// of A and TN values of B into registers and does their outer product: TM*TN
// multiply-adds for TM+TN shared loads.
//
// What changed from blocktile_1d, and why it is faster: blocktile_1d did 8
// FMAs per B value but still one A load per FMA; the outer product does
// TM*TN = 64 FMAs per 16 loads (4 FMAs per load instead of ~1), and its 64
// independent accumulators give the scheduler ample instruction-level
// parallelism. The 128 x 128 block tile also halves global (L2) traffic per
// FLOP again: each staged element now feeds 128 outputs instead of 64.
// What it leaves: the shared loads are scalar (LDS.32) and As[row][p] is read
// down a column (strided by BK); the next step vectorizes both.
// double uses a 64 x 64 tile with 4 x 4 per thread (an 8 x 8 tile of doubles
// would need ~200 registers per thread).
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

/// Tile shape per element type; 256 threads in both.
template <class T>
struct blocktile_2d_tile {
  static constexpr int bm = 128, bn = 128, bk = 8, tm = 8, tn = 8;
  static constexpr int threads = (bm / tm) * (bn / tn);
};
template <>
struct blocktile_2d_tile<double> {
  static constexpr int bm = 64, bn = 64, bk = 8, tm = 4, tn = 4;
  static constexpr int threads = (bm / tm) * (bn / tn);
};

template <class T, bool TransA, bool TransB>
KF_KERNEL void __launch_bounds__(blocktile_2d_tile<T>::threads) matmul_blocktile_2d(gemm_args<T> g) {
  using tile = blocktile_2d_tile<T>;
  constexpr int BM = tile::bm, BN = tile::bn, BK = tile::bk, TM = tile::tm, TN = tile::tn;
  constexpr int THREADS = tile::threads;
  __shared__ T As[BM * BK];  // As[row * BK + p]
  __shared__ T Bs[BK * BN];  // Bs[p * BN + col]
  const int tid = threadIdx.x;
  const int tr = tid / (BN / TN), tc = tid % (BN / TN);
  const std::size_t i0 = blockIdx.y * std::size_t(BM), j0 = blockIdx.x * std::size_t(BN);

  T acc[TM][TN] = {};
  T a[TM], b[TN];
  for (std::size_t p0 = 0; p0 < g.k; p0 += BK) {
    load_tile<TransA, BM, BK, THREADS, BK, 1>(g.A, g.lda, g.m, g.k, i0, p0, As, tid);
    load_tile<TransB, BK, BN, THREADS, BN, 1>(g.B, g.ldb, g.k, g.n, p0, j0, Bs, tid);
    __syncthreads();
#pragma unroll
    for (int p = 0; p < BK; ++p) {
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = As[(tr * TM + i) * BK + p];
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = Bs[p * BN + tc * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const std::size_t r = i0 + tr * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const std::size_t c = j0 + tc * TN + j;
      if (r < g.m && c < g.n) store_c(g, r, c, acc[i][j]);
    }
  }
}

template <class T>
void launch_blocktile_2d(const gemm_args<T>& g, cudaStream_t stream) {
  using tile = blocktile_2d_tile<T>;
  const dim3 grid = grid_2d(ceil_div(g.n, tile::bn), ceil_div(g.m, tile::bm), "blocktile_2d");
  dispatch_transposes(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    matmul_blocktile_2d<T, decltype(ta)::value, decltype(tb)::value><<<grid, tile::threads, 0, stream>>>(g);
  });
  check_launch("kf::matmul (blocktile_2d)");
}

}  // namespace kf::detail
