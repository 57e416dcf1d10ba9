// SPDX-License-Identifier: Apache-2.0
// Step 6 -- vectorized: 16-byte global loads, A's tile stored transposed in
// shared memory, 16-byte shared loads in the inner loop.
//
// Same 128 x 128 block tile and 8 x 8 outputs per thread as blocktile_2d.
// What changed, and why it is faster:
//  * Global -> shared: each thread moves one 16-byte chunk (4 floats) of A and
//    one of B per k-slice with a single LDG.128 instead of four LDG.32, along
//    whichever dimension the operand is contiguous in memory.
//  * A's tile is stored transposed, As[p][row] (k-major), so the 8 values of A
//    a thread needs for one p are contiguous: two LDS.128 instead of eight
//    strided LDS.32. B's tile Bs[p][col] is read the same way. The inner loop
//    issues 4 shared loads per 64 FMAs (blocktile_2d: 16).
//  * Alignment is checked at run time by the launcher: 16-byte loads need the
//    matrix pointer 16-byte aligned and the leading dimension a multiple of 4
//    (so every row starts aligned). Otherwise it launches the Vec = false
//    instantiation, which loads the same chunks with four scalar loads. Chunks
//    that straddle the edge of the matrix are loaded element by element.
// What it leaves: loads and compute are serialized by __syncthreads (no
// overlap of the next slice's loads with this slice's FMAs), and the B reads
// of a warp hit only half the banks; warp_tiled fixes both.
// Its measured speed: the docs site's learning path (docs/build_site.py) and benchmarks/tuning/matmul.md
// (bench_matmul).
#pragma once

#include <cstddef>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "../common/kernel.cuh"
#include "../runtime/launcher.hpp"
#include "../common/vector_access.cuh"
#include "gemm_args.cuh"
#include "launch_util.hpp"
#include "operand.cuh"

namespace kf::detail {

struct vectorized_tile {
  static constexpr int bm = 128, bn = 128, bk = 8, tm = 8, tn = 8;
  static constexpr int threads = (bm / tm) * (bn / tn);
  static constexpr int chunk = 4;  ///< floats per 16-byte load
};

/// The 16-byte-chunk version of load_tile (operand.cuh) for float: each thread
/// moves 4 consecutive floats of the operand's memory layout per chunk (one
/// LDG.128 when Vec and the chunk lies inside the matrix), and stores them
/// with one STS.128 when they are also consecutive in shared memory.
template <bool Trans, bool Vec, int ROWS, int COLS, int THREADS, int RowStride, int ColStride>
__device__ __forceinline__ void load_tile_chunks(const float* P, std::size_t ld, std::size_t rows, std::size_t cols,
                                                 std::size_t r0, std::size_t c0, float* s, int tid) {
  constexpr int W = vectorized_tile::chunk;
  constexpr int MC = Trans ? ROWS : COLS;                 // the tile in memory order: MR rows of MC contiguous elements
  constexpr int MStride = Trans ? RowStride : ColStride;  // shared stride along the contiguous dimension
  constexpr int chunks = ROWS * COLS / W;
  static_assert(MC % W == 0 && chunks % THREADS == 0, "whole chunks, the same number per thread");
  const std::size_t mr0 = Trans ? c0 : r0, mc0 = Trans ? r0 : c0;
  const std::size_t mr_limit = Trans ? cols : rows, mc_limit = Trans ? rows : cols;
#pragma unroll
  for (int it = 0; it < chunks / THREADS; ++it) {
    const int e = tid + it * THREADS;
    const int mr = e / (MC / W), mc = (e % (MC / W)) * W;
    const std::size_t gr = mr0 + mr, gc = mc0 + mc;
    const float* src = P + gr * ld + gc;
    float v[W];
    if (Vec && gr < mr_limit && gc + W <= mc_limit) {
      const float4 q = *reinterpret_cast<const float4*>(src);
      v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else {
#pragma unroll
      for (int w = 0; w < W; ++w) v[w] = gr < mr_limit && gc + w < mc_limit ? src[w] : 0.0f;
    }
    // Logical (r, c) of element w: (mr, mc + w) when !Trans, (mc + w, mr) when Trans.
    float* dst = s + (Trans ? mc * RowStride + mr * ColStride : mr * RowStride + mc * ColStride);
    if constexpr (MStride == 1) {
      *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int w = 0; w < W; ++w) dst[w * MStride] = v[w];
    }
  }
}

template <bool TransA, bool TransB, bool Vec>
KF_KERNEL void __launch_bounds__(vectorized_tile::threads) matmul_vectorized(gemm_args<float> g) {
  constexpr int BM = vectorized_tile::bm, BN = vectorized_tile::bn, BK = vectorized_tile::bk;
  constexpr int TM = vectorized_tile::tm, TN = vectorized_tile::tn, THREADS = vectorized_tile::threads;
  alignas(vector_bytes) __shared__ float As[BK * BM];  // As[p * BM + row]: A transposed
  alignas(vector_bytes) __shared__ float Bs[BK * BN];  // Bs[p * BN + col]
  const int tid = threadIdx.x;
  const int tr = tid / (BN / TN), tc = tid % (BN / TN);
  const std::size_t i0 = blockIdx.y * std::size_t(BM), j0 = blockIdx.x * std::size_t(BN);

  float acc[TM][TN] = {};
  float a[TM], b[TN];
  for (std::size_t p0 = 0; p0 < g.k; p0 += BK) {
    load_tile_chunks<TransA, Vec, BM, BK, THREADS, 1, BM>(g.A, g.lda, g.m, g.k, i0, p0, As, tid);
    load_tile_chunks<TransB, Vec, BK, BN, THREADS, BN, 1>(g.B, g.ldb, g.k, g.n, p0, j0, Bs, tid);
    __syncthreads();
#pragma unroll
    for (int p = 0; p < BK; ++p) {
#pragma unroll
      for (int i = 0; i < TM; i += 4) {
        const float4 q = *reinterpret_cast<const float4*>(&As[p * BM + tr * TM + i]);
        a[i] = q.x, a[i + 1] = q.y, a[i + 2] = q.z, a[i + 3] = q.w;
      }
#pragma unroll
      for (int j = 0; j < TN; j += 4) {
        const float4 q = *reinterpret_cast<const float4*>(&Bs[p * BN + tc * TN + j]);
        b[j] = q.x, b[j + 1] = q.y, b[j + 2] = q.z, b[j + 3] = q.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
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
void launch_vectorized(const gemm_args<T>& g, cudaStream_t stream) {
  static_assert(std::is_same_v<T, float>, "the vectorized kernel is written for float (float4 chunks)");
  using tile = vectorized_tile;
  const dim3 grid = grid_2d(ceil_div(g.n, tile::bn), ceil_div(g.m, tile::bm), "vectorized");
  const bool vec = rows_16b_aligned(g.A, g.lda) && rows_16b_aligned(g.B, g.ldb);
  dispatch_transposes(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    constexpr bool TA = decltype(ta)::value, TB = decltype(tb)::value;
    if (vec)
      matmul_vectorized<TA, TB, true><<<grid, tile::threads, 0, stream>>>(g);
    else
      matmul_vectorized<TA, TB, false><<<grid, tile::threads, 0, stream>>>(g);
  });
  check_launch("kf::matmul (vectorized)");
}

}  // namespace kf::detail
