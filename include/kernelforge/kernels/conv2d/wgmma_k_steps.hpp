// SPDX-License-Identifier: Apache-2.0
// What a k-step of the NHWC wgmma kernels holds, as pure functions the CPU tests
// cover (wgmma_filter_column_cpu_test.cpp, wgmma_halo_cpu_test.cpp): one tap's
// pixel box (wgmma_plan.hpp's choose_conv2d_wgmma_tile), a filter column's
// taller box (step 7's filter-column tiles, 16-bit), or -- step 12's halo tiles
// -- one tap, the tile's whole halo box coming once a channel block; and the
// plan that picks among them (plan_conv2d_nhwc_wgmma). No CUDA calls.
#pragma once

#include <cstddef>
#include <initializer_list>

#include "../common/grid.hpp"
#include "filter_column.hpp"
#include "wgmma_plan.hpp"

namespace kf::detail {

// ---- filter-column tiles (16-bit NHWC): one A box a filter column's taps --------

/// What the NHWC kernel's k-steps hold: as plan_conv2d_nhwc_wgmma chooses (the
/// library), or one tap whatever it would choose (a benchmark's comparison).
enum class conv2d_nhwc_k_steps { planned, one_tap };

/// Taps of one filter column a filter-column k-step covers (the kernel's Rows):
/// the 3-row filters of ResNet-style layers, and any R that is a multiple of 3.
constexpr std::size_t conv2d_nhwc_wgmma_column_rows = 3;

/// Whether filter-column tiles apply: 16-bit elements (a box row is 64
/// channels, one swizzled row, so 8 pixels are one swizzle atom), stride_h =
/// dilation_h = 1 (the column's taps read rows one apart), R a multiple of
/// conv2d_nhwc_wgmma_column_rows (every k-step holds the same number of taps,
/// so the products are never predicated) and stride_w at most 8 (TMA's element strides).
inline bool conv2d_nhwc_wgmma_columns_fit(std::size_t r, std::size_t stride_h, std::size_t dilation_h,
                                          std::size_t element_bytes) {
  return element_bytes == 2 && conv2d_filter_column_rows_adjacent(stride_h, dilation_h) && r > 1 &&
         r % conv2d_nhwc_wgmma_column_rows == 0;
}

/// The most pixels a filter-column A box holds (the kernel's A slot): 8 x (16 +
/// rows - 1) of one image or 8 x (8 + rows - 1) of each of two.
constexpr std::size_t conv2d_nhwc_wgmma_column_box_pixels(std::size_t rows) {
  constexpr std::size_t output_rows = conv2d_wgmma_block_m / conv2d_filter_column_width;  // 16
  const std::size_t one_image = conv2d_filter_column_box_rows(output_rows, rows);
  const std::size_t two_images = 2 * conv2d_filter_column_box_rows(output_rows / 2, rows);
  return conv2d_filter_column_width * (one_image > two_images ? one_image : two_images);
}

/// Channels of one k-step (one 128-byte swizzled row): 32 floats or 64 16-bit values.
inline std::size_t conv2d_nhwc_wgmma_step_channels(std::size_t element_bytes) { return 128 / element_bytes; }

/// k-steps of one tile: R S taps, filter_rows a step, times the channel blocks (halo tiles: one tap a step,
/// the box once a channel block).
inline std::size_t conv2d_nhwc_wgmma_k_steps(const conv2d_wgmma_tile& t, std::size_t c, std::size_t r, std::size_t s,
                                             std::size_t element_bytes) {
  return r / t.taps_per_k_step() * s * ceil_div(c, conv2d_nhwc_wgmma_step_channels(element_bytes));
}

/// The cost the planner compares between tilings, in box rows (128 bytes,
/// one pixel's k-step channels or one output channel's): for every tile and
/// k-step, the A box's pixels, the filter slices (bn rows a tap), and 64 for
/// the step itself (its barrier round trip); plus the tile's products, counted
/// as bn rows a tap and channel block (so that tiles the overhang of 8-wide
/// boxes adds are not free). The kernel is bound by the loads (the wgrad's ncu
/// profile of the same boxes, benchmarks/tuning/conv2d.md).
inline std::size_t conv2d_nhwc_wgmma_rows_cost(const conv2d_wgmma_tile& t, std::size_t c, std::size_t r, std::size_t s,
                                               std::size_t element_bytes) {
  constexpr std::size_t step_overhead_rows = 64;
  const std::size_t steps = conv2d_nhwc_wgmma_k_steps(t, c, r, s, element_bytes);
  const std::size_t per_step = t.a_box_pixels() + t.filter_rows * t.bn + step_overhead_rows;
  const std::size_t products = steps * t.filter_rows * t.bn;
  return t.tiles() * (steps * per_step + products);
}

/// `base`'s output-channel tiles over pixel tiles 8 output columns wide, of `images` images
/// and 128 / (8 images) rows (so each m64 block is 8 whole rows of one image), a k-step's A box
/// filter_rows - 1 rows taller: the shape of filter-column and halo tiles.
inline conv2d_wgmma_tile conv2d_eight_wide_tile(const conv2d_wgmma_tile& base, std::size_t n, std::size_t p,
                                                std::size_t q, std::size_t images, std::size_t filter_rows) {
  constexpr std::size_t width = conv2d_filter_column_width;
  conv2d_wgmma_tile t = base;
  t.filter_rows = filter_rows;
  t.wt = width;
  t.nt = images;
  t.ht = conv2d_wgmma_block_m / (width * images);
  t.tiles_q = ceil_div(q, t.wt);
  t.tiles_p = ceil_div(p, t.ht);
  t.tiles_n = ceil_div(n, t.nt);
  return t;
}

// ---- halo tiles (step 12): one A box a channel block serves every tap --------

/// The widest and tallest filter halo tiles take (the A slot holds the box of a 3 x 3 filter).
constexpr std::size_t conv2d_nhwc_wgmma_halo_max_side = 3;
/// The halo box's width for a filter S wide: the tile's 8 output columns and S - 1 more (any
/// width: the 128-byte swizzle follows the address bits, wip/probes/desc_shift.cu).
constexpr std::size_t conv2d_nhwc_wgmma_halo_width(std::size_t s) { return conv2d_filter_column_width + s - 1; }

/// The most pixels a halo box holds (the kernel's A slot): 8 x 16 output pixels of one image or 8 x 8 of
/// each of two, with the halo of a filter up to conv2d_nhwc_wgmma_halo_max_side on each side.
constexpr std::size_t conv2d_nhwc_wgmma_halo_box_pixels() {
  constexpr std::size_t side = conv2d_nhwc_wgmma_halo_max_side;
  constexpr std::size_t output_rows = conv2d_wgmma_block_m / conv2d_filter_column_width;  // 16
  const std::size_t one_image = conv2d_filter_column_box_rows(output_rows, side);
  const std::size_t two_images = 2 * conv2d_filter_column_box_rows(output_rows / 2, side);
  return conv2d_nhwc_wgmma_halo_width(side) * (one_image > two_images ? one_image : two_images);
}

/// Whether halo tiles apply: stride 1 and dilation 1 along both axes (tap (r, s) reads the box r rows
/// down and s columns right, so one box holds every tap's pixels) and a filter 2 or 3 wide and at
/// most 3 tall (S = 1 is the filter-column box; larger filters would outgrow the A slot).
inline bool conv2d_nhwc_wgmma_halo_fit(std::size_t r, std::size_t s, std::size_t stride_h, std::size_t stride_w,
                                       std::size_t dilation_h, std::size_t dilation_w) {
  return stride_h == 1 && stride_w == 1 && dilation_h == 1 && dilation_w == 1 && s >= 2 &&
         s <= conv2d_nhwc_wgmma_halo_max_side && r <= conv2d_nhwc_wgmma_halo_max_side;
}

/// Halo tiles for an R x S layer: 8 output columns x 16 rows of one image, or 8 x 8 of two
/// images, whichever makes fewer tiles (ties: one image, the smaller box); `one_tap` gives
/// the output-channel tiles.
inline conv2d_wgmma_tile plan_conv2d_nhwc_wgmma_halo(const conv2d_wgmma_tile& one_tap, std::size_t n, std::size_t p,
                                                     std::size_t q, std::size_t r, std::size_t s) {
  conv2d_wgmma_tile best = one_tap;
  std::size_t best_tiles = 0;
  for (const std::size_t images : {std::size_t{1}, std::size_t{2}}) {
    conv2d_wgmma_tile t = conv2d_eight_wide_tile(one_tap, n, p, q, images, r);
    t.halo_width = conv2d_nhwc_wgmma_halo_width(s);
    if (best_tiles == 0 || t.tiles() < best_tiles) {
      best = t;
      best_tiles = t.tiles();
    }
  }
  return best;
}

/// Whether fp32 emulation runs step 13 (halo tiles, never split) rather than step 9 on a layer
/// both can compute: `halo_tiles` tiles on at most `halo_resident` CTAs against step 9's `tiles`
/// on its `grid`, split as `last` (plan_conv2d_wgmma_last_round), taking at most
/// conv2d_fp32_emulated_halo_rounds_num / den of step 9's rounds.
inline bool conv2d_fp32_emulated_prefers_halo(std::size_t halo_tiles, std::size_t halo_resident, std::size_t tiles,
                                              std::size_t grid, const last_round_plan& last) {
  if (halo_tiles == 0 || halo_resident == 0 || tiles == 0 || grid == 0) return false;
  const std::size_t halo_grid = halo_tiles < halo_resident ? halo_tiles : halo_resident;
  return ceil_div(halo_tiles, halo_grid) * last.parts * conv2d_fp32_emulated_halo_rounds_den <=
         last.round_parts(tiles, grid) * conv2d_fp32_emulated_halo_rounds_num;
}

/// The NHWC kernel's plan: halo tiles where they fit (conv2d_nhwc_wgmma_halo_fit) on the ping-pong
/// schedule; else choose_conv2d_wgmma_tile's one-tap box, or, where
/// conv2d_nhwc_wgmma_columns_fit, filter-column tiles of 8 columns x 16 rows
/// of one image or 8 x 8 of two images (a tile's m64 blocks then start on an
/// output row: their 64 pixels are 8 consecutive rows of one image, one
/// stretch of the taller box), whichever of the three loads fewest rows
/// (conv2d_nhwc_wgmma_rows_cost; ties keep the one-tap box). Q need not be a
/// multiple of 8: the last box column overhangs the output, as one-tap boxes do.
inline conv2d_wgmma_tile plan_conv2d_nhwc_wgmma(std::size_t n, std::size_t p, std::size_t q, std::size_t k,
                                                std::size_t c, std::size_t r, std::size_t s, std::size_t stride_h,
                                                std::size_t stride_w, std::size_t dilation_h, std::size_t element_bytes,
                                                std::size_t dilation_w = 1) {
  conv2d_wgmma_tile best = choose_conv2d_wgmma_tile(n, p, q, k, stride_h, stride_w);
  if (conv2d_nhwc_wgmma_halo_fit(r, s, stride_h, stride_w, dilation_h, dilation_w) &&
      conv2d_wgmma_pingpong(r * s * ceil_div(c, conv2d_nhwc_wgmma_step_channels(element_bytes)))) {
    return plan_conv2d_nhwc_wgmma_halo(best, n, p, q, r, s);
  }
  if (!conv2d_nhwc_wgmma_columns_fit(r, stride_h, dilation_h, element_bytes)) return best;
  std::size_t best_cost = conv2d_nhwc_wgmma_rows_cost(best, c, r, s, element_bytes);
  for (const std::size_t images : {std::size_t{1}, std::size_t{2}}) {
    const conv2d_wgmma_tile t = conv2d_eight_wide_tile(best, n, p, q, images, conv2d_nhwc_wgmma_column_rows);
    if (t.wt * stride_w > conv2d_wgmma_max_box) continue;
    const std::size_t cost = conv2d_nhwc_wgmma_rows_cost(t, c, r, s, element_bytes);
    if (cost < best_cost) {
      best = t;
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace kf::detail
