// SPDX-License-Identifier: Apache-2.0
// Gradient step 3 -- implicit_gemm_wgmma: the filter gradient (wgrad) of an
// NHWC layer in __half / __nv_bfloat16 as an implicit GEMM on Hopper's
// warpgroup products (wgmma, sm_90a), both operands loaded by TMA straight
// from the caller's x and dy. Device code, sm_90a only. Host side:
// src/conv2d/backward_sm90a.cu, wgrad_wgmma_sm90a.hpp; plan: wgrad_wgmma_plan.hpp.
//
//   dw (K x RSC) = dy^T (K x NPQ) * im2col(x) (NPQ x RSC), reduced over the
//   output pixels (CUTLASS's wgrad: A the output gradient, B x in im2col mode).
//
// What changes from step 2 (im2col in a workspace, dy^T packed, kf::matmul with
// split-k) and why it is faster:
//  * No im2col matrix: the B tile of tap (r, s) and 64 channels is ONE 4-D TMA
//    box of x (the box step 7's forward loads for A), zero-filled in the
//    padding, at the layer's stride. No packing of dy^T: the A tile is one box
//    of dy seen as K x Q x P x N, pixel-outer in shared memory -- an M-major A
//    that 16-bit wgmma reads with its transpose bit (x's box likewise N-major).
//  * The reduction runs over whole output-pixel patches, so dy's and x's boxes
//    hold the same pixels in the same order whatever the image rows and stride.
//  * Tiles fit the layer (bm = 64 output channels where K <= 64, else 128); the
//    two consumer warpgroups take alternate stages of the whole tile and add
//    their sums through shared memory: no half-empty products. Where C > 128
//    and K > 64 (16-bit) the tiles are 128 x 256, split between the consumers
//    by rows instead (both on every stage, m64n256 each): twice the products a
//    landed byte -- an SM takes in only about 73 GB/s by TMA, which bounds
//    128-wide tiles (wgrad_wgmma_plan.hpp).
//  * Filter-column tiles (R = 3 at stride_h = dilation_h = 1): taps (0, s),
//    (1, s), (2, s) read input rows one apart, so one 8 x 10 pixel box serves
//    all three (tap r from row 8 r on, a 1024-byte step): 64 + 80 box rows for
//    three taps' products instead of 3 x (64 + 64) -- the kernel is bound by
//    that traffic.
//  * Split-k over the pixels (whole patches a slice): the output is small and
//    the reduction long; slices write fp32 slabs, summed in slab order and
//    rounded once: by the tile's slices together where each thread then sums at
//    most one quad (a cooperative launch, one wave: wgrad_wgmma/slab_sum.cuh),
//    else by the shared deterministic reduction (common/split_k_reduce.cuh).
// Layers TMA cannot read in place (C * sizeof(T) not a multiple of 16 bytes,
// as the RGB stem's, or x misaligned) come as their column fold; float, K rows
// off 16 bytes, strides above 8 and misaligned dy take step 2
// (backward_filter.cu decides); the ReLU mask is applied to dy in a workspace.
// Note: x is read under the patch's whole box, including pixels of output
// positions past P or Q, which meet dy's zeros -- unless such an x value is Inf
// or NaN, which then turns a sum that never includes it into NaN (only input
// rows / columns a layer's stride never reads). Measured speed and the choices'
// evidence: benchmarks/tuning/conv2d.md, "gradient step 3".
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../../arch/guards.cuh"
#include "../../arch/mbarrier_sm90.cuh"
#include "../../arch/pipeline_sm90.cuh"
#include "../../arch/smem.cuh"
#include "../../arch/tma_sm90.cuh"
#include "../../arch/warpgroup_sm90.cuh"
#include "../../arch/wgmma_sm90.cuh"
#include "../../common/kernel.cuh"
#include "../../common/numeric.cuh"
#include "../../matmul/wgmma/config.cuh"  // the warpgroup roles and the 128-byte swizzle, shared
#include "wgrad_wgmma/cta.cuh"            // the tile, the patches and the consumers' sums, shared with step 4
#include "wgrad_wgmma/slab_sum.cuh"       // the split's slabs summed by its own CTAs
#include "wgrad_wgmma_plan.hpp"

namespace kf::detail {
namespace conv2d_wgrad_wgmma {

// The roles, the m64 block and the 128-byte swizzle: the Hopper GEMM's (matmul/wgmma/config.cuh).
using wgmma::consumer_warpgroups;
using wgmma::swizzle_atom_bytes;
using wgmma::threads;  // a producer warpgroup + two consumer warpgroups
using wgmma::wgmma_m;
inline constexpr int row_bytes = wgmma::swizzle_row_bytes;  ///< one pixel's 64 channels of a box: one swizzled row
/// Channels of one TMA box (either operand) and output pixels of one reduction step (a patch): the plan's.
inline constexpr int box_channels = static_cast<int>(conv2d_wgrad_wgmma_box_channels);
inline constexpr int step_pixels = static_cast<int>(conv2d_wgrad_wgmma_step_pixels);
inline constexpr int wgmma_k = 16;                         ///< m64nNk16: 16 pixels a product
inline constexpr int products = step_pixels / wgmma_k;     // 4 per m64 block per step
inline constexpr int product_bytes = wgmma_k * row_bytes;  // 2 KiB: the next 16 pixel rows
inline constexpr int box_bytes = step_pixels * row_bytes;  // 8 KiB: a box's slot (a patch may fill fewer rows)
inline constexpr int ring_bytes = 192 * 1024;              ///< the stages' shared memory
static_assert(box_channels * 2 == row_bytes, "a box row: 64 16-bit channels");
/// The named barrier of the two consumer warpgroups (0 is __syncthreads').
inline constexpr int consumers_barrier = 1;
/// The named barrier of the threads that store a slab (slab_sum.cuh).
inline constexpr int slab_barrier = 2;

/// Filter-column tiles: the patch's output columns (its rows: step_pixels / column_patch).
inline constexpr int column_patch = static_cast<int>(conv2d_wgrad_wgmma_column_patch);

/// What the tile bm x bn sets: BM / 64 boxes of dy and BN / 64 boxes of x per
/// stage (filter-column tiles, Rows > 1: one x box of Rows - 1 more image rows
/// than the patch), as many stages as ring_bytes holds (12, 10, 8 or 6: even,
/// so that alternate steps keep to one consumer's stages), and each consumer's
/// accumulators (BM / 64 blocks of m64nBN). The 128 x 256 tile (4 stages) is
/// split between the consumers by rows instead, both reading every stage (each
/// its own m64 block of the 256 columns: m64n256).
template <int BM, int BN, int Rows>
struct shape {
  static_assert(Rows == 1 ? ((BM == 64 || BM == 128) && (BN == 64 || BN == 128)) || (BM == 128 && BN == 256)
                          : BM == 64 && BN == 64 * Rows,
                "wgrad tiles 64 or 128 x 64 or 128, 128 x 256, or 64 x 64 Rows");
  /// Both consumers on every stage, consumer c on m64 block c (else alternate
  /// stages, each the whole tile).
  static constexpr bool split_rows = BN == 256;
  static constexpr int a_boxes = BM / box_channels;
  static constexpr int b_boxes = Rows == 1 ? BN / box_channels : 1;
  static constexpr int a_bytes = a_boxes * box_bytes;
  /// x's box: one box_bytes slot a 64-channel block, or the column tile's taller box.
  static constexpr int b_box_bytes =
      Rows == 1 ? box_bytes : box_bytes + static_cast<int>(conv2d_filter_column_tap_bytes(Rows - 1));
  /// Consecutive 64-wide N blocks of B: the next channel block's box, or the next tap's rows.
  static constexpr int b_block_bytes = Rows == 1 ? box_bytes : static_cast<int>(conv2d_filter_column_tap_bytes(1));
  static constexpr int stage_bytes = a_bytes + b_boxes * b_box_bytes;
  static constexpr int stages = ring_bytes / stage_bytes;
  static constexpr int accumulators = wgmma_accumulators<BN>;  ///< per m64 block per thread
  /// The m64 blocks a consumer sums: all of the tile's, or (split_rows) one.
  static constexpr int consumer_blocks = split_rows ? 1 : a_boxes;
  /// Warps that read a stage before it is refilled.
  static constexpr int stage_readers = (split_rows ? consumer_warpgroups : 1) * warps_per_warpgroup;
  /// Tiles start 1024-aligned (the swizzle is a function of the address bits):
  /// one atom of slack, the stages, then the ring's barriers.
  static constexpr int smem_bytes = swizzle_atom_bytes + stages * stage_bytes + stage_ring_barrier_bytes(stages);
  static_assert(split_rows || (stages % 2 == 0 && stages >= 4), "an even ring: each stage is read by one consumer");
  static_assert(!split_rows || stages >= 3, "a ring");
  static_assert(!split_rows || a_boxes == consumer_warpgroups, "a row block a consumer");
  static_assert(split_rows || BM * BN * 4 <= stages * stage_bytes, "consumer 1's fp32 tile fits the idle ring");
  static_assert(smem_bytes <= wgmma::max_smem_bytes, "the stages fit the shared-memory opt-in");
};

/// What the kernel needs besides the two tensor maps (filled by backward_sm90a.cu):
/// the layer and plan (conv2d_wgrad::geometry), and:
template <class T>
struct params : conv2d_wgrad::geometry {
  T* dw = nullptr;           ///< KRSC, written where unsplit
  float* partial = nullptr;  ///< split: slab z (K x RSC fp32) at partial + z * K * RSC; else nullptr
  /// split, its slabs summed in the kernel (a cooperative launch): one zeroed
  /// counter a tile (wgrad_wgmma/slab_sum.cuh); else nullptr (the caller sums them)
  unsigned* arrivals = nullptr;
  int box_row_bytes = 0;     ///< patch pixels x 128: what one box lands
  bool pair_stores = false;  ///< dw aligned to two elements (C is even): stores of element pairs
  int x_box_bytes = 0;       ///< what x's box lands (filter-column tiles: 8 x 10 pixels x 128)
};

}  // namespace conv2d_wgrad_wgmma

/// dw = dy^T im2col(x) for one output tile and one slice of the reduction per
/// CTA: blockIdx.x the tile (k tile fastest, then c tile, then tap r S + s --
/// filter-column tiles: then the filter column s), blockIdx.y the slice
/// (patches [y pps, min((y + 1) pps, patches))). map_dy: dy as (k, q, p, n),
/// box 64 x wt x ht x nt. map_x: x as (c, w, h, n), box 64 x wt stride_w x ht
/// stride_h x nt with element strides (1, stride_w, stride_h, 1) (filter-column
/// tiles: 64 x 8 stride_w x 10 x 1). Both 128-byte swizzled, zero fill outside.
template <class T, int BM, int BN, int Rows>
KF_KERNEL void __launch_bounds__(conv2d_wgrad_wgmma::threads, 1)
    conv2d_wgrad_wgmma_kernel(const __grid_constant__ CUtensorMap map_dy, const __grid_constant__ CUtensorMap map_x,
                              const conv2d_wgrad_wgmma::params<T> prm) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace conv2d_wgrad_wgmma;
  using sh = shape<BM, BN, Rows>;
  constexpr int kStages = sh::stages;
  constexpr int kAcc = sh::accumulators;
  extern __shared__ unsigned char conv2d_wgrad_wgmma_smem[];
  // The stages, the ring after them, and the rows past a short patch zeroed once: they stay zero, in
  // both operands (cta.cuh: cta_start).
  const conv2d_wgrad::cta_start<kStages, sh::stage_bytes, threads> cta(conv2d_wgrad_wgmma_smem, prm.zero_tail, &map_dy,
                                                                       &map_x, sh::stage_readers);
  const std::uint32_t base = cta.base;
  const stage_ring<kStages>& ring = cta.ring;

  // The tile: output channels k0.., input channels c0.. of tap (r, s); the slice: patches [first, end).
  constexpr int tile_channels = BN / Rows;
  const conv2d_wgrad::cta_tile tile = conv2d_wgrad::cta_tile::of<BM, tile_channels, Rows>(prm);
  const int k0 = tile.k0, c0 = tile.c0, tap = tile.tap, r = tile.r, s = tile.s;
  const int first = tile.first, end = tile.end;
  const int steps = end - first;

  const int warpgroup = static_cast<int>(threadIdx.x) / warpgroup_threads;
  const int tid_in_warpgroup = static_cast<int>(threadIdx.x) % warpgroup_threads;

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    if (tid_in_warpgroup == 0) {
      // Boxes wholly past K or C are not loaded: their rows / columns of the
      // products are never stored, and a GEMM's row (column) only reaches its
      // own outputs. The rest land box_row_bytes each.
      const int a_live = min(sh::a_boxes, (prm.k - k0 + box_channels - 1) / box_channels);
      const int b_live = min(sh::b_boxes, (prm.c - c0 + box_channels - 1) / box_channels);
      const unsigned stage_tx = static_cast<unsigned>(a_live * prm.box_row_bytes + b_live * prm.x_box_bytes);
      const int w_tap = s * prm.dilation_w - prm.pad_w, h_tap = r * prm.dilation_h - prm.pad_h;
      ring_position<kStages> at;
      for (int g = first; g < end; ++g) {
        const conv2d_wgrad::patch_origin o(prm, g);
        const std::uint32_t full = ring.producer_acquire(at, stage_tx);
        const std::uint32_t stage = base + at.stage * sh::stage_bytes;
        for (int j = 0; j < a_live; ++j) {
          tma_load_4d(stage + j * box_bytes, &map_dy, k0 + j * box_channels, o.q0, o.p0, o.n0, full);
        }
        for (int j = 0; j < b_live; ++j) {
          tma_load_4d(stage + sh::a_bytes + j * sh::b_box_bytes, &map_x, c0 + j * box_channels,
                      o.q0 * prm.stride_w + w_tap, o.p0 * prm.stride_h + h_tap, o.n0, full);
        }
        at.advance();
      }
    }
  } else {
    // ---------------------------------------------------------------- consumers
    const int consumer = warpgroup - 1;
    const int lane = tid_in_warpgroup % 32;
    const int warp = tid_in_warpgroup / 32;
    constexpr int blocks = sh::consumer_blocks;
    // The consumer's first m64 block: 0 (it sums every block), or -- split_rows -- its own.
    const int block0 = sh::split_rows ? consumer : 0;
    float d[blocks][kAcc];
#pragma unroll
    for (int mb = 0; mb < blocks; ++mb) {
#pragma unroll
      for (int i = 0; i < kAcc; ++i) d[mb][i] = 0.0f;
      fence_operands(d[mb]);
    }
    // A: M-major (a row holds 64 output channels of one pixel), one m64 block a
    // box; B: N-major (64 input channels of one pixel), 64-wide N blocks one
    // box apart, or -- filter-column tiles -- one tap (8 box rows) apart (the
    // leading byte offset); 8-pixel atoms 1024 bytes apart.
    const std::uint64_t a_desc0 = smem_descriptor_sw128(base, box_bytes, swizzle_atom_bytes);
    const std::uint64_t b_desc0 = smem_descriptor_sw128(base + sh::a_bytes, sh::b_block_bytes, swizzle_atom_bytes);
    // Alternate stages (consumer 1 from stage 1), or -- split_rows -- every stage.
    constexpr int stride = sh::split_rows ? 1 : consumer_warpgroups;
    ring_position<kStages> at;
    if (!sh::split_rows && consumer == 1) at.advance();
    int previous = -1;
    for (int step = sh::split_rows ? 0 : consumer; step < steps; step += stride) {
      ring.consumer_wait(at);
      const std::uint32_t stage_offset = at.stage * sh::stage_bytes;
      wgmma_fence();
#pragma unroll
      for (int mb = 0; mb < blocks; ++mb) {
#pragma unroll
        for (int kk = 0; kk < products; ++kk) {
          const std::uint64_t a =
              smem_descriptor_advance(a_desc0, stage_offset + (block0 + mb) * box_bytes + kk * product_bytes);
          const std::uint64_t b = smem_descriptor_advance(b_desc0, stage_offset + kk * product_bytes);
          wgmma_m64nNk16<T, BN, /*TransB=*/1, /*TransA=*/1>(d[mb], a, b);
        }
      }
      wgmma_commit();
      // Keep this stage's products in flight; the previous stage's have completed.
      wgmma_wait<1>();
      if (previous >= 0 && lane == 0) ring.release(previous);
      previous = at.stage;
      at.advance(stride);
    }
    wgmma_wait<0>();
#pragma unroll
    for (int mb = 0; mb < blocks; ++mb) fence_operands(d[mb]);
    if (previous >= 0 && lane == 0) ring.release(previous);

    // The two consumers' sums, in consumer 0 (consumer 1's through the idle ring);
    // split_rows: each consumer holds its own rows' sums.
    if constexpr (!sh::split_rows) {
      if (!conv2d_wgrad::add_consumer_sums(d, reinterpret_cast<float*>(cta.stages), consumer, tid_in_warpgroup,
                                           consumers_barrier)) {
        return;
      }
    }

    // Accumulator i of a thread: row 16 warp + lane / 4 + 8 ((i % 4) / 2) of
    // its m64 block, column 8 (i / 4) + 2 (lane % 4) + i % 2. Column n is
    // channel c0 + n of the tap, or -- filter-column tiles -- channel c0 + n %
    // 64 of tap (n / 64, s).
    const long long slab = static_cast<long long>(prm.k) * prm.rsc;
    float* const partial = prm.partial != nullptr ? prm.partial + blockIdx.y * slab : nullptr;
#pragma unroll
    for (int mb = 0; mb < blocks; ++mb) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int k = k0 + (block0 + mb) * wgmma_m + warp * 16 + lane / 4 + 8 * h;
        if (k >= prm.k) continue;
#pragma unroll
        for (int g = 0; g < kAcc / 4; ++g) {
          constexpr int groups_per_tap = tile_channels / 8;
          const int tap_of_g = Rows == 1 ? tap : (g / groups_per_tap) * prm.s + s;
          const long long row = static_cast<long long>(k) * prm.rsc + static_cast<long long>(tap_of_g) * prm.c;
          const int c = c0 + 8 * (Rows == 1 ? g : g % groups_per_tap) + 2 * (lane % 4);
          if (c >= prm.c) continue;  // C is a multiple of 8: c + 1 < C too
          const int i = 4 * g + 2 * h;
          const float v0 = d[mb][i], v1 = d[mb][i + 1];
          if (partial != nullptr) {
            *reinterpret_cast<float2*>(partial + row + c) = make_float2(v0, v1);  // row + c even: 8-byte aligned
          } else if (prm.pair_stores) {
            *reinterpret_cast<std::uint32_t*>(prm.dw + row + c) = from_compute_pair<T>(v0, v1);
          } else {
            prm.dw[row + c] = from_compute<T>(v0);
            prm.dw[row + c + 1] = from_compute<T>(v1);
          }
        }
      }
    }
    if (prm.arrivals != nullptr) {  // the split's slabs, summed by the tile's slices together
      constexpr int storers = (sh::split_rows ? consumer_warpgroups : 1) * warpgroup_threads;
      const int storer = (sh::split_rows ? consumer : 0) * warpgroup_threads + tid_in_warpgroup;
      conv2d_wgrad::sum_tile_slabs<T, BM, tile_channels, Rows>(prm, tile, prm.partial, prm.arrivals + blockIdx.x,
                                                               prm.dw, prm.pair_stores, storer, storers, slab_barrier);
    }
  }
#endif
}

}  // namespace kf::detail
