// SPDX-License-Identifier: Apache-2.0
// Step 5 -- implicit_gemm_pipelined: step 3's implicit GEMM with a deeper,
// multi-stage cp.async pipeline (exact fp32, FFMA).
//
// What changes from implicit_gemm, and why it is faster:
//  * Copies, not loads: the im2col gather (4-byte cp.async, zero-filled for
//    padding and tile edges: gemm_loader.cuh's conv2d_im2col_async_gather,
//    which keeps the state of 2-4 rows per thread, not 8) and the filter
//    tile (16-byte cp.async when C*R*S % 4 == 0 and the weights are aligned,
//    else 4-byte) go from global to shared memory without passing through
//    registers. Step 3 held a whole slice in registers between its load and
//    its store; here those registers are free and nothing waits on the loads.
//  * A deeper K slice and more stages: BK = 16 (8 for the 64 x 64 tile) and
//    3 stages, so two slices are in flight while one is computed (step 3: one
//    slice of 8, two buffers): more memory latency hidden, half the barriers.
//  * The filter tile is kept k-major (Bs[k][kk], as it lies in memory) and read
//    as float4 of 4 kk: the same loads per FMA as step 3 (gemm_pipeline.cuh).
//  * An epilogue functor (include/kernelforge/epilogue.cuh) applied to every
//    output after the bias, before the store.
// Tiles, split-K and the float4 output stores are step 3's (plan.hpp's plan).
// Its measured speed: the docs site's learning path (docs/build_site.py) and
// benchmarks/tuning/conv2d.md#conv2d_best_uses_pipelined (bench_conv).
#pragma once

#include <cstddef>
#include <cstdint>

#include "../common/kernel.cuh"
#include "args.cuh"
#include "gemm_loader.cuh"
#include "gemm_pipeline.cuh"
#include "kernelforge/epilogue.cuh"

namespace kf::detail {

constexpr int conv2d_pipelined_stages = 3;

/// K slice per stage: 16, or 8 for the 64-thread tile (its im2col gather
/// would hold 16 rows of state per thread at BK = 16).
template <int BM, int BN>
constexpr int conv2d_pipelined_bk = conv2d_pipe_threads<BM, BN> >= 128 ? 16 : 8;

template <int BM, int BN>
constexpr int conv2d_pipelined_smem =
    conv2d_pipe_smem_bytes<BM, BN, conv2d_pipelined_bk<BM, BN>, conv2d_pipelined_stages>;

/// Adds bias, applies the epilogue and writes C rows m4..m4+3 of column k;
/// vector_store: P*Q % 4 == 0 and y 16-byte aligned (4 consecutive floats of y).
template <class Epilogue>
__device__ __forceinline__ void conv2d_store_run_epilogue(const conv2d_args<float>& a, int m4, int k,
                                                          const float (&v)[4], bool vector_store,
                                                          const Epilogue& epilogue) {
  if (k >= a.k) return;
  const float b = a.bias ? __ldg(a.bias + k) : 0.0f;
  float o[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) o[i] = epilogue(v[i] + b, static_cast<std::int64_t>(m4 + i), k);
  if (vector_store) {
    if (m4 < a.m) {
      int n, pq;
      a.div_pq.divmod(m4, n, pq);
      *reinterpret_cast<float4*>(a.y + (n * a.k + k) * a.pq + pq) = make_float4(o[0], o[1], o[2], o[3]);
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int m = m4 + i;
    if (m < a.m) {
      int n, pq;
      a.div_pq.divmod(m, n, pq);
      a.y[(n * a.k + k) * a.pq + pq] = o[i];
    }
  }
}

/// Grid: x = ceil(M / BM), y = ceil(K / BN), z = splits of C*R*S (1: no split).
/// Block z reduces kk in [z * kk_per_split, min(C*R*S, (z + 1) * kk_per_split))
/// (kk_per_split a multiple of 4) and writes a.y + z * M * K. A split launch
/// (partial sums, no bias) must pass the identity epilogue: the reduction applies it.
/// b_vec16: C*R*S % 4 == 0 and a.wt 16-byte aligned.
/// Dynamic shared memory: conv2d_pipelined_smem<BM, BN>.
template <int BM, int BN, int MIN_BLOCKS, class Epilogue = kf::epilogue::identity>
KF_KERNEL void __launch_bounds__(conv2d_pipe_threads<BM, BN>, MIN_BLOCKS)
    conv2d_implicit_gemm_pipelined(conv2d_args<float> a, bool vector_store, bool b_vec16, int kk_per_split,
                                   Epilogue epilogue) {
  constexpr int BK = conv2d_pipelined_bk<BM, BN>;
  constexpr int THREADS = conv2d_pipe_threads<BM, BN>;
  constexpr int A_PITCH = BM + conv2d_pipe_pad;
  extern __shared__ __align__(16) float conv2d_pipe_smem[];

  const int tid = threadIdx.x;
  const int block_m = blockIdx.x * BM, block_n = blockIdx.y * BN;
  conv2d_im2col_async_gather<BM, BK, THREADS> a_gather;
  a_gather.init(a, block_m, tid);
  conv2d_row_tile_copier<BN, BK, THREADS> b_copier;
  b_copier.init(a.wt, a.crs, block_n, a.k, tid);

  const int kk_begin = static_cast<int>(blockIdx.z) * kk_per_split;
  const int kk_end = min(a.crs, kk_begin + kk_per_split);
  const int slices = kk_end > kk_begin ? (kk_end - kk_begin + BK - 1) / BK : 0;
  float acc[8][8] = {};
  conv2d_pipelined_mainloop<BM, BN, BK, conv2d_pipelined_stages>(
      conv2d_pipe_smem, slices,
      [&](int slice, float* As, float* Bs) {
        const int k0 = kk_begin + slice * BK;
        a_gather.copy(a, k0, kk_end, As, A_PITCH);
        b_copier.copy(k0, kk_end, Bs, b_vec16);
      },
      acc);

  const int tr = tid % (BM / conv2d_pipe_thread_tile);
  const int tc = tid / (BM / conv2d_pipe_thread_tile);
  a.y += static_cast<std::size_t>(blockIdx.z) * a.m * a.k;  // this split's slice (0 without split)
#pragma unroll
  for (int gi = 0; gi < 2; ++gi) {
    const int m4 = block_m + gi * (BM / 2) + tr * 4;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int k = block_n + (j / 4) * (BN / 2) + tc * 4 + (j % 4);
      const float v[4] = {acc[gi * 4 + 0][j], acc[gi * 4 + 1][j], acc[gi * 4 + 2][j], acc[gi * 4 + 3][j]};
      conv2d_store_run_epilogue(a, m4, k, v, vector_store, epilogue);
    }
  }
}

}  // namespace kf::detail
