// SPDX-License-Identifier: Apache-2.0
// Host-side planning of gradient step 5 (05_wgrad_simt_fp32.cuh: dw of an
// exact-fp32 NCHW layer as an implicit GEMM on the CUDA cores), as pure
// functions the CPU tests cover (tests/conv2d/wgrad_simt_cpu_test.cpp): the
// tile grid and the split of the reduction over the N P Q output pixels. No
// CUDA calls.
#pragma once

#include <cstddef>

#include "../../common/grid.hpp"
#include "../../common/split_k_plan.hpp"
#include "../plan.hpp"  // conv2d_winograd_unsupported_reason
#include "kernelforge/conv.hpp"

namespace kf::detail {

/// The kernel's tile: 64 output channels x 128 filter taps (c, r, s) of dw,
/// reduced 16 output pixels a step, by 256 threads (4 x 8 sums each).
constexpr std::size_t conv2d_wgrad_simt_block_k = 64;
constexpr std::size_t conv2d_wgrad_simt_block_taps = 128;
constexpr std::size_t conv2d_wgrad_simt_step_pixels = 16;
constexpr int conv2d_wgrad_simt_threads = 256;
/// Resident CTAs an SM the kernel is built for (__launch_bounds__: at most 128
/// registers a thread; 25.6 KiB of shared memory each).
constexpr int conv2d_wgrad_simt_blocks_per_sm = 2;
/// Slices of the reduction of at least this many pixels on average (32 steps):
/// shorter ones spend more on their start, their store and the reduction than
/// they gain in parallelism.
constexpr std::size_t conv2d_wgrad_simt_min_slice_pixels = 512;
/// The split's fp32 partial tiles stay within this many bytes (a pooled workspace).
constexpr std::size_t conv2d_wgrad_simt_max_workspace_bytes = std::size_t{64} << 20;
/// The split-k reduction indexes the slabs with int: the cap keeps them below 2^31 floats.
static_assert(conv2d_wgrad_simt_max_workspace_bytes / sizeof(float) < (std::size_t{1} << 31),
              "step 5's slabs must stay below 2^31 elements");

/// best takes step 5 for layers of at most this many output channels; wider
/// ones keep step 2 (im2col + kf::matmul), whose 128 x 256 SGEMM tiles are then
/// full and do more multiply-adds per load than step 5's 4 x 8 per thread. H200,
/// 2026-12-04, same run, exact fp32 NCHW dw, step 5 / step 2 time: N32 C64 56x56
/// K64 0.293 / 0.690 ms, C128 28x28 K128 0.264 / 0.331, C256 14x14 K256 0.298 /
/// 0.263, the 7x7 stem K64 0.238 / 0.779, the 1x1 C256 -> K64 0.145 / 0.461.
constexpr std::size_t conv2d_wgrad_simt_max_k = 128;

/// Whether `best` computes an exact-fp32 NCHW layer's dw with step 5.
constexpr bool conv2d_wgrad_simt_preferred(std::size_t k) { return k <= conv2d_wgrad_simt_max_k; }

/// The launch of gradient step 5 over a K x CRS dw reduced over `pixels` (N P Q).
struct conv2d_wgrad_simt_plan {
  std::size_t tiles_k = 0, tiles_taps = 0;  ///< the tile grid over dw
  split_k_plan split;                       ///< slices of the pixels (k_slice: a multiple of the step)
  [[nodiscard]] std::size_t tiles() const { return tiles_k * tiles_taps; }
};

/// How steps 5 and 6 split their reduction (the pixels, the blocks t): only
/// where the tiles fill at most half of `resident_blocks` (the kernel's CTAs the
/// GPU holds at once), into at most that many CTAs, slices of at least
/// conv2d_wgrad_simt_min_slice_pixels on average in whole steps, slabs of
/// slab_bytes within the workspace cap.
inline split_k_policy wgrad_simt_split_policy(int resident_blocks, std::size_t slab_bytes) {
  split_k_policy policy;
  const std::size_t resident = resident_blocks > 0 ? static_cast<std::size_t>(resident_blocks) : 1;
  policy.max_tiles = resident / 2;
  policy.max_blocks = resident;
  policy.min_mean_slice = conv2d_wgrad_simt_min_slice_pixels;
  policy.granule = conv2d_wgrad_simt_step_pixels;
  policy.slice_bytes = slab_bytes;
  policy.max_workspace_bytes = conv2d_wgrad_simt_max_workspace_bytes;
  return policy;
}

/// Splits the pixels where the tiles fill at most half of `resident_blocks`
/// (the kernel's CTAs the GPU holds at once), into slices that fill about
/// them, each at least conv2d_wgrad_simt_min_slice_pixels long on average.
inline conv2d_wgrad_simt_plan plan_conv2d_wgrad_simt(std::size_t k, std::size_t crs, std::size_t pixels,
                                                     int resident_blocks) {
  conv2d_wgrad_simt_plan plan;
  plan.tiles_k = ceil_div(k, conv2d_wgrad_simt_block_k);
  plan.tiles_taps = ceil_div(crs, conv2d_wgrad_simt_block_taps);
  plan.split = plan_split_k(plan.tiles(), pixels, wgrad_simt_split_policy(resident_blocks, k * crs * sizeof(float)));
  return plan;
}

// ---- gradient step 6: Winograd dw on the same tile core ---------------------------
/// Step 6's output blocks, M x M (F(M x M, 3 x 3)): 2 (16 positions, as accurate
/// as the direct sum) or 4 (36 positions, 4x fewer products than direct, about 3x
/// the rounding error: benchmarks/tuning/winograd_dw/accuracy.cpp). 4: on the H200
/// (2026-12-04, dw through torch, paired) F(4x4) ran at 0.79 / 0.62 of cuDNN at the
/// C128 / C256 layers, F(2x2) at 0.66 / 0.59 (benchmarks/tuning/conv2d.md,
/// conv2d_wgrad_winograd_m). Only this M is compiled.
constexpr int conv2d_wgrad_winograd_m = 4;
/// The transformed positions of F(m x m, 3 x 3): (m + 2)^2.
constexpr std::size_t conv2d_wgrad_winograd_positions_of(int m) {
  return static_cast<std::size_t>(m + 2) * static_cast<std::size_t>(m + 2);
}

/// best takes step 6 (Winograd dw) for exact-fp32 NCHW 3x3 stride-1 layers with
/// at least this many output and input channels, where the products dominate
/// the transforms' traffic: at C128 and C256 it ran 1.6x as fast as steps 5 / 2
/// (H200, 2026-12-04); C64 stays on step 5 (1.19x cuDNN). Layers between 64 and
/// 128 channels are not measured.
constexpr std::size_t conv2d_wgrad_winograd_min_channels = 128;

constexpr bool conv2d_wgrad_winograd_preferred(std::size_t k, std::size_t c) {
  return k >= conv2d_wgrad_winograd_min_channels && c >= conv2d_wgrad_winograd_min_channels;
}

/// Whether best's exact-fp32 NCHW dw of layer p runs step 6: the forward
/// Winograd's geometry (3x3, stride 1, no dilation) and K, C >= 128.
inline bool conv2d_wgrad_winograd_applies(const conv2d_params& p) {
  return conv2d_winograd_unsupported_reason(p.filter_height, p.filter_width, p.stride_h, p.stride_w, p.dilation_h,
                                            p.dilation_w) == nullptr &&
         conv2d_wgrad_winograd_preferred(p.out_channels, p.in_channels);
}

/// The launch of step 6's products: K x C for each of the (m + 2)^2 positions,
/// reduced over the m x m output blocks, split like step 5's pixels; each slab
/// holds every position's K x C partial sums.
struct conv2d_wgrad_winograd_plan {
  std::size_t tiles_k = 0, tiles_c = 0;  ///< the tile grid over one position's K x C
  split_k_plan split;                    ///< slices of the tiles (k_slice: a multiple of 16)
  std::size_t positions = 0;             ///< (m + 2)^2
  [[nodiscard]] std::size_t grid_tiles() const { return tiles_k * tiles_c * positions; }
};

/// Step 6's slices past half a wave hold at least this many blocks (8 steps of 16).
constexpr std::size_t conv2d_wgrad_winograd_min_wave_slice = 128;

/// Past half a wave a split can still even out the waves: `grid` CTAs over
/// `resident` slots take ceil(grid / resident) waves, and a split s cuts each
/// CTA's work s ways, so the products take about ceil(grid s / resident) / s
/// wave-lengths. The s <= 3 that makes that smallest (the first of equals), where
/// it is at least a fifth below the unsplit grid's, its slices at least
/// conv2d_wgrad_winograd_min_wave_slice blocks and its slabs within the
/// workspace cap; else unsplit. Written for F(4x4) at N32 C256 14x14 when the
/// products held 264 slots (288 tiles: 2 waves unsplit, 1.33 at s = 3); since
/// the cp.async ring (396 slots on the H200) no measured layer splits here:
/// C128's 216 and C256's 288 tiles are one wave.
inline split_k_plan even_out_the_waves(std::size_t grid, std::size_t blocks, std::size_t resident,
                                       const split_k_policy& policy) {
  const auto waves = [&](std::size_t s) { return static_cast<double>(ceil_div(grid * s, resident)) / s; };
  split_k_plan best{1, blocks};
  double best_waves = waves(1);
  for (std::size_t s = 2; s <= 3; ++s) {
    const std::size_t slice = round_up(ceil_div(blocks, s), policy.granule);
    const std::size_t used = ceil_div(blocks, slice);
    if (used != s || blocks - (used - 1) * slice < conv2d_wgrad_winograd_min_wave_slice / 2 ||
        slice < conv2d_wgrad_winograd_min_wave_slice || s * policy.slice_bytes > policy.max_workspace_bytes) {
      continue;
    }
    if (waves(s) < best_waves && waves(s) <= 0.8 * waves(1)) {
      best = split_k_plan{static_cast<int>(s), slice};
      best_waves = waves(s);
    }
  }
  return best;
}

/// tiles: the m x m output blocks of every image (N ceil(P / m) ceil(Q / m)).
inline conv2d_wgrad_winograd_plan plan_conv2d_wgrad_winograd(std::size_t k, std::size_t c, std::size_t tiles,
                                                             int resident_blocks, int m = conv2d_wgrad_winograd_m) {
  conv2d_wgrad_winograd_plan plan;
  plan.positions = conv2d_wgrad_winograd_positions_of(m);
  plan.tiles_k = ceil_div(k, conv2d_wgrad_simt_block_k);
  plan.tiles_c = ceil_div(c, conv2d_wgrad_simt_block_taps);
  const split_k_policy policy = wgrad_simt_split_policy(resident_blocks, plan.positions * k * c * sizeof(float));
  plan.split = plan_split_k(plan.grid_tiles(), tiles, policy);
  if (plan.grid_tiles() > policy.max_tiles)
    plan.split = even_out_the_waves(plan.grid_tiles(), tiles, policy.max_blocks, policy);
  return plan;
}

}  // namespace kf::detail
