// SPDX-License-Identifier: Apache-2.0
// Step 10 -- wgmma_tf32, device code: the Hopper wgmma TF32 kernel (the repacking
// pass that feeds it: pack_k_major.cuh). Compiled for sm_90a only (tensor_core_sources.cmake); the host
// side is wgmma_tf32.cu, the host interface wgmma_tf32_launch.cuh.
//
//
// What changes from tensor_core_tf32 (mma.sync), and why it is faster:
//  * mma.sync moves every operand through registers: a warp loads fragments
//    (ld.shared), converts them to TF32 and issues 16x8x8 products; on Hopper the
//    tensor cores then run at a fraction of their rate. wgmma reads both operands
//    from shared memory itself: one m64n256k8 instruction per warpgroup (4 warps)
//    does 64x256x8, with the accumulators (128 fp32 per thread) in registers.
//  * TMA (cp.async.bulk.tensor.2d) replaces 256 threads' cp.async: one thread
//    issues a 128 x 32-float box, the copy engine zero-fills what overhangs the
//    matrix (ragged m, n, k need no guards in the main loop) and stores it with the
//    128-byte swizzle that wgmma's descriptors read without bank conflicts.
//  * Warp specialization: warpgroup 0 produces (one thread issues the TMA copies,
//    setmaxnreg.dec to 40 registers), warpgroups 1 and 2 consume (setmaxnreg.inc
//    to 232: room for 128 accumulators). Stages hand over through two mbarriers
//    each: "full" (TMA bytes landed) and "empty" (every consumer warp's products
//    that read the stage have completed). 4 stages of 48 KiB are in flight.
//  * Block tile 128 x 256 x 32 (or narrower, below); with 4-byte elements a tile needs 1.5 KiB of
//    operands per k, so feeding 132 SMs at the tensor-core rate takes ~9 TB/s from
//    L2. A cluster of 2 CTAs (the same n-tile, adjacent m-tiles) loads each B tile
//    once: each CTA fetches half and TMA multicasts it to both, cutting B's L2
//    traffic in half (cluster_size 2, the default; 1 keeps single CTAs). Where
//    A's tile is the bigger one (128 x 64 tiles: 128 rows of A, 64 of B a
//    stage) the cluster's CTAs take adjacent n-tiles of the same m-tile and
//    share A instead (MulticastA: each CTA loads the 64 rows one consumer
//    warpgroup reads and multicasts them): at 1024^3, 256 KiB a CTA from L2
//    instead of 320 (tuning.hpp: wgmma_multicasts_a; measured 0.78 of cuBLAS
//    fp16 against 0.72 sharing B; a single tile row keeps single CTAs).
//  * Grouped rasterization of the clusters for L2 reuse.
//  * Few instructions between products: the descriptors are advanced by
//    constant offsets on their low word from a base computed once, and derive
//    only from warp-uniform values (the warpgroup index broadcast from lane 0),
//    so they live in uniform registers, where wgmma reads them: 53 SASS
//    instructions a k-step at 128 x 64 (fp16) instead of 89 (benchmarks/TUNING.md).
//  * Persistent: as many CTAs as the device holds at once, each looping over
//    tiles; the producer's stage ring runs on from one tile into the next, so a
//    tile's pipeline is already full when the consumers finish storing the
//    previous one (no fill, block launch or barrier setup per tile).
//  * The tile width is a template parameter (tile_config<BlockN>: 256, 128 or
//    64; m64nBlockN products, BlockN / 2 accumulators per thread). Where
//    128 x 256 tiles cannot fill the GPU the host runs 128 x 128 (6 stages of
//    32 KiB instead of 4 of 48), or where those cannot either 128 x 64 (8
//    stages of 24 KiB): 1024^3 and 128 x 8192 x 8192 run 128 tiles of
//    128 x 64 on 132 SMs, one per SM, unsplit (tuning.hpp: choose_wgmma_block_n).
//    A 64-wide 16-bit stage has one N-major B box (64 halves), loaded and
//    multicast by the first CTA of a cluster.
//  * Split-k (split_k.cuh, planned by tuning.hpp's plan_split_k) where even the
//    narrowest tiles fill less than half the GPU (e.g. 513 x 257 x 1031 TF32:
//    25 tiles of 128 x 64): work items are (tile, k-slice) pairs, each slice's fp32 sums
//    go to a pooled workspace, and the reduction applies alpha, beta and the
//    epilogue.
//    A single tile row sharing B, or a single tile column sharing A, runs
//    without clusters (the partner CTA would only idle).
//  * Cluster split-k (ClusterSplitK; tuning.hpp: wgmma_cluster_splits_k, by
//    shape where each CTA gets >= 16 k-steps, e.g. TF32 1024^3: 0.795 of
//    cuBLAS against 0.742): where 128 x 64 tiles run one per CTA (1024^3:
//    128 tiles on 132 SMs, the products bound by shared-memory reads: a
//    128 x 64 tile reads 8 KiB per k16 for 262 kFLOP, 128 x 128 12 KiB for
//    524), a cluster of 2 computes one 128 x 128 tile instead, CTA r over the
//    k-steps [r K/2, (r + 1) K/2) (no multicast: they read different k), and
//    the partial tiles meet on chip: CTA 0 finishes the tile's rows 0-63 (its
//    consumer warpgroup 0's), CTA 1 rows 64-127; the other warpgroup of each
//    CTA stores its fp32 accumulators into the peer's shared memory
//    (st.shared::cluster, 32 KiB, then a releasing remote mbarrier arrival),
//    the receiver adds them to its own and runs the normal epilogue. The
//    receive buffer is dedicated (the producer may already fill the next tile's
//    stages), so 5 stages of 32 KiB instead of 6. Against split_k.cuh: no fp32
//    workspace in HBM, no reduction kernel.
//  * The kernel is a template over the element type (wgmma_element<T>): step 12
//    runs the same pipeline on 16-bit operands.
//  * Epilogue functor (kernelforge/epilogue.cuh) applied in registers to each
//    finished value before its store; instantiated for identity and for the
//    library's fused bias / threshold ReLU (bias_relu_threshold<float>) only,
//    since this kernel lives in the library's sm_90a-only object.
//  * Staged stores (store_tile_staged) when beta == 0 and C's rows are 16-byte
//    aligned: a consumer warpgroup writes its finished values into one of two
//    dedicated 8 KiB shared buffers (64 rows x 128 bytes, 128-byte swizzle,
//    conflict-free; 16-bit values by stmatrix, four 8 x 8 matrices an
//    instruction; per-thread addresses computed once; with the identity
//    functor no bounds checks at all) and one thread stores each with TMA
//    (cp.async.bulk.tensor ... global.shared::cta, bulk groups), which clips at
//    C's edges: a few wide stores per tile instead of ~420 4-byte ones and their
//    bounds branches. Otherwise (beta != 0, ragged alignment, split-k partials)
//    each thread stores its fragment pairs from registers (store_tile).
//  * 16-bit staged tiles are stored while the next tile's products run
//    (staged_tile_16): the finished values are packed to 16 bits (64 registers
//    beside the 128 accumulators the next tile reuses) and one chunk goes out
//    after each of the next tile's k-steps is issued, instead of the tensor
//    cores idling through all of a tile's stores (ncu, fp16 4096^3 at the base
//    clock: 223.0 -> 220.3 us, cuBLAS 221.8; benchmarks/TUNING.md).
//  * B not transposed (n-contiguous, the row-major product) with 16-byte
//    aligned rows, TF32: wgmma has no transpose bit for TF32, so the kernel
//    computes the swapped product C^T = op(B)^T op(A)^T (SwapAB), whose A
//    operand, op(B)^T, the consumers load into registers from B's N-major TMA
//    boxes (wgmma's register-sourced form reads any layout the threads can
//    load), and whose B operand is op(A), k-major. Before, B was repacked in
//    HBM (a read and a write of all of B: 0.83 of cuBLAS at 4096^3) or
//    transposed in shared memory by the producer warpgroup's idle warps (a read
//    and a write of every B stage beside the products' reads: ~0.6 of cuBLAS at
//    every shape). Swapped, 4096^3 ran at 0.97 of cuBLAS (benchmarks/TUNING.md).
// Operands that wgmma cannot read as they are (TF32 wgmma needs both k-contiguous,
// apart from the swapped product above; TMA needs 16-byte aligned rows) are
// repacked first by pack_k_major_kernel (pack_k_major.cuh) into a stream-ordered
// workspace from a per-device memory pool.

#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda.h>  // CUtensorMap (a type only: the driver entry point comes through the runtime)

#include "../arch/cluster_sm90.cuh"
#include "../arch/guards.cuh"
#include "../arch/mbarrier_sm90.cuh"
#include "../arch/smem.cuh"
#include "../arch/stmatrix_sm90.cuh"
#include "../arch/tma_sm90.cuh"
#include "../arch/wgmma_sm90.cuh"
#include "../common/kernel.cuh"
#include "../common/numeric.cuh"
#include "../common/raster.hpp"
#include "kernelforge/epilogue.cuh"
#include "pack_k_major.cuh"

namespace kf::detail {
namespace wgmma_tf32 {

// ---- shape of the work ------------------------------------------------------
inline constexpr int warpgroup_threads = 128;
inline constexpr int warps_per_warpgroup = 4;
inline constexpr int consumer_warpgroups = 2;
inline constexpr int threads = (1 + consumer_warpgroups) * warpgroup_threads;  // producer + consumers
inline constexpr int wgmma_m = 64;                                             ///< wgmma.m64nNk8 (TF32), m64nNk16
inline constexpr int block_m = consumer_warpgroups * wgmma_m;                  // 128
inline constexpr int block_k = 32;  ///< 32 floats = 128 bytes: one row of the 128-byte swizzle
inline constexpr int max_cluster = 2;
/// The widest block tile (tile_config<256>); the host bounds its extents by it.
inline constexpr int max_block_n = 256;
/// Registers per thread after setmaxnreg: 128 x 40 + 256 x 232 <= 64K per SM.
inline constexpr int producer_registers = 40;
inline constexpr int consumer_registers = 232;

// ---- shared memory ----------------------------------------------------------
inline constexpr int swizzle_row_bytes = block_k * 4;             // 128
inline constexpr int swizzle_atom_bytes = 8 * swizzle_row_bytes;  // 1024: the XOR pattern's period
/// Where byte `byte` (0-127) of row r of a tile in the 128-byte swizzle lies
/// (the tile 1024-aligned): 16-byte slot (byte / 16) ^ (r % 8) of the row, as
/// TMA writes a box and reads a C buffer. Host and device (the CPU tests
/// MatmulWgmmaTf32.StagedEpilogueMapping and SwapFragmentMapping check the
/// stores and loads built on it).
__host__ __device__ constexpr int swizzle_offset(int r, int byte) {
  return r * swizzle_row_bytes + (((byte / 16) ^ (r % 8)) * 16) + byte % 16;
}
inline constexpr int box_rows = 128;                              // A's TMA box: 128 rows x 32 floats
inline constexpr int a_tile_bytes = block_m * swizzle_row_bytes;  // 16 KiB
inline constexpr int barrier_bytes = 8;
inline constexpr int barriers_per_stage = 2;  ///< full, empty
/// Shared memory a block may opt in to on sm_90 (227 KiB).
inline constexpr int max_smem_bytes = 227 * 1024;
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
/// The staged epilogue (store_tile_staged): each consumer warpgroup owns two C
/// buffers of 64 rows x one 128-byte swizzled row (64 halves or 32 floats of C),
/// written in turn: while TMA stores one, the warpgroup fills the other. A
/// dedicated 32 KiB rather than a stage buffer (the producer is already filling
/// the next tile's stages) or fewer stages (the k pipeline keeps its depth).
inline constexpr int c_buffers = 2;
inline constexpr int c_buffer_bytes = wgmma_m * swizzle_row_bytes;                     // 8 KiB
inline constexpr int c_smem_bytes = consumer_warpgroups * c_buffers * c_buffer_bytes;  // 32 KiB
inline constexpr int c_box_rows = wgmma_m;                                             ///< C's TMA box: 64 rows
static_assert(c_buffer_bytes % swizzle_atom_bytes == 0, "every C buffer must start on a swizzle atom");
/// The XOR store_tile_staged applies to a thread's base offset for column
/// group pair p (16-bit: stmatrix.x4 of groups 2p, 2p + 1) or group g (float):
/// two 16-byte slots.
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

/// What the block tile's width BlockN (256, 128, 64) sets: each consumer
/// warpgroup runs wgmma m64nBlockN (BlockN / 2 accumulators per thread), B's
/// stage is BlockN rows of one swizzled row of k, and the stages that fit. The
/// host picks the width per product (tuning.hpp: choose_wgmma_block_n): 128 and
/// 64 put two and four times as many tiles on the GPU where 256-wide ones
/// cannot fill it. ClusterSplitK (128 x 128 tiles only): the cluster of 2 splits
/// k of one tile and each CTA receives one consumer warpgroup's partial tile
/// from its peer (64 x BlockN fp32, 32 KiB) into a dedicated buffer, which costs
/// a stage (5 instead of 6).
template <int BlockN, bool ClusterSplitK = false>
struct tile_config {
  static_assert(BlockN == 256 || BlockN == 128 || BlockN == 64, "wgmma block tiles 128 x 256, 128 x 128 or 128 x 64");
  static_assert(!ClusterSplitK || BlockN == 128, "the cluster split-k mode runs 128 x 128 tiles");
  static constexpr int block_n = BlockN;
  static constexpr int wgmma_n = BlockN;  ///< one m64nBlockN product per consumer warpgroup and k-step
  static constexpr int accumulators = wgmma_m * wgmma_n / warpgroup_threads;  // 128, 64 or 32 per thread
  /// k-major B: two TMA boxes per stage (block_n / 2 rows each); in a cluster of
  /// two each CTA fetches one and multicasts it to both.
  static constexpr int b_box_rows = block_n / max_cluster;
  static constexpr int b_box_bytes = b_box_rows * swizzle_row_bytes;
  static constexpr int b_tile_bytes = block_n * swizzle_row_bytes;  // 32, 16 or 8 KiB
  static constexpr int stage_bytes = a_tile_bytes + b_tile_bytes;   // 48, 32 or 24 KiB, the expect-tx count
  /// ClusterSplitK: the peer's partial accumulators of one consumer warpgroup
  /// (fp32, 16-byte vectors in thread order: vector i of thread t at (i * 128 +
  /// t) * 16) and two barriers: recv_full (the peer's 128 sending threads
  /// arrive) and peer_free (the peer's 128 receiving threads arrive once they
  /// have read the partial this CTA sent them).
  static constexpr int receive_bytes = ClusterSplitK ? wgmma_m * block_n * 4 : 0;  // 32 KiB
  static constexpr int receive_barrier_bytes = ClusterSplitK ? 2 * barrier_bytes : 0;
  /// As many stages as fit beside the alignment slack, the staged epilogue's C
  /// buffers, the receive buffer and the barriers: 4 x 48 KiB, 6 x 32 KiB, 8 x
  /// 24 KiB -- the same ~192 KiB, deeper in k for the narrower tiles; 5 x 32 KiB
  /// with ClusterSplitK.
  static constexpr int stages =
      (max_smem_bytes - swizzle_atom_bytes - c_smem_bytes - receive_bytes - receive_barrier_bytes) /
      (stage_bytes + barriers_per_stage * barrier_bytes);
  /// Tiles start 1024-aligned (the swizzle is a function of the address bits), so
  /// the dynamic allocation carries one atom of slack. Layout: stages x A,
  /// stages x B, the C buffers, the receive buffer (ClusterSplitK), the barriers
  /// (full and empty: two per stage; then recv_full and peer_free).
  static constexpr int smem_bytes = swizzle_atom_bytes + stages * stage_bytes + c_smem_bytes + receive_bytes +
                                    barriers_per_stage * stages * barrier_bytes + receive_barrier_bytes;
  static_assert(b_box_bytes % swizzle_atom_bytes == 0, "every B box must start on a swizzle atom");
  static_assert(smem_bytes <= max_smem_bytes, "the stages must fit the shared-memory opt-in");
  static_assert(stages >= 4, "a k pipeline at least 4 stages deep");
};
static_assert(tile_config<256>::stages == 4 && tile_config<128>::stages == 6 && tile_config<64>::stages == 8 &&
                  tile_config<128, true>::stages == 5,
              "4, 6 and 8 stages (5 for the cluster split-k), as the comments and benchmarks/TUNING.md state");

/// Cluster rows a group of consecutive clusters covers before moving along n (L2 reuse).
inline constexpr int raster_group = 8;
/// TMA coordinates are signed 32-bit: keep the last tile's origin representable.
inline constexpr std::size_t max_extent = (std::size_t{1} << 31) - 2 * max_block_n;

// ---- TF32 with n-contiguous B: the product swapped, A from registers ---------
// SwapAB: TF32 wgmma reads B k-major only; for an n-contiguous B the kernel
// computes C^T = op(B)^T op(A)^T. Its "A" is then op(B)^T (n x k), whose N-major
// TMA boxes (32 k rows x 32 n, one swizzled row each: 4 boxes of 4 KiB for the
// tile's 128 rows) the
// consumer warps read into registers, in the A-fragment layout of wgmma's
// register-sourced form (wgmma_m64nNk8_tf32_rs), which has no layout
// requirement; its "B" is op(A), k-contiguous as TMA loads it. Nothing is
// transposed in shared memory or repacked in HBM (as cuBLAS's TF32 kernel for
// this layout, sm90_xmma_gemm_..._nn_..._tilesize128x256x32: 128 rows of C^T,
// 256 of C). The accumulators hold C^T; the epilogue (store_tile_swapped,
// store_tile_staged_swapped) stores them transposed.
// A warp's 16 fragment rows are permuted within its 32-row box so that a
// fragment load is conflict-free: a0's 32 lanes read rows lane / 4 (8 rows) at k
// = lane % 4 (4 rows of the box, 128 bytes apart), and the 128-byte swizzle puts
// 16-byte slot (n / 4) ^ k; rows 0-3 -> n 0-3 and rows 4-7 -> n 16-19 take slots
// {s, s ^ 4} ^ k: 8 distinct slots over k = 0..3 (checked by the CPU test
// MatmulWgmmaTf32.SwapFragmentMapping). The epilogue undoes the permutation.
inline constexpr int swap_box_rows = 32;                            ///< n of one N-major box (one swizzled row)
inline constexpr int swap_box_bytes = block_k * swizzle_row_bytes;  // a stage's 32 k rows: 4 KiB
/// The box-local row (n) of fragment row rr (0-15) of warp `warp` (0-3) of a warpgroup.
__host__ __device__ constexpr int swap_row_in_box(int warp, int rr) {
  return 8 * (warp % 2) + rr % 4 + 16 * ((rr / 4) % 2) + 4 * (rr / 8);
}
/// The warpgroup-local row (0-63) of fragment row rr of warp `warp`: warps 0, 1 in box 0, warps 2, 3 in box 1.
__host__ __device__ constexpr int swap_row(int warp, int rr) {
  return swap_box_rows * (warp / 2) + swap_row_in_box(warp, rr);
}
/// Byte offset, in a stage's A (its 128 rows: 4 boxes), of fragment register r
/// (0-3: a0..a3) of lane `lane` of warp `warp` of consumer warpgroup `consumer`,
/// for the first k-step (k-step kk: + kk * 8 rows of 128 bytes).
__host__ __device__ constexpr int swap_fragment_offset(int consumer, int warp, int lane, int r) {
  const int n = swap_row(warp, lane / 4 + 8 * (r % 2)) + 2 * swap_box_rows * consumer;
  const int k = lane % 4 + 4 * (r / 2);
  return (n / swap_box_rows) * swap_box_bytes + swizzle_offset(k, 4 * (n % swap_box_rows));
}

/// What the kernel needs to walk its tiles and store C; T is C's element type
/// (float here, __half / __nv_bfloat16 in step 12).
template <class T>
struct epilogue_params {
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
};

}  // namespace wgmma_tf32

/// What the element type changes in the wgmma kernel: bytes per element (a
/// stage's k is one 128-byte swizzled row: 32 floats, 64 halves), the k of one
/// product, the pair type of the epilogue's two-element stores, and the product
/// itself (TransB = 1: B N-major, which only the 16-bit types allow). float
/// (TF32) here; __half and __nv_bfloat16 in 12_wgmma_f16.cuh.
template <class T>
struct wgmma_element;

template <>
struct wgmma_element<float> {
  static constexpr int bytes = 4;
  static constexpr int stage_k = wgmma_tf32::swizzle_row_bytes / bytes;  ///< 32: one swizzled row
  static constexpr int wgmma_k = 8;                                      ///< wgmma.m64nNk8 (TF32)
  using pair = float2;
#if KF_ARCH_SM90A
  /// One m64nNk8 product; N = 2 * Accumulators (the block tile's width).
  template <int TransB, int Accumulators>
  __device__ static __forceinline__ void mma(float (&d)[Accumulators], std::uint64_t a, std::uint64_t b) {
    static_assert(TransB == 0, "TF32 wgmma reads B k-major only");
    wgmma_m64nNk8_tf32<2 * Accumulators>(d, a, b);
  }
#endif
};

namespace wgmma_tf32 {
#if KF_ARCH_SM90A
/// One consumer warpgroup's 64 x N accumulator tile (N = 2 * Accumulators) -> C. Accumulator r of a
/// thread: row 16 * warp + lane / 4 + 8 * ((r % 4) / 2), column 8 * (r / 4) +
/// 2 * (lane % 4) + r % 2 -- so accumulators 2h, 2h+1 are adjacent columns.
/// The epilogue functor `fn` (kernelforge/epilogue.cuh) runs once per stored
/// value, on alpha * acc + beta * C in fp32, in registers; the result is
/// rounded once to T.
template <class T, class Epilogue, int Accumulators>
__device__ __forceinline__ void store_tile(const float (&d)[Accumulators], const epilogue_params<T>& ep, long long row0,
                                           long long col0, const Epilogue& fn) {
  using pair = typename wgmma_element<T>::pair;
  const bool read_c = ep.beta != 0.0f;  // beta == 0: C is not read (NaN in C must not leak)
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const long long row = row0 + 8 * h;
    if (row >= ep.m) continue;
    T* const c_row = ep.C + row * ep.ldc;
#pragma unroll
    for (int c = 0; c < Accumulators / 4; ++c) {
      const long long col = col0 + 8 * c;
      float v0 = ep.alpha * d[4 * c + 2 * h];
      float v1 = ep.alpha * d[4 * c + 2 * h + 1];
      if (ep.pairs && col + 1 < ep.n) {
        pair* const p = reinterpret_cast<pair*>(c_row + col);
        if (read_c) {
          const pair old = *p;
          v0 = fmaf(ep.beta, to_compute(old.x), v0);
          v1 = fmaf(ep.beta, to_compute(old.y), v1);
        }
        pair out;
        out.x = from_compute<T>(fn(v0, row, col));
        out.y = from_compute<T>(fn(v1, row, col + 1));
        *p = out;
      } else {
        if (col < ep.n) {
          c_row[col] = from_compute<T>(fn(read_c ? fmaf(ep.beta, to_compute(c_row[col]), v0) : v0, row, col));
        }
        if (col + 1 < ep.n) {
          c_row[col + 1] =
              from_compute<T>(fn(read_c ? fmaf(ep.beta, to_compute(c_row[col + 1]), v1) : v1, row, col + 1));
        }
      }
    }
  }
}

/// One consumer warpgroup's 64 x N accumulator tile -> C through shared memory,
/// for beta == 0 (C is not read) and 16-byte aligned rows of C. The tile goes in
/// chunks of one 128-byte row (64 halves or 32 floats) x 64 rows: the warpgroup
/// writes alpha * acc, through the epilogue functor, rounded once to T, into a C
/// buffer in the 128-byte swizzle, then one thread stores the chunk with TMA,
/// which skips what lies outside C (the map's extents are m x n, and the staged
/// path runs only where n is whole 16-byte units). The two buffers alternate
/// (`buffer`, kept across tiles): before a buffer is rewritten, its previous
/// store (two commits back) has finished reading it. row_base, col_base: the
/// warpgroup's first row and column of C; `barrier`: the warpgroup's named
/// barrier. `d` is scaled in place (the caller does not read it again).
/// What keeps it short (the tensor cores idle for this warpgroup meanwhile):
///  * 16-bit T: accumulators 4c + 2h, 4c + 2h + 1 are row 16 warp + lane / 4 +
///    8h, columns 8c + 2 (lane % 4), + 1 of the tile: lane `lane`'s part of
///    the m8n8 matrix (c, h) in stmatrix's fragment layout. Each pair is one
///    cvt to 16 bits, and one stmatrix.x4 writes the matrices (c, 0), (c, 1),
///    (c + 1, 0), (c + 1, 1): 4 per chunk and thread instead of 16 32-bit
///    stores. Each matrix's 8 rows land in 8 distinct 16-byte bank groups (the
///    swizzle XORs the chunk with row % 8): conflict-free. float stays on 8-byte
///    stores of the pairs (stmatrix moves 16-bit elements only).
///  * Addresses: the swizzled 16-byte slot of column group g in row r is
///    g ^ (r % 8); for a thread, r % 8 does not depend on the group, and the
///    group's bits (g = 2p + the lane's matrix column with stmatrix) enter only
///    through an XOR with 32 p (32 g for float), so a thread's offset in a
///    buffer is computed once and each store XORs a constant into it (the
///    buffers are 1024-aligned: the XOR commutes with adding the buffer).
///  * The identity functor (compile time) stores every value of the chunk
///    unchecked: TMA clips rows below C and columns past it. Any other functor
///    sees only values inside C (e.g. a bias read per column would overrun);
///    a chunk wholly inside C, the common case, is tested once for the whole
///    chunk, and only edge chunks check each value.
///  * alpha == 1 (exact: 1 * x == x) skips the 128 multiplies (a uniform branch).
/// alpha and the epilogue functor on a consumer warpgroup's finished 64 x N
/// tile, in place, before its staged stores (row_base, col_base: the
/// warpgroup's first row and column of C). alpha == 1 (exact: 1 * x == x)
/// skips the multiplies (a uniform branch); the identity functor (compile
/// time) touches nothing else, since TMA clips what lies outside C. Any other
/// functor sees only values inside C (e.g. a bias read per column would
/// overrun): a chunk wholly inside C, the common case, is tested once for the
/// whole chunk, and only edge chunks check each value.
template <class T, class Epilogue, int Accumulators>
__device__ __forceinline__ void finish_staged_values(float (&d)[Accumulators], const epilogue_params<T>& ep,
                                                     int row_base, int col_base, const Epilogue& fn) {
  constexpr int chunk_cols = swizzle_row_bytes / static_cast<int>(sizeof(T));  // 64 halves, 32 floats
  constexpr int groups_per_chunk = chunk_cols / 8;  // accumulator column groups (8 columns each) per chunk
  constexpr int chunks = 2 * Accumulators / chunk_cols;
  if (ep.alpha != 1.0f) {
#pragma unroll
    for (int i = 0; i < Accumulators; ++i) d[i] *= ep.alpha;
  }
  if constexpr (!std::is_same_v<Epilogue, epilogue::identity>) {
    const int tid = static_cast<int>(threadIdx.x % warpgroup_threads);
    const int lane = tid % 32, warp = tid / 32;
    // The functor's coordinates: the thread's rows row_in_warpgroup + 8h, columns 8g + col_in_group (+1) of a chunk.
    const int row_in_warpgroup = 16 * warp + lane / 4;
    const int col_in_group = 2 * (lane % 4);
    const int rows_in_c = ep.m - row_base;
#pragma unroll
    for (int j = 0; j < chunks; ++j) {
      const int col_chunk = col_base + j * chunk_cols;
      if (col_chunk >= ep.n) break;  // the same for the whole warpgroup, and for every later chunk
      const int cols_in_c = ep.n - col_chunk;
      const auto apply = [&](auto checked) {
#pragma unroll
        for (int g = 0; g < groups_per_chunk; ++g) {
          const int c = j * groups_per_chunk + g;  // accumulators 4c .. 4c + 3
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int r = row_in_warpgroup + 8 * h;
            const long long row = static_cast<long long>(row_base) + r;
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int col = 8 * g + col_in_group + e;
              if (!decltype(checked)::value || (r < rows_in_c && col < cols_in_c)) {
                d[4 * c + 2 * h + e] = fn(d[4 * c + 2 * h + e], row, static_cast<long long>(col_chunk) + col);
              }
            }
          }
        }
      };
      if (rows_in_c >= wgmma_m && cols_in_c >= chunk_cols) {  // uniform: the chunk lies inside C
        apply(std::false_type{});
      } else {
        apply(std::true_type{});
      }
    }
  }
}

/// One chunk of the staged epilogue (64 rows x one 128-byte swizzled row of C)
/// through C buffer `buffer` (kept across chunks and tiles; the two alternate):
/// once that buffer's previous store (two commits back) has read it, write(buf)
/// fills it, and one thread stores it with TMA at (col_chunk, row_base).
/// `barrier`: the warpgroup's named barrier.
template <class Write>
__device__ __forceinline__ void store_staged_chunk(const CUtensorMap* map_c, std::uint32_t c_smem, int col_chunk,
                                                   int row_base, int barrier, int& buffer, const Write& write) {
  const bool issuer = threadIdx.x % warpgroup_threads == 0;
  const std::uint32_t buf = c_smem + buffer * c_buffer_bytes;
  if (issuer) tma_store_wait_read<c_buffers - 1>();  // this buffer's previous store has read it
  named_barrier_sync(barrier, warpgroup_threads);
  write(buf);
  fence_proxy_async_shared();  // the writes, visible to the TMA engine
  named_barrier_sync(barrier, warpgroup_threads);
  if (issuer) {
    tma_store_2d(map_c, buf, col_chunk, row_base);
    tma_store_commit();
  }
  buffer ^= 1;
}

/// 16-bit chunk j's writes into a C buffer at `at` (the buffer plus the
/// thread's staged_lane_offset): pair(i) is accumulators i, i + 1 rounded to T
/// and packed; one stmatrix.x4 writes the m8n8 matrices (c, 0), (c, 1),
/// (c + 1, 0), (c + 1, 1) for each pair of column groups c, c + 1 of the chunk.
template <int GroupsPerChunk, class Pair>
__device__ __forceinline__ void write_chunk_16(std::uint32_t at, int j, const Pair& pair) {
#pragma unroll
  for (int p = 0; p < GroupsPerChunk / 2; ++p) {
    const int i = 4 * (j * GroupsPerChunk + 2 * p);  // 4c
    stmatrix_x4(at ^ (p * staged_group_xor), pair(i), pair(i + 2), pair(i + 4), pair(i + 6));
  }
}

/// One consumer warpgroup's 64 x N accumulator tile -> C through shared memory,
/// for beta == 0 (C is not read) and 16-byte aligned rows of C. The tile goes in
/// chunks of one 128-byte row (64 halves or 32 floats) x 64 rows: the warpgroup
/// writes alpha * acc, through the epilogue functor, rounded once to T, into a C
/// buffer in the 128-byte swizzle, then one thread stores the chunk with TMA,
/// which skips what lies outside C (the map's extents are m x n, and the staged
/// path runs only where n is whole 16-byte units). The two buffers alternate
/// (`buffer`, kept across tiles): store_staged_chunk. row_base, col_base: the
/// warpgroup's first row and column of C; `barrier`: the warpgroup's named
/// barrier. `d` is scaled in place (the caller does not read it again).
/// 16-bit tiles without the cluster split-k or the swapped product take the
/// overlapped form instead (staged_tile_16, in the kernel's main loop).
/// What keeps it short (the tensor cores idle for this warpgroup meanwhile):
///  * 16-bit T: accumulators 4c + 2h, 4c + 2h + 1 are row 16 warp + lane / 4 +
///    8h, columns 8c + 2 (lane % 4), + 1 of the tile: lane `lane`'s part of
///    the m8n8 matrix (c, h) in stmatrix's fragment layout. Each pair is one
///    cvt to 16 bits, and one stmatrix.x4 writes the matrices (c, 0), (c, 1),
///    (c + 1, 0), (c + 1, 1): 4 per chunk and thread instead of 16 32-bit
///    stores. Each matrix's 8 rows land in 8 distinct 16-byte bank groups (the
///    swizzle XORs the chunk with row % 8): conflict-free. float stays on 8-byte
///    stores of the pairs (stmatrix moves 16-bit elements only).
///  * Addresses: the swizzled 16-byte slot of column group g in row r is
///    g ^ (r % 8); for a thread, r % 8 does not depend on the group, and the
///    group's bits (g = 2p + the lane's matrix column with stmatrix) enter only
///    through an XOR with 32 p (32 g for float), so a thread's offset in a
///    buffer is computed once and each store XORs a constant into it (the
///    buffers are 1024-aligned: the XOR commutes with adding the buffer).
///  * finish_staged_values: no bounds checks with the identity functor, no
///    multiply where alpha == 1.
template <class T, class Epilogue, int Accumulators>
__device__ __forceinline__ void store_tile_staged(float (&d)[Accumulators], const epilogue_params<T>& ep,
                                                  const CUtensorMap* map_c, std::uint32_t c_smem, int row_base,
                                                  int col_base, int barrier, int& buffer, const Epilogue& fn) {
  constexpr int chunk_cols = swizzle_row_bytes / static_cast<int>(sizeof(T));  // 64 halves, 32 floats
  constexpr int groups_per_chunk = chunk_cols / 8;  // accumulator column groups (8 columns each) per chunk
  constexpr int chunks = 2 * Accumulators / chunk_cols;
  const int tid = static_cast<int>(threadIdx.x % warpgroup_threads);
  const int lane = tid % 32, warp = tid / 32;
  if (row_base >= ep.m) return;  // the whole warpgroup's rows lie below C
  finish_staged_values(d, ep, row_base, col_base, fn);
  const std::uint32_t lane_offset = staged_lane_offset(warp, lane, static_cast<int>(sizeof(T)));
#pragma unroll
  for (int j = 0; j < chunks; ++j) {
    const int col_chunk = col_base + j * chunk_cols;
    if (col_chunk >= ep.n) break;  // the same for the whole warpgroup, and for every later chunk
    store_staged_chunk(map_c, c_smem, col_chunk, row_base, barrier, buffer, [&](std::uint32_t buf) {
      const std::uint32_t at = buf + lane_offset;
      if constexpr (sizeof(T) == 2) {
        write_chunk_16<groups_per_chunk>(at, j, [&](int i) { return from_compute_pair<T>(d[i], d[i + 1]); });
      } else {
#pragma unroll
        for (int g = 0; g < groups_per_chunk; ++g) {
          const int c = j * groups_per_chunk + g;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            store_shared_v2((at ^ (g * staged_group_xor)) + h * staged_half_rows_bytes,
                            make_float2(d[4 * c + 2 * h], d[4 * c + 2 * h + 1]));
          }
        }
      }
    });
  }
}

/// The 16-bit staged epilogue overlapped with the next tile's products: at the
/// end of a tile's main loop the warpgroup finishes its values
/// (finish_staged_values) and packs them to T in pairs (half the registers of
/// the fp32 accumulators, which the next tile then zeroes and reuses), and
/// stores one chunk (store_staged_chunk) after each of the next tile's k-steps
/// is issued, while those products run; what a short tile leaves is stored
/// before the next pack, and the last tile's after the loop. Before, the
/// tensor cores idled for this warpgroup through all of a tile's chunks (ncu at
/// fp16 4096^3: 2.1% more cycles than cuBLAS, the gap growing as k shrinks:
/// benchmarks/TUNING.md).
template <class T, int Accumulators>
struct staged_tile_16 {
  static constexpr int chunk_cols = swizzle_row_bytes / 2;  // 64 elements
  static constexpr int groups_per_chunk = chunk_cols / 8;
  static constexpr int chunks = 2 * Accumulators / chunk_cols;
  std::uint32_t packed[Accumulators / 2];  ///< pair i / 2: accumulators i, i + 1
  int row_base = 0, col_base = 0;
  int next = chunks;  ///< the next chunk to store; `chunks`: none pending

  /// Takes a finished tile (alpha, the functor) from `d`; nothing to store
  /// where the warpgroup's rows lie below C.
  template <class Epilogue>
  __device__ __forceinline__ void take(float (&d)[Accumulators], const epilogue_params<T>& ep, int row0, int col0,
                                       const Epilogue& fn) {
    row_base = row0;
    col_base = col0;
    next = row0 < ep.m ? 0 : chunks;  // uniform across the warpgroup
    if (next == chunks) return;
    finish_staged_values(d, ep, row0, col0, fn);
#pragma unroll
    for (int i = 0; i < Accumulators; i += 2) packed[i / 2] = from_compute_pair<T>(d[i], d[i + 1]);
  }

  /// Stores the next pending chunk, if any (chunks past C's last column end the tile).
  __device__ __forceinline__ void store_next(const epilogue_params<T>& ep, const CUtensorMap* map_c,
                                             std::uint32_t c_smem, int barrier, int& buffer) {
    if (next >= chunks) return;
    const int j = next++;
    const int col_chunk = col_base + j * chunk_cols;
    if (col_chunk >= ep.n) {  // uniform: this chunk and every later one lie right of C
      next = chunks;
      return;
    }
    const int tid = static_cast<int>(threadIdx.x % warpgroup_threads);
    const std::uint32_t lane_offset = staged_lane_offset(tid / 32, tid % 32, 2);
    // j is not a compile-time index here: the chunk's pairs are selected by a
    // test against each chunk of an unrolled loop (constant register indices).
    store_staged_chunk(map_c, c_smem, col_chunk, row_base, barrier, buffer, [&](std::uint32_t buf) {
#pragma unroll
      for (int jj = 0; jj < chunks; ++jj) {
        if (jj == j) write_chunk_16<groups_per_chunk>(buf + lane_offset, jj, [&](int i) { return packed[i / 2]; });
      }
    });
  }

  /// Stores every pending chunk.
  __device__ __forceinline__ void flush(const epilogue_params<T>& ep, const CUtensorMap* map_c, std::uint32_t c_smem,
                                        int barrier, int& buffer) {
#pragma unroll 1
    while (next < chunks) store_next(ep, map_c, c_smem, barrier, buffer);
  }
};

/// Split-k: where k-slice `slice`'s raw fp32 sums go (unscaled, identity
/// functor): a dense block of ep.m x ep.n floats in the workspace, rows `ldc`
/// apart (256-byte aligned, so even rows allow pair stores).
template <class T>
__device__ __forceinline__ epilogue_params<float> partial_slice(const epilogue_params<T>& ep, int slice,
                                                                long long ldc) {
  epilogue_params<float> p;
  p.C = ep.partial + static_cast<long long>(slice) * ep.m * ep.n;
  p.ldc = ldc;
  p.m = ep.m;
  p.n = ep.n;
  p.alpha = 1.0f;
  p.beta = 0.0f;
  p.pairs = ldc % 2 == 0;
  return p;
}

/// SwapAB: one consumer warpgroup's accumulators are a 64 x N tile of C^T: a
/// thread's accumulator i is C's element (row m0 + 8 (i / 4) + 2 (lane % 4) +
/// i % 2, column n0 + swap_row(warp, lane / 4 + 8 ((i % 4) / 2))), where m0 is
/// the tile's first row of C and n0 the warpgroup's first column. ep describes
/// the swapped product: C has ep.n rows and ep.m columns. Each value is stored
/// alone (C's adjacent columns lie in other threads), through the epilogue
/// functor with its row and column of C.
template <class Epilogue, int Accumulators>
__device__ __forceinline__ void store_tile_swapped(const float (&d)[Accumulators], const epilogue_params<float>& ep,
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
__device__ __forceinline__ void store_tile_staged_swapped(const float (&d)[Accumulators],
                                                          const epilogue_params<float>& ep, const CUtensorMap* map_c,
                                                          std::uint32_t c_smem, int m0, int n0, int barrier,
                                                          const Epilogue& fn) {
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

}  // namespace wgmma_tf32

/// Split-k: a work item is a cluster tile and a k-slice (item = tile * splits +
/// slice); a slice's tile goes unscaled, in fp32, to the partial workspace.
/// Persistent: the grid holds as many CTAs as the device runs at once (the host
/// asks the occupancy API), and each cluster walks the cluster tiles g, g + G,
/// g + 2G, ... (G clusters in the grid, grouped rasterization). The producer's
/// stage ring runs on across tiles, so while the consumers store one tile the
/// next tile's first stages are already loading: no pipeline fill, no block
/// launch and no barrier setup per tile.
/// Each tile is 128 x BlockN of C (BlockN 256, 128 or 64: tile_config). map_a: A as
/// m x k, k-contiguous, boxes of a_box_rows(MulticastA) rows (128; 64 where the
/// cluster of 2 shares A: MulticastA, its CTAs on adjacent n-tiles, each loading
/// one half of A's stage for both) x one swizzled row of k. map_b:
/// op(B)^T as n x k, k-contiguous, boxes of BlockN / 2 rows x one swizzled row
/// (BNMajor false), or op(B) as k x n, n-contiguous, boxes of one swizzled row
/// of n x a stage's k rows (BNMajor true: 16-bit T, read N-major). map_c: C
/// as m x n, boxes of 64 rows x one swizzled row, for the staged epilogue
/// (ep.staged; unused otherwise). fn: the epilogue functor applied to each stored value (identity
/// by default).
/// SwapAB (TF32, n-contiguous B; see swap_row_in_box): the kernel computes C^T
/// = op(B)^T op(A)^T: map_a is op(B) as k x n, n-contiguous, boxes of one
/// swizzled row of n x a stage's k rows, read into registers; map_b is A as
/// m x k (the k-major "B" of the swapped product, boxes of BlockN / 2 rows);
/// ep.m and ep.n are n and m (tile_m walks C's columns, tile_n its rows), and
/// the epilogue stores the accumulators transposed into C (ep.C, ep.ldc as C's).
template <class T, int Cluster, bool BNMajor = false, class Epilogue = epilogue::identity, int BlockN = 256,
          bool MulticastA = false, bool ClusterSplitK = false, bool SwapAB = false>
KF_KERNEL void __launch_bounds__(wgmma_tf32::threads, 1)
    wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                 const __grid_constant__ CUtensorMap map_c, const wgmma_tf32::epilogue_params<T> ep,
                 const Epilogue fn) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace wgmma_tf32;
  using element = wgmma_element<T>;
  using tile = tile_config<BlockN, ClusterSplitK>;
  constexpr int block_n = tile::block_n, stages = tile::stages;
  constexpr int b_tile_bytes = tile::b_tile_bytes, stage_bytes = tile::stage_bytes;
  static_assert(Cluster == 1 || Cluster == max_cluster, "clusters of 1 or 2 CTAs");
  static_assert(!MulticastA || Cluster == max_cluster, "A is shared by a cluster of 2 CTAs only");
  static_assert(!ClusterSplitK || (Cluster == max_cluster && !MulticastA),
                "the cluster split-k mode: a cluster of 2 CTAs on one tile, sharing no operand");
  static_assert(!SwapAB || (element::bytes == 4 && !BNMajor),
                "the swapped product: TF32, its B (op(A)) k-major, its A (op(B)^T) from registers");
  // The CTAs that share B (load its stage between them) and those that share A;
  // splitting k, the two CTAs read different k-steps and share neither.
  constexpr int b_sharers = MulticastA || ClusterSplitK ? 1 : Cluster;
  constexpr int a_sharers = MulticastA ? Cluster : 1;
  // The CTAs whose consumers read each stage a CTA fills (the arrivals its `empty` barrier counts).
  constexpr int stage_readers = b_sharers * a_sharers;
  constexpr int stage_k = element::stage_k;  // 32 floats, 64 halves: one swizzled row
  // N-major B: block_n / box_cols boxes of stage_k rows x box_cols (one swizzled row) per stage.
  constexpr int box_cols = stage_k;
  constexpr int n_major_box_bytes = stage_k * swizzle_row_bytes;
  constexpr int n_major_boxes = block_n / box_cols;
  // In a cluster sharing B each CTA loads boxes_per_cta of them for both; a 64-wide
  // 16-bit tile has a single box (64 halves), which the cluster's first CTA loads.
  constexpr int boxes_per_cta = (n_major_boxes + b_sharers - 1) / b_sharers;
  static_assert(!BNMajor || (n_major_boxes * n_major_box_bytes == b_tile_bytes &&
                             (n_major_boxes % b_sharers == 0 || n_major_boxes < b_sharers)),
                "N-major B: the same bytes per stage, whole boxes per CTA");
  static_assert(!BNMajor || element::bytes == 2,
                "N-major B: 16-bit elements (wgmma's transpose bit); TF32 swaps the product instead (SwapAB)");
  extern __shared__ unsigned char wgmma_smem[];
  const std::uint32_t raw = smem_address(wgmma_smem);
  const std::uint32_t base = (raw + swizzle_atom_bytes - 1) & ~std::uint32_t(swizzle_atom_bytes - 1);
  const std::uint32_t a_smem = base;                                       // stages x A tile
  const std::uint32_t b_smem = base + stages * a_tile_bytes;               // stages x B tile
  const std::uint32_t c_smem = base + stages * stage_bytes;                // consumers x c_buffers x C buffer
  const std::uint32_t receive_smem = c_smem + c_smem_bytes;                // the peer's partial (ClusterSplitK)
  const std::uint32_t full_bar = receive_smem + tile::receive_bytes;       // stages x mbarrier
  const std::uint32_t empty_bar = full_bar + stages * barrier_bytes;       // stages x mbarrier
  const std::uint32_t recv_full_bar = empty_bar + stages * barrier_bytes;  // ClusterSplitK
  const std::uint32_t peer_free_bar = recv_full_bar + barrier_bytes;       // ClusterSplitK

  // Broadcast from lane 0, so that the compiler knows it is warp-uniform and keeps
  // what derives from it (the consumers' descriptors) in uniform registers, as
  // the wgmma operands need, instead of moving them there (R2UR) per product.
  const int warpgroup = __shfl_sync(0xFFFFFFFFu, static_cast<int>(threadIdx.x / warpgroup_threads), 0);
  const int tid_in_warpgroup = threadIdx.x % warpgroup_threads;
  const std::uint32_t rank = Cluster > 1 ? cluster_rank() : 0;

  // The barriers of a stage, and why the pipeline cannot hang (every role walks
  // the same work items and k-steps, so each runs the same rounds of every stage):
  //  * full: the producer's arrive.expect_tx of the whole stage's bytes (also
  //    where half of the shared operand arrives by the peer's multicast: each
  //    CTA receives both halves); the consumers wait on it. A peer's multicast
  //    of round r + 1 can land before this CTA's expect_tx (the tx-count goes
  //    negative meanwhile, as the PTX ISA allows), never before round r
  //    completed here: the peer issues it after its `empty` of round r, which
  //    needs this CTA's consumers past `full` round r. Round r + 1's arrival
  //    cannot mix into round r: the producer arrives for r + 1 only after
  //    `empty` of round r, i.e. after every consumer warp saw `full` complete
  //    round r.
  //  * empty: one arrival of each consumer warp of every CTA whose products
  //    read the stage (B or A is multicast: each CTA's copy writes into its
  //    peer's stage too); the producer waits on it before refilling, so no copy
  //    overwrites a stage that a product still reads, here or in the peer.
  if (threadIdx.x == 0) {
    // The producer thread's first copies, and the staged epilogue's stores, name these.
    tma_prefetch_descriptor(&map_a);
    tma_prefetch_descriptor(&map_b);
    if (ep.staged) tma_prefetch_descriptor(&map_c);
#pragma unroll
    for (int s = 0; s < stages; ++s) {
      mbar_init(full_bar + s * barrier_bytes, 1);  // the producer's arrive.expect_tx
      // Every consumer warp of every CTA whose products read this stage (B or A is shared).
      mbar_init(empty_bar + s * barrier_bytes, consumer_warpgroups * warps_per_warpgroup * stage_readers);
    }
    if constexpr (ClusterSplitK) {
      mbar_init(recv_full_bar, warpgroup_threads);  // each thread of the peer's sending warpgroup
      mbar_init(peer_free_bar, warpgroup_threads);  // each thread of the peer's receiving warpgroup
    }
    mbar_init_fence();
  }
  // Every CTA's barriers exist before any TMA or remote arrive touches them:
  // with a cluster, the relaxed arrive here (mbar_init_fence published the
  // initialization) and the wait below, before the roles start, so that the
  // barrier's latency overlaps the set-up between them.
  if constexpr (Cluster > 1) {
    cluster_arrive_relaxed();
  } else {
    __syncthreads();
  }

  const int k_tiles = (ep.k + stage_k - 1) / stage_k;
  const int work_items = ep.cluster_tiles_m * ep.cluster_tiles_n * ep.splits;
  const int clusters = static_cast<int>(gridDim.x) / Cluster;
  // A work item's tile (grouped rasterization over cluster tiles; the CTAs of a
  // cluster take adjacent m-tiles sharing B, or adjacent n-tiles sharing A; in
  // the last, ragged cluster tile the second CTA's tile may lie wholly outside
  // C: it still loads and multicasts its half for its peer, TMA fills its own
  // half with zeros and its stores skip everything), k-slice and k-steps
  // [kt_begin, kt_end).
  struct work {
    int tile_m, tile_n, slice, kt_begin, kt_end;
  };
  const auto work_of = [&](int item) {
    const tile_coord t = grouped_tile(item / ep.splits, ep.cluster_tiles_m, ep.cluster_tiles_n, raster_group);
    work w;
    if constexpr (ClusterSplitK) {
      // Both CTAs take the cluster's tile; CTA r the k-steps [r * half, (r + 1) * half)
      // (half rounded up: with an odd count CTA 1 has one step fewer, with a
      // single step none, and then contributes zeros). ep.splits is 1.
      const int half = (k_tiles + 1) / 2;
      w.tile_m = static_cast<int>(t.m);
      w.tile_n = static_cast<int>(t.n);
      w.slice = 0;
      w.kt_begin = min(k_tiles, static_cast<int>(rank) * half);
      w.kt_end = min(k_tiles, w.kt_begin + half);
      return w;
    }
    w.tile_m = static_cast<int>(t.m) * b_sharers + (MulticastA ? 0 : static_cast<int>(rank));
    w.tile_n = static_cast<int>(t.n) * a_sharers + (MulticastA ? static_cast<int>(rank) : 0);
    w.slice = item % ep.splits;
    w.kt_begin = w.slice * ep.split_k_tiles;
    w.kt_end = min(k_tiles, w.kt_begin + ep.split_k_tiles);
    return w;
  };

  if constexpr (Cluster > 1) cluster_wait();
  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<producer_registers>();
    if (tid_in_warpgroup == 0) {
      int stage = 0;
      std::uint32_t phase = 0;
      int issued = 0;  // stages filled so far, over every tile
      for (int item = static_cast<int>(blockIdx.x) / Cluster; item < work_items; item += clusters) {
        const work w = work_of(item);
        const int tile_m = w.tile_m, tile_n = w.tile_n;
        for (int kt = w.kt_begin; kt < w.kt_end; ++kt, ++issued) {
          // Round r of a stage waits for the consumers' release of round r - 1.
          if (issued >= stages) mbar_wait(empty_bar + stage * barrier_bytes, phase ^ 1);
          // The copies complete `full`: A and all of B, wherever their parts come from.
          const std::uint32_t full = full_bar + stage * barrier_bytes;
          mbar_arrive_expect_tx(full, stage_bytes);
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
              const std::uint32_t dst = a_smem + stage * a_tile_bytes + j * swap_box_bytes;
              const int col = tile_m * block_m + j * swap_box_rows;
              if constexpr (MulticastA) {
                tma_load_2d_multicast(dst, &map_a, col, k0, full, whole_cluster);
              } else {
                tma_load_2d(dst, &map_a, col, k0, full);
              }
            }
          } else if constexpr (MulticastA) {
            // This CTA's 64 rows of A (those of consumer warpgroup `rank`) for both CTAs.
            tma_load_2d_multicast(a_smem + stage * a_tile_bytes + rank * multicast_a_box_bytes, &map_a, k0,
                                  tile_m * block_m + static_cast<int>(rank) * multicast_a_box_rows, full,
                                  whole_cluster);
          } else {
            tma_load_2d(a_smem + stage * a_tile_bytes, &map_a, k0, tile_m * block_m, full);
          }
          const std::uint32_t b_stage = b_smem + stage * b_tile_bytes;
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
                tma_load_2d(b_stage + j * n_major_box_bytes, &map_b, col, k0, full);
              } else {
                tma_load_2d_multicast(b_stage + j * n_major_box_bytes, &map_b, col, k0, full, whole_cluster);
              }
            }
          } else if constexpr (b_sharers == 1) {
            tma_load_2d(b_stage, &map_b, k0, tile_n * block_n, full);
            tma_load_2d(b_stage + tile::b_box_bytes, &map_b, k0, tile_n * block_n + tile::b_box_rows, full);
          } else {
            tma_load_2d_multicast(b_stage + rank * tile::b_box_bytes, &map_b, k0,
                                  tile_n * block_n + rank * tile::b_box_rows, full, whole_cluster);
          }
          if (++stage == stages) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
  } else {
    // ---------------------------------------------------------------- consumers
    setmaxnreg_inc<consumer_registers>();
    const int consumer = warpgroup - 1;
    const int lane = tid_in_warpgroup % 32;
    const int warp_in_warpgroup = tid_in_warpgroup / 32;
    // Hands a stage back to the producer(s): its products have completed.
    const auto release = [&](int s) {
      if (lane != 0) return;
      const std::uint32_t empty = empty_bar + s * barrier_bytes;
      if constexpr (stage_readers == 1) {
        mbar_arrive(empty);
      } else {
#pragma unroll
        for (int cta = 0; cta < Cluster; ++cta) mbar_arrive_cluster(empty, cta);
      }
    };

    // SwapAB: this thread's A-fragment offsets in a stage (a0..a3 of the first
    // k-step); a stage's fragments are k-steps x a0..a3.
    constexpr int frag_sets = SwapAB ? stage_k / element::wgmma_k : 1;
    std::uint32_t a_fragment[4] = {};
    if constexpr (SwapAB) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        a_fragment[r] = static_cast<std::uint32_t>(swap_fragment_offset(consumer, warp_in_warpgroup, lane, r));
      }
    }
    // The stage-0 descriptors of this warpgroup's A rows and of B; a stage's and a
    // product's are these advanced by constant byte offsets (no address
    // arithmetic per product). N-major B (16-bit, wgmma's transpose bit): boxes of
    // n_major_box_bytes along n, 8-row atoms along k.
    constexpr int b_n_major_read = BNMajor ? 1 : 0;
    const std::uint64_t a_desc0 = smem_descriptor_sw128(a_smem + consumer * wgmma_m * swizzle_row_bytes);
    const std::uint64_t b_desc0 = b_n_major_read ? smem_descriptor_sw128(b_smem, n_major_box_bytes, swizzle_atom_bytes)
                                                 : smem_descriptor_sw128(b_smem);
    int stage = 0;
    std::uint32_t phase = 0;
    int c_buffer = 0;   // the staged epilogue's next C buffer
    int exchanges = 0;  // ClusterSplitK: partial tiles sent or received so far (the barriers' phases)
    // 16-bit staged tiles go out during the next tile's k-steps (staged_tile_16).
    constexpr bool overlapped_stores = element::bytes == 2 && !ClusterSplitK && !SwapAB;
    staged_tile_16<T, tile::accumulators> pending;
    const std::uint32_t c_smem_mine = c_smem + consumer * c_buffers * c_buffer_bytes;
    const int c_barrier = 1 + consumer;
    for (int item = static_cast<int>(blockIdx.x) / Cluster; item < work_items; item += clusters) {
      const work w = work_of(item);
      float d[tile::accumulators];
#pragma unroll
      for (int i = 0; i < tile::accumulators; ++i) d[i] = 0.0f;
      fence_operands(d);

      // One k-step: wait for the stage, issue its products, keep them in flight
      // and hand the previous stage back. SwapAB: first the stage's A fragments
      // into registers, once every product issued so far has completed (no
      // fragment is rewritten under a product that reads it; ptxas serializes
      // the products of a loop that loads fragments while any is in flight). The
      // other consumer warpgroup's products keep the tensor cores busy meanwhile.
      int previous = -1;
      for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
        mbar_wait(full_bar + stage * barrier_bytes, phase);
        const std::uint64_t b_desc = smem_descriptor_advance(b_desc0, stage * b_tile_bytes);
        std::uint32_t frag[frag_sets][4];
        if constexpr (SwapAB) {
          wgmma_wait<0>();
          if (previous >= 0) release(previous);
          previous = -1;
          const std::uint32_t a_stage = a_smem + stage * a_tile_bytes;
#pragma unroll
          for (int kk = 0; kk < frag_sets; ++kk) {
#pragma unroll
            for (int r = 0; r < 4; ++r) {
              frag[kk][r] = load_shared_b32(a_stage + a_fragment[r] + kk * element::wgmma_k * swizzle_row_bytes);
            }
          }
        }
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < stage_k / element::wgmma_k; ++kk) {
          // A (and k-major B): along k inside a swizzled row, 32 bytes per product.
          // N-major B: wgmma_k rows of 128 bytes per product.
          const std::uint64_t a =
              smem_descriptor_advance(a_desc0, stage * a_tile_bytes + kk * element::wgmma_k * element::bytes);
          const std::uint64_t b =
              smem_descriptor_advance(b_desc, b_n_major_read ? kk * element::wgmma_k * swizzle_row_bytes
                                                             : kk * element::wgmma_k * element::bytes);
          if constexpr (SwapAB) {
            wgmma_m64nNk8_tf32_rs<block_n>(d, frag[kk], b);
          } else {
            element::template mma<b_n_major_read>(d, a, b);
          }
        }
        wgmma_commit();
        // While this k-step's products run: a chunk of the previous tile's stores.
        if constexpr (overlapped_stores) {
          if (ep.staged) pending.store_next(ep, &map_c, c_smem_mine, c_barrier, c_buffer);
        }
        if constexpr (!SwapAB) {
          // Keep this stage's products in flight; the previous stage's have completed.
          wgmma_wait<1>();
          if (previous >= 0) release(previous);
        }
        previous = stage;
        if (++stage == stages) {
          stage = 0;
          phase ^= 1;
        }
      }
      wgmma_wait<0>();
      fence_operands(d);
      if (previous >= 0) release(previous);  // the tile's last stage, before the stores

      if constexpr (ClusterSplitK) {
        // CTA r finishes rows 64 r .. 64 r + 63 of the tile (its consumer warpgroup
        // r's): the other warpgroup sends its partial to the peer, whose warpgroup
        // of the same index holds the other half of the same rows, and stores
        // nothing. Thread t of either warpgroup holds the same elements of C, so
        // the sender writes its accumulators as 16-byte vectors in thread order
        // (vector i at (i * 128 + t) * 16: a warp's stores are 512 contiguous
        // bytes, no bank conflicts) and the receiver reads them back the same way.
        // Two mbarriers per CTA, phases counted by `exchanges` (every CTA of the
        // cluster walks the same tiles): recv_full, completed by the 128 sending
        // threads' releasing arrivals after their stores (the receiver's
        // cluster-scope acquire then sees them); and peer_free, completed by the
        // 128 receiving threads' releasing arrivals after their loads: a sender
        // waits for it before it rewrites the peer's buffer with the next tile.
        // Barriers rather than a cluster barrier per tile, which would need the
        // producer warpgroups too (they run ahead, filling the next tile's
        // stages) and would hold each warpgroup back for the slower CTA's
        // epilogue; a sender only waits where the peer's receiver has not yet
        // read the previous tile's partial. The kernel's final cluster_sync keeps
        // both CTAs alive until every remote store and arrival has been made.
        const std::uint32_t peer = rank ^ 1u;
        constexpr int vectors = tile::accumulators / 4;
        if (consumer != static_cast<int>(rank)) {
          if (exchanges > 0) mbar_wait_acquire_cluster(peer_free_bar, (exchanges - 1) & 1);
          const std::uint32_t remote = map_shared_cluster(receive_smem, peer);
#pragma unroll
          for (int i = 0; i < vectors; ++i) {
            st_shared_cluster_v4(remote + (i * warpgroup_threads + tid_in_warpgroup) * 16,
                                 make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]));
          }
          mbar_arrive_remote_release(recv_full_bar, peer);
          ++exchanges;
          continue;  // the peer stores these rows
        }
        mbar_wait_acquire_cluster(recv_full_bar, exchanges & 1);
#pragma unroll
        for (int i = 0; i < vectors; ++i) {
          const float4 v = load_shared_v4(receive_smem + (i * warpgroup_threads + tid_in_warpgroup) * 16);
          d[4 * i] += v.x;
          d[4 * i + 1] += v.y;
          d[4 * i + 2] += v.z;
          d[4 * i + 3] += v.w;
        }
        mbar_arrive_remote_release(peer_free_bar, peer);
        ++exchanges;
      }

      if constexpr (SwapAB) {
        // C^T's tile: its rows (C's columns) from tile_m, its columns (C's rows) from tile_n.
        const int c_row0 = w.tile_n * block_n, c_col0 = w.tile_m * block_m + consumer * wgmma_m;
        if (ep.staged) {
          store_tile_staged_swapped(d, ep, &map_c, c_smem_mine, c_row0, c_col0, c_barrier, fn);
        } else if (ep.partial == nullptr) {
          store_tile_swapped(d, ep, c_row0, c_col0, fn);
        } else {
          // C's layout: ep.n rows of ep.m.
          store_tile_swapped(d, partial_slice(ep, w.slice, ep.m), c_row0, c_col0, epilogue::identity{});
        }
        continue;
      }
      const long long row0 =
          static_cast<long long>(w.tile_m) * block_m + consumer * wgmma_m + warp_in_warpgroup * 16 + lane / 4;
      const long long col0 = static_cast<long long>(w.tile_n) * block_n + 2 * (lane % 4);
      if (ep.staged) {
        const int row_base = w.tile_m * block_m + consumer * wgmma_m, col_base = w.tile_n * block_n;
        if constexpr (overlapped_stores) {
          pending.flush(ep, &map_c, c_smem_mine, c_barrier, c_buffer);  // what a short tile left
          pending.take(d, ep, row_base, col_base, fn);
        } else {
          store_tile_staged<T>(d, ep, &map_c, c_smem_mine, row_base, col_base, c_barrier, c_buffer, fn);
        }
      } else if (ep.partial == nullptr) {
        store_tile<T>(d, ep, row0, col0, fn);
      } else {
        store_tile<float>(d, partial_slice(ep, w.slice, ep.n), row0, col0, epilogue::identity{});
      }
    }
    if constexpr (overlapped_stores) {
      if (ep.staged) pending.flush(ep, &map_c, c_smem_mine, c_barrier, c_buffer);  // the last tile's
    }
    // The last C buffers are read before the CTA's shared memory goes. Their
    // writes to C need not have landed: a kernel's stores are all visible when it
    // completes (waiting for them here cost every CTA a global write latency).
    if (ep.staged && tid_in_warpgroup == 0) tma_store_wait_read<0>();
  }

  // No CTA may exit while its peer can still arrive on its barriers.
  if constexpr (Cluster > 1) cluster_sync();
#endif
}

}  // namespace kf::detail
