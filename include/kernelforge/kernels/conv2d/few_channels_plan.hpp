// SPDX-License-Identifier: Apache-2.0
// The plans of conv2d steps 10 and 11 (10_few_channels_mma.cuh,
// 11_few_channels_persistent.cuh): the bands of a few-channel NHWC layer (C <=
// 4, the RGB stem), their shared-memory layouts, step 11's persistent grid and
// `best`'s route to them. Pure functions of the layer (and, for step 11, the
// CTAs the device holds) over the data in tuning.hpp, tested on the CPU
// (tests/conv2d/few_channels_plan_cpu_test.cpp). No CUDA calls here.
#pragma once

#include <cstddef>

#include "../common/grid.hpp"
#include "tuning.hpp"

namespace kf::detail {

// ---- step 10: few input channels, large filters (10_few_channels_mma.cuh) ---------

/// The shape of one step-10 launch: CTA (b, kb) computes output channels
/// [64 kb, 64 kb + 64) of band b, tile_p x tile_q output pixels of one image,
/// from a patch of patch_rows x patch_cols input pixels (each padded to 4
/// channels, 8 bytes) and the filter (64 x k_steps 16-element rows: 4 taps of 4
/// channels a k-step, + 16 bytes) in shared memory.
struct conv2d_few_channels_plan {
  static constexpr std::size_t channels = 4;         ///< C padded to this in shared memory (the domain's most)
  static constexpr std::size_t taps_per_step = 4;    ///< mma.m16n8k16's k = 16 = 4 taps x 4 channels
  static constexpr std::size_t block_n = 64;         ///< output channels per CTA (grid y)
  static constexpr std::size_t warp_pixels = 32;     ///< output pixels per warp (two m16 fragments)
  static constexpr std::size_t max_taps = 64;        ///< R * S: 16 k-steps, a 33 KB filter
  static constexpr std::size_t pixel_bytes = 8;      ///< 4 16-bit channels
  static constexpr std::size_t filter_row_pad = 16;  ///< bytes: an odd number of 16-byte chunks a row (ldmatrix)
  static constexpr std::size_t max_grid_x = 2147483647;
  std::size_t tile_p = 0, tile_q = 0, tiles_p = 0, tiles_q = 0;
  std::size_t patch_rows = 0, patch_cols = 0;
  std::size_t k_steps = 0, k_blocks = 0, bands = 0, warps = 0;
  std::size_t filter_row_bytes = 0, table_offset = 0, patch_offset = 0, smem_bytes = 0;
  /// nullptr when step 10 computes the layer with this plan; else what rules it out.
  const char* unsupported = nullptr;
};

/// Fills the patch, grid and shared-memory fields of `l` from its tile.
inline void size_conv2d_few_channels(conv2d_few_channels_plan& l, std::size_t n, std::size_t k, std::size_t r,
                                     std::size_t s, std::size_t stride_h, std::size_t stride_w, std::size_t dilation_h,
                                     std::size_t dilation_w) {
  using L = conv2d_few_channels_plan;
  l.patch_rows = (l.tile_p - 1) * stride_h + (r - 1) * dilation_h + 1;
  l.patch_cols = (l.tile_q - 1) * stride_w + (s - 1) * dilation_w + 1;
  l.k_steps = ceil_div(r * s, L::taps_per_step);
  l.k_blocks = ceil_div(k, L::block_n);
  l.bands = n * l.tiles_p * l.tiles_q;
  l.warps = ceil_div(l.tile_p * l.tile_q, L::warp_pixels);
  l.filter_row_bytes = l.k_steps * L::taps_per_step * L::pixel_bytes + L::filter_row_pad;
  l.table_offset = L::block_n * l.filter_row_bytes;
  l.patch_offset = l.table_offset + l.k_steps * 2 * 2 * sizeof(int);  // (lo, hi) tap offsets for each half-step
  l.smem_bytes = l.patch_offset + l.patch_rows * l.patch_cols * L::pixel_bytes;
}

/// Step 10's plan for the NHWC layer N x C x H x W -> K x P x Q (R x S filter),
/// its elements element_bytes wide. The band: up to
/// conv2d_few_channels_max_pixels output pixels, whole output rows where a row
/// fits (tile_q = Q, tile_p rows), else an even split of each row; both
/// split evenly over the image (a last band as full as the others). A band whose
/// patch and filter exceed conv2d_few_channels_smem_budget is halved in rows,
/// then in columns. unsupported names the first condition that fails: 16-bit
/// elements, C <= 4, R * S <= 64, a shared-memory footprint within the budget,
/// and a grid within CUDA's limits.
inline conv2d_few_channels_plan plan_conv2d_few_channels(std::size_t n, std::size_t c, std::size_t p, std::size_t q,
                                                         std::size_t k, std::size_t r, std::size_t s,
                                                         std::size_t stride_h, std::size_t stride_w,
                                                         std::size_t dilation_h, std::size_t dilation_w,
                                                         std::size_t element_bytes) {
  using L = conv2d_few_channels_plan;
  L l;
  if (element_bytes != 2) {
    l.unsupported = "the elements are not 16-bit (__half or __nv_bfloat16)";
    return l;
  }
  if (c > L::channels) {
    l.unsupported = "the layer has more than 4 input channels";
    return l;
  }
  if (r * s > L::max_taps) {
    l.unsupported = "the filter has more than 64 taps (R x S)";
    return l;
  }
  const std::size_t max_pixels = conv2d_few_channels_max_pixels;
  l.tiles_q = ceil_div(q, max_pixels);
  l.tile_q = ceil_div(q, l.tiles_q);
  l.tile_p = max_pixels / l.tile_q < p ? max_pixels / l.tile_q : p;
  l.tiles_p = ceil_div(p, l.tile_p);
  l.tile_p = ceil_div(p, l.tiles_p);
  size_conv2d_few_channels(l, n, k, r, s, stride_h, stride_w, dilation_h, dilation_w);
  while (l.smem_bytes > conv2d_few_channels_smem_budget && (l.tile_p > 1 || l.tile_q > 1)) {
    if (l.tile_p > 1) {
      l.tiles_p = ceil_div(p, ceil_div(l.tile_p, 2));
      l.tile_p = ceil_div(p, l.tiles_p);
    } else {
      l.tiles_q = ceil_div(q, ceil_div(l.tile_q, 2));
      l.tile_q = ceil_div(q, l.tiles_q);
    }
    size_conv2d_few_channels(l, n, k, r, s, stride_h, stride_w, dilation_h, dilation_w);
  }
  if (l.smem_bytes > conv2d_few_channels_smem_budget) {
    l.unsupported = "the filter's reach (dilation and stride) needs more shared memory than the kernel's budget";
  } else if (l.bands > L::max_grid_x || l.k_blocks > max_grid_yz) {
    l.unsupported = "the layer needs more CTAs than a grid holds";
  }
  return l;
}

/// Whether `best` runs step 10 on an NHWC layer whose plan is `l` (the device
/// check, sm_80+, is the launcher's).
inline bool conv2d_best_takes_few_channels(const conv2d_few_channels_plan& l) {
  return conv2d_best_uses_few_channels && l.unsupported == nullptr;
}

// ---- step 11: step 10's bands on persistent CTAs (11_few_channels_persistent.cuh) ---

/// The shape of one step-11 launch: grid (grid_x, band.k_blocks), CTA (b, kb)
/// computes bands b, b + grid_x, ... for output channels [64 kb, 64 kb + 64).
/// band: step 10's plan (band, patch, filter rows and tap table; its own
/// patch_offset and smem_bytes are step 10's layout, not this one). Shared
/// memory, in order: the filter and the tap table as step 10 lays them out;
/// the staging rows (the next band's patch_rows input rows as they lie in x,
/// each from the 16-byte chunk that holds its first byte: stage_row_bytes a
/// row); then the patch and the warps' output tiles (out_rows pixels of 64
/// channels each, out_row_bytes a pixel), which before the first band hold the
/// filter as it lies in the weight tensor.
struct conv2d_few_channels_persistent_plan {
  static constexpr std::size_t chunk = 16;     ///< bytes of one cp.async
  static constexpr std::size_t out_rows = 16;  ///< a warp stages one m16 fragment's pixels at a time
  /// A staged output pixel: 64 channels (its 16-byte chunks swizzled by the kernel).
  static constexpr std::size_t out_row_bytes = conv2d_few_channels_plan::block_n * 2;
  conv2d_few_channels_plan band;
  std::size_t stage_row_bytes = 0, stage_offset = 0, patch_offset = 0, out_offset = 0, smem_bytes = 0;
  std::size_t grid_x = 0;  ///< persistent CTAs along the bands
  /// nullptr when step 11 computes the layer with this plan; else what rules it out.
  const char* unsupported = nullptr;
};

/// Fills step 11's shared-memory layout (stage_row_bytes ... smem_bytes) of
/// `l` from its band (l.band), for an input W wide with C channels.
inline void size_conv2d_few_channels_persistent(conv2d_few_channels_persistent_plan& l, std::size_t c, std::size_t w,
                                                std::size_t r, std::size_t s, std::size_t element_bytes) {
  using L = conv2d_few_channels_persistent_plan;
  const conv2d_few_channels_plan& b = l.band;
  // A row's bytes may start anywhere in a chunk: one chunk more than they fill.
  const std::size_t row_bytes = (b.patch_cols < w ? b.patch_cols : w) * c * element_bytes;
  l.stage_row_bytes = (ceil_div(row_bytes, L::chunk) + 1) * L::chunk;
  l.stage_offset = round_up(b.patch_offset, L::chunk);
  l.patch_offset = l.stage_offset + b.patch_rows * l.stage_row_bytes;
  l.out_offset =
      l.patch_offset + round_up(b.patch_rows * b.patch_cols * conv2d_few_channels_plan::pixel_bytes, L::chunk);
  const std::size_t tiles_end = l.out_offset + b.warps * L::out_rows * L::out_row_bytes;
  const std::size_t raw_filter = (ceil_div(b.block_n * r * s * c * element_bytes, L::chunk) + 1) * L::chunk;
  l.smem_bytes = tiles_end > l.patch_offset + raw_filter ? tiles_end : l.patch_offset + raw_filter;
}

/// Step 11's plan for the NHWC layer N x C x H x W -> K x P x Q (R x S filter),
/// its elements element_bytes wide, on a GPU that holds resident_ctas CTAs of
/// it at once (SMs x CTAs an SM at conv2d_few_channels_persistent_smem_budget,
/// or fewer). The grid has min(bands, resident_ctas / k_blocks) CTAs along the
/// bands (at least one), each looping over its bands with a stride of the grid.
/// The band: where step 10's band fits the budget, the tile of at most
/// conv2d_few_channels_max_pixels output pixels (tile_p rows x tile_q columns,
/// each an even split of the image, columns at least min(Q, 8), at least 4
/// warps or the image) that fits the
/// budget and gives the fewest warp-rounds a CTA (the bands the busiest CTA
/// takes x the warps a band), then the fewest patch pixels an output pixel (the
/// halo the staged copies and the spread pay for), then the fewest bands. Step
/// 10's band of whole rows leaves the grid's last round part-empty: the stem
/// (N = 16) in 2 x 112 bands is 896 bands on 264 CTAs, 4 rounds of 7 warps with
/// 104 CTAs in the last (ncu: SM active 81% of the elapsed cycles); in 16 x 16
/// bands it is 784 bands, 3 rounds of 8 warps (768 against 896 pixel-rounds)
/// with a 37 x 37 patch instead of 9 x 229. unsupported: step 10's reason, or
/// step 10's band beyond the budget (step 10 then takes the layer).
inline conv2d_few_channels_persistent_plan plan_conv2d_few_channels_persistent(
    std::size_t n, std::size_t c, std::size_t w, std::size_t p, std::size_t q, std::size_t k, std::size_t r,
    std::size_t s, std::size_t stride_h, std::size_t stride_w, std::size_t dilation_h, std::size_t dilation_w,
    std::size_t element_bytes, std::size_t resident_ctas) {
  using L = conv2d_few_channels_persistent_plan;
  using B = conv2d_few_channels_plan;
  L l;
  l.band = plan_conv2d_few_channels(n, c, p, q, k, r, s, stride_h, stride_w, dilation_h, dilation_w, element_bytes);
  if (l.band.unsupported != nullptr) {
    l.unsupported = l.band.unsupported;
    return l;
  }
  size_conv2d_few_channels_persistent(l, c, w, r, s, element_bytes);
  if (l.smem_bytes > conv2d_few_channels_persistent_smem_budget) {
    l.unsupported = "step 10's band with the staged rows and output tiles needs more shared memory than the budget";
    return l;
  }
  const std::size_t per_block = resident_ctas / l.band.k_blocks;
  const auto grid_for = [&](std::size_t bands) { return per_block < 1 ? 1 : (per_block < bands ? per_block : bands); };
  const auto warp_rounds = [&](const B& b) { return ceil_div(b.bands, grid_for(b.bands)) * b.warps; };
  // The halo, compared as patch pixels x output pixels of the other band (no division).
  const auto less_halo = [](const B& a, const B& b) {
    return a.patch_rows * a.patch_cols * (b.tile_p * b.tile_q) < b.patch_rows * b.patch_cols * (a.tile_p * a.tile_q);
  };
  const std::size_t max_pixels = conv2d_few_channels_max_pixels;
  const std::size_t min_cols = q < 8 ? q : 8;
  // At least 4 warps a band (or the image): each CTA loads the whole filter once,
  // so many CTAs of one small band each would pay it for little work.
  const std::size_t image_warps = ceil_div(p * q, B::warp_pixels);
  const std::size_t min_warps = image_warps < 4 ? image_warps : 4;
  L best = l;
  for (std::size_t tiles_q = ceil_div(q, max_pixels);; ++tiles_q) {
    const std::size_t tile_q = ceil_div(q, tiles_q);
    if (tile_q < min_cols) break;
    if (tiles_q > 1 && ceil_div(q, tiles_q - 1) == tile_q) continue;  // the same split as tiles_q - 1
    const std::size_t max_rows = max_pixels / tile_q < p ? max_pixels / tile_q : p;
    for (std::size_t warps = min_warps; warps <= max_pixels / B::warp_pixels; ++warps) {
      // The most rows that fit `warps` warps, split evenly over the image.
      std::size_t rows = warps * B::warp_pixels / tile_q;
      rows = rows < max_rows ? rows : max_rows;
      if (rows == 0) continue;
      L c11 = l;
      c11.band.tiles_q = tiles_q;
      c11.band.tile_q = tile_q;
      c11.band.tiles_p = ceil_div(p, rows);
      c11.band.tile_p = ceil_div(p, c11.band.tiles_p);
      size_conv2d_few_channels(c11.band, n, k, r, s, stride_h, stride_w, dilation_h, dilation_w);
      if (c11.band.bands > B::max_grid_x || c11.band.warps < min_warps) continue;
      size_conv2d_few_channels_persistent(c11, c, w, r, s, element_bytes);
      if (c11.smem_bytes > conv2d_few_channels_persistent_smem_budget) continue;
      const std::size_t cost = warp_rounds(c11.band), best_cost = warp_rounds(best.band);
      if (cost < best_cost ||
          (cost == best_cost &&
           (less_halo(c11.band, best.band) || (!less_halo(best.band, c11.band) && c11.band.bands < best.band.bands)))) {
        best = c11;
      }
    }
  }
  l = best;
  l.grid_x = grid_for(l.band.bands);
  return l;
}

/// Whether `best` runs step 11 on an NHWC layer whose plan is `l` (ahead of
/// step 10; the device check, sm_80+, is the launcher's).
inline bool conv2d_best_takes_few_channels_persistent(const conv2d_few_channels_persistent_plan& l) {
  return conv2d_best_uses_few_channels_persistent && l.unsupported == nullptr;
}

}  // namespace kf::detail
