// SPDX-License-Identifier: Apache-2.0
// Step 11 -- wgmma_tma: the first Hopper step. One warpgroup (128 threads)
// computes a 64 x 256 tile of C with wgmma, fed by TMA through a ring of two
// stages. Compiled for sm_90a only; host side wgmma_steps_sm90a.cu.
//
// What changes from the mma.sync steps (09, 10), and why it is faster:
//  * wgmma.m64n256k16: the four warps of a warpgroup issue ONE asynchronous
//    product of 64 x 256 x 16 that reads both operands from shared memory
//    through 64-bit matrix descriptors (arch/wgmma_sm90.cuh). No ldmatrix, no
//    fragment registers: mma.sync moves every operand through registers and
//    runs Hopper's tensor cores at a fraction of their rate.
//  * TMA (cp.async.bulk.tensor): one thread copies a whole 64 x 64 box of A
//    and the 64 x 256 box of B with one instruction each, zero-fills what
//    overhangs the matrix (so ragged m, n, k need no guards), and stores it in
//    the 128-byte swizzle that the descriptors describe: conflict-free reads.
//  * mbarriers instead of __syncthreads: a stage's `full` barrier completes
//    when TMA has written its bytes (arrive.expect_tx), its `empty` barrier when
//    every warp's products that read it have completed (arch/pipeline_sm90.cuh).
//    While the warpgroup multiplies stage s, TMA fills the other stage.
// What it leaves for the next steps: the same threads copy and multiply (the
// copy of k-step kt + 1 waits for k-step kt - 1's products), each k-step's
// products complete before the next is issued, and one warpgroup holds only 64
// rows (step 12: warp specialization and two consumer warpgroups).
// The learning steps 11-13 take the row-major product only: A k-contiguous, B
// n-contiguous (read with wgmma's transpose bit), 16-bit T. Step 14 runs every
// layout and type.
// H200, bench_matmul 2026-12-02 (one run; rows timed separately, ratio to cuBLAS of the same type):
// fp16 4096^3 501 TFLOP/s (0.65), 8192^3 400 (0.58); step 10 (mma.sync) 251 (0.32) and 259 (0.38).
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../arch/guards.cuh"
#include "../arch/pipeline_sm90.cuh"
#include "../arch/smem.cuh"
#include "../arch/tma_sm90.cuh"
#include "../arch/warpgroup_sm90.cuh"
#include "../arch/wgmma_sm90.cuh"
#include "../common/kernel.cuh"
#include "kernelforge/epilogue.cuh"
#include "wgmma/config.cuh"
#include "wgmma/element.cuh"
#include "wgmma/epilogue.cuh"

namespace kf::detail {
namespace wgmma_tma {

inline constexpr int block_m = wgmma::wgmma_m;  // 64: one warpgroup's product
inline constexpr int block_n = 256;             // m64n256: the widest product
inline constexpr int stages = 2;
inline constexpr int accumulators = block_m * block_n / warpgroup_threads;  // 128 per thread
inline constexpr int a_tile_bytes = block_m * wgmma::swizzle_row_bytes;     // 8 KiB
inline constexpr int b_box_cols = 64;                                       // n of one N-major box
inline constexpr int b_box_bytes = 64 * wgmma::swizzle_row_bytes;           // 64 k rows x 128 bytes
inline constexpr int b_tile_bytes = block_n / b_box_cols * b_box_bytes;     // 32 KiB
inline constexpr int stage_bytes = a_tile_bytes + b_tile_bytes;             // the expect-tx count
inline constexpr int smem_bytes = wgmma::swizzle_atom_bytes + stages * stage_bytes + stage_ring_barrier_bytes(stages);

}  // namespace wgmma_tma

/// C = alpha A B + beta C for one 64 x 256 tile per CTA (tile blockIdx.x:
/// row-major over the tiles, p.cluster_tiles_n of them a row). map_a: A as
/// m x k, boxes of 64 rows x 64 k. map_b: B as k x n (n-contiguous), boxes of
/// 64 k rows x 64 n.
template <class T>
KF_KERNEL void __launch_bounds__(warpgroup_threads)
    wgmma_tma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                     const wgmma::params<T> p) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace wgmma_tma;
  using elem = wgmma::element<T>;
  constexpr int stage_k = elem::stage_k;  // 64 halves: one 128-byte swizzled row
  extern __shared__ unsigned char wgmma_tma_smem[];
  const std::uint32_t raw = smem_address(wgmma_tma_smem);
  const std::uint32_t a_smem = (raw + wgmma::swizzle_atom_bytes - 1) & ~std::uint32_t(wgmma::swizzle_atom_bytes - 1);
  const std::uint32_t b_smem = a_smem + stages * a_tile_bytes;
  const stage_ring<stages> ring(b_smem + stages * b_tile_bytes);
  const int lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    tma_prefetch_descriptor(&map_a);
    tma_prefetch_descriptor(&map_b);
    ring.init(warps_per_warpgroup);  // each warp releases a stage once its products have read it
    mbar_init_fence();
  }
  __syncthreads();

  const int tile = static_cast<int>(blockIdx.x);
  const int tile_m = tile / p.cluster_tiles_n, tile_n = tile % p.cluster_tiles_n;
  const int k_steps = (p.k + stage_k - 1) / stage_k;
  // Thread 0 is also the copier: k-step kt's A box and B's four N-major boxes into the stage at `at`.
  const auto load = [&](const ring_position<stages>& at, int kt) {
    const std::uint32_t full = ring.producer_acquire(at, stage_bytes);
    const int k0 = kt * stage_k;
    tma_load_2d(a_smem + at.stage * a_tile_bytes, &map_a, k0, tile_m * block_m, full);
#pragma unroll
    for (int j = 0; j < block_n / b_box_cols; ++j) {
      tma_load_2d(b_smem + at.stage * b_tile_bytes + j * b_box_bytes, &map_b, tile_n * block_n + j * b_box_cols, k0,
                  full);
    }
  };
  ring_position<stages> at, ahead;  // the stage multiplied next, the stage copied next
  if (threadIdx.x == 0 && k_steps > 0) {
    load(ahead, 0);
    ahead.advance();
  }

  // A: k-major (its 128-byte rows are 64 k of one row of A). B: N-major, the
  // transpose bit set: boxes of 64 n, b_box_bytes apart, 8-row atoms along k.
  const std::uint64_t a_desc0 = smem_descriptor_sw128(a_smem);
  const std::uint64_t b_desc0 = smem_descriptor_sw128(b_smem, b_box_bytes, wgmma::swizzle_atom_bytes);
  float d[accumulators];
#pragma unroll
  for (int i = 0; i < accumulators; ++i) d[i] = 0.0f;
  fence_operands(d);
  for (int kt = 0; kt < k_steps; ++kt) {
    if (threadIdx.x == 0 && kt + 1 < k_steps) {  // the next k-step's copy, while this one multiplies
      load(ahead, kt + 1);
      ahead.advance();
    }
    ring.consumer_wait(at);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < stage_k / elem::wgmma_k; ++kk) {
      // A: 32 bytes further along its swizzled rows; B: 16 rows of 128 bytes further.
      const std::uint64_t a =
          smem_descriptor_advance(a_desc0, at.stage * a_tile_bytes + kk * elem::wgmma_k * elem::bytes);
      const std::uint64_t b =
          smem_descriptor_advance(b_desc0, at.stage * b_tile_bytes + kk * elem::wgmma_k * wgmma::swizzle_row_bytes);
      elem::template mma<1>(d, a, b);
    }
    wgmma_commit();
    wgmma_wait<0>();  // this k-step's products have read the stage
    if (lane == 0) ring.release(at.stage);
    at.advance();
  }
  fence_operands(d);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const long long row0 = static_cast<long long>(tile_m) * block_m + warp * 16 + lane / 4;
  const long long col0 = static_cast<long long>(tile_n) * block_n + 2 * (lane % 4);
  wgmma::store_tile<T>(d, p, row0, col0, epilogue::identity{});
#endif
}

}  // namespace kf::detail
