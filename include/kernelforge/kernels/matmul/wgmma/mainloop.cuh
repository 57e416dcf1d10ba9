// SPDX-License-Identifier: Apache-2.0
// The Hopper GEMM's main loop (14_wgmma.cuh), one k-step at a time:
//  * load_stage (the producer thread): TMA copies of A's and B's tiles for one
//    k-step into a stage of the ring, each completing the stage's full barrier.
//    In a cluster the CTAs that share an operand each load a part of it and
//    multicast it to both.
//  * mma_stage (a consumer warpgroup): its 64 rows x BlockN products over the
//    stage, issued asynchronously (wgmma) from shared-memory descriptors that
//    are advanced by constant offsets from a base computed once, so they stay
//    in uniform registers: a handful of instructions per product.
// The layouts: A k-major (TMA boxes of 128 rows, or 64 per CTA when shared);
// B k-major (two boxes of BlockN / 2 rows), or N-major for 16-bit types
// (boxes of 64 n x a stage's k, read with wgmma's transpose bit); SwapAB (TF32,
// swap_ab.cuh): A is op(B)^T from N-major boxes, loaded into registers.
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../../arch/guards.cuh"
#include "../../arch/smem.cuh"
#include "../../arch/tma_sm90.cuh"
#include "../../arch/wgmma_sm90.cuh"
#include "config.cuh"
#include "element.cuh"
#include "swap_ab.cuh"

namespace kf::detail::wgmma {

template <class T, class Tile, int Cluster, bool BNMajor, bool MulticastA, bool ClusterSplitK, bool SwapAB>
struct mainloop {
  using elem = element<T>;
  static constexpr int block_n = Tile::block_n;
  using sharing = cluster_sharing<Cluster, MulticastA, ClusterSplitK>;
  static constexpr int b_sharers = sharing::b_sharers, a_sharers = sharing::a_sharers;
  static constexpr int stage_readers = sharing::stage_readers;
  static constexpr int stage_k = elem::stage_k;  // 32 floats, 64 halves: one swizzled row
  static constexpr int products = stage_k / elem::wgmma_k;
  // N-major B: block_n / box_cols boxes of stage_k rows x box_cols (one swizzled row) per stage.
  static constexpr int box_cols = stage_k;
  static constexpr int n_major_box_bytes = stage_k * swizzle_row_bytes;
  static constexpr int n_major_boxes = block_n / box_cols;
  // In a cluster sharing B each CTA loads boxes_per_cta of them for both; a 64-wide
  // 16-bit tile has a single box (64 halves), which the cluster's first CTA loads.
  static constexpr int boxes_per_cta = (n_major_boxes + b_sharers - 1) / b_sharers;
  static_assert(!BNMajor || (n_major_boxes * n_major_box_bytes == Tile::b_tile_bytes &&
                             (n_major_boxes % b_sharers == 0 || n_major_boxes < b_sharers)),
                "N-major B: the same bytes per stage, whole boxes per CTA");
  static_assert(!BNMajor || elem::bytes == 2,
                "N-major B: 16-bit elements (wgmma's transpose bit); TF32 swaps the product instead (SwapAB)");
  static_assert(!SwapAB || (elem::bytes == 4 && !BNMajor),
                "the swapped product: TF32, its B (op(A)) k-major, its A (op(B)^T) from registers");
  /// SwapAB: a stage's A fragments are `products` k-steps x a0..a3.
  static constexpr int frag_sets = SwapAB ? products : 1;

#if KF_ARCH_SM90A
  /// Producer: the copies of A's tile for k-step kt of block-tile row tile_m
  /// into a_stage, completing `full` (also the skinny fp32-emulation step's,
  /// whose large operand is this A: k-major, or M-major as SwapAB loads it).
  __device__ static __forceinline__ void load_a(const CUtensorMap* map_a, std::uint32_t a_stage, std::uint32_t full,
                                                int tile_m, int kt, std::uint32_t rank) {
    const int k0 = kt * stage_k;
    constexpr std::uint16_t whole_cluster = (1u << Cluster) - 1;
    if constexpr (SwapAB) {
      // A = op(B)^T, M-major: 4 boxes of 32 rows (one swizzled row) x the stage's k;
      // sharing A, each CTA loads the two of consumer warpgroup `rank` for both.
      constexpr int a_boxes = block_m / swap_box_rows;
      constexpr int a_boxes_per_cta = a_boxes / a_sharers;
#pragma unroll
      for (int i = 0; i < a_boxes_per_cta; ++i) {
        const int j = (MulticastA ? static_cast<int>(rank) * a_boxes_per_cta : 0) + i;
        const std::uint32_t dst = a_stage + j * swap_box_bytes;
        const int col = tile_m * block_m + j * swap_box_rows;
        if constexpr (MulticastA) {
          tma_load_2d_multicast(dst, map_a, col, k0, full, whole_cluster);
        } else {
          tma_load_2d(dst, map_a, col, k0, full);
        }
      }
    } else if constexpr (MulticastA) {
      // This CTA's 64 rows of A (those of consumer warpgroup `rank`) for both CTAs.
      tma_load_2d_multicast(a_stage + rank * multicast_a_box_bytes, map_a, k0,
                            tile_m * block_m + static_cast<int>(rank) * multicast_a_box_rows, full, whole_cluster);
    } else {
      tma_load_2d(a_stage, map_a, k0, tile_m * block_m, full);
    }
  }

  /// Producer: the copies of k-step kt of block tile (tile_m, tile_n) into
  /// `stage` (a_stage, b_stage: its A and B tiles), completing `full`.
  __device__ static __forceinline__ void load_stage(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                                    std::uint32_t a_stage, std::uint32_t b_stage, std::uint32_t full,
                                                    int tile_m, int tile_n, int kt, std::uint32_t rank) {
    const int k0 = kt * stage_k;
    constexpr std::uint16_t whole_cluster = (1u << Cluster) - 1;
    load_a(map_a, a_stage, full, tile_m, kt, rank);
    if constexpr (BNMajor) {
      // Box j (columns box_cols * j ...) at b_stage + j * n_major_box_bytes; in a
      // cluster sharing B each CTA loads its share of the boxes for both CTAs
      // (sharing A, each loads all of its own).
      const int b_rank = b_sharers == 1 ? 0 : static_cast<int>(rank);
#pragma unroll
      for (int i = 0; i < boxes_per_cta; ++i) {
        const int j = b_rank * boxes_per_cta + i;
        if (j >= n_major_boxes) break;  // a single box: the cluster's first CTA loads it
        const int col = tile_n * block_n + j * box_cols;
        if constexpr (b_sharers == 1) {
          tma_load_2d(b_stage + j * n_major_box_bytes, map_b, col, k0, full);
        } else {
          tma_load_2d_multicast(b_stage + j * n_major_box_bytes, map_b, col, k0, full, whole_cluster);
        }
      }
    } else if constexpr (b_sharers == 1) {
      tma_load_2d(b_stage, map_b, k0, tile_n * block_n, full);
      tma_load_2d(b_stage + Tile::b_box_bytes, map_b, k0, tile_n * block_n + Tile::b_box_rows, full);
    } else {
      tma_load_2d_multicast(b_stage + rank * Tile::b_box_bytes, map_b, k0, tile_n * block_n + rank * Tile::b_box_rows,
                            full, whole_cluster);
    }
  }

  /// Consumer (one thread a warp): hands stage s back to the producer(s) once
  /// this warp's products over it have completed; in a cluster sharing an
  /// operand, to every CTA whose copies fill part of it.
  template <class Ring>
  __device__ static __forceinline__ void release(const Ring& ring, int s) {
    if constexpr (stage_readers == 1) {
      ring.release(s);
    } else {
      ring.template release_cluster<Cluster>(s);
    }
  }

  /// A consumer warpgroup's view of the stages: the stage-0 descriptors of its
  /// A rows and of B (a stage's and a product's are these advanced by constant
  /// byte offsets: no address arithmetic per product), and with SwapAB its
  /// thread's A-fragment offsets in a stage (a0..a3 of the first k-step).
  struct operands {
    std::uint64_t a_desc0, b_desc0;
    std::uint32_t a_fragment[4];
  };

  /// consumer: 0 or 1; warp, lane: within the warpgroup. N-major B: boxes of
  /// n_major_box_bytes along n, 8-row atoms along k.
  __device__ static __forceinline__ operands consumer_operands(std::uint32_t a_smem, std::uint32_t b_smem, int consumer,
                                                               int warp, int lane) {
    operands o{};
    if constexpr (SwapAB) {
      // Pinned (smem.cuh): left to itself, ptxas recomputed the four offsets from the thread index in
      // every stage, about 40 instructions between the wait for the last products and this stage's
      // fragment loads (the TF32 swapped product's k-loop held 98-105 instructions; pinned, 52-64).
#pragma unroll
      for (int r = 0; r < 4; ++r)
        o.a_fragment[r] = pinned(static_cast<std::uint32_t>(swap_fragment_offset(consumer, warp, lane, r)));
    }
    o.a_desc0 = smem_descriptor_sw128(a_smem + consumer * wgmma_m * swizzle_row_bytes);
    o.b_desc0 =
        BNMajor ? smem_descriptor_sw128(b_smem, n_major_box_bytes, swizzle_atom_bytes) : smem_descriptor_sw128(b_smem);
    return o;
  }

  /// Consumer: issues the warpgroup's products over `stage` and commits them
  /// (still in flight on return). Fresh: the first product starts a new sum
  /// (d's values are not read: FP8's partial sums, scaled/03_wgmma.cuh). SwapAB loads the stage's A fragments first:
  /// the caller has waited for every earlier product (wgmma_wait<0>), since
  /// ptxas serializes the products of a loop that rewrites fragment registers
  /// while any product may still read them.
  template <bool Fresh = false>
  __device__ static __forceinline__ void mma_stage(float (&d)[Tile::accumulators], const operands& o,
                                                   std::uint32_t a_smem, int stage) {
    const std::uint64_t b_desc = smem_descriptor_advance(o.b_desc0, stage * Tile::b_tile_bytes);
    std::uint32_t frag[frag_sets][4];
    if constexpr (SwapAB) {
      const std::uint32_t a_stage = a_smem + stage * a_tile_bytes;
#pragma unroll
      for (int kk = 0; kk < frag_sets; ++kk) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          frag[kk][r] = load_shared_b32(a_stage + o.a_fragment[r] + kk * elem::wgmma_k * swizzle_row_bytes);
        }
      }
    }
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < products; ++kk) {
      // A (and k-major B): along k inside a swizzled row. N-major B: wgmma_k rows of 128 bytes per product.
      const std::uint64_t a =
          smem_descriptor_advance(o.a_desc0, stage * a_tile_bytes + kk * elem::wgmma_k * elem::bytes);
      const std::uint64_t b = smem_descriptor_advance(
          b_desc, BNMajor ? kk * elem::wgmma_k * swizzle_row_bytes : kk * elem::wgmma_k * elem::bytes);
      if constexpr (SwapAB) {
        wgmma_m64nNk8_tf32_rs<block_n>(d, frag[kk], b);
      } else if constexpr (Fresh) {
        elem::template mma<0>(d, a, b, kk == 0 ? 0u : 1u);
      } else {
        elem::template mma<BNMajor ? 1 : 0>(d, a, b);
      }
    }
    wgmma_commit();
  }
#endif  // KF_ARCH_SM90A
};

}  // namespace kf::detail::wgmma
