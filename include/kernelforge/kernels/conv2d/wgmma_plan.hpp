// SPDX-License-Identifier: Apache-2.0
// Host-side planning of step 7 (07_implicit_gemm_wgmma.cuh), as pure functions
// the CPU tests cover: which layers the wgmma implicit GEMM computes, where
// `best` uses it, the pixel box each 128-row tile covers and the persistent
// grid's last round. What an NHWC layer's k-steps hold -- one tap's box, a
// filter column's, or step 12's halo box -- is wgmma_k_steps.hpp's.
// No CUDA calls.
#pragma once

#include <cstddef>
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
  /// Taps one k-step holds: filter_rows (one tap, or a filter column's), or one for halo tiles
  /// (their box comes once a channel block, in a ring of its own).
  [[nodiscard]] std::size_t taps_per_k_step() const { return halo_width != 0 ? 1 : filter_rows; }
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

}  // namespace kf::detail
