// SPDX-License-Identifier: Apache-2.0
// The shape of conv2d step 7 (07_implicit_gemm_wgmma.cuh) and of the steps and
// passes built on it: the warpgroup roles, a stage's A and B slots (one tap's
// pixel box, or a filter column's taller one), the stages that fit, the
// shared-memory carve, and the parameters the kernel receives. Host and device
// code read it (wgmma_host.cuh sizes the TMA boxes and shared memory from it),
// as the matrix product's wgmma/config.cuh.
#pragma once

#include <cstdint>

#include "../arch/pipeline_sm90.cuh"
#include "../arch/smem.cuh"
#include "../arch/warpgroup_sm90.cuh"
#include "../arch/wgmma_sm90.cuh"
#include "../matmul/wgmma/config.cuh"
#include "../matmul/wgmma/element.cuh"
#include "filter_column.hpp"
#include "wgmma_k_steps.hpp"
#include "wgmma_plan.hpp"

namespace kf::detail::conv2d_wgmma {

inline constexpr int consumer_warpgroups = 2;
inline constexpr int threads = (1 + consumer_warpgroups) * warpgroup_threads;  // producer + consumers
inline constexpr int wgmma_m = 64;
inline constexpr int block_m = consumer_warpgroups * wgmma_m;  // 128 output pixels
inline constexpr int row_bytes = 128;                          // a stage's channels of one pixel: one swizzled row
/// Channels per stage: 32 floats (TF32, wgmma k8) or 64 halves (f16 / bf16, wgmma k16).
template <class T>
inline constexpr int block_c = row_bytes / static_cast<int>(sizeof(T));
/// Bytes of k one product advances along a swizzled row: 8 TF32 or 16 16-bit values, 32 bytes either way.
template <class T>
inline constexpr int product_bytes = wgmma::element<T>::wgmma_k* static_cast<int>(sizeof(T));
inline constexpr int swizzle_atom_bytes = 8 * row_bytes;  // 1024: the XOR pattern's period
inline constexpr int a_tile_bytes = block_m * row_bytes;  // 16 KiB (a box may fill fewer rows)
/// A stage's A slot: one-tap tiles' 128 pixels, or (Rows > 1) the taller of the filter-column boxes.
template <int Rows>
inline constexpr int a_slot_bytes = Rows == 1 ? a_tile_bytes
                                              : static_cast<int>(conv2d_nhwc_wgmma_column_box_pixels(Rows)) * row_bytes;
/// Bytes from tap j's A operand to tap j + 1's in a filter-column box: one image row, one swizzle atom.
inline constexpr int column_tap_bytes = static_cast<int>(conv2d_filter_column_tap_bytes(1));
static_assert(column_tap_bytes == swizzle_atom_bytes, "a filter-column box row of 8 pixels is one swizzle atom");

/// Ping-pong's two turn barriers (mainloop done, one per consumer warpgroup), after the ring's.
inline constexpr int order_barrier_bytes = 2 * 8;

#if KF_ARCH_SM90A
/// Ping-pong's order of the two consumer warpgroups' mainloops (steps 7 and 12, CUTLASS's
/// ping-pong order): barrier done + 8 c completes a phase each time consumer c has issued a
/// tile's products; consumer 0's j-th tile waits for consumer 1's (j - 1)-th, consumer 1's
/// j-th for consumer 0's j-th. The turns also keep a warpgroup that skips the other's
/// stages from waiting on a stage more than one round beyond the producer (a parity wait
/// cannot tell that round from the one before it).
struct pingpong_order {
  std::uint32_t done;  ///< order_barrier_bytes of shared memory: the two barriers
  /// One thread, before either consumer starts (then mbar_init_fence and a block barrier).
  __device__ __forceinline__ void init() const {
    mbar_init(done, warpgroup_threads);
    mbar_init(done + 8, warpgroup_threads);
  }
  /// Before `consumer`'s mainloop of its tile number `own_tiles` (0, 1, ...).
  __device__ __forceinline__ void wait_turn(int consumer, int own_tiles) const {
    if (consumer == 1) {
      mbar_wait(done, static_cast<std::uint32_t>(own_tiles & 1));
    } else if (own_tiles > 0) {
      mbar_wait(done + 8, static_cast<std::uint32_t>((own_tiles - 1) & 1));
    }
  }
  /// After `consumer` has issued its tile's products: the other's turn.
  __device__ __forceinline__ void pass(int consumer) const { mbar_arrive(done + 8 * consumer); }
};
#endif  // KF_ARCH_SM90A

/// The bias a tile's store adds, staged in shared memory (wgmma_store.cuh,
/// stage_bias): per consumer warpgroup, 2 buffers (its tiles in turn) of up to 2
/// slices (the call's bias, and the functor's own) of BN floats.
inline constexpr int bias_buffers = 2;
inline constexpr int bias_slices = 2;
/// Consumer warpgroup c's named barrier for its staged bias: bias_barrier + c (0 is __syncthreads).
inline constexpr int bias_barrier = 1;
/// The consumer warpgroups' turns at the tensor cores (step 9; warpgroup_turns): barriers turn_barrier, + 1.
inline constexpr int turn_barrier = bias_barrier + consumer_warpgroups;
/// Consumer warpgroup c's named barrier for a split tile's arrival (wgmma_last_round.cuh): split_barrier + c.
inline constexpr int split_barrier = turn_barrier + consumer_warpgroups;
/// Consumer warpgroup c's named barrier for its staged y chunks (params::staged_y): y_barrier + c.
inline constexpr int y_barrier = split_barrier + consumer_warpgroups;
/// params::staged_y: a consumer's C buffers (64 pixels x 64 channels of 16-bit y, 8 KiB each), its share of
/// the ring's last conv2d_wgmma_staged_y_slots B slots, which the rule leaves free of the resident filter.
inline constexpr int y_buffers = static_cast<int>(conv2d_wgmma_staged_y_slots) / consumer_warpgroups;
template <int BN>
inline constexpr int bias_stage_bytes =
    consumer_warpgroups* bias_buffers* bias_slices* BN* static_cast<int>(sizeof(float));

/// A stage's B slot: Rows taps' filter slices of block_c x BN.
template <int BN, int Rows = 1>
inline constexpr int b_tile_bytes = Rows* BN* row_bytes;
template <int BN, int Rows = 1>
inline constexpr int stage_bytes = a_slot_bytes<Rows> + b_tile_bytes<BN, Rows>;
using wgmma::max_smem_bytes;  // the shared-memory opt-in (227 KiB on sm_90)
/// Stages of BN: one-tap, 8 x 24 KiB for BN = 64, 6 x 32 KiB for BN = 128 (192
/// KiB either way); filter-column tiles, as many as the opt-in holds (5 x 44 KiB
/// for BN = 64, 3 x 68 KiB for BN = 128 at Rows = 3).
template <int BN, int Rows = 1>
inline constexpr int stages = Rows == 1 ? (BN == 64 ? 8 : 6)
                                        : (max_smem_bytes - swizzle_atom_bytes - order_barrier_bytes -
                                           stage_ring_barrier_bytes(8) - bias_stage_bytes<BN>) /
                                              stage_bytes<BN, Rows>;
/// Tiles start 1024-aligned (the swizzle is a function of the address bits):
/// one atom of slack, then the stages, the ring's barriers (pipeline_sm90.cuh),
/// ping-pong's turn barriers and the staged bias (smem_carve).
template <int BN, int Rows = 1>
inline constexpr int smem_bytes = swizzle_atom_bytes + stages<BN, Rows>* stage_bytes<BN, Rows> +
                                  stage_ring_barrier_bytes(stages<BN, Rows>) + order_barrier_bytes
                                  + bias_stage_bytes<BN>;
static_assert(smem_bytes<128, 3> <= max_smem_bytes && smem_bytes<64, 3> <= max_smem_bytes && stages<128, 3> >= 3 &&
                  stages<64, 3> >= 4,
              "filter-column stages fit the opt-in");
static_assert(smem_bytes<128> <= max_smem_bytes && smem_bytes<64> <= max_smem_bytes, "one-tap stages fit the opt-in");
static_assert(a_slot_bytes<3> % swizzle_atom_bytes == 0, "every B slot starts on a swizzle atom");

/// The filter repack's block (wgmma_nchw_repack.cuh, grid-stride).
inline constexpr int filter_block = 256;

/// What the kernel needs besides the two tensor maps (filled by wgmma_sm90a.cu).
template <class T>
struct params {
  T* y = nullptr;
  const T* bias = nullptr;
  int k = 0, p = 0, q = 0, pq = 0, n = 0;
  int pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int stride_h = 1, stride_w = 1;  ///< NHWC: the A box's element strides (the map's); NCHW: 1
  int s = 1;                       ///< filter width (taps along w)
  int c_chunks = 0;                ///< ceil(C / block_c)
  int k_steps = 0;                 ///< R / Rows * S * c_chunks (halo tiles: R S c_chunks)
  int halo_width = 0;              ///< halo tiles (step 12): the A box's width in pixels
  int wt = 1, ht = 1, nt = 1;
  int box_pixels = 0;  ///< wt * ht * nt
  int tiles_q = 0, tiles_p = 0, tiles_k = 0;
  int tiles = 0;             ///< every (pixel box, channel tile)
  int a_box_bytes = 0;       ///< what one A box lands: box_pixels (filter-column: 8 nt (ht + Rows - 1)) x 128
  int a_block_bytes = 0;     ///< where m64 block 1 starts in the A box (filter-column tiles; else 64 x 128)
  bool pair_stores = false;  ///< NHWC: K even and y aligned to two elements (stores of element pairs)
  /// The filter loaded once a CTA, k-step kt's slices in stage kt's B slot (conv2d_wgmma_resident_filter); step 7 only.
  bool resident_filter = false;
  /// A tile's stages taken before any of its boxes is asked for (conv2d_wgmma_tile_loads_together); step 7 only.
  bool tile_loads_together = false;
  /// 16-bit y of a pointwise layer (one row of pixels, cooperative, resident filter, BN 64) stored through
  /// shared memory and TMA (the kernel's map_y: y as NPQ x K): whole 128-byte rows (conv2d_wgmma_staged_y).
  bool staged_y = false;
  /// The last round's split (plan_conv2d_wgmma_last_round, wgmma_last_round.cuh); step 9 only.
  /// split_parts = 1: every unit a whole tile, and the rest unused.
  int split_parts = 1;
  int split_from = 0;                  ///< the first split tile
  int split_steps = 0;                 ///< k-steps of a part
  float* split_sums = nullptr;         ///< a slot of fp32 sums per split tile, part and consumer warpgroup
  unsigned* split_arrivals = nullptr;  ///< a counter per split tile and consumer warpgroup, zero at the launch
};

/// The ring's stages for a tile BN wide of Rows taps a k-step (BN 64 or 128, Rows 1 or 3), for the host.
constexpr int ring_stages(int bn, int rows) {
  return bn == 64 ? (rows == 1 ? stages<64, 1> : stages<64, 3>) : (rows == 1 ? stages<128, 1> : stages<128, 3>);
}

// ---- halo tiles (steps 12 and 13): two rings ----
// The A box of a channel block (every tap's pixels) in a ring of its own, each
// tap's filter slice a stage of the B ring. Parts: the boxes a channel block
// has -- 1, or 2 for step 13's split operands (its hi and lo parts, a slot
// holding both and each tap's two slices two consecutive B stages).

/// One halo box: the largest (conv2d_nhwc_wgmma_halo_box_pixels), whole swizzle atoms.
inline constexpr int halo_box_bytes =
    (static_cast<int>(conv2d_nhwc_wgmma_halo_box_pixels()) * row_bytes + swizzle_atom_bytes - 1) / swizzle_atom_bytes *
    swizzle_atom_bytes;
/// An A slot: a channel block's Parts boxes.
template <int Parts = 1>
inline constexpr int halo_a_slot_bytes = Parts* halo_box_bytes;
/// A slots: the one the products read and two channel blocks ahead (one ahead with two parts).
template <int Parts = 1>
inline constexpr int halo_a_stages = Parts == 1 ? 3 : 2;
/// B stages (one tap's slice, or one part of it, each) the opt-in holds beside the A slots, at most
/// halo_max_b_stages and, with two parts, an even number (a tap's pair never straddles the wrap):
/// 9 at BN = 128 (16 KiB each), 12 at 64; with two parts 6 and 12.
inline constexpr int halo_max_b_stages = 12;
template <int BN, int Parts = 1>
inline constexpr int halo_b_stages_fit = (max_smem_bytes - swizzle_atom_bytes -
                                          halo_a_stages<Parts> * halo_a_slot_bytes<Parts> -
                                          stage_ring_barrier_bytes(halo_a_stages<Parts>) -
                                          stage_ring_barrier_bytes(halo_max_b_stages) - order_barrier_bytes -
                                          bias_stage_bytes<BN>) /
                                         b_tile_bytes<BN> / Parts* Parts;
template <int BN, int Parts = 1>
inline constexpr int halo_b_stages =
    halo_b_stages_fit<BN, Parts> < halo_max_b_stages ? halo_b_stages_fit<BN, Parts> : halo_max_b_stages;
template <int BN, int Parts = 1>
inline constexpr int halo_smem_bytes = swizzle_atom_bytes + halo_a_stages<Parts>* halo_a_slot_bytes<Parts> +
                                       halo_b_stages<BN, Parts>* b_tile_bytes<BN> +
                                       stage_ring_barrier_bytes(halo_a_stages<Parts>) +
                                       stage_ring_barrier_bytes(halo_b_stages<BN, Parts>) + order_barrier_bytes
                                       + bias_stage_bytes<BN>;
static_assert(halo_smem_bytes<128> <= max_smem_bytes && halo_smem_bytes<64> <= max_smem_bytes &&
                  halo_b_stages<128> >= 6 && halo_smem_bytes<128, 2> <= max_smem_bytes &&
                  halo_smem_bytes<64, 2> <= max_smem_bytes && halo_b_stages<128, 2> >= 4 &&
                  halo_b_stages<128, 2> % 2 == 0 && halo_b_stages<64, 2> % 2 == 0,
              "halo stages fit the opt-in");

/// Halo tiles' carve: 1024-aligned A slots, then the B stages, the two rings' barriers,
/// ping-pong's turn barriers and the staged bias.
template <int BN, int Parts = 1>
struct halo_smem_carve {
  std::uint32_t a;              ///< A slots
  std::uint32_t b;              ///< B stages
  std::uint32_t a_ring;         ///< the A ring's barriers
  std::uint32_t b_ring;         ///< the B ring's barriers
  std::uint32_t mainloop_done;  ///< ping-pong's turn barriers
  std::uint32_t bias;           ///< bias_stage_bytes<BN>: the staged bias (wgmma_store.cuh)
  __device__ __forceinline__ explicit halo_smem_carve(std::uint32_t raw)
      : a((raw + swizzle_atom_bytes - 1) & ~std::uint32_t(swizzle_atom_bytes - 1)),
        b(a + halo_a_stages<Parts> * halo_a_slot_bytes<Parts>),
        a_ring(b + halo_b_stages<BN, Parts> * b_tile_bytes<BN>),
        b_ring(a_ring + stage_ring_barrier_bytes(halo_a_stages<Parts>)),
        mainloop_done(b_ring + stage_ring_barrier_bytes(halo_b_stages<BN, Parts>)),
        bias(mainloop_done + order_barrier_bytes) {}
  __device__ __forceinline__ float* bias_in(unsigned char* smem) const {
    return reinterpret_cast<float*>(smem + (bias - smem_address(smem)));
  }
};

/// Halo tiles' taps of a channel block, in the order the producer loads their filter
/// slices (r, then s), and where each one's pixel rows start in the box: r W + s rows
/// of a box W pixels wide (the consumers' A descriptors are an add of this).
struct halo_tap {
  int r = 0, s = 0;
  __device__ __forceinline__ std::uint32_t box_bytes(int box_width) const {
    return static_cast<std::uint32_t>((r * box_width + s) * row_bytes);
  }
  /// The next tap of a filter `filter_width` taps wide.
  __device__ __forceinline__ void next(int filter_width) {
    if (++s == filter_width) {
      s = 0;
      ++r;
    }
  }
};

/// Accumulators per consumer thread of m64nBNk8: BN / 2.
template <int BN>
inline constexpr int accumulators = wgmma_accumulators<BN>;

/// The dynamic shared memory of a CTA with tiles BN wide: 1024-aligned (the
/// swizzle is a function of the address bits), the stages' A slots, their B
/// slots, the ring's barriers, ping-pong's two turn barriers, then the staged
/// bias (16-aligned: the barriers before it take 16 bytes a pair).
template <int BN, int Rows = 1>
struct smem_carve {
  std::uint32_t a;              ///< stages x A slot
  std::uint32_t b;              ///< stages x B slot
  std::uint32_t ring;           ///< the stage ring's barriers
  std::uint32_t mainloop_done;  ///< ping-pong's turn barriers
  std::uint32_t bias;           ///< bias_stage_bytes<BN>: the staged bias (wgmma_store.cuh)
  __device__ __forceinline__ explicit smem_carve(std::uint32_t raw)
      : a((raw + swizzle_atom_bytes - 1) & ~std::uint32_t(swizzle_atom_bytes - 1)),
        b(a + stages<BN, Rows> * a_slot_bytes<Rows>),
        ring(a + stages<BN, Rows> * stage_bytes<BN, Rows>),
        mainloop_done(ring + stage_ring_barrier_bytes(stages<BN, Rows>)),
        bias(mainloop_done + order_barrier_bytes) {}
  /// The staged bias as a pointer into `smem`, the kernel's __shared__ array (whose address
  /// the carve was made from): the compiler then knows its accesses as shared-memory ones,
  /// which no store into y can overlap.
  __device__ __forceinline__ float* bias_in(unsigned char* smem) const {
    return reinterpret_cast<float*>(smem + (bias - smem_address(smem)));
  }
};

}  // namespace kf::detail::conv2d_wgmma
