// SPDX-License-Identifier: Apache-2.0
// Host-side planning of step 7 (07_implicit_gemm_wgmma.cuh), as pure functions
// the CPU tests cover: which layers the wgmma implicit GEMM computes, where
// `best` uses it, the pixel box each 128-row tile covers, and (16-bit NHWC)
// whether its k-steps load one tap's box or a filter column's (plan_conv2d_nhwc_wgmma).
// No CUDA calls.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <cstdint>
#include <limits>

#include "../common/grid.hpp"
#include "../common/last_round.hpp"
#include "filter_column.hpp"
#include "tuning.hpp"

namespace kf::detail {

/// Rows of a block tile: two consumer warpgroups of wgmma m64.
constexpr std::size_t conv2d_wgmma_block_m = 128;
/// Channels per pipeline stage: 32 floats, one 128-byte swizzled row.
constexpr std::size_t conv2d_wgmma_block_c = 32;
/// TMA boxes hold at most 256 elements along each dimension.
constexpr std::size_t conv2d_wgmma_max_box = 256;
/// Where `best` takes the wgmma kernel (TF32 math, sm_90): at least this many
/// input channels, so that a 32-channel stage is at least half real data (with
/// fewer, most of every stage is TMA's zero fill past C). Not yet measured
/// against implicit_gemm_tf32 below 64 channels.
constexpr std::size_t conv2d_wgmma_best_min_channels = 32;

/// nullptr when the wgmma kernel computes this layer; else what rules it out.
/// Stride 1 only: the A tile is one TMA box of the NHWC input per filter tap,
/// whose pixels must be the output tile's pixels shifted by the tap (strided
/// layers run on the mma.sync kernel, implicit_gemm_tf32).
inline const char* conv2d_wgmma_unsupported_reason(std::size_t stride_h, std::size_t stride_w) {
  if (stride_h != 1 || stride_w != 1) return "the stride is not 1";
  return nullptr;
}

/// TMA's largest element stride: the NHWC kernel's A box steps through the
/// input at the layer's stride.
constexpr std::size_t conv2d_nhwc_wgmma_max_stride = 8;

/// nullptr when the wgmma kernel computes this NHWC layer (x NHWC, weight
/// KRSC); else what rules it out. The A box of a filter tap visits every
/// stride-th input pixel (TMA element strides), at most 8 apart.
inline const char* conv2d_nhwc_wgmma_unsupported_reason(std::size_t stride_h, std::size_t stride_w) {
  if (stride_h > conv2d_nhwc_wgmma_max_stride || stride_w > conv2d_nhwc_wgmma_max_stride) {
    return "the stride is above 8 (TMA's largest element stride)";
  }
  return nullptr;
}

/// Whether TMA reads x and the filter where they are: 16-byte aligned, and
/// each pixel's (and filter tap's) channels a whole number of 16 bytes. Else
/// the launch first folds the filter's columns into channels
/// (conv2d_nhwc_folded_channels) in a workspace.
inline bool conv2d_nhwc_wgmma_reads_in_place(std::size_t c, std::size_t element_bytes, const void* x, const void* w) {
  constexpr std::size_t tma_alignment = 16;
  return c * element_bytes % tma_alignment == 0 && reinterpret_cast<std::uintptr_t>(x) % tma_alignment == 0 &&
         reinterpret_cast<std::uintptr_t>(w) % tma_alignment == 0;
}

/// Where the kernel's B operand -- a tap's filter slice, block_c channels of
/// the reduction x bn output channels -- comes from (a template parameter of
/// the kernel, so the forward's instances are the same code as without it).
enum class conv2d_wgmma_filter {
  /// The forward's filter, K x RS x C: each output channel's C contiguous (wgmma's k-major B).
  forward,
  /// dx's forward (src/conv2d/backward_data.cu) reading the layer's own filter
  /// where it lies, unturned (conv2d_dgrad_reads_filter_in_place): its tap t is
  /// the layer's tap RS - 1 - t, whose rows (the layer's K: dx's reduction)
  /// hold dx's output channels (the layer's C) contiguous -- an N-major B, which
  /// the 16-bit wgmma reads with its transpose bit (TF32's has none).
  dgrad_unturned,
};

/// Whether step 7 computes dx of a layer (k output, c input channels) from the
/// layer's filter w as it lies (conv2d_wgmma_filter::dgrad_unturned): 16-bit
/// elements (the transpose bit), and TMA reads both operands in place -- the
/// forward's input dy_source (dy, or its spread: k channels a pixel) and the
/// filter (c channels a tap): 16-byte aligned, rows a whole number of 16 bytes.
/// (An input TMA cannot read in place takes the column fold, which folds a turned filter.)
inline bool conv2d_dgrad_wgmma_reads_in_place(std::size_t k, std::size_t c, std::size_t element_bytes,
                                              const void* dy_source, const void* w) {
  constexpr std::size_t tma_alignment = 16;
  return element_bytes == 2 && conv2d_nhwc_wgmma_reads_in_place(k, element_bytes, dy_source, w) &&
         c * element_bytes % tma_alignment == 0;
}

/// The column fold's channels: S C values (the filter's S columns of C
/// channels), padded to a whole number of 16 bytes.
inline std::size_t conv2d_nhwc_folded_channels(std::size_t s, std::size_t c, std::size_t element_bytes) {
  const std::size_t per_16_bytes = 16 / element_bytes;
  return ceil_div(s * c, per_16_bytes) * per_16_bytes;
}

/// Where `best` runs the wgmma kernel (the caller checks TF32 math and the device).
inline bool conv2d_wgmma_preferred(std::size_t c, std::size_t stride_h, std::size_t stride_w) {
  return conv2d_wgmma_unsupported_reason(stride_h, stride_w) == nullptr && c >= conv2d_wgmma_best_min_channels;
}

/// math_mode::fp32_emulated (step 9, 09_implicit_gemm_wgmma_fp32_emulated.cuh):
/// the fewest input channels it takes (with fewer, most of each 32-channel
/// stage would be zeros: 3 of 32 for an RGB stem) and the shortest sum C R S
/// (as matmul's fp32_emulated_min_k: for short sums three TF32 products are
/// less accurate than fp32 FMAs). Other layers run the exact kernels.
constexpr std::size_t conv2d_fp32_emulated_min_channels = 32;
constexpr std::size_t conv2d_fp32_emulated_min_crs = 128;

/// nullptr when step 9 computes this layer (either layout: the pre-pass
/// writes the split input NHWC, which the A map steps through at the
/// layer's stride); else why the exact kernels compute it instead.
inline const char* conv2d_fp32_emulated_unsupported_reason(std::size_t c, std::size_t rs, std::size_t stride_h,
                                                           std::size_t stride_w) {
  if (c < conv2d_fp32_emulated_min_channels) return "fewer than 32 input channels";
  if (c * rs < conv2d_fp32_emulated_min_crs) return "sums C R S shorter than 128";
  return conv2d_nhwc_wgmma_unsupported_reason(stride_h, stride_w);
}

/// Where the NHWC kernel runs its two consumer warpgroups in ping-pong (each on
/// its own 128-row tile, the stores of one overlapping the products of the
/// other) rather than cooperatively (both on one tile): from this many k-steps
/// per tile (R * S * ceil(C / block_c)). Measured on the H200 (bench_conv's
/// layers, benchmarks/tuning/conv2d.md#conv2d_nhwc_pingpong): ping-pong gained
/// up to 10% on the 3x3 layers (9 to 36 k-steps) and lost 1-7% on the 1x1 C256
/// layer (4 k-steps in 16-bit, 8 in TF32), where a tile's products are too few
/// to hide the other's stores behind and one warpgroup's issue rate shows.
constexpr std::size_t conv2d_wgmma_pingpong_min_k_steps = 9;

inline bool conv2d_wgmma_pingpong(std::size_t k_steps) { return k_steps >= conv2d_wgmma_pingpong_min_k_steps; }

/// Whether the kernel keeps the layer's filter resident in shared memory: with
/// one channel tile (tiles_k = 1) every tile reads the same filter slices, so
/// where the cooperative schedule's k-steps fit its ring (k_steps <=
/// ring_stages: k-step kt's slices in stage kt's B slot) the producer loads them
/// once a CTA and each stage carries only its A box. Ping-pong's two turn
/// barriers and its longer k-loops are left alone. Measured on the H200
/// (benchmarks/tuning/conv2d.md#conv2d_wgmma_resident_filter): the TF32 stem
/// (its column fold, 7 k-steps) 93 -> 71 us; the 1x1 C256 layer (4 k-steps in
/// 16-bit, 8 in TF32) unchanged within 1.5%.
inline bool conv2d_wgmma_resident_filter(std::size_t tiles_k, bool pingpong, std::size_t k_steps,
                                         std::size_t ring_stages) {
  return tiles_k == 1 && !pingpong && k_steps <= ring_stages;
}

/// Whether step 7's producer takes all of a tile's stages before it asks for any of its boxes
/// (params::tile_loads_together), so that the tile's channel blocks -- quarters of the same pixels --
/// reach DRAM together, not a stage's landing apart: with a resident filter (the stages carry A boxes
/// alone) whose k-steps fill at most half the ring. Taking a whole ring at once would drain it (the
/// TF32 1x1 layer: 8 k-steps of 8 stages; the TF32 stem's fold: 7). bench_conv's 16-bit 1x1 C256
/// layer takes it (4 of 8): benchmarks/tuning/conv2d.md#conv2d_wgmma_tile_loads_together.
inline bool conv2d_wgmma_tile_loads_together(bool resident_filter, std::size_t k_steps, std::size_t ring_stages) {
  return resident_filter && 2 * k_steps <= ring_stages;
}

/// The B slots conv2d_wgmma_staged_y needs free: two 8 KiB C buffers for each of the two consumer warpgroups.
constexpr std::size_t conv2d_wgmma_staged_y_slots = 4;

/// Whether step 7 stores a 16-bit layer's y through shared memory and TMA (params::staged_y) rather
/// than 4-byte pairs from registers, each of which writes half of a 16-byte piece of y: where y is
/// one run of 128-byte rows a tile -- a pointwise layer as one row of pixels (conv2d_one_row_if_pointwise)
/// with one 64-wide channel tile -- on the cooperative schedule with a resident filter whose k-steps
/// leave the ring's last 4 B slots free for the two consumers' two C buffers each (8 KiB, 64 pixels x
/// 64 channels), y 16-byte aligned and its rows (K elements) whole 16-byte units (TMA's strides).
/// bench_conv's 1x1 C256 K64 layer takes it (4 k-steps of 8 stages):
/// benchmarks/tuning/conv2d.md#conv2d_wgmma_staged_y.
inline bool conv2d_wgmma_staged_y(std::size_t element_bytes, bool one_row, bool pingpong, bool resident_filter,
                                  std::size_t bn, std::size_t filter_rows, std::size_t k_steps, std::size_t ring_stages,
                                  std::size_t k, bool y_aligned) {
  constexpr std::size_t tma_stride_bytes = 16;
  return element_bytes == 2 && one_row && !pingpong && resident_filter && bn == 64 && filter_rows == 1 &&
         k_steps + conv2d_wgmma_staged_y_slots <= ring_stages && (k * element_bytes) % tma_stride_bytes == 0 &&
         y_aligned;
}

/// One block tile: a box of nt images x ht output rows x wt output columns
/// (wt * ht * nt <= 128 pixels; GEMM row i of the tile is pixel (i / (wt ht),
/// i / wt % ht, i % wt) of the box) by bn output channels.
/// filter_rows > 1 (filter-column tiles, plan_conv2d_nhwc_wgmma): wt = 8, and
/// each k-step loads one box of nt x (ht + filter_rows - 1) x 8 input pixels
/// for filter_rows taps of one filter column.
struct conv2d_wgmma_tile {
  std::size_t wt = 1, ht = 1, nt = 1;
  std::size_t bn = 128;  ///< 64 (wgmma m64n64k8) or 128 (m64n128k8)
  std::size_t tiles_q = 0, tiles_p = 0, tiles_n = 0, tiles_k = 0;
  std::size_t filter_rows = 1;  ///< taps of one filter column a k-step loads (1: one tap a k-step)
  /// Halo tiles (conv2d_nhwc_wgmma_halo_fit): the A box's width, 8 + S - 1 pixels, whose
  /// (ht + R - 1) rows (filter_rows = R) serve every tap of a channel block; 0: no halo.
  std::size_t halo_width = 0;

  [[nodiscard]] std::size_t box_pixels() const { return wt * ht * nt; }
  [[nodiscard]] std::size_t tiles_m() const { return tiles_q * tiles_p * tiles_n; }
  [[nodiscard]] std::size_t tiles() const { return tiles_m() * tiles_k; }
  /// Output rows of A's box per image: the tile's, and filter_rows - 1 more.
  [[nodiscard]] std::size_t box_rows() const { return conv2d_filter_column_box_rows(ht, filter_rows); }
  /// Pixel rows (128 bytes each) one A box lands.
  [[nodiscard]] std::size_t a_box_pixels() const { return (halo_width != 0 ? halo_width : wt) * box_rows() * nt; }
  /// The box row where m64 block b (tile rows 64 b ..) starts for the first tap:
  /// 64 b, or -- filter-column and halo tiles -- that pixel's row in the larger box.
  [[nodiscard]] std::size_t a_block_row(std::size_t b) const {
    constexpr std::size_t wgmma_m = conv2d_wgmma_block_m / 2;
    if (halo_width != 0) {  // pixel 64 b is column 0 of output row 64 b / 8 (in its image)
      const std::size_t row = wgmma_m * b / conv2d_filter_column_width;
      return (row / ht * box_rows() + row % ht) * halo_width;
    }
    return filter_rows == 1 ? wgmma_m * b : conv2d_filter_column_box_row(wgmma_m * b, ht, filter_rows, 0);
  }
};

/// The output-channel tile: 64 when K <= 64 (a 128-wide tile would be half
/// zeros), else 128.
inline std::size_t conv2d_wgmma_bn(std::size_t k) { return k <= 64 ? 64 : 128; }

/// The pixel box that covers the n x p x q output pixels with the fewest
/// 128-row tiles (each tile costs a full 128 rows of products, whatever part of
/// it lies outside the image or past the box): every wt <= min(q, 128), every
/// ht <= min(p, 128 / wt), nt as large as fits. Ties go to the widest box
/// (stores along q stay contiguous), then the tallest. Boxes may span images:
/// bench_conv's ResNet layers at N = 32 get 8 x 8 x 2 (56x56), 4 x 4 x 8 (28x28)
/// and 2 x 2 x 32 (14x14) -- every tile full -- where boxes within one image
/// would leave 12.5% (56 x 2, 28 x 4) and 23% (14 x 9) of each tile's rows
/// idle. The price: y's stores run along q in pieces of wt floats (8, 4, 2).
/// k: the output channels (K); the tile's bn from conv2d_wgmma_bn.
/// stride_h, stride_w (NHWC): a box of wt x ht output pixels spans stride_w wt
/// x stride_h ht input pixels, at most 256 (TMA's box limit) along each.
/// max_pixels: the box's most pixels (the forward's 128-row tile; the wgrad's
/// 64-pixel reduction step, backward/wgrad_wgmma_plan.hpp).
inline conv2d_wgmma_tile choose_conv2d_wgmma_tile(std::size_t n, std::size_t p, std::size_t q, std::size_t k,
                                                  std::size_t stride_h = 1, std::size_t stride_w = 1,
                                                  std::size_t max_pixels = conv2d_wgmma_block_m) {
  conv2d_wgmma_tile best;
  best.bn = conv2d_wgmma_bn(k);
  best.tiles_k = ceil_div(k, best.bn);
  std::size_t best_tiles = std::numeric_limits<std::size_t>::max();
  const std::size_t w_fit = conv2d_wgmma_max_box / stride_w < max_pixels ? conv2d_wgmma_max_box / stride_w : max_pixels;
  const std::size_t h_limit = conv2d_wgmma_max_box / stride_h;
  const std::size_t max_w = q < w_fit ? q : w_fit;
  for (std::size_t wt = max_w; wt >= 1; --wt) {
    const std::size_t rows_fit = max_pixels / wt < h_limit ? max_pixels / wt : h_limit;
    const std::size_t max_h = p < rows_fit ? p : rows_fit;
    for (std::size_t ht = max_h; ht >= 1; --ht) {
      const std::size_t images_fit = max_pixels / (wt * ht);
      std::size_t nt = n < images_fit ? n : images_fit;
      if (nt > conv2d_wgmma_max_box) nt = conv2d_wgmma_max_box;
      const std::size_t tiles = ceil_div(n, nt) * ceil_div(p, ht) * ceil_div(q, wt);
      if (tiles < best_tiles) {  // strict: on ties the earlier (wider, then taller) box stays
        best_tiles = tiles;
        best.wt = wt;
        best.ht = ht;
        best.nt = nt;
      }
    }
  }
  best.tiles_q = ceil_div(q, best.wt);
  best.tiles_p = ceil_div(p, best.ht);
  best.tiles_n = ceil_div(n, best.nt);
  return best;
}

// ---- the persistent grid's last round --------------------------------------

/// The last round of `tiles` tiles on `grid` CTAs, split over the CTAs that
/// would wait (common/last_round.hpp, conv2d/wgmma_last_round.cuh), each tile
/// k_blocks k-blocks of block_steps ring stages (step 9: 2, a k-block's hi and
/// lo stages), at most conv2d_wgmma_last_round_max_parts parts of at least
/// conv2d_wgmma_last_round_min_k_blocks. N32 C128 28x28 K128 3x3 (fp32
/// emulated, 196 tiles of 36 k-blocks on 132 CTAs): 64 tiles in the last
/// round, 2 parts of 18.
inline last_round_plan plan_conv2d_wgmma_last_round(std::size_t tiles, std::size_t grid, std::size_t k_blocks,
                                                    std::size_t block_steps) {
  return plan_last_round(tiles, grid, k_blocks, block_steps, conv2d_wgmma_last_round_max_parts,
                         conv2d_wgmma_last_round_min_k_blocks);
}

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
  const std::size_t taps_a_step = t.halo_width != 0 ? 1 : t.filter_rows;
  return r / taps_a_step * s * ceil_div(c, conv2d_nhwc_wgmma_step_channels(element_bytes));
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
/// Box widths are rounded up to a multiple of this many pixels (1: 8 + S - 1 exactly).
constexpr std::size_t conv2d_nhwc_wgmma_halo_width_multiple = 1;

/// The halo box's width for a filter S wide: the tile's 8 output columns and S - 1 more.
constexpr std::size_t conv2d_nhwc_wgmma_halo_width(std::size_t s) {
  const std::size_t w = conv2d_filter_column_width + s - 1;
  return ceil_div(w, conv2d_nhwc_wgmma_halo_width_multiple) * conv2d_nhwc_wgmma_halo_width_multiple;
}

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
