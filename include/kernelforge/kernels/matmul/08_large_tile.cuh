// SPDX-License-Identifier: Apache-2.0
// Step 8 -- large_tile: 128 outputs per thread, register double-buffered
// fragments, both operands k-major in shared memory.
//
// Block tile 128 x 256 (or 256 x 128, chosen per shape: plan.hpp; misaligned
// calls always 256 x 128: large_tile_launch.cuh), 8 warps of 64 x 64, each
// thread 16 x 8 outputs. What changed from warp_tiled, and why it is faster:
//  * Twice the work per thread. warp_tiled's 64 accumulators per thread make
//    16 FMAs per 16-byte shared load; at 128 accumulators it is 21 (6 LDS.128
//    per k-step: 4 of A, 2 of B, for 128 FMAs), and the block's 128 x 256 tile
//    reads 384 floats per k for 32768 FMAs (128 x 128: 256 for 16384), a
//    quarter less global and L2 traffic per FMA. This is the shape of cuBLAS's
//    own SIMT SGEMM on Hopper (256 x 128, 8 warps, ~250 registers, one block
//    per SM).
//  * Register double-buffered fragments. While the FMAs of k-step kk run, the
//    fragments of k-step kk+1 are already being read from shared memory into
//    the other half of a 2 x (16 + 8) register buffer, so the shared-memory
//    latency hides behind 128 independent FMAs of the same warp rather than
//    behind other warps (of which there are only 8 per SM). The one
//    __syncthreads per k-slice sits inside the last k-step, after that step's
//    fragments are in flight and before its FMAs.
//  * One compute loop for every transpose: A is stored k-major (As[k][m]) and
//    B k-major (Bs[k][n]), rows padded by 4 floats. A warp's 32 lanes are a
//    4 (m) x 8 (n) grid: a thread's m values are 4 float4 groups 16 apart
//    (m = 16h + 4 lm + q), its n values 2 groups 32 apart (n = 32h + 4 ln + q).
//    Per LDS.128 of A the 8 lanes of a quarter-warp read one address (a
//    broadcast) and the warp 4 consecutive float4s; per LDS.128 of B each
//    quarter-warp reads 8 consecutive float4s (128 bytes: all 32 banks once)
//    and the 4 quarter-warps the same ones. No bank conflicts, one wavefront.
//  * Copies: a k-outer operand (A transposed, B untransposed) is copied row by
//    row as stored (warp_tiled's tile_copier: 16-byte cp.async where aligned,
//    4-byte otherwise); a k-inner one is transposed on the way in by 4-byte
//    cp.async (k_inner_copier below), the row stride BM + 4 putting a warp's
//    32 stores in 32 banks. Any alignment and leading dimension runs here;
//    edges are zero-filled, or (k-inner rows) read rows that are never stored.
//  * 3 stages, each refilled right after the barrier that ends its last read;
//    grouped rasterization and split-k as in warp_tiled.
//  * Epilogue: each quarter-warp stores 8 consecutive float4s (128 bytes) of a
//    row of C, coalesced without staging; the Epilogue functor is applied to
//    every value after the alpha / beta scaling, right before its store.
// Measured: benchmarks/tuning/matmul.md#large_tile_128x256 (bench_matmul).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "../arch/cp_async.cuh"
#include "../common/kernel.cuh"
#include "../common/raster.hpp"
#include "kernelforge/epilogue.cuh"
#include "07_warp_tiled.cuh"  // tile_copier
#include "gemm_args.cuh"
#include "operand.cuh"
#include "plan.hpp"
#include "tile_params.cuh"

namespace kf::detail {

/// Shared-memory layout of one stage: As[BK][BM + pad], then Bs[BK][BN + pad].
template <class Config>
struct large_tile_layout {
  static constexpr int BM = Config::block_m, BN = Config::block_n, BK = Config::block_k;
  /// Row padding: keeps rows 16-byte aligned, and a row stride of 4 (mod 32)
  /// floats makes the transposing copy's 4 rows x 8 k per warp conflict-free.
  static constexpr int pad = 4;
  static constexpr int a_stride = BM + pad, b_stride = BN + pad;
  static_assert(a_stride % 32 == 4 && b_stride % 32 == 4, "BM and BN must be multiples of 32");
  static constexpr int a_floats = BK * a_stride;
  static constexpr int b_floats = BK * b_stride;
  static constexpr int stage_floats = a_floats + b_floats;
  static constexpr std::size_t smem_bytes = std::size_t(Config::stages) * stage_floats * sizeof(float);
};

/// Copies this thread's share of the k-slices of an operand stored k-inner (A
/// untransposed: m x k; B transposed: n x k) into a k-major shared tile
/// s[k * S + o], one float per 4-byte cp.async. Lane l of warp w copies row
/// 4w + l / 8 (+ 32 per pass) at k = l % 8 + 8j (j < BK / 8): per instruction
/// a warp reads 4 rows x 8 k (4 x 32 bytes, whole sectors) and, with
/// S = 4 (mod 32), stores into 32 different banks. One row pointer per pass
/// serves all of its k values (immediate offsets), so a slice costs
/// passes x (BK / 8) copies and `passes` pointer increments.
/// Rows outside the matrix (edge tiles) read its last row instead: they feed
/// only accumulators of rows (A) or columns (B) that are never stored. Values
/// of k outside the k-range are zero-filled (they feed every accumulator).
/// Interface as tile_copier (copy_full / copy_partial).
template <int MR, int BK, int S, int THREADS>
struct k_inner_copier {
  static constexpr int block_k = 8;                        ///< k values per lane group of 8
  static constexpr int rows_per_pass = THREADS / block_k;  ///< 4 rows per warp
  static constexpr int passes = MR / rows_per_pass;
  static constexpr int k_groups = BK / block_k;
  static_assert(BK % block_k == 0 && THREADS % 32 == 0 && MR % rows_per_pass == 0 && passes <= 32,
                "every thread copies the same number of elements");
  static_assert(S % 32 == 4, "row stride 4 (mod 32): the 32 lanes' stores in 32 banks");

  const float* base;         ///< the matrix: the source of copies that read nothing
  const float* src[passes];  ///< this thread's row of each pass at its k in the next slice
  int dst;                   ///< shared offset (floats) of this thread's first element
  int lead;                  ///< k offset of this thread's first element inside a slice

  __device__ __forceinline__ k_inner_copier(const float* P, std::size_t ld, std::size_t fixed0, std::size_t fixed_limit,
                                            std::size_t k0, int /*block_k*/, int tid) {
    const int r = tid / block_k;
    lead = tid % block_k;
    base = P;
    dst = lead * S + r;
#pragma unroll
    for (int p = 0; p < passes; ++p) {
      const std::size_t row = fixed0 + r + std::size_t(p) * rows_per_pass;
      src[p] = P + (row < fixed_limit ? row : fixed_limit - 1) * ld + k0 + lead;
    }
  }

  __device__ __forceinline__ void copy_full(float* stage) {
#pragma unroll
    for (int p = 0; p < passes; ++p) {
#pragma unroll
      for (int j = 0; j < k_groups; ++j) {
        cp_async_4(stage + dst + j * block_k * S + p * rows_per_pass, src[p] + j * block_k, 4);
      }
      src[p] += BK;
    }
  }

  __device__ __forceinline__ void copy_partial(float* stage, int k_left) {
#pragma unroll
    for (int p = 0; p < passes; ++p) {
#pragma unroll
      for (int j = 0; j < k_groups; ++j) {
        const bool in = lead + j * block_k < k_left;
        cp_async_4(stage + dst + j * block_k * S + p * rows_per_pass, in ? src[p] + j * block_k : base, in ? 4 : 0);
      }
      src[p] += BK;
    }
  }
};

template <class Config, bool TransA, bool TransB, bool Vec, class Epilogue>
__device__ __forceinline__ void large_tile_body(const gemm_args<float>& g, const tile_params& x, const Epilogue& ep) {
  using L = large_tile_layout<Config>;
  constexpr int BM = Config::block_m, BN = Config::block_n, BK = Config::block_k, STAGES = Config::stages;
  constexpr int WM = Config::warp_m, WN = Config::warp_n, THREADS = Config::threads;
  constexpr int WARPS_N = BN / WN;
  constexpr int TM = WM / 4, TN = WN / 8;  // lanes: 4 (m) x 8 (n)
  constexpr int W = Vec ? 4 : 1;
  static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "one warp per warp tile");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 2 == 0 && STAGES >= 2, "float4 fragments, two buffers");

  extern __shared__ float4 large_tile_smem[];
  float* const smem = reinterpret_cast<float*>(large_tile_smem);

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int lm = lane / 8, ln = lane % 8;  // lane position in the warp's 4 x 8 grid
  const int a_off = (warp / WARPS_N) * WM + 4 * lm, b_off = (warp % WARPS_N) * WN + 4 * ln;

  const tile_coord tile =
      grouped_tile(blockIdx.x, static_cast<long long>(x.tiles_m), static_cast<long long>(x.tiles_n), Config::group_m);
  const std::size_t i0 = static_cast<std::size_t>(tile.m) * BM, j0 = static_cast<std::size_t>(tile.n) * BN;
  const std::size_t k_begin = blockIdx.z * x.k_slice;
  const std::size_t k_end = g.k - k_begin < x.k_slice ? g.k : k_begin + x.k_slice;
  const int k_tiles = static_cast<int>((k_end - k_begin + BK - 1) / BK);

  // A is k-outer when transposed (stored k x m), B when not (stored k x n).
  using copier_a = std::conditional_t<TransA, tile_copier<BK, BM, L::a_stride, W, THREADS, false>,
                                      k_inner_copier<BM, BK, L::a_stride, THREADS>>;
  using copier_b = std::conditional_t<TransB, k_inner_copier<BN, BK, L::b_stride, THREADS>,
                                      tile_copier<BK, BN, L::b_stride, W, THREADS, false>>;
  copier_a copy_a(g.A, g.lda, i0, g.m, k_begin, BK, tid);
  copier_b copy_b(g.B, g.ldb, j0, g.n, k_begin, BK, tid);
  std::size_t k_left = k_end - k_begin;  // from the start of the next slice to copy
  auto load_next = [&](int stage) {
    float* As = smem + stage * L::stage_floats;
    if (k_left >= std::size_t(BK)) {
      copy_a.copy_full(As);
      copy_b.copy_full(As + L::a_floats);
      k_left -= BK;
    } else {
      copy_a.copy_partial(As, static_cast<int>(k_left));
      copy_b.copy_partial(As + L::a_floats, static_cast<int>(k_left));
      k_left = 0;
    }
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
  }

  // Prologue: STAGES slices in flight (empty groups past the end keep the count).
#pragma unroll
  for (int s = 0; s < STAGES; ++s) {
    if (s < k_tiles) load_next(s);
    cp_async_commit();
  }
  cp_async_wait<STAGES - 1>();  // slice 0 has landed (this thread's copies) ...
  __syncthreads();              // ... and everyone's

  float a[2][TM], b[2][TN];  // fragments of two consecutive k-steps
  auto load_fragments = [&](int buf, const float* As, const float* Bs, int kk) {
#pragma unroll
    for (int h = 0; h < TM / 4; ++h) {
      const float4 v = *reinterpret_cast<const float4*>(As + kk * L::a_stride + a_off + 16 * h);
      a[buf][4 * h] = v.x, a[buf][4 * h + 1] = v.y, a[buf][4 * h + 2] = v.z, a[buf][4 * h + 3] = v.w;
    }
#pragma unroll
    for (int h = 0; h < TN / 4; ++h) {
      const float4 v = *reinterpret_cast<const float4*>(Bs + kk * L::b_stride + b_off + 32 * h);
      b[buf][4 * h] = v.x, b[buf][4 * h + 1] = v.y, b[buf][4 * h + 2] = v.z, b[buf][4 * h + 3] = v.w;
    }
  };

  const float* As = smem;
  load_fragments(0, As, As + L::a_floats, 0);
  int read_stage = 0;  // the stage of slice kt
  for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      if (kk == BK - 1) {
        // Every read of slice kt is issued (its last fragments above). Once slice
        // kt+1 has landed and all threads are here, refill slice kt's stage with
        // slice kt+STAGES and move on to slice kt+1's stage.
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (kt + STAGES < k_tiles) load_next(read_stage);
        cp_async_commit();
        read_stage = read_stage == STAGES - 1 ? 0 : read_stage + 1;
        As = smem + read_stage * L::stage_floats;
      }
      // Fragments of the next k-step (after the last slice: harmless reads of a stale stage).
      load_fragments((kk + 1) % 2, As, As + L::a_floats, (kk + 1) % BK);
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[kk % 2][i], b[kk % 2][j], acc[i][j]);
      }
    }
  }

  // Epilogue: acc[4h + q][4h' + q'] is C(i0 + a_off + 16h + q, j0 + b_off + 32h' + q');
  // with split-k, raw sums into this slice's partial tile (the reduction applies
  // alpha, beta and the epilogue functor, once per element of C).
  float* const partial = x.workspace != nullptr ? x.workspace + blockIdx.z * (g.m * g.n) : nullptr;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const std::size_t r = i0 + a_off + 16 * (i / 4) + i % 4;
    if (r >= g.m) continue;
#pragma unroll
    for (int h = 0; h < TN / 4; ++h) store_c_quad(g, partial, x.c_aligned, r, j0 + b_off + 32 * h, &acc[i][4 * h], ep);
  }
}

/// The kernel. Only the configurations of the architecture class this image
/// is compiled for (plan.hpp: warp_tiled_tuning_for) have a body; the launcher picks the same class
/// from the image that runs.
template <class Config, bool TransA, bool TransB, bool Vec, class Epilogue = kf::epilogue::identity>
KF_KERNEL void __launch_bounds__(Config::threads, 1) matmul_large_tile(gemm_args<float> g, tile_params x, Epilogue ep) {
#if defined(__CUDA_ARCH__)
  if constexpr (warp_tiled_tuning_for(__CUDA_ARCH__ / 10) == Config::id) {
    large_tile_body<Config, TransA, TransB, Vec>(g, x, ep);
  }
#endif
}

}  // namespace kf::detail
