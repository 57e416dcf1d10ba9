// SPDX-License-Identifier: Apache-2.0
// Step 9 -- tensor_core_tf32: the tile product runs on the tensor cores
// (mma.sync.m16n8k8 TF32, fp32 accumulation) instead of the FP32 lanes.
//
// What changes from warp_tiled, and why it is faster:
//  * warp_tiled keeps the FP32 pipes busy with FFMA: 2 flops per lane per cycle,
//    ~67 TFLOP/s on an H200. One mma.sync.m16n8k8 does a 16x8x8 product (2048
//    flops) per warp instruction on the tensor cores, which run TF32 several
//    times faster than the FP32 lanes. The price is precision: each operand is
//    rounded to TF32 (10-bit mantissa, cvt.rna: round to nearest, ties away) so
//    a product carries ~1e-3 relative error; sums still accumulate in fp32. The
//    launcher uses this step only with math_mode::tf32.
//  * Block tile 128x128x32, 8 warps in a 2x4 grid, each warp a 64x32 tile = 4x4
//    mma tiles (64 accumulator registers per thread); a 4-warp layout with 64x64
//    warp tiles is instantiated for the benchmark to compare (four_warps).
//  * cp.async multi-stage pipeline (3 stages where the shared memory allows, 2
//    on GPUs with 99 KB per block): tile k+2 is in flight while tile k is in the
//    tensor cores, without staging through registers.
//  * Operands are kept in shared memory as they lie in global memory (no
//    transpose on the way in), with a padding per layout chosen so that the
//    scalar fragment loads of a warp hit 32 distinct banks (see operand_tile).
//    So every transpose combination gets conflict-free loads, each its own
//    instantiation.
//  * Edges: cp.async with a source size below the copy size zero-fills the
//    rest, so tiles that overhang m, n or k read nothing out of bounds and add
//    zeros; the epilogue guards every store. Correct for every shape.
//  * 16-byte cp.async when both operands allow it (16-byte aligned base, leading
//    dimension a multiple of 4 floats), 4-byte cp.async otherwise: decided on the
//    host per call, one instantiation each.
//  * Grouped rasterization: consecutive blocks walk raster_group_m tile rows
//    before moving right, so the A and B tiles they share are still in L2.
//  * Epilogue functor (kernelforge/epilogue.cuh): applied in registers to each
//    finished alpha * acc + beta * C, once, just before the store.
// Device code for sm_80 and newer; for older architectures the kernel body is a
// trap (the launcher never selects it there).
// mma.sync on Hopper runs well below wgmma (the Hopper path is steps 11-14).
// Its measured speed: the docs site's learning path (docs/build_site.py) and benchmarks/tuning/matmul.md
// (bench_matmul).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "../common/kernel.cuh"
#include "../arch/cp_async.cuh"
#include "../arch/mma_sm80.cuh"
#include "../common/alignment.hpp"
#include "../common/raster.hpp"
#include "gemm_args.cuh"
#include "kernelforge/epilogue.cuh"

namespace kf::detail {
namespace tf32_mma {

// ---- tile shape -------------------------------------------------------------
inline constexpr int block_m = 128;
inline constexpr int block_n = 128;
inline constexpr int block_k = 32;
inline constexpr int mma_m = 16, mma_n = 8, mma_k = 8;  ///< mma.sync.m16n8k8 (TF32)

/// How the warps of a block share its block_m x block_n tile, and the resident
/// blocks per SM the register budget is built for (3 stages of <= 36 KB each
/// let 2 blocks share an sm_80 / sm_90 SM).
template <int WarpsM, int WarpsN, int MinBlocksPerSm>
struct warp_layout {
  static constexpr int warps_m = WarpsM;  ///< warps along m
  static constexpr int warps_n = WarpsN;  ///< warps along n
  static constexpr int threads = WarpsM * WarpsN * 32;
  static constexpr int warp_tile_m = block_m / WarpsM;
  static constexpr int warp_tile_n = block_n / WarpsN;
  static constexpr int frags_m = warp_tile_m / mma_m;
  static constexpr int frags_n = warp_tile_n / mma_n;
  static constexpr int min_blocks_per_sm = MinBlocksPerSm;
};
/// 8 warps of 64 x 32 (the default): 16 warps per SM hide the fragment loads'
/// latency; 64 accumulators, at most 128 registers a thread.
using eight_warps = warp_layout<2, 4, 2>;
/// 4 warps of 64 x 64 (CUTLASS's sm_80 TF32 shape): 32 fragment loads and
/// conversions feed 32 mma instead of 24 feeding 16, for 128 accumulators a
/// thread and 8 warps per SM. bench_matmul_tc times both.
using four_warps = warp_layout<2, 2, 2>;
using default_warps = eight_warps;

inline constexpr int max_stages = 3;
inline constexpr int min_stages = 2;
/// Tile rows a group of consecutive blocks covers before moving along n (L2 reuse).
inline constexpr int raster_group_m = 8;
/// Bytes one cp.async moves in the vector path, and floats in it.
inline constexpr int vector_bytes = 16;
inline constexpr int vector_floats = vector_bytes / 4;

// Shared-memory padding, in floats. A warp's fragment load reads an 8 x 4 block
// (8 rows/columns "x" by 4 k's). Stored k-contiguous with a row stride = 4 (mod 32)
// the 32 lanes hit banks 4*x + k: all distinct. Stored mn-contiguous with a stride
// = 8 (mod 32) they hit 8*k + x: all distinct. Both keep rows 16-byte aligned.
inline constexpr int pad_k_contiguous = 4;
inline constexpr int pad_mn_contiguous = 8;

/// One operand's tile in shared memory, stored as it lies in global memory:
/// KContiguous: `extent` rows (m or n) of block_k floats; else block_k rows of
/// `extent` floats. Element (x, p) is (row or column x of the tile, k index p).
template <bool KContiguous, int Extent>
struct operand_tile {
  static constexpr bool k_contiguous = KContiguous;
  static constexpr int outer = KContiguous ? Extent : block_k;  ///< rows as in global memory
  static constexpr int inner = KContiguous ? block_k : Extent;  ///< contiguous floats per row
  static constexpr int stride = inner + (KContiguous ? pad_k_contiguous : pad_mn_contiguous);
  static constexpr int floats = outer * stride;
  static_assert(stride % vector_floats == 0, "rows must stay 16-byte aligned for cp.async");
  __host__ __device__ static constexpr int offset(int x, int p) {
    return KContiguous ? x * stride + p : p * stride + x;
  }
};

template <bool TransA>
using a_tile = operand_tile<!TransA, block_m>;  // op(A)(i, p): A[i*lda + p] is k-contiguous
template <bool TransB>
using b_tile = operand_tile<TransB, block_n>;  // op(B)(p, j): B[j*ldb + p] is k-contiguous

template <bool TransA, bool TransB>
constexpr int stage_bytes() {
  return (a_tile<TransA>::floats + b_tile<TransB>::floats) * static_cast<int>(sizeof(float));
}
/// The largest stage over the four transpose combinations (both operands k-contiguous).
inline constexpr int max_stage_bytes = stage_bytes<false, true>();

/// Kernel arguments (gemm_args plus the launch decisions), by value.
struct params {
  long long m = 0, n = 0, k = 0;
  float alpha = 0, beta = 0;
  const float* A = nullptr;
  long long lda = 0;
  const float* B = nullptr;
  long long ldb = 0;
  float* C = nullptr;
  long long ldc = 0;
  long long tiles_m = 0, tiles_n = 0;
  int stages = 0;
};

/// Waits until at most `stages - 2` groups are pending: the oldest stage has landed.
__device__ __forceinline__ void cp_async_wait_oldest(int stages) {
  if (stages >= 3) {
    cp_async_wait<1>();
  } else {
    cp_async_wait<0>();
  }
}

// ---- global -> shared --------------------------------------------------------
/// Enqueues the copy of one operand tile: tile element (x, p) is global element
/// (x0 + x, k0 + p) of the operand, which lies at g[(x0+x)*ld + k0+p] when the
/// tile is k-contiguous and at g[(k0+p)*ld + x0+x] otherwise. Elements with
/// x >= x_extent or p >= k are zero-filled and not read.
/// Each thread copies one fixed column of `width` floats in every pass over
/// the rows, so its column bound is computed once and only the row moves.
template <class Tile, bool Vec16, int Threads>
__device__ __forceinline__ void load_tile_async(float* s, const float* g, long long ld, long long x0, long long k0,
                                                long long x_extent, long long k, int tid) {
  // In global-memory terms: row `outer`, contiguous column `inner`.
  const long long outer0 = Tile::k_contiguous ? x0 : k0;
  const long long inner0 = Tile::k_contiguous ? k0 : x0;
  const long long outer_extent = Tile::k_contiguous ? x_extent : k;
  const long long inner_extent = Tile::k_contiguous ? k : x_extent;

  constexpr int width = Vec16 ? vector_floats : 1;  // floats per copy
  constexpr int copies_per_row = Tile::inner / width;
  constexpr int rows_per_pass = Threads / copies_per_row;
  static_assert(Threads % copies_per_row == 0 && Tile::outer % rows_per_pass == 0,
                "every thread copies the same number of pieces");
  const int column = (tid % copies_per_row) * width;
  const int first_row = tid / copies_per_row;
  const long long columns_left = inner_extent - (inner0 + column);
  const int row_bytes = columns_left <= 0 ? 0 : static_cast<int>(columns_left < width ? columns_left : width) * 4;
  long long offset = (outer0 + first_row) * ld + inner0 + column;
  // Fully unrolled, the 16 single-float copies of the scalar path would keep 16
  // addresses live at once and spill; 4 at a time is enough to keep copies in flight.
#pragma unroll(Vec16 ? Tile::outer / rows_per_pass : 4)
  for (int pass = 0; pass < Tile::outer / rows_per_pass; ++pass) {
    const int row = first_row + pass * rows_per_pass;
    const int bytes = outer0 + row < outer_extent ? row_bytes : 0;
    const float* src = bytes != 0 ? g + offset : g;  // a valid address even when nothing is read
    float* dst = s + row * Tile::stride + column;
    if constexpr (Vec16) {
      cp_async_16(dst, src, bytes);
    } else {
      cp_async_4(dst, src, bytes);
    }
    offset += rows_per_pass * ld;
  }
}

/// The epilogue of one warp's FragsM x FragsN m16n8 accumulator tiles, whose
/// corner is C's (row0, col0): C = ep(alpha * acc + beta * C) for every element
/// inside C (C not read when beta == 0: NaN in C must not leak), each store
/// guarded. acc(i, j, r): accumulator r of tile (i, j), which holds row
/// g + 8 (r / 2), column 2 t + r % 2 of the tile (g = lane / 4, t = lane % 4).
template <int FragsM, int FragsN, class Acc, class Epilogue>
__device__ __forceinline__ void store_warp_tile(const params& p, long long row0, long long col0, int lane, Acc&& acc,
                                                const Epilogue& ep) {
  const int g = lane / 4, t = lane % 4;
  const bool read_c = p.beta != 0.0f;
#pragma unroll
  for (int i = 0; i < FragsM; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long row = row0 + i * mma_m + g + 8 * h;
      if (row >= p.m) continue;
      float* const c_row = p.C + row * p.ldc;
#pragma unroll
      for (int j = 0; j < FragsN; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const long long col = col0 + j * mma_n + 2 * t + e;
          if (col >= p.n) continue;
          float v = p.alpha * acc(i, j, 2 * h + e);
          if (read_c) v = fmaf(p.beta, c_row[col], v);
          c_row[col] = ep(v, static_cast<std::int64_t>(row), static_cast<std::int64_t>(col));
        }
      }
    }
  }
}

}  // namespace tf32_mma

/// C = alpha * op(A) * op(B) + beta * C on the tensor cores (mma.sync TF32).
/// One block computes a block_m x block_n tile of C; see the file comment.
template <class Warps, bool TransA, bool TransB, bool Vec16, class Epilogue = epilogue::identity>
KF_KERNEL void __launch_bounds__(Warps::threads, Warps::min_blocks_per_sm)
    tensor_core_tf32_kernel(const tf32_mma::params p, const Epilogue ep) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // mma.sync TF32 needs sm_80; the launcher never selects this kernel below that
#else
  using namespace tf32_mma;
  constexpr int warps_m = Warps::warps_m;
  constexpr int threads = Warps::threads;
  constexpr int frags_m = Warps::frags_m;
  constexpr int frags_n = Warps::frags_n;
  using tile_a = a_tile<TransA>;
  using tile_b = b_tile<TransB>;

  extern __shared__ float4 tf32_mma_smem[];  // float4: 16-byte aligned for cp.async
  float* const smem_a = reinterpret_cast<float*>(tf32_mma_smem);
  float* const smem_b = smem_a + p.stages * tile_a::floats;

  const tile_coord tile = grouped_tile(blockIdx.x, p.tiles_m, p.tiles_n, raster_group_m);
  const long long m0 = tile.m * block_m;
  const long long n0 = tile.n * block_n;

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int g = lane / 4;  // mma "group": row of A / column of B within the fragment
  const int t = lane % 4;  // thread in group: k index within the fragment
  const int wm = (warp % warps_m) * Warps::warp_tile_m;
  const int wn = (warp / warps_m) * Warps::warp_tile_n;

  const long long k_tiles = (p.k + block_k - 1) / block_k;
  auto load_stage = [&](int stage, long long kt) {
    const long long k0 = kt * block_k;
    load_tile_async<tile_a, Vec16, threads>(smem_a + stage * tile_a::floats, p.A, p.lda, m0, k0, p.m, p.k, tid);
    load_tile_async<tile_b, Vec16, threads>(smem_b + stage * tile_b::floats, p.B, p.ldb, n0, k0, p.n, p.k, tid);
  };

  float acc[frags_m][frags_n][4];
#pragma unroll
  for (int i = 0; i < frags_m; ++i)
#pragma unroll
    for (int j = 0; j < frags_n; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

  // Prologue: stages - 1 tiles in flight (one commit group per tile, empty or not).
  for (int s = 0; s < p.stages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }

  int stage = 0;
  for (long long kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait_oldest(p.stages);  // tile kt has landed (this thread's copies)
    __syncthreads();                 // ... everyone's, and stage kt-1 is free to refill
    {
      const long long next = kt + p.stages - 1;
      int next_stage = stage + p.stages - 1;
      if (next_stage >= p.stages) next_stage -= p.stages;
      if (next < k_tiles) load_stage(next_stage, next);
      cp_async_commit();
    }

    const float* sa = smem_a + stage * tile_a::floats;
    const float* sb = smem_b + stage * tile_b::floats;
#pragma unroll
    for (int kk = 0; kk < block_k; kk += mma_k) {
      std::uint32_t a[frags_m][4];
      std::uint32_t b[frags_n][2];
#pragma unroll
      for (int i = 0; i < frags_m; ++i) {
        const int x = wm + i * mma_m + g;
        a[i][0] = to_tf32(sa[tile_a::offset(x, kk + t)]);
        a[i][1] = to_tf32(sa[tile_a::offset(x + 8, kk + t)]);
        a[i][2] = to_tf32(sa[tile_a::offset(x, kk + t + 4)]);
        a[i][3] = to_tf32(sa[tile_a::offset(x + 8, kk + t + 4)]);
      }
#pragma unroll
      for (int j = 0; j < frags_n; ++j) {
        const int x = wn + j * mma_n + g;
        b[j][0] = to_tf32(sb[tile_b::offset(x, kk + t)]);
        b[j][1] = to_tf32(sb[tile_b::offset(x, kk + t + 4)]);
      }
#pragma unroll
      for (int i = 0; i < frags_m; ++i)
#pragma unroll
        for (int j = 0; j < frags_n; ++j) mma_m16n8k8_tf32(acc[i][j], a[i], b[j]);
    }
    if (++stage == p.stages) stage = 0;
  }
  cp_async_wait_oldest(min_stages);  // drain (only empty groups can be pending here)

  store_warp_tile<frags_m, frags_n>(
      p, m0 + wm, n0 + wn, lane, [&](int i, int j, int r) { return acc[i][j][r]; }, ep);
#endif
}

}  // namespace kf::detail
