// SPDX-License-Identifier: Apache-2.0
// Step 7 -- warp_tiled: warp-level tiles, a multi-stage cp.async pipeline,
// conflict-free shared layouts for every transpose, split-k for thin products.
//
// Block tile 128 x 128, 8 warps as 2 x 4 warp tiles of 64 x 32, each thread
// 8 x 8 outputs (tile sizes per architecture: tuning.hpp). What changed from
// vectorized, and why it is faster:
//  * Warp tiles. The 32 lanes of a warp are laid out 8 (rows) x 4 (columns)
//    over a 64 x 32 warp tile. A shared load of A by a warp then touches only
//    8 distinct 16-byte words and one of B only 4: each shared-memory
//    wavefront serves the whole warp (broadcast), the fragments of one warp
//    stay in one small region, and the thread -> output mapping is chosen per
//    layout so that no 16-byte shared load has a bank conflict (below).
//  * Pipelining. `stages` k-slices are in flight: while the FMAs run on slice
//    t, cp.async (sm_80+) is already copying slice t+1 and t+2 from global to
//    shared memory without passing through registers, so global latency hides
//    behind arithmetic and a block waits at only one __syncthreads per slice.
//    Below sm_80 the copies are plain loads and stores (arch/cp_async.cuh): the
//    same code, just without the overlap.
//  * Every transpose is copied straight, with 16-byte cp.async, in the layout
//    it has in memory; the inner loop adapts instead of the copy:
//      A untransposed -> As[m][k] (row stride BK+4):  8 x LDS.128 along k per 4 k-steps
//      A transposed   -> As[k][m]:                    2 x LDS.128 along m per k-step
//      B untransposed -> Bs[k][n]:                    2 x LDS.128 along n per k-step
//      B transposed   -> Bs[n][k] (row stride BK+4):  8 x LDS.128 along k per 4 k-steps
//    All four give 16 FMAs per shared load, with no transposing pre-pass and
//    no transposing scatter into shared memory, so TN, NT and TT run at the
//    speed of NN. In the [m][k] layouts a thread owns rows tm, tm+8, tm+16, ...
//    so the 8 rows a warp reads at once are consecutive; the row stride of
//    BK+4 floats is an odd number of 16-byte units, so those 8 rows fall on 8
//    different groups of 4 banks: conflict-free. In the [k][m] layouts a
//    thread owns 4 consecutive rows (one float4) per 32-row group.
//  * Alignment is checked at run time: 16-byte copies need A and B 16-byte
//    aligned with leading dimensions that are multiples of 4; otherwise the
//    Vec = false instantiation copies 4-byte elements (same pipeline).
//    Chunks that straddle the matrix edge are zero-filled by cp.async itself.
//  * Blocks rasterized in groups of 8 tile-rows share A and B panels in L2;
//    products with too few tiles split k (split_k.cuh, deterministic reduction).
//  * Epilogue functor (kernelforge/epilogue.cuh): applied in registers to each
//    finished alpha * acc + beta * C just before the store (with split-k, by
//    the reduction, never to a partial tile); identity costs nothing.
// Limit: ~91% FFMA issue in the inner loop at one 128x128 block per SM (168
// registers). Measured: benchmarks/tuning/matmul.md#warp_tiled_large_smem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "../common/kernel.cuh"
#include "../common/vector_access.cuh"
#include "../arch/cp_async.cuh"
#include "../common/raster.hpp"
#include "kernelforge/epilogue.cuh"
#include "gemm_args.cuh"
#include "operand.cuh"
#include "split_k.cuh"
#include "plan.hpp"
#include "tile_params.cuh"

namespace kf::detail {

/// Shared-memory layout of one pipeline stage for a configuration and a
/// transpose combination (see the table at the top of the file).
template <class Config, bool TransA, bool TransB>
struct warp_tiled_layout {
  static constexpr int BM = Config::block_m, BN = Config::block_n, BK = Config::block_k;
  /// Padding of the [m][k] / [n][k] layouts: keeps rows 16-byte aligned and
  /// makes the row stride an odd number of 16-byte units (conflict-free).
  static constexpr int k_pad = 4;
  static_assert(((BK + k_pad) / 4) % 2 == 1, "block_k must be a multiple of 8");
  static constexpr int a_stride = TransA ? BM : BK + k_pad;  ///< floats between shared rows of A
  static constexpr int a_rows = TransA ? BK : BM;
  static constexpr int b_stride = TransB ? BK + k_pad : BN;
  static constexpr int b_rows = TransB ? BN : BK;
  static constexpr int a_floats = a_rows * a_stride;
  static constexpr int b_floats = b_rows * b_stride;
  static constexpr int stage_floats = a_floats + b_floats;
  static constexpr std::size_t smem_bytes = std::size_t(Config::stages) * stage_floats * sizeof(float);
};

/// Copies this thread's share of one operand's k-slices into shared memory,
/// slice after slice. The operand is an MR x MC tile of a row-major matrix
/// (element (o, c) at P[o * ld + c]); k runs along the contiguous dimension
/// (KInner: A untransposed, B transposed) or along the rows (A transposed,
/// B untransposed). Consecutive threads copy consecutive W-float chunks of a
/// row (coalesced); shared rows are S floats apart.
/// Everything that does not change from slice to slice is computed once: the
/// source addresses (chunks outside the matrix along m or n point at a valid
/// element and copy 0 bytes) and the byte counts, so a slice that lies wholly
/// inside k costs one copy and one pointer increment per chunk (copy_full).
/// Only the last slice of a k-range can be partial (copy_partial).
template <int MR, int MC, int S, int W, int THREADS, bool KInner>
struct tile_copier {
  static constexpr int chunks_per_row = MC / W;
  static constexpr int rows_per_pass = THREADS / chunks_per_row;
  static constexpr int passes = MR / rows_per_pass;
  static constexpr int chunk_bytes = W * int(sizeof(float));
  static_assert(MC % W == 0 && THREADS % chunks_per_row == 0 && MR % rows_per_pass == 0 && passes <= 32,
                "every thread copies whole chunks, the same number each");

  const float* base;         ///< the matrix: the source of copies that read nothing
  const float* src[passes];  ///< this thread's chunks in the next slice (always valid addresses)
  std::size_t slice_stride;  ///< floats between consecutive k-slices
  int dst;                   ///< shared offset (floats) of this thread's first chunk
  int lead;                  ///< k offset of the first chunk inside a slice (column if KInner, else row)
  int fixed;                 ///< KInner: bit p set when pass p's row is inside the matrix;
                             ///< else: bytes of the chunk inside the matrix along its row

  /// fixed0 / fixed_limit: the tile's first row (or column) along m (or n), and m (or n);
  /// k0: the first k of the first slice; block_k: the slice length.
  __device__ __forceinline__ tile_copier(const float* P, std::size_t ld, std::size_t fixed0, std::size_t fixed_limit,
                                         std::size_t k0, int block_k, int tid) {
    const int r = tid / chunks_per_row, c = (tid % chunks_per_row) * W;
    base = P;
    dst = r * S + c;
    if constexpr (KInner) {
      slice_stride = std::size_t(block_k);
      lead = c;
      fixed = 0;
#pragma unroll
      for (int p = 0; p < passes; ++p) {
        const std::size_t row = fixed0 + r + p * rows_per_pass;
        const bool inside = row < fixed_limit;
        fixed |= inside ? 1 << p : 0;
        src[p] = P + (inside ? row : fixed_limit - 1) * ld + k0 + c;
      }
    } else {
      slice_stride = std::size_t(block_k) * ld;
      lead = r;
      const std::size_t col = fixed0 + c;
      const bool inside = col < fixed_limit;
      fixed = inside ? int(fixed_limit - col < std::size_t(W) ? fixed_limit - col : W) * int(sizeof(float)) : 0;
#pragma unroll
      for (int p = 0; p < passes; ++p) src[p] = P + (k0 + r + p * rows_per_pass) * ld + (inside ? col : 0);
    }
  }

  __device__ __forceinline__ static void copy_chunk(float* to, const float* from, int bytes) {
    if constexpr (W == 4)
      cp_async_16(to, from, bytes);
    else
      cp_async_4(to, from, bytes);
  }

  /// Copies a slice that lies wholly inside k into `stage`.
  __device__ __forceinline__ void copy_full(float* stage) {
#pragma unroll
    for (int p = 0; p < passes; ++p) {
      int bytes;
      if constexpr (KInner)
        bytes = (fixed >> p) & 1 ? chunk_bytes : 0;
      else
        bytes = fixed;
      copy_chunk(stage + dst + p * rows_per_pass * S, src[p], bytes);
      src[p] += slice_stride;
    }
  }

  /// Copies a slice of which only k_left < block_k values of k remain.
  __device__ __forceinline__ void copy_partial(float* stage, int k_left) {
#pragma unroll
    for (int p = 0; p < passes; ++p) {
      int bytes;
      if constexpr (KInner) {
        const int e = k_left - lead;
        bytes = (fixed >> p) & 1 ? (e <= 0 ? 0 : e >= W ? W : e) * int(sizeof(float)) : 0;
      } else {
        bytes = lead + p * rows_per_pass < k_left ? fixed : 0;
      }
      copy_chunk(stage + dst + p * rows_per_pass * S, bytes ? src[p] : base, bytes);
      src[p] += slice_stride;
    }
  }
};

template <class Config, bool TransA, bool TransB, bool Vec, class Epilogue>
__device__ __forceinline__ void warp_tiled_body(const gemm_args<float>& g, const tile_params& x, const Epilogue& ep) {
  using L = warp_tiled_layout<Config, TransA, TransB>;
  constexpr int BM = Config::block_m, BN = Config::block_n, BK = Config::block_k, STAGES = Config::stages;
  constexpr int TM = Config::thread_m, TN = Config::thread_n;
  constexpr int THREADS = Config::warps_m * Config::warps_n * 32;
  constexpr int WM = BM / Config::warps_m, WN = BN / Config::warps_n;
  constexpr int W = Vec ? 4 : 1;
  static_assert(WM == 8 * TM && WN == 4 * TN, "a warp is 8 x 4 lanes of TM x TN outputs");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0 && STAGES >= 2, "float4 fragments");

  extern __shared__ float4 warp_tiled_smem[];
  float* const smem = reinterpret_cast<float*>(warp_tiled_smem);

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int tm = lane / 4, tn = lane % 4;  // lane position in the warp's 8 x 4 grid
  const int warp_m0 = (warp / Config::warps_n) * WM, warp_n0 = (warp % Config::warps_n) * WN;

  const tile_coord tile =
      grouped_tile(blockIdx.x, static_cast<long long>(x.tiles_m), static_cast<long long>(x.tiles_n), Config::group_m);
  const std::size_t i0 = static_cast<std::size_t>(tile.m) * BM, j0 = static_cast<std::size_t>(tile.n) * BN;
  const std::size_t k_begin = blockIdx.z * x.k_slice;
  const std::size_t k_end = g.k - k_begin < x.k_slice ? g.k : k_begin + x.k_slice;
  const int k_tiles = static_cast<int>((k_end - k_begin + BK - 1) / BK);

  // Per-thread copy state for A and B (tile_copier): memory rows x contiguous length.
  using copier_a = std::conditional_t<TransA, tile_copier<BK, BM, L::a_stride, W, THREADS, false>,
                                      tile_copier<BM, BK, L::a_stride, W, THREADS, true>>;
  using copier_b = std::conditional_t<TransB, tile_copier<BN, BK, L::b_stride, W, THREADS, true>,
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

  // Prologue: STAGES - 1 slices in flight (empty groups past the end keep the count).
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_next(s);
    cp_async_commit();
  }

  int compute_stage = 0, load_stage = STAGES - 1;
  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of slice kt have landed
    __syncthreads();              // ... and everyone's; and everyone is done with slice kt - 1
    if (kt + STAGES - 1 < k_tiles) load_next(load_stage);
    cp_async_commit();
    load_stage = load_stage == STAGES - 1 ? 0 : load_stage + 1;

    const float* As = smem + compute_stage * L::stage_floats;
    const float* Bs = As + L::a_floats;
    compute_stage = compute_stage == STAGES - 1 ? 0 : compute_stage + 1;
#pragma unroll
    for (int kg = 0; kg < BK; kg += 4) {
      float a[TM][4], b[TN][4];  // fragments for k-steps kg .. kg+3
      if constexpr (!TransA) {   // As[m][k]: rows tm + 8i, one float4 along k each
#pragma unroll
        for (int i = 0; i < TM; ++i) {
          const float4 v = *reinterpret_cast<const float4*>(As + (warp_m0 + tm + 8 * i) * L::a_stride + kg);
          a[i][0] = v.x, a[i][1] = v.y, a[i][2] = v.z, a[i][3] = v.w;
        }
      } else {  // As[k][m]: rows 32h + 4tm + q, one float4 along m per group h
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
          for (int h = 0; h < TM / 4; ++h) {
            const float4 v = *reinterpret_cast<const float4*>(As + (kg + kk) * L::a_stride + warp_m0 + 32 * h + 4 * tm);
            a[4 * h][kk] = v.x, a[4 * h + 1][kk] = v.y, a[4 * h + 2][kk] = v.z, a[4 * h + 3][kk] = v.w;
          }
        }
      }
      if constexpr (!TransB) {  // Bs[k][n]: columns 16h + 4tn + q, one float4 along n per group h
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
          for (int h = 0; h < TN / 4; ++h) {
            const float4 v = *reinterpret_cast<const float4*>(Bs + (kg + kk) * L::b_stride + warp_n0 + 16 * h + 4 * tn);
            b[4 * h][kk] = v.x, b[4 * h + 1][kk] = v.y, b[4 * h + 2][kk] = v.z, b[4 * h + 3][kk] = v.w;
          }
        }
      } else {  // Bs[n][k]: columns tn + 4j, one float4 along k each
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          const float4 v = *reinterpret_cast<const float4*>(Bs + (warp_n0 + tn + 4 * j) * L::b_stride + kg);
          b[j][0] = v.x, b[j][1] = v.y, b[j][2] = v.z, b[j][3] = v.w;
        }
      }
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i][kk], b[j][kk], acc[i][j]);
        }
      }
    }
  }

  // Epilogue. Row of acc[i] and column of acc[..][j] inside the block tile:
  const bool split = x.workspace != nullptr;
  float* const partial = split ? x.workspace + blockIdx.z * (g.m * g.n) : nullptr;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = warp_m0 + (TransA ? 32 * (i / 4) + 4 * tm + i % 4 : tm + 8 * i);
    const std::size_t r = i0 + row;
    if (r >= g.m) continue;
    if constexpr (!TransB) {  // 4 consecutive columns per group h: one 16-byte access where aligned
#pragma unroll
      for (int h = 0; h < TN / 4; ++h) {
        store_c_quad(g, partial, x.c_aligned, r, j0 + warp_n0 + 16 * h + 4 * tn, &acc[i][4 * h], ep);
      }
    } else {
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const std::size_t c = j0 + warp_n0 + tn + 4 * j;
        if (c >= g.n) continue;
        if (split)
          partial[r * g.n + c] = acc[i][j];
        else
          store_c(g, r, c, acc[i][j], ep);
      }
    }
  }
}

/// The kernel. Only the configuration this architecture uses (plan.hpp: warp_tiled_tuning_for) is
/// compiled; the others are empty and never launched (the launcher asks the
/// image that runs which architecture it was compiled for).
template <class Config, bool TransA, bool TransB, bool Vec, class Epilogue = epilogue::identity>
KF_KERNEL void __launch_bounds__(Config::warps_m* Config::warps_n * 32, Config::min_blocks_per_sm)
    matmul_warp_tiled(gemm_args<float> g, tile_params x, Epilogue ep) {
#if defined(__CUDA_ARCH__)
  if constexpr (warp_tiled_tuning_for(__CUDA_ARCH__ / 10) == Config::id) {
    warp_tiled_body<Config, TransA, TransB, Vec>(g, x, ep);
  }
#endif
}

}  // namespace kf::detail
