// SPDX-License-Identifier: Apache-2.0
// Host-side planning of step 7 (07_implicit_gemm_wgmma.cuh), as pure functions
// the CPU tests cover: which layers the wgmma implicit GEMM computes, where
// `best` uses it, and the pixel box each 128-row tile covers. No CUDA calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "../common/grid.hpp"

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

/// One block tile: a box of nt images x ht output rows x wt output columns
/// (wt * ht * nt <= 128 pixels; GEMM row i of the tile is pixel (i / (wt ht),
/// i / wt % ht, i % wt) of the box) by bn output channels.
struct conv2d_wgmma_tile {
  std::size_t wt = 1, ht = 1, nt = 1;
  std::size_t bn = 128;  ///< 64 (wgmma m64n64k8) or 128 (m64n128k8)
  std::size_t tiles_q = 0, tiles_p = 0, tiles_n = 0, tiles_k = 0;

  [[nodiscard]] std::size_t box_pixels() const { return wt * ht * nt; }
  [[nodiscard]] std::size_t tiles_m() const { return tiles_q * tiles_p * tiles_n; }
  [[nodiscard]] std::size_t tiles() const { return tiles_m() * tiles_k; }
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

}  // namespace kf::detail
