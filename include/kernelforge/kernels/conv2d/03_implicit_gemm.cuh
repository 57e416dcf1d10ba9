// SPDX-License-Identifier: Apache-2.0
// Step 3 -- implicit_gemm: the convolution as a matrix product
//   C (M x K) = A (M x CRS) * B (CRS x K),   M = N*P*Q, A = im2col(x), B = w^T,
// computed like a good SGEMM without ever writing im2col to memory: the A tile
// is gathered from x on the fly (gemm_loader.cuh).
//
// What changes from smem_tiled, and why it is faster:
//  * Register tiling: each thread owns an 8 x 8 block of C (64 accumulators).
//    Per kk it reads 8 values of A and 8 of B from shared memory (four 16-byte
//    loads) and does 64 multiply-adds: 16 FMAs per shared load, against about
//    3 in smem_tiled. The SM's FMA units, not its load path, set the pace.
//  * Block tiles of 128 x 128, 128 x 64 or 64 x 64 (chosen per problem by
//    plan.hpp so the grid fills the GPU): every A value loaded is used
//    BN times and every B value BM times.
//  * Double buffering: while the block computes on one BK = 8 slice in shared
//    memory, the next slice's global loads are already in flight into
//    registers; they are stored into the other buffer afterwards. One barrier
//    per slice.
//  * Reduction over all of C*R*S at once (not channel by channel), so the
//    shape of the filter no longer matters: 1x1, 3x3 and 7x7 stride 2 all
//    become one long GEMM.
//  * The thread's 8 rows are two runs of 4 consecutive m; with P*Q a multiple
//    of 4 they are 4 consecutive output pixels of one image and one channel,
//    written with one 16-byte store.
//  * Split-K (grid z > 1, planned by plan.hpp when the output tiles
//    alone cannot fill the GPU): block z reduces only BK slices [z * spp,
//    (z + 1) * spp) of C*R*S and writes its partial sums, without bias, to
//    slice z of a workspace laid out like y (the launcher points a.y there and
//    clears a.bias); common/split_k_reduce.cuh sums the slices. With grid z = 1
//    and spp = all slices, block 0 runs exactly the unsplit loop.
//  * Epilogue (kernelforge/epilogue.cuh): each stored value is
//    ep(sum + bias[k], m, k), in registers, right before the store; the
//    default, identity, stores the sum plus bias. Split-K partials are launched
//    with identity and no bias: the reduction applies both, once.
// Its measured speed: the docs site's learning path (docs/build_site.py) and
// benchmarks/tuning/conv2d.md#choose_conv2d_gemm_plan (bench_conv).
#pragma once

#include <cstddef>

#include <cstdint>

#include "../common/kernel.cuh"
#include "args.cuh"
#include "gemm_loader.cuh"
#include "kernelforge/epilogue.cuh"

namespace kf::detail {

constexpr int conv2d_gemm_bk = 8;           // kk per pipeline stage
constexpr int conv2d_gemm_thread_tile = 8;  // 8 x 8 outputs per thread
constexpr int conv2d_gemm_smem_pad = 4;     // floats: keeps rows 16-byte aligned, shifts banks for the B stores

template <int BM, int BN>
constexpr int conv2d_gemm_threads = (BM / conv2d_gemm_thread_tile) * (BN / conv2d_gemm_thread_tile);

struct identity_convert {
  __device__ __forceinline__ float operator()(float v) const { return v; }
};

/// Adds bias, applies the epilogue and writes C rows m4..m4+3 of column k;
/// vector_store: P*Q % 4 == 0 and y is 16-byte aligned, so the 4 rows are 4
/// consecutive floats of y.
template <class Epilogue>
__device__ __forceinline__ void conv2d_store_run(const conv2d_args<float>& a, int m4, int k, const float (&v)[4],
                                                 bool vector_store, const Epilogue& ep) {
  if (k >= a.k) return;
  const float b = a.bias ? __ldg(a.bias + k) : 0.0f;
  const auto out = [&](int i) -> float { return ep(v[i] + b, static_cast<std::int64_t>(m4 + i), std::int64_t{k}); };
  if (vector_store) {
    if (m4 < a.m) {
      int n, pq;
      a.div_pq.divmod(m4, n, pq);
      *reinterpret_cast<float4*>(a.y + (n * a.k + k) * a.pq + pq) = make_float4(out(0), out(1), out(2), out(3));
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int m = m4 + i;
    if (m < a.m) {
      int n, pq;
      a.div_pq.divmod(m, n, pq);
      a.y[(n * a.k + k) * a.pq + pq] = out(i);
    }
  }
}

/// Grid: x = ceil(M / BM), y = ceil(K / BN), z = splits of C*R*S (1: no split),
/// each slices_per_split BK slices long. Block z writes a.y + z * M * K.
/// Static shared memory (17 KB at most). ep: see the top of this file.
template <int BM, int BN, int MIN_BLOCKS, class Epilogue = epilogue::identity>
KF_KERNEL void __launch_bounds__(conv2d_gemm_threads<BM, BN>, MIN_BLOCKS)
    conv2d_implicit_gemm(conv2d_args<float> a, bool vector_store, int slices_per_split, Epilogue ep) {
  constexpr int BK = conv2d_gemm_bk;
  constexpr int THREADS = conv2d_gemm_threads<BM, BN>;
  constexpr int A_PITCH = BM + conv2d_gemm_smem_pad;
  constexpr int B_PITCH = BN + conv2d_gemm_smem_pad;
  __shared__ __align__(16) float As[2][BK * A_PITCH];
  __shared__ __align__(16) float Bs[2][BK * B_PITCH];

  const int tid = threadIdx.x;
  const int block_m = blockIdx.x * BM, block_n = blockIdx.y * BN;
  conv2d_gemm_loader<BM, BN, BK, THREADS> loader;
  loader.init(a, block_m, block_n, tid);

  // Thread (tr, tc): rows tr*4 + [0,4) and BM/2 + tr*4 + [0,4); columns likewise.
  // tr runs fastest, so a warp's 16-byte A reads are 16 consecutive float4.
  const int tr = tid % (BM / conv2d_gemm_thread_tile);
  const int tc = tid / (BM / conv2d_gemm_thread_tile);
  float acc[8][8] = {};

  const int slices = (a.crs + BK - 1) / BK;
  const int t_begin = static_cast<int>(blockIdx.z) * slices_per_split;
  const int t_end = min(slices, t_begin + slices_per_split);
  // Slice t lives in buffer t & 1 (so the loop needs no t_begin register).
  if (t_begin < t_end) {
    loader.load(a, t_begin * BK);
    loader.store(As[t_begin & 1], A_PITCH, Bs[t_begin & 1], B_PITCH, identity_convert{});
  }
  __syncthreads();
  for (int t = t_begin; t < t_end; ++t) {
    const int cur = t & 1;
    if (t + 1 < t_end) loader.load(a, (t + 1) * BK);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const float* a_row = As[cur] + kk * A_PITCH;
      const float* b_row = Bs[cur] + kk * B_PITCH;
      const float4 a0 = *reinterpret_cast<const float4*>(a_row + tr * 4);
      const float4 a1 = *reinterpret_cast<const float4*>(a_row + BM / 2 + tr * 4);
      const float4 b0 = *reinterpret_cast<const float4*>(b_row + tc * 4);
      const float4 b1 = *reinterpret_cast<const float4*>(b_row + BN / 2 + tc * 4);
      const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float bv[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
    if (t + 1 < t_end) loader.store(As[cur ^ 1], A_PITCH, Bs[cur ^ 1], B_PITCH, identity_convert{});
    __syncthreads();
  }

  a.y += static_cast<std::size_t>(blockIdx.z) * a.m * a.k;  // this split's slice (0 without split)
#pragma unroll
  for (int gi = 0; gi < 2; ++gi) {
    const int m4 = block_m + gi * (BM / 2) + tr * 4;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int k = block_n + (j / 4) * (BN / 2) + tc * 4 + (j % 4);
      const float v[4] = {acc[gi * 4 + 0][j], acc[gi * 4 + 1][j], acc[gi * 4 + 2][j], acc[gi * 4 + 3][j]};
      conv2d_store_run(a, m4, k, v, vector_store, ep);
    }
  }
}

}  // namespace kf::detail
