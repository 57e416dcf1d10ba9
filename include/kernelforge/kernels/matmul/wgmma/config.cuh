// SPDX-License-Identifier: Apache-2.0
// The Hopper GEMM's shape (14_wgmma.cuh): the warpgroup roles, the block tile
// and its stages, the 128-byte swizzle every shared tile is stored in, the
// shared-memory layout, and the parameters the kernel receives. Host and device
// code read it (the launcher sizes TMA boxes and shared memory from it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "../../arch/pipeline_sm90.cuh"
#include "../../arch/warpgroup_sm90.cuh"
#include "../../common/alignment.hpp"
#include "../gemm_args.cuh"

namespace kf::detail::wgmma {

// ---- roles and the block tile ------------------------------------------------
inline constexpr int consumer_warpgroups = 2;
inline constexpr int threads = (1 + consumer_warpgroups) * warpgroup_threads;  // producer + consumers
inline constexpr int wgmma_m = 64;                                             ///< wgmma.m64nNkK
inline constexpr int block_m = consumer_warpgroups * wgmma_m;                  // 128
inline constexpr int max_cluster = 2;
/// The widest block tile (tile_config<256>); the host bounds its extents by it.
inline constexpr int max_block_n = 256;
/// Registers per thread after setmaxnreg: 128 x 40 + 256 x 232 <= 64K per SM.
inline constexpr int producer_registers = 40;
inline constexpr int consumer_registers = 232;

// ---- the 128-byte swizzle -------------------------------------------------------
/// A stage's k is one 128-byte row: 32 floats or 64 halves.
inline constexpr int swizzle_row_bytes = 128;
inline constexpr int swizzle_atom_bytes = 8 * swizzle_row_bytes;  // 1024: the XOR pattern's period
/// Where byte `byte` (0-127) of row r of a tile in the 128-byte swizzle lies
/// (the tile 1024-aligned): 16-byte slot (byte / 16) ^ (r % 8) of the row, as
/// TMA writes a box and reads a C buffer. The CPU tests StagedEpilogueMapping
/// and SwapFragmentMapping check the stores and loads built on it.
__host__ __device__ constexpr int swizzle_offset(int r, int byte) {
  return r * swizzle_row_bytes + (((byte / 16) ^ (r % 8)) * 16) + byte % 16;
}

// ---- A's stage -------------------------------------------------------------------
inline constexpr int box_rows = 128;                              // A's TMA box: 128 rows x one swizzled row
inline constexpr int a_tile_bytes = block_m * swizzle_row_bytes;  // 16 KiB
static_assert(block_m == box_rows, "A: one TMA box per stage");
/// A shared by a cluster (MulticastA): each CTA loads, for both, one box of
/// block_m / max_cluster rows -- the 64 rows one consumer warpgroup reads.
inline constexpr int multicast_a_box_rows = block_m / max_cluster;
inline constexpr int multicast_a_box_bytes = multicast_a_box_rows * swizzle_row_bytes;  // 8 KiB
/// A's TMA box rows (the host encodes map_a with them): half the tile where the cluster shares A.
__host__ __device__ constexpr int a_box_rows(bool multicast_a) { return multicast_a ? multicast_a_box_rows : box_rows; }
static_assert(multicast_a_box_rows == wgmma_m && multicast_a_box_bytes % swizzle_atom_bytes == 0,
              "a shared A box is one consumer warpgroup's 64 rows and starts on a swizzle atom");
static_assert(a_tile_bytes % swizzle_atom_bytes == 0, "every tile must start on a swizzle atom");

// ---- the staged epilogue's C buffers (epilogue.cuh) --------------------------------
/// Each consumer warpgroup owns two buffers of 64 rows x one swizzled row of C,
/// written in turn: while TMA stores one, the warpgroup fills the other.
inline constexpr int c_buffers = 2;
inline constexpr int c_buffer_bytes = wgmma_m * swizzle_row_bytes;                     // 8 KiB
inline constexpr int c_smem_bytes = consumer_warpgroups * c_buffers * c_buffer_bytes;  // 32 KiB
inline constexpr int c_box_rows = wgmma_m;                                             ///< C's TMA box: 64 rows
/// Where the consumers issue their products in turn (warpgroup_turns: step 15's
/// fp32 emulation, the FP8 kernel), they take turns at named barriers
/// turn_barrier and turn_barrier + 1, after the staged epilogue's (1 + consumer).
inline constexpr int turn_barrier = 1 + consumer_warpgroups;
/// Consumer warpgroup c's named barrier for a split tile's arrival (the FP8
/// kernel's last round, common/last_round_sum.cuh): split_barrier + c.
inline constexpr int split_barrier = turn_barrier + consumer_warpgroups;
static_assert(c_buffer_bytes % swizzle_atom_bytes == 0, "every C buffer must start on a swizzle atom");
/// The XOR a staged store applies to a thread's base offset for column group
/// pair p (16-bit: stmatrix.x4 of groups 2p, 2p + 1) or group g (float): two 16-byte slots.
inline constexpr int staged_group_xor = 32;
/// float: the offset of a thread's h = 1 pair (8 rows further).
inline constexpr int staged_half_rows_bytes = 8 * swizzle_row_bytes;
/// Thread (warp, lane) of a consumer warpgroup: its base offset in a C buffer.
/// 16-bit (stmatrix): lane t gives row t % 8 of matrix t / 8 = (group 2p + t /
/// 16, h = (t / 8) % 2): row 16 warp + t % 16, group t / 16 (p = 0). float: its
/// pair of row 16 warp + lane / 4 (h = 0), columns 2 (lane % 4), + 1 of group 0.
__host__ __device__ constexpr int staged_lane_offset(int warp, int lane, int element_bytes) {
  return element_bytes == 2 ? swizzle_offset(16 * warp + lane % 16, 16 * (lane / 16))
                            : swizzle_offset(16 * warp + lane / 4, 8 * (lane % 4));
}

/// Shared memory a block may opt in to on sm_90 (227 KiB).
inline constexpr int max_smem_bytes = 227 * 1024;

/// What the block tile's width BlockN (256, 128, 64) sets: each consumer
/// warpgroup runs wgmma m64nBlockN (BlockN / 2 accumulators per thread), B's
/// stage is BlockN rows of one swizzled row of k, and the stages that fit
/// (policy.hpp: choose_wgmma_block_n picks the width). ClusterSplitK (128 x 128
/// only): each CTA receives one consumer warpgroup's partial tile from its
/// peer (64 x BlockN fp32, 32 KiB) into a dedicated buffer, which costs a stage.
/// BParts: the parts of B a stage holds side by side -- 1, or 2 for the skinny
/// fp32-emulation step (17_wgmma_fp32_emulated_skinny.cuh), whose stage holds a
/// k-block's hi and lo parts of its pre-split operand beside 32 of k of the other.
/// CBuffers: the staged epilogue's C buffers per consumer warpgroup.
template <int BlockN, bool ClusterSplitK = false, int BParts = 1, int CBuffers = c_buffers>
struct tile_config {
  static_assert(BlockN == 256 || BlockN == 192 || BlockN == 128 || BlockN == 64,
                "wgmma block tiles 128 x 256, 128 x 192, 128 x 128 or 128 x 64");
  static_assert(!ClusterSplitK || BlockN == 128, "the cluster split-k mode runs 128 x 128 tiles");
  static constexpr int block_n = BlockN;
  /// The staged epilogue's C buffers per consumer warpgroup: 2 (they alternate),
  /// or as many as a tile has chunks, so that no chunk waits for an earlier
  /// store to read its buffer (the FP8 128 x 192 tile: 3, scaled/03_wgmma.cuh).
  static_assert(CBuffers >= 2, "the staged epilogue alternates at least two C buffers");
  static constexpr int c_buffers_per_consumer = CBuffers;
  static constexpr int c_bytes = consumer_warpgroups * CBuffers * c_buffer_bytes;
  static constexpr int accumulators = wgmma_m * block_n / warpgroup_threads;  // 128, 64 or 32 per thread
  /// k-major B: two TMA boxes per stage (block_n / 2 rows each); in a cluster of
  /// two each CTA fetches one and multicasts it to both.
  static constexpr int b_box_rows = block_n / max_cluster;
  static constexpr int b_box_bytes = b_box_rows * swizzle_row_bytes;
  static_assert(BParts == 1 || (BParts == 2 && !ClusterSplitK), "B in one part, or hi and lo (no cluster split-k)");
  static constexpr int b_parts = BParts;
  static constexpr int b_part_bytes = block_n * swizzle_row_bytes;  // 32, 16 or 8 KiB
  static constexpr int b_tile_bytes = b_parts * b_part_bytes;
  static constexpr int stage_bytes = a_tile_bytes + b_tile_bytes;  // 48, 32 or 24 KiB, the expect-tx count
  /// ClusterSplitK: the peer's partial accumulators of one consumer warpgroup
  /// (fp32, cluster_split_k.cuh) and its two barriers (recv_full, peer_free).
  static constexpr int receive_bytes = ClusterSplitK ? wgmma_m * block_n * 4 : 0;  // 32 KiB
  static constexpr int receive_barrier_bytes = ClusterSplitK ? 2 * 8 : 0;
  /// As many stages as fit beside the alignment slack, the C buffers, the
  /// receive buffer and the barriers: 4 x 48 KiB, 6 x 32 KiB, 8 x 24 KiB (5 x
  /// 32 KiB with ClusterSplitK) -- the same ~192
  /// KiB, deeper in k for narrower tiles.
  static constexpr int stages =
      (max_smem_bytes - swizzle_atom_bytes - c_bytes - receive_bytes - receive_barrier_bytes) /
      (stage_bytes + stage_ring_barrier_bytes(1));
  /// Tiles start 1024-aligned (the swizzle is a function of the address bits),
  /// so the dynamic allocation carries one atom of slack (smem_layout).
  static constexpr int smem_bytes = swizzle_atom_bytes + stages * stage_bytes + c_bytes + receive_bytes +
                                    stage_ring_barrier_bytes(stages) + receive_barrier_bytes;
  static_assert(b_box_bytes % swizzle_atom_bytes == 0, "every B box must start on a swizzle atom");
  static_assert(smem_bytes <= max_smem_bytes, "the stages must fit the shared-memory opt-in");
  static_assert(stages >= 4, "a k pipeline at least 4 stages deep");
};
static_assert(tile_config<256>::stages == 4 && tile_config<128>::stages == 6 && tile_config<64>::stages == 8 &&
                  tile_config<128, true>::stages == 5 && tile_config<64, false, 2>::stages == 6,
              "4, 6 and 8 stages (5 for the cluster split-k, 6 for 64-wide hi and lo), as "
              "benchmarks/tuning/matmul.md#tile_config states");

/// The shared-memory carve of one CTA (base: the allocation rounded up to a
/// swizzle atom): stages x A, stages x B, the C buffers, the receive buffer
/// (ClusterSplitK), the stage ring's barriers, then recv_full and peer_free.
template <class Tile>
struct smem_layout {
  std::uint32_t a, b, c, receive, ring, recv_full, peer_free;
  __host__ __device__ constexpr explicit smem_layout(std::uint32_t base)
      : a(base),
        b(base + Tile::stages * a_tile_bytes),
        c(base + Tile::stages * Tile::stage_bytes),
        receive(c + Tile::c_bytes),
        ring(receive + Tile::receive_bytes),
        recv_full(ring + stage_ring_barrier_bytes(Tile::stages)),
        peer_free(recv_full + 8) {}
};

/// What the CTAs of a cluster share: adjacent m-tiles share B (the default),
/// adjacent n-tiles share A (MulticastA), and CTAs splitting k of one tile
/// (ClusterSplitK) read different k-steps and share neither. stage_readers: the
/// CTAs whose consumers read each stage a CTA fills (its `empty` arrivals).
template <int Cluster, bool MulticastA, bool ClusterSplitK>
struct cluster_sharing {
  static constexpr int b_sharers = MulticastA || ClusterSplitK ? 1 : Cluster;
  static constexpr int a_sharers = MulticastA ? Cluster : 1;
  static constexpr int stage_readers = b_sharers * a_sharers;
};

/// TMA reads and writes rows in place when the base and every row start are 16-byte aligned.
inline constexpr std::size_t tma_alignment = 16;

/// Cluster rows a group of consecutive clusters covers before moving along n (L2 reuse).
inline constexpr int raster_group = 8;
/// TMA coordinates are signed 32-bit: keep the last tile's origin representable.
inline constexpr std::size_t max_extent = (std::size_t{1} << 31) - 2 * max_block_n;

/// The problem as the kernel walks it (wgmma/launch.cuh fills it); T is C's element type.
template <class T>
struct params {
  T* C = nullptr;
  long long ldc = 0;
  int m = 0, n = 0, k = 0;
  float alpha = 0, beta = 0;
  /// The grid of cluster tiles the work items walk: a cluster tile is Cluster
  /// block tiles along m (B shared) or along n (A shared), the last one ragged.
  int cluster_tiles_m = 0, cluster_tiles_n = 0;
  bool pairs = false;  ///< C rows allow one store of two adjacent elements (C so aligned, ldc even)
  /// beta == 0 and C's rows 16-byte aligned, unsplit: tiles go to C through
  /// shared memory and TMA stores (store_tile_staged, the kernel's map_c).
  bool staged = false;
  /// Split-k (split_k.cuh): `splits` slices of split_k_tiles k-steps each, the
  /// last one shorter; with more than one, each tile's fp32 sums go unscaled to
  /// partial + slice * m * n (dense m x n) for the reduction, and C is not touched.
  int splits = 1;
  int split_k_tiles = 0;
  float* partial = nullptr;
  /// The last round split over the clusters that would wait (common/last_round.hpp; the FP8 kernel
  /// only, unsplit by `splits`): split_parts = 1, every work item a whole cluster tile.
  int split_parts = 1;
  int split_from = 0;                  ///< the first split cluster tile
  int split_steps = 0;                 ///< k-steps of a part
  float* split_sums = nullptr;         ///< a slot of fp32 sums per split tile, part, CTA and consumer warpgroup
  unsigned* split_arrivals = nullptr;  ///< a counter per split tile, CTA and consumer warpgroup, zero at the launch
};

/// The parameters of a call: C, the extents and the scalars from `args`, the
/// grid of cluster tiles from the launcher; unsplit, stored from registers
/// (the launcher sets the split and the staged stores where it uses them). m
/// and n are the kernel's: the swapped product passes args.n and args.m.
template <class T>
params<T> params_of(T* C, std::size_t ldc, std::size_t m, std::size_t n, std::size_t k, float alpha, float beta,
                    std::size_t cluster_tiles_m, std::size_t cluster_tiles_n) {
  params<T> p;
  p.C = C;
  p.ldc = static_cast<long long>(ldc);
  p.m = static_cast<int>(m);
  p.n = static_cast<int>(n);
  p.k = static_cast<int>(k);
  p.alpha = alpha;
  p.beta = beta;
  p.cluster_tiles_m = static_cast<int>(cluster_tiles_m);
  p.cluster_tiles_n = static_cast<int>(cluster_tiles_n);
  p.pairs = rows_aligned(C, ldc, sizeof(T), 2 * sizeof(T));
  return p;
}
template <class T>
params<T> params_of(const gemm_args<T>& args, std::size_t m, std::size_t n, std::size_t cluster_tiles_m,
                    std::size_t cluster_tiles_n) {
  return params_of(args.C, args.ldc, m, n, args.k, args.alpha, args.beta, cluster_tiles_m, cluster_tiles_n);
}

}  // namespace kf::detail::wgmma
