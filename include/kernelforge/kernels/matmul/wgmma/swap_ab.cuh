// SPDX-License-Identifier: Apache-2.0
// The swapped TF32 product (14_wgmma.cuh, SwapAB): TF32 wgmma reads B k-major
// only, so for an n-contiguous B (the plain row-major product) the kernel
// computes C^T = op(B)^T op(A)^T. Its "A" is op(B)^T (n x k): N-major TMA boxes
// (32 k rows x 32 n, one swizzled row each: 4 boxes of 4 KiB for the tile's 128
// rows) that the consumer warps load into registers, in the A-fragment layout
// of wgmma's register-sourced form (wgmma_m64nNk8_tf32_rs), which has no layout
// requirement; its "B" is op(A), k-contiguous as TMA loads it. Nothing is
// transposed in shared memory or repacked in HBM (cuBLAS's TF32 kernel for this
// layout does the same). The accumulators hold C^T, so the epilogue below stores
// them transposed.
// A warp's 16 fragment rows are permuted within its 32-row box so that a
// fragment load is conflict-free: a0's 32 lanes read rows lane / 4 (8 rows) at
// k = lane % 4 (4 rows of the box, 128 bytes apart), and the 128-byte swizzle
// puts 16-byte slot (n / 4) ^ k; rows 0-3 -> n 0-3 and rows 4-7 -> n 16-19 take
// slots {s, s ^ 4} ^ k: 8 distinct slots over k = 0..3 (the CPU test
// MatmulWgmma.SwapFragmentMapping checks it). The epilogue undoes the permutation.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../../arch/guards.cuh"
#include "../../arch/smem.cuh"
#include "../../arch/tma_sm90.cuh"
#include "../../arch/warpgroup_sm90.cuh"
#include "config.cuh"
#include "element.cuh"
#include "kernelforge/epilogue.cuh"

namespace kf::detail::wgmma {

inline constexpr int swap_box_rows = 32;  ///< n of one N-major box (one swizzled row)
inline constexpr int swap_box_bytes = element<float>::stage_k * swizzle_row_bytes;  // a stage's 32 k rows: 4 KiB
/// The box-local row (n) of fragment row rr (0-15) of warp `warp` (0-3) of a warpgroup.
__host__ __device__ constexpr int swap_row_in_box(int warp, int rr) {
  return 8 * (warp % 2) + rr % 4 + 16 * ((rr / 4) % 2) + 4 * (rr / 8);
}
/// The warpgroup-local row (0-63) of fragment row rr of warp `warp`: warps 0, 1 in box 0, warps 2, 3 in box 1.
__host__ __device__ constexpr int swap_row(int warp, int rr) {
  return swap_box_rows * (warp / 2) + swap_row_in_box(warp, rr);
}
/// Byte offset, in a warpgroup's 64 rows of N-major fp32 A held as two boxes
/// of 32 rows `box_bytes` apart (each box: k rows of 128 bytes, 128-byte
/// swizzle), of fragment register r (0-3: a0..a3) of lane `lane` of warp
/// `warp`, for the first k-step (k-step kk: + kk * 8 rows of 128 bytes). Also
/// the TF32 filter gradient's x fragments (conv2d/backward/04_wgrad_wgmma_tf32.cuh),
/// whose boxes are taller.
__host__ __device__ constexpr int swap_fragment_offset_in(int warp, int lane, int r, int box_bytes) {
  const int n = swap_row(warp, lane / 4 + 8 * (r % 2));
  const int k = lane % 4 + 4 * (r / 2);
  return (n / swap_box_rows) * box_bytes + swizzle_offset(k, 4 * (n % swap_box_rows));
}
/// Byte offset, in a stage's A (its 128 rows: 4 boxes), of fragment register r
/// (0-3: a0..a3) of lane `lane` of warp `warp` of consumer warpgroup `consumer`,
/// for the first k-step (k-step kk: + kk * 8 rows of 128 bytes).
__host__ __device__ constexpr int swap_fragment_offset(int consumer, int warp, int lane, int r) {
  return 2 * consumer * swap_box_bytes + swap_fragment_offset_in(warp, lane, r, swap_box_bytes);
}

#if KF_ARCH_SM90A
/// SwapAB: one consumer warpgroup's accumulators are a 64 x N tile of C^T: a
/// thread's accumulator i is C's element (row m0 + 8 (i / 4) + 2 (lane % 4) +
/// i % 2, column n0 + swap_row(warp, lane / 4 + 8 ((i % 4) / 2))), where m0 is
/// the tile's first row of C and n0 the warpgroup's first column. ep describes
/// the swapped product: C has ep.n rows and ep.m columns. Each value is stored
/// alone (C's adjacent columns lie in other threads), through the epilogue
/// functor with its row and column of C.
template <class Epilogue, int Accumulators>
__device__ __forceinline__ void store_tile_swapped(const float (&d)[Accumulators], const params<float>& ep,
                                                   long long m0, long long n0, const Epilogue& fn) {
  const int tid = static_cast<int>(threadIdx.x) % warpgroup_threads;
  const int warp = tid / 32, lane = tid % 32;
  const bool read_c = ep.beta != 0.0f;  // beta == 0: C is not read (NaN in C must not leak)
#pragma unroll
  for (int i = 0; i < Accumulators; ++i) {
    const long long row = m0 + 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    const long long col = n0 + swap_row(warp, lane / 4 + 8 * ((i % 4) / 2));
    if (row < ep.n && col < ep.m) {
      float* const c = ep.C + row * ep.ldc + col;
      const float v = ep.alpha * d[i];
      *c = fn(read_c ? fmaf(ep.beta, *c, v) : v, row, col);
    }
  }
}

/// SwapAB, beta == 0 and C's rows 16-byte aligned: the warpgroup's 64 columns
/// of C (two C buffers of 32 columns: warps 0, 1 hold the first 32, warps 2, 3
/// the others) go out in blocks of 64 rows: each thread writes its 32 values of
/// a block into the 128-byte swizzled buffers (alpha, then the functor for
/// values inside C; outside it TMA clips), then one thread stores both buffers
/// with TMA; before the next block rewrites them, those stores have read them.
/// m0: the tile's first row of C; n0: the warpgroup's first column.
template <class Epilogue, int Accumulators>
__device__ __forceinline__ void store_tile_staged_swapped(const float (&d)[Accumulators], const params<float>& ep,
                                                          const CUtensorMap* map_c, std::uint32_t c_smem, int m0,
                                                          int n0, int barrier, const Epilogue& fn) {
  constexpr int block_rows = 64;
  constexpr int row_blocks = 2 * Accumulators / block_rows;  // the tile's N / 64
  constexpr int per_block = Accumulators / row_blocks;       // 32 values a thread
  constexpr bool checks = !std::is_same_v<Epilogue, epilogue::identity>;
  const int tid = static_cast<int>(threadIdx.x) % warpgroup_threads;
  const int warp = tid / 32, lane = tid % 32;
  if (n0 >= ep.m) return;  // the warpgroup's columns lie right of C
  const std::uint32_t buf = c_smem + (warp / 2) * c_buffer_bytes;
  const int chunk_col = n0 + swap_box_rows * (warp / 2);  // the buffer's first column of C
#pragma unroll
  for (int rb = 0; rb < row_blocks; ++rb) {
    const int row_block = m0 + rb * block_rows;
    if (row_block >= ep.n) break;            // the same for the whole warpgroup
    if (tid == 0) tma_store_wait_read<0>();  // the previous block's stores have read both buffers
    named_barrier_sync(barrier, warpgroup_threads);
#pragma unroll
    for (int j = 0; j < per_block; ++j) {
      const int i = rb * per_block + j;
      const int r = 8 * (j / 4) + 2 * (lane % 4) + j % 2;                 // row in the block
      const int c = swap_row_in_box(warp, lane / 4 + 8 * ((j % 4) / 2));  // column in the buffer
      float v = ep.alpha * d[i];
      if constexpr (checks) {
        const long long row = row_block + r, col = chunk_col + c;
        v = row < ep.n && col < ep.m ? fn(v, row, col) : 0.0f;
      }
      store_shared_f32(buf + swizzle_offset(r, 4 * c), v);
    }
    fence_proxy_async_shared();  // the writes, visible to the TMA engine
    named_barrier_sync(barrier, warpgroup_threads);
    if (tid == 0) {
      tma_store_2d(map_c, c_smem, n0, row_block);
      if (n0 + swap_box_rows < ep.m) tma_store_2d(map_c, c_smem + c_buffer_bytes, n0 + swap_box_rows, row_block);
      tma_store_commit();
    }
  }
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::wgmma
