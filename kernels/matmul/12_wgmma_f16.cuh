// SPDX-License-Identifier: Apache-2.0
// Step 12 -- wgmma_f16, device code: the Hopper wgmma kernel for __half and
// __nv_bfloat16 (fp32 accumulation). Compiled for sm_90a only
// (tensor_core_sources.cmake); host side wgmma_f16.cu, host interface
// wgmma_f16_launch.cuh.
//
// What changes from tensor_core_f16 (mma.sync, step 11), and why it is faster:
// the machinery of step 10 (10_wgmma_tf32.cuh), applied to 16-bit operands.
//  * wgmma.m64n256k16 reads both operands from shared memory through matrix
//    descriptors: one instruction per warpgroup does 64 x 256 x 16, with no
//    ldmatrix and no fragment registers; mma.sync on Hopper reaches only a
//    fraction of the tensor cores' rate.
//  * TMA loads (one thread, 128-byte swizzle, zero fill outside the matrix):
//    a stage is A 128 x 64 and B 256 x 64 elements (64 halves = 128 bytes = one
//    swizzled row), 48 KiB, the same bytes as step 10's 32-float stage.
//  * Warp specialization: warpgroup 0 produces (setmaxnreg.dec to 40), warpgroups
//    1 and 2 consume 64 x 256 each (setmaxnreg.inc to 232: 128 fp32 accumulators).
//    4 stages, each with a "full" and an "empty" mbarrier.
//  * Clusters of 2 CTAs (adjacent m-tiles, the same n-tile) with TMA multicast of
//    B: each CTA loads half of the shared B tile.
//  * Epilogue: alpha * acc + beta * C in fp32, rounded once to T, two adjacent
//    columns per 32-bit store when C allows; C not read when beta == 0.
//  * B read in place when it is n-contiguous (the row-major product): wgmma's
//    transpose bit for 16-bit B (imm-trans-b = 1) takes an N-major tile, loaded
//    by TMA as 64 n (128 bytes) x 64 k boxes, four per stage. TF32 has no such
//    bit, so step 10 repacks B; here that pass (a read and a write of B, ~6% of
//    the time at 4096^3) is gone.
// A is read k-major (imm-trans-a = 0); an m-contiguous A, and any operand whose
// rows are not 16-byte aligned, is repacked first by step 10's
// pack_k_major_kernel (instantiated for T).
// Not done yet: a persistent tile scheduler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda.h>  // CUtensorMap (a type only)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../arch/cluster_sm90.cuh"
#include "../arch/guards.cuh"
#include "../arch/mbarrier_sm90.cuh"
#include "../arch/smem.cuh"
#include "../arch/tma_sm90.cuh"
#include "../arch/wgmma_sm90.cuh"
#include "../common/kernel.cuh"
#include "../common/numeric.cuh"
#include "../common/raster.hpp"
#include "10_wgmma_tf32.cuh"

namespace kf::detail {
namespace wgmma_f16 {

// The CTA's shape, shared-memory plan and register split are step 10's: a stage
// holds the same bytes (128-byte swizzled rows), only the elements per row and
// the product's k change.
using wgmma_tf32::a_tile_bytes;
using wgmma_tf32::accumulators;
using wgmma_tf32::b_tile_bytes;
using wgmma_tf32::barrier_bytes;
using wgmma_tf32::block_m;
using wgmma_tf32::block_n;
using wgmma_tf32::box_bytes;
using wgmma_tf32::box_rows;
using wgmma_tf32::consumer_registers;
using wgmma_tf32::consumer_warpgroups;
using wgmma_tf32::max_cluster;
using wgmma_tf32::max_extent;
using wgmma_tf32::producer_registers;
using wgmma_tf32::raster_group;
using wgmma_tf32::smem_bytes;
using wgmma_tf32::stage_bytes;
using wgmma_tf32::stages;
using wgmma_tf32::swizzle_atom_bytes;
using wgmma_tf32::swizzle_row_bytes;
using wgmma_tf32::threads;
using wgmma_tf32::warpgroup_threads;
using wgmma_tf32::warps_per_warpgroup;
using wgmma_tf32::wgmma_m;
using wgmma_tf32::wgmma_n;

inline constexpr int element_bytes = 2;
inline constexpr int block_k = swizzle_row_bytes / element_bytes;  ///< 64 elements: one 128-byte swizzled row
inline constexpr int wgmma_k = 16;                                 ///< wgmma.m64n256k16 (f16 / bf16)
static_assert(block_k * element_bytes == swizzle_row_bytes, "a tile row is one swizzled row");

// N-major B (n contiguous): a stage's B tile is block_n / 64 boxes of 64 k-rows x
// 64 n (128 bytes, one swizzled row), each 8 KiB; the descriptor's leading byte
// offset steps from one 64-column block to the next, its stride byte offset from
// one 8-row atom along k to the next.
inline constexpr int n_major_box_cols = swizzle_row_bytes / element_bytes;  // 64
inline constexpr int n_major_box_bytes = block_k * swizzle_row_bytes;       // 8 KiB
inline constexpr int n_major_boxes = block_n / n_major_box_cols;            // 4
static_assert(n_major_boxes * n_major_box_bytes == b_tile_bytes, "B: the same bytes per stage either way");
static_assert(n_major_boxes % max_cluster == 0, "B: each CTA of a cluster loads whole boxes");

template <class T>
struct epilogue_params {
  T* C = nullptr;
  long long ldc = 0;
  int m = 0, n = 0, k = 0;
  float alpha = 0, beta = 0;
  int cluster_rows = 0;  ///< tile rows / cluster size, rounded up
  int tiles_n = 0;
  bool pairs = false;  ///< C rows allow 4-byte stores of two elements (C 4-byte aligned, ldc even)
};

/// Two adjacent elements of C as one 32-bit word.
template <class T>
using pair_t = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;

#if KF_ARCH_SM90A
/// One consumer warpgroup's 64 x 256 accumulator tile -> C (the accumulator
/// layout of step 10's store_tile: accumulators 4c + 2h + e lie at row
/// row0 + 8h, column col0 + 8c + e).
template <class T>
__device__ __forceinline__ void store_tile(const float (&d)[accumulators], const epilogue_params<T>& ep, long long row0,
                                           long long col0) {
  const bool read_c = ep.beta != 0.0f;  // beta == 0: C is not read (NaN in C must not leak)
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const long long row = row0 + 8 * h;
    if (row >= ep.m) continue;
    T* const c_row = ep.C + row * ep.ldc;
#pragma unroll
    for (int c = 0; c < accumulators / 4; ++c) {
      const long long col = col0 + 8 * c;
      float v0 = ep.alpha * d[4 * c + 2 * h];
      float v1 = ep.alpha * d[4 * c + 2 * h + 1];
      if (ep.pairs && col + 1 < ep.n) {
        auto* const p = reinterpret_cast<pair_t<T>*>(c_row + col);
        if (read_c) {
          const pair_t<T> old = *p;
          v0 = fmaf(ep.beta, to_compute(old.x), v0);
          v1 = fmaf(ep.beta, to_compute(old.y), v1);
        }
        pair_t<T> out;
        out.x = from_compute<T>(v0);
        out.y = from_compute<T>(v1);
        *p = out;
      } else {
        if (col < ep.n) c_row[col] = from_compute<T>(read_c ? fmaf(ep.beta, to_compute(c_row[col]), v0) : v0);
        if (col + 1 < ep.n) {
          c_row[col + 1] = from_compute<T>(read_c ? fmaf(ep.beta, to_compute(c_row[col + 1]), v1) : v1);
        }
      }
    }
  }
}
#endif  // KF_ARCH_SM90A

}  // namespace wgmma_f16

/// One CTA: a 128 x 256 tile of C. map_a: A as m x k, k-contiguous, boxes of
/// 128 rows x 64 elements; map_b: op(B)^T as n x k, k-contiguous, boxes of 128
/// rows x 64 elements (BNMajor false) or op(B) as k x n, n-contiguous, boxes of
/// 64 k-rows x 64 elements (BNMajor true).
template <class T, int Cluster, bool BNMajor>
KF_KERNEL void __launch_bounds__(wgmma_f16::threads, 1)
    wgmma_f16_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                     const wgmma_f16::epilogue_params<T> ep) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace wgmma_f16;
  static_assert(Cluster == 1 || Cluster == max_cluster, "clusters of 1 or 2 CTAs");
  extern __shared__ unsigned char wgmma_f16_smem[];
  const std::uint32_t raw = smem_address(wgmma_f16_smem);
  const std::uint32_t base = (raw + swizzle_atom_bytes - 1) & ~std::uint32_t(swizzle_atom_bytes - 1);
  const std::uint32_t a_smem = base;                                  // stages x A tile
  const std::uint32_t b_smem = base + stages * a_tile_bytes;          // stages x B tile
  const std::uint32_t full_bar = base + stages * stage_bytes;         // stages x mbarrier
  const std::uint32_t empty_bar = full_bar + stages * barrier_bytes;  // stages x mbarrier

  const int warpgroup = threadIdx.x / warpgroup_threads;
  const int tid_in_warpgroup = threadIdx.x % warpgroup_threads;
  const std::uint32_t rank = Cluster > 1 ? cluster_rank() : 0;

  // Grouped rasterization over clusters; the CTAs of a cluster take adjacent m-tiles.
  const tile_coord cluster_tile = grouped_tile(blockIdx.x / Cluster, ep.cluster_rows, ep.tiles_n, raster_group);
  const int tile_m = static_cast<int>(cluster_tile.m) * Cluster + static_cast<int>(rank);
  const int tile_n = static_cast<int>(cluster_tile.n);

  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < stages; ++s) {
      mbar_init(full_bar + s * barrier_bytes, 1);  // the producer's arrive.expect_tx
      // Every consumer warp of every CTA whose products read this stage (B is shared).
      mbar_init(empty_bar + s * barrier_bytes, consumer_warpgroups * warps_per_warpgroup * Cluster);
    }
    mbar_init_fence();
  }
  // Every CTA's barriers exist before any TMA or remote arrive touches them.
  if constexpr (Cluster > 1) {
    cluster_sync();
  } else {
    __syncthreads();
  }

  const int k_tiles = (ep.k + block_k - 1) / block_k;

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<producer_registers>();
    if (tid_in_warpgroup == 0) {
      int stage = 0;
      std::uint32_t phase = 0;
      for (int kt = 0; kt < k_tiles; ++kt) {
        // Round r of a stage waits for the consumers' release of round r - 1.
        if (kt >= stages) mbar_wait(empty_bar + stage * barrier_bytes, phase ^ 1);
        const std::uint32_t full = full_bar + stage * barrier_bytes;
        mbar_arrive_expect_tx(full, stage_bytes);  // A + all of B, wherever B's halves come from
        const int k0 = kt * block_k;
        tma_load_2d(a_smem + stage * a_tile_bytes, &map_a, k0, tile_m * block_m, full);
        const std::uint32_t b_stage = b_smem + stage * b_tile_bytes;
        if constexpr (BNMajor) {
          // Box j (columns 64j .. 64j + 63 of the tile) at b_stage + j * 8 KiB; in a
          // cluster each CTA loads its share of the boxes for both CTAs.
          constexpr int boxes_per_cta = n_major_boxes / Cluster;
#pragma unroll
          for (int i = 0; i < boxes_per_cta; ++i) {
            const int j = static_cast<int>(rank) * boxes_per_cta + i;
            const int col = tile_n * block_n + j * n_major_box_cols;
            if constexpr (Cluster == 1) {
              tma_load_2d(b_stage + j * n_major_box_bytes, &map_b, col, k0, full);
            } else {
              constexpr std::uint16_t whole_cluster = (1u << Cluster) - 1;
              tma_load_2d_multicast(b_stage + j * n_major_box_bytes, &map_b, col, k0, full, whole_cluster);
            }
          }
        } else if constexpr (Cluster == 1) {
          tma_load_2d(b_stage, &map_b, k0, tile_n * block_n, full);
          tma_load_2d(b_stage + box_bytes, &map_b, k0, tile_n * block_n + box_rows, full);
        } else {
          constexpr std::uint16_t whole_cluster = (1u << Cluster) - 1;
          tma_load_2d_multicast(b_stage + rank * box_bytes, &map_b, k0, tile_n * block_n + rank * box_rows, full,
                                whole_cluster);
        }
        if (++stage == stages) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
  } else {
    // ---------------------------------------------------------------- consumers
    setmaxnreg_inc<consumer_registers>();
    const int consumer = warpgroup - 1;
    const int lane = tid_in_warpgroup % 32;
    const int warp_in_warpgroup = tid_in_warpgroup / 32;

    float d[accumulators];
#pragma unroll
    for (int i = 0; i < accumulators; ++i) d[i] = 0.0f;
    fence_operands(d);

    int stage = 0;
    std::uint32_t phase = 0;
    int previous = -1;
    for (int kt = 0; kt < k_tiles; ++kt) {
      mbar_wait(full_bar + stage * barrier_bytes, phase);
      const std::uint32_t a_tile = a_smem + stage * a_tile_bytes + consumer * wgmma_m * swizzle_row_bytes;
      const std::uint32_t b_tile = b_smem + stage * b_tile_bytes;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < block_k / wgmma_k; ++kk) {
        // A (and k-major B): along k inside a swizzled row, 16 elements = 32 bytes
        // per product. N-major B: 16 rows of 128 bytes (two atoms) per product.
        const std::uint32_t k_bytes = kk * wgmma_k * element_bytes;
        if constexpr (BNMajor) {
          const std::uint32_t b_rows = kk * wgmma_k * swizzle_row_bytes;
          wgmma_m64n256k16<T, 1>(d, smem_descriptor_sw128(a_tile + k_bytes),
                                 smem_descriptor_sw128(b_tile + b_rows, n_major_box_bytes, swizzle_atom_bytes));
        } else {
          wgmma_m64n256k16<T, 0>(d, smem_descriptor_sw128(a_tile + k_bytes), smem_descriptor_sw128(b_tile + k_bytes));
        }
      }
      wgmma_commit();
      // Keep this stage's products in flight; the previous stage's have completed.
      wgmma_wait<1>();
      if (previous >= 0 && lane == 0) {
        const std::uint32_t empty = empty_bar + previous * barrier_bytes;
        if constexpr (Cluster == 1) {
          mbar_arrive(empty);
        } else {
#pragma unroll
          for (int cta = 0; cta < Cluster; ++cta) mbar_arrive_cluster(empty, cta);
        }
      }
      previous = stage;
      if (++stage == stages) {
        stage = 0;
        phase ^= 1;
      }
    }
    wgmma_wait<0>();
    fence_operands(d);

    const long long row0 =
        static_cast<long long>(tile_m) * block_m + consumer * wgmma_m + warp_in_warpgroup * 16 + lane / 4;
    const long long col0 = static_cast<long long>(tile_n) * block_n + 2 * (lane % 4);
    store_tile<T>(d, ep, row0, col0);
  }

  // No CTA may exit while its peer can still arrive on its barriers.
  if constexpr (Cluster > 1) cluster_sync();
#endif
}

}  // namespace kf::detail
