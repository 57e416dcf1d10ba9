// SPDX-License-Identifier: Apache-2.0
// Step 3 -- smem_tiled: the classic shared-memory tiled kernel.
//
// The block computes a TILE x TILE tile of C. For each TILE-wide slice of k it
// loads a TILE x TILE tile of op(A) and one of op(B) into shared memory (each
// thread loads one element of each, consecutive threads on consecutive
// addresses of whichever layout the operand is stored in), waits at
// __syncthreads, and then every thread runs TILE multiply-adds out of shared
// memory before the next slice.
//
// What changed from coalesced, and why it is faster: every element a block
// loads from global memory is now used TILE times (by a whole row or column of
// the block) instead of once, so global traffic drops by TILE = 32x and the
// arithmetic intensity rises from 1/4 to TILE/4 FLOP per byte. The inner loop
// reads shared memory (~30 cycles latency, no L1 tag lookups) instead of
// global memory: As[ty][p] is a broadcast within the warp and Bs[p][tx] is 32
// consecutive words, both conflict-free. A transposed operand is read along
// its contiguous dimension and written into shared memory transposed; the +1
// column of padding makes those column writes conflict-free.
// What it leaves: 2 shared loads per FMA, so the shared-memory pipe, not the
// FMA units, is the limit; the next steps keep operands in registers.
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

/// Tile edge: one warp per row of the tile, 32 x 32 = 1024 threads per block.
constexpr int smem_tile = 32;
/// One extra column per shared row, so a column of the tile spans all 32 banks.
constexpr int smem_tile_pad = 1;

template <class T, bool TransA, bool TransB>
KF_KERNEL void __launch_bounds__(smem_tile* smem_tile) matmul_smem_tiled(gemm_args<T> g) {
  __shared__ T As[smem_tile][smem_tile + smem_tile_pad];  // As[row of C][p]
  __shared__ T Bs[smem_tile][smem_tile + smem_tile_pad];  // Bs[p][column of C]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::size_t i0 = blockIdx.y * std::size_t(smem_tile), j0 = blockIdx.x * std::size_t(smem_tile);
  const std::size_t i = i0 + ty, j = j0 + tx;

  T acc = 0;
  for (std::size_t p0 = 0; p0 < g.k; p0 += smem_tile) {
    // Load: (ty, tx) = (outer, inner) index of the tile as it lies in memory.
    if (!TransA) {  // A(i0 + ty, p0 + tx) -> As[ty][tx]
      const std::size_t r = i0 + ty, c = p0 + tx;
      As[ty][tx] = r < g.m && c < g.k ? g.A[r * g.lda + c] : T(0);
    } else {  // stored A(p0 + ty, i0 + tx) = op(A)(i0 + tx, p0 + ty) -> As[tx][ty]
      const std::size_t r = p0 + ty, c = i0 + tx;
      As[tx][ty] = r < g.k && c < g.m ? g.A[r * g.lda + c] : T(0);
    }
    if (!TransB) {  // B(p0 + ty, j0 + tx) -> Bs[ty][tx]
      const std::size_t r = p0 + ty, c = j0 + tx;
      Bs[ty][tx] = r < g.k && c < g.n ? g.B[r * g.ldb + c] : T(0);
    } else {  // stored B(j0 + ty, p0 + tx) = op(B)(p0 + tx, j0 + ty) -> Bs[tx][ty]
      const std::size_t r = j0 + ty, c = p0 + tx;
      Bs[tx][ty] = r < g.n && c < g.k ? g.B[r * g.ldb + c] : T(0);
    }
    __syncthreads();
#pragma unroll
    for (int p = 0; p < smem_tile; ++p) acc += As[ty][p] * Bs[p][tx];
    __syncthreads();  // before the next slice overwrites the tiles
  }
  if (i < g.m && j < g.n) store_c(g, i, j, acc);
}

template <class T>
void launch_smem_tiled(const gemm_args<T>& g, cudaStream_t stream) {
  const dim3 block(smem_tile, smem_tile);
  const dim3 grid = grid_2d(ceil_div(g.n, smem_tile), ceil_div(g.m, smem_tile), "smem_tiled");
  dispatch_transposes(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    matmul_smem_tiled<T, decltype(ta)::value, decltype(tb)::value><<<grid, block, 0, stream>>>(g);
  });
  check_launch("kf::matmul (smem_tiled)");
}

}  // namespace kf::detail
