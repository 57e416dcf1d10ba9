// SPDX-License-Identifier: Apache-2.0
// Gradient step 4 -- implicit_gemm_wgmma in TF32: the filter gradient (wgrad)
// of an NHWC float layer under math_mode::tf32 as an implicit GEMM on Hopper's
// warpgroup products (wgmma, sm_90a), x loaded by TMA straight from the
// caller's tensor. Device code, sm_90a only. Host side:
// src/conv2d/backward_sm90a.cu, wgrad_wgmma_sm90a.hpp; plan: wgrad_wgmma_plan.hpp.
//
//   dw^T (RSC x K) = im2col(x)^T (RSC x NPQ) * dy (NPQ x K), reduced over the
//   output pixels; the epilogue stores the transpose.
//
// What changes from step 2 (im2col in a workspace, kf::matmul in TF32) and why
// it is faster:
//  * No im2col matrix (231 MB written and read back for N32 C64 56x56 3x3): the
//    A tile of tap (r, s) and 32 channels is ONE 4-D TMA box of x -- step 3's.
//  * TF32 wgmma has no transpose bit: B must be k-major in shared memory, and
//    over the pixels both x and dy are MN-major in NHWC. So x is wgmma's A from
//    REGISTERS, which may take any layout: the consumers load it from the TMA
//    box with the swapped TF32 product's conflict-free fragment map (matmul's
//    wgmma/swap_ab.cuh; the epilogue undoes its row permutation). dy is B,
//    k-major: dy_t, K rows of the pixels in patch order, written by a pre-pass
//    (conv2d_dy_patch_t in passes.cuh: masked, rounded to TF32) and read in
//    2-D TMA boxes of 32 pixels x bn output channels.
//  * Step 3's machinery, not a copy: its plan (32-pixel patches at 4 bytes), its
//    tiles and order, its pixel split-k and deterministic reduction, its column
//    fold for layers TMA cannot read in place, its filter-column tiles, its two
//    consumers on alternate steps summed through shared memory.
//  * Registers: a consumer holds its accumulators and one step's fragments, so
//    the producer gives its registers away (setmaxnreg); while one consumer
//    reloads fragments the other's products keep the tensor cores busy.
// Not here: C * 4 bytes off 16 or x misaligned (the column fold), strides above
// 8; 1x1 stride-1 unpadded layers stay on step 2 under `best` (x is its own
// im2col: conv2d_wgrad_tf32_preferred). As in step 3, x is read under the
// patch's whole box: an Inf or NaN in input rows / columns the stride never
// reads turns sums that never include it into NaN. Figures:
// benchmarks/tuning/conv2d.md (bench_conv_backward's tf32 filter rows).
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
#include "../../matmul/wgmma/config.cuh"   // the warpgroup roles, the 128-byte swizzle, the register hand-off
#include "../../matmul/wgmma/swap_ab.cuh"  // the conflict-free fragment map of N-major fp32 A
#include "wgrad_wgmma/cta.cuh"             // the tile, the patches and the consumers' sums, step 3's
#include "wgrad_wgmma_plan.hpp"

namespace kf::detail {
namespace conv2d_wgrad_tf32 {

using wgmma::consumer_registers;
using wgmma::consumer_warpgroups;
using wgmma::producer_registers;
using wgmma::swizzle_atom_bytes;
using wgmma::threads;  // a producer warpgroup + two consumer warpgroups
using wgmma::wgmma_m;
inline constexpr int row_bytes = wgmma::swizzle_row_bytes;  ///< a box row: 32 channels of x or 32 pixels of dy_t
inline constexpr int element_bytes = 4;
/// Channels of one x box and output pixels of one reduction step (a patch): the plan's.
inline constexpr int box_channels = static_cast<int>(conv2d_wgrad_wgmma_box_channels_of(element_bytes));
inline constexpr int step_pixels = static_cast<int>(conv2d_wgrad_wgmma_step_pixels_of(element_bytes));
inline constexpr int wgmma_k = 8;                         ///< m64nNk8: 8 pixels a product
inline constexpr int k_steps = step_pixels / wgmma_k;     // 4 products per m-block per step
inline constexpr int k_step_bytes = wgmma_k * row_bytes;  // x: the next 8 pixel rows (one swizzle atom)
inline constexpr int ring_bytes = 192 * 1024;             ///< the stages' shared memory
static_assert(box_channels * element_bytes == row_bytes && step_pixels * element_bytes == row_bytes,
              "a box row: 32 floats");
static_assert(box_channels == wgmma::swap_box_rows, "an m-block's 64 rows: two x boxes, as swap_ab's A");
static_assert(k_step_bytes == swizzle_atom_bytes, "a k-step keeps a fragment's swizzle (row % 8)");
/// The named barrier of the two consumer warpgroups (0 is __syncthreads').
inline constexpr int consumers_barrier = 1;
/// Filter-column tiles: the patch's output columns (its rows: step_pixels / column_patch).
inline constexpr int column_patch = static_cast<int>(conv2d_wgrad_wgmma_column_patch);

/// The GEMM tile BM x BN: BM = the input channels of one tap (64 or 128), or --
/// filter-column tiles, Rows = 3 -- 64 channels of each of the 3 taps of a
/// filter column (192); BN = output channels (64 or 128). A stage: x's boxes
/// (32 channels each: BM / 32 of one tap, or 2 taller boxes that hold the
/// column's taps) and dy_t's box (BN rows of 32 pixels); as many stages as
/// ring_bytes holds, even (alternate steps keep to one consumer's stages).
template <int BM, int BN, int Rows>
struct shape {
  static_assert(Rows == 1 ? (BM == 64 || BM == 128) && (BN == 64 || BN == 128) : BM == 64 * Rows && BN == 64,
                "TF32 wgrad tiles 64 or 128 x 64 or 128, or (Rows x 64) x 64");
  static constexpr int m_blocks = BM / wgmma_m;
  static constexpr int x_boxes = Rows == 1 ? BM / box_channels : wgmma_m / box_channels;
  /// Pixel rows of an x box: the patch's, or the column tile's Rows - 1 more image rows (8 pixels each).
  static constexpr int x_box_rows = step_pixels + (Rows - 1) * column_patch;
  static constexpr int x_box_bytes = x_box_rows * row_bytes;
  /// Where m-block mb's rows start: its two boxes (one tap's channels), or -- filter-column
  /// tiles -- tap mb's rows, mb image rows down the boxes.
  static constexpr int m_block_bytes = Rows == 1 ? 2 * x_box_bytes : column_patch * row_bytes;
  static constexpr int a_bytes = x_boxes * x_box_bytes;
  static constexpr int b_bytes = BN * row_bytes;
  static constexpr int stage_bytes = a_bytes + b_bytes;
  static constexpr int stages = ring_bytes / stage_bytes / 2 * 2;
  static constexpr int accumulators = wgmma_accumulators<BN>;  ///< per m-block per thread
  /// Tiles start 1024-aligned (the swizzle is a function of the address bits):
  /// one atom of slack, the stages, then the ring's barriers.
  static constexpr int smem_bytes = swizzle_atom_bytes + stages * stage_bytes + stage_ring_barrier_bytes(stages);
  static_assert(x_box_bytes % swizzle_atom_bytes == 0 && b_bytes % swizzle_atom_bytes == 0,
                "every box starts on a swizzle atom");
  static_assert(stages >= 4, "an even ring of at least 4 stages: each stage is read by one consumer");
  static_assert(m_blocks * accumulators * warpgroup_threads * 4 <= stages * stage_bytes,
                "consumer 1's fp32 tile fits the idle ring");
  static_assert(smem_bytes <= wgmma::max_smem_bytes, "the stages fit the shared-memory opt-in");
};

/// What the kernel needs besides the two tensor maps (filled by backward_sm90a.cu):
/// the layer and plan (conv2d_wgrad::geometry, step 3's), and:
struct params : conv2d_wgrad::geometry {
  float* dw = nullptr;       ///< KRSC, written where unsplit
  float* partial = nullptr;  ///< split: slab z (K x RSC fp32) at partial + z * K * RSC; else nullptr
  int x_box_bytes = 0;       ///< what one x box lands (patch pixels x 128; filter-column tiles: 8 x 6 pixels x 128)
};

}  // namespace conv2d_wgrad_tf32

/// dw = (im2col(x)^T dy)^T for one output tile and one slice of the reduction
/// per CTA: blockIdx.x the tile (k tile fastest, then c tile, then tap r S + s
/// -- filter-column tiles: then the filter column s), blockIdx.y the slice
/// (patches [y pps, min((y + 1) pps, patches))). map_x: x as (c, w, h, n), box
/// 32 x wt stride_w x ht stride_h x nt with element strides (1, stride_w,
/// stride_h, 1) (filter-column tiles: 32 x 8 x 6 x 1); map_dy: dy_t as (pixel
/// column, k), box 32 x BN. Both 128-byte swizzled, zero fill outside.
template <int BM, int BN, int Rows>
KF_KERNEL void __launch_bounds__(conv2d_wgrad_tf32::threads, 1)
    conv2d_wgrad_tf32_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_dy,
                             const conv2d_wgrad_tf32::params prm) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace conv2d_wgrad_tf32;
  using sh = shape<BM, BN, Rows>;
  constexpr int kStages = sh::stages;
  constexpr int kAcc = sh::accumulators;
  constexpr int kBlocks = sh::m_blocks;
  extern __shared__ unsigned char conv2d_wgrad_tf32_smem[];
  // The stages, the ring after them, and the x rows past a short patch zeroed once (dy_t's columns
  // there are zero too; cta.cuh: cta_start).
  const conv2d_wgrad::cta_start<kStages, sh::stage_bytes, threads> cta(conv2d_wgrad_tf32_smem, prm.zero_tail, &map_x,
                                                                       &map_dy);
  const std::uint32_t base = cta.base;
  const stage_ring<kStages>& ring = cta.ring;

  // The tile: output channels k0.., input channels c0.. of tap (r, s) (filter-column tiles: of taps
  // (0..2, s)), step 3's order; the slice: patches [first, end).
  constexpr int tile_channels = BM / Rows;
  const conv2d_wgrad::cta_tile tile = conv2d_wgrad::cta_tile::of<BN, tile_channels, Rows>(prm);
  const int k0 = tile.k0, c0 = tile.c0, tap = tile.tap, r = tile.r, s = tile.s;
  const int first = tile.first, end = tile.end;
  const int steps = end - first;

  const int warpgroup = static_cast<int>(threadIdx.x) / warpgroup_threads;
  const int tid_in_warpgroup = static_cast<int>(threadIdx.x) % warpgroup_threads;

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<producer_registers>();
    if (tid_in_warpgroup == 0) {
      // x boxes wholly past C are not loaded: their rows of the product are
      // never stored, and a GEMM's row reaches its own outputs only. dy_t's
      // box is loaded whole (rows past K: TMA's zero fill).
      const int x_live = min(sh::x_boxes, (prm.c - c0 + box_channels - 1) / box_channels);
      const unsigned stage_tx = static_cast<unsigned>(x_live * prm.x_box_bytes + sh::b_bytes);
      const int w_tap = s * prm.dilation_w - prm.pad_w, h_tap = r * prm.dilation_h - prm.pad_h;
      ring_position<kStages> at;
      for (int g = first; g < end; ++g) {
        const conv2d_wgrad::patch_origin o(prm, g);
        const std::uint32_t full = ring.producer_acquire(at, stage_tx);
        const std::uint32_t stage = base + at.stage * sh::stage_bytes;
        for (int j = 0; j < x_live; ++j) {
          tma_load_4d(stage + j * sh::x_box_bytes, &map_x, c0 + j * box_channels, o.q0 * prm.stride_w + w_tap,
                      o.p0 * prm.stride_h + h_tap, o.n0, full);
        }
        tma_load_2d(stage + sh::a_bytes, &map_dy, g * step_pixels, k0, full);
        at.advance();
      }
    }
  } else {
    // ---------------------------------------------------------------- consumers
    setmaxnreg_inc<consumer_registers>();
    const int consumer = warpgroup - 1;
    const int lane = tid_in_warpgroup % 32;
    const int warp = tid_in_warpgroup / 32;
    float d[kBlocks][kAcc];
#pragma unroll
    for (int mb = 0; mb < kBlocks; ++mb) {
#pragma unroll
      for (int i = 0; i < kAcc; ++i) d[mb][i] = 0.0f;
      fence_operands(d[mb]);
    }
    // A (x, N-major: a box row holds 32 channels of one pixel): the thread's
    // fragment offsets in m-block 0 at k-step 0 (k-step kk: 8 rows further,
    // m-block mb: m_block_bytes further). B (dy_t, k-major: a row holds 32
    // pixels of one output channel): 8-row atoms 1024 bytes apart.
    std::uint32_t frag_offset[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      frag_offset[i] = static_cast<std::uint32_t>(wgmma::swap_fragment_offset_in(warp, lane, i, sh::x_box_bytes));
    }
    const std::uint64_t b_desc0 = smem_descriptor_sw128(base + sh::a_bytes);
    ring_position<kStages> at;
    if (consumer == 1) at.advance();
    for (int step = consumer; step < steps; step += consumer_warpgroups) {
      ring.consumer_wait(at);
      const std::uint32_t stage_offset = at.stage * sh::stage_bytes;
      const std::uint32_t x_stage = base + stage_offset;
      std::uint32_t frag[kBlocks][k_steps][4];
#pragma unroll
      for (int mb = 0; mb < kBlocks; ++mb) {
#pragma unroll
        for (int kk = 0; kk < k_steps; ++kk) {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            frag[mb][kk][i] = load_shared_b32(x_stage + frag_offset[i] + mb * sh::m_block_bytes + kk * k_step_bytes);
          }
        }
      }
      wgmma_fence();
#pragma unroll
      for (int mb = 0; mb < kBlocks; ++mb) {
#pragma unroll
        for (int kk = 0; kk < k_steps; ++kk) {
          // B: k-major, the k-step's 8 pixels 32 bytes along the swizzled rows.
          const std::uint64_t b = smem_descriptor_advance(b_desc0, stage_offset + kk * wgmma_k * element_bytes);
          wgmma_m64nNk8_tf32_rs<BN>(d[mb], frag[mb][kk], b);
        }
      }
      wgmma_commit();
      // The fragments are reloaded next step: wait for every product that reads them.
      wgmma_wait<0>();
#pragma unroll
      for (int mb = 0; mb < kBlocks; ++mb) fence_operands(d[mb]);
      if (lane == 0) ring.release(at.stage);
      at.advance(consumer_warpgroups);
    }

    // The two consumers' sums, in consumer 0 (consumer 1's through the idle ring).
    if (!conv2d_wgrad::add_consumer_sums(d, reinterpret_cast<float*>(cta.stages), consumer, tid_in_warpgroup,
                                         consumers_barrier)) {
      return;
    }

    // Accumulator i of m-block mb: row 16 warp + lane / 4 + 8 ((i % 4) / 2),
    // the input channel swap_row(warp, lane / 4 + 8 ((i % 4) / 2)) of the
    // m-block (the fragments' permutation); column 8 (i / 4) + 2 (lane % 4) +
    // i % 2, output channel k0 + that. M-block mb is channels c0 + 64 mb.. of
    // the tap, or -- filter-column tiles -- channels c0.. of tap (mb, s).
    const long long slab = static_cast<long long>(prm.k) * prm.rsc;
    float* const out = prm.partial != nullptr ? prm.partial + blockIdx.y * slab : prm.dw;
#pragma unroll
    for (int mb = 0; mb < kBlocks; ++mb) {
      const int tap_of_mb = Rows == 1 ? tap : mb * prm.s + s;
      const int c_of_mb = Rows == 1 ? c0 + mb * wgmma_m : c0;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = c_of_mb + wgmma::swap_row(warp, lane / 4 + 8 * h);
        if (c >= prm.c) continue;
        const long long column = static_cast<long long>(tap_of_mb) * prm.c + c;
#pragma unroll
        for (int g = 0; g < kAcc / 4; ++g) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int k = k0 + 8 * g + 2 * (lane % 4) + e;
            if (k >= prm.k) continue;
            const int i = 4 * g + 2 * h + e;
            out[static_cast<long long>(k) * prm.rsc + column] = d[mb][i];
          }
        }
      }
    }
  }
#endif
}

}  // namespace kf::detail
