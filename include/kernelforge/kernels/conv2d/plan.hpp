// SPDX-License-Identifier: Apache-2.0
// conv2d's selection rules, pure functions of the layer and the device's SM
// count over the data in tuning.hpp, tested on the CPU
// (tests/conv2d/conv2d_cpu_test.cpp): the implicit GEMM's block tile and its
// split-K (the shared planner, common/split_k_plan.hpp, with conv2d's
// limits), where Winograd F(2x2,3x3) applies and what `best` runs in exact
// fp32, the workspace layouts of the two Winograd steps, and steps 10 and 11's
// bands (few-channel NHWC layers) and best's route to them. No CUDA calls here. (The
// wgmma step's rules: wgmma_plan.hpp.)
#pragma once

#include <cstddef>

#include "../common/grid.hpp"
#include "../common/split_k_plan.hpp"
#include "tuning.hpp"

namespace kf::detail {

/// C*R*S per pipeline stage of the implicit-GEMM kernels (conv2d_gemm_bk).
constexpr std::size_t conv2d_plan_bk = 8;

inline std::size_t conv2d_gemm_blocks(std::size_t m, std::size_t k, std::size_t bm, std::size_t bn) {
  return ceil_div(m, bm) * ceil_div(k, bn);
}

/// One wave: the blocks the GPU runs at once at the goal occupancy.
inline std::size_t conv2d_gemm_wave(int sm_count) {
  return conv2d_gemm_blocks_per_sm_goal * static_cast<std::size_t>(sm_count > 0 ? sm_count : 1);
}

/// The largest tile that still gives every SM about two blocks: large tiles
/// reuse each loaded value more, but a grid smaller than the GPU leaves SMs
/// idle. 128 x 128 only when K > 64 (else half of each tile would be padding).
inline conv2d_gemm_tile choose_conv2d_gemm_tile(std::size_t m, std::size_t k, int sm_count) {
  const std::size_t goal = conv2d_gemm_wave(sm_count);
  if (k > 64 && conv2d_gemm_blocks(m, k, 128, 128) >= goal) return conv2d_gemm_tile::m128_n128;
  if (conv2d_gemm_blocks(m, k, 128, 64) >= goal) return conv2d_gemm_tile::m128_n64;
  return conv2d_gemm_tile::m64_n64;
}

/// conv2d's split-K limits (tuning.hpp) on a device of `sm_count` SMs, in BK
/// slices of C*R*S: at most conv2d_split_max splits, the last one at least
/// conv2d_split_min_slices long, the split grid within conv2d_split_max_waves
/// waves. (Whether to split at all is choose_conv2d_gemm_plan's: where the
/// tile chooser cannot fill a wave.)
inline split_k_policy conv2d_split_k_policy(int sm_count) {
  split_k_policy p;
  p.max_split = conv2d_split_max;
  p.max_blocks = conv2d_split_max_waves * conv2d_gemm_wave(sm_count);
  p.min_last_slice = conv2d_split_min_slices;
  return p;
}

/// Tile and split-K for one implicit-GEMM launch. split == 1: one block per
/// output tile over all of C*R*S (the kernels as before). split > 1: grid z =
/// split, block z reduces BK slices [z * slices_per_split, (z + 1) *
/// slices_per_split) of C*R*S into a workspace, and a reduction sums them.
struct conv2d_gemm_plan {
  conv2d_gemm_tile tile = conv2d_gemm_tile::m64_n64;
  std::size_t split = 1;
  std::size_t slices_per_split = 0;  // BK slices per split; all of them when split == 1
};

/// m = N*P*Q, k = K (filters), crs = C*R*S.
/// Where the tile chooser fills a wave with a 128-row tile, that is the plan
/// (ResNet N32 C64 56x56 and C128 28x28: 128 x 64, no split). Otherwise (it
/// would fall back to 64 x 64) the grid is too small for the GPU: keep the
/// large tile (128 x 128 when K > 64, else 128 x 64) and cut C*R*S into the
/// most splits, up to 4, that each keep >= 16 BK slices (the last one too) and keep the grid
/// within two waves. N32 C256 14x14 K256 3x3 (M = 6272, 98 blocks of 128 x 128
/// on 132 SMs): split 4, 392 blocks -- 32.9 TFLOP/s exact and 58.6 tf32 on the
/// H200, against 24.7 and 42.7 for 64 x 64 without split. When C*R*S is too
/// short for two splits of 16 slices, 64 x 64 without split, as before.
inline conv2d_gemm_plan choose_conv2d_gemm_plan(std::size_t m, std::size_t k, std::size_t crs, int sm_count) {
  conv2d_gemm_plan plan;
  const std::size_t slices = ceil_div(crs, conv2d_plan_bk);
  plan.slices_per_split = slices;
  plan.tile = choose_conv2d_gemm_tile(m, k, sm_count);
  if (plan.tile != conv2d_gemm_tile::m64_n64) return plan;
  const conv2d_gemm_tile large = k > 64 ? conv2d_gemm_tile::m128_n128 : conv2d_gemm_tile::m128_n64;
  const std::size_t blocks = conv2d_gemm_blocks(m, k, 128, large == conv2d_gemm_tile::m128_n128 ? 128 : 64);
  const split_k_plan split = plan_split_k(blocks, slices, conv2d_split_k_policy(sm_count));
  if (split.split < 2) return plan;
  plan.tile = large;
  plan.slices_per_split = split.k_slice;
  plan.split = static_cast<std::size_t>(split.split);
  return plan;
}

// ---- Winograd F(2x2,3x3) (step 6) and what `best` runs in exact fp32 ---------

/// nullptr when Winograd F(2x2,3x3) computes this layer; else what rules it out.
inline const char* conv2d_winograd_unsupported_reason(std::size_t r, std::size_t s, std::size_t stride_h,
                                                      std::size_t stride_w, std::size_t dilation_h,
                                                      std::size_t dilation_w) {
  if (r != 3 || s != 3) return "the filter is not 3x3";
  if (stride_h != 1 || stride_w != 1) return "the stride is not 1";
  if (dilation_h != 1 || dilation_w != 1) return "the dilation is not 1";
  return nullptr;
}

/// The workspace of one Winograd call: U [16][K][c_ld], V [16][C][tiles_ld] and
/// M [16][K][tiles_ld], rows padded to 4 floats (16-byte copies), one tile per
/// 2 x 2 block of outputs.
struct conv2d_winograd_layout {
  static constexpr std::size_t positions = 16;                      // 4 x 4 transformed positions
  static constexpr std::size_t tile = 2;                            // outputs per tile side
  static constexpr std::size_t row_align = 4;                       // floats
  static constexpr std::size_t index_limit = std::size_t{1} << 31;  // the kernels index U, V and M with int
  std::size_t tiles_h = 0, tiles_w = 0, tiles = 0, tiles_ld = 0, c_ld = 0;
  std::size_t u_floats = 0, v_floats = 0, m_floats = 0;

  /// Whether the kernels' int indexing reaches every element.
  [[nodiscard]] bool indexable() const {
    return u_floats < index_limit && v_floats < index_limit && m_floats < index_limit;
  }
  [[nodiscard]] std::size_t bytes() const { return (u_floats + v_floats + m_floats) * sizeof(float); }
};

/// n, c, k: batch, channels, filters; p, q: the output's height and width.
inline conv2d_winograd_layout make_conv2d_winograd_layout(std::size_t n, std::size_t c, std::size_t k, std::size_t p,
                                                          std::size_t q) {
  using L = conv2d_winograd_layout;
  L l;
  l.tiles_h = ceil_div(p, L::tile);
  l.tiles_w = ceil_div(q, L::tile);
  l.tiles = n * l.tiles_h * l.tiles_w;
  l.tiles_ld = ceil_div(l.tiles, L::row_align) * L::row_align;
  l.c_ld = ceil_div(c, L::row_align) * L::row_align;
  l.u_floats = L::positions * k * l.c_ld;
  l.v_floats = L::positions * c * l.tiles_ld;
  l.m_floats = L::positions * k * l.tiles_ld;
  return l;
}

/// The layers where Winograd is expected to beat the implicit GEMM (see above).
inline bool conv2d_winograd_expected_to_win(std::size_t c, std::size_t k, std::size_t r, std::size_t s,
                                            std::size_t stride_h, std::size_t stride_w, std::size_t dilation_h,
                                            std::size_t dilation_w) {
  return conv2d_winograd_unsupported_reason(r, s, stride_h, stride_w, dilation_h, dilation_w) == nullptr &&
         c >= conv2d_winograd_min_channels && k >= conv2d_winograd_min_filters;
}

/// The exact-fp32 kernels `best` chooses from.
enum class conv2d_exact_kernel { implicit_gemm, implicit_gemm_pipelined, winograd, winograd_fused };

inline conv2d_exact_kernel choose_conv2d_exact_kernel(std::size_t c, std::size_t k, std::size_t r, std::size_t s,
                                                      std::size_t stride_h, std::size_t stride_w,
                                                      std::size_t dilation_h, std::size_t dilation_w) {
  if (conv2d_winograd_expected_to_win(c, k, r, s, stride_h, stride_w, dilation_h, dilation_w)) {
    if (conv2d_best_uses_winograd_fused) return conv2d_exact_kernel::winograd_fused;
    if (conv2d_best_uses_winograd) return conv2d_exact_kernel::winograd;
  }
  return conv2d_best_uses_pipelined ? conv2d_exact_kernel::implicit_gemm_pipelined : conv2d_exact_kernel::implicit_gemm;
}

/// Block tile of Winograd's 16 batched GEMMs (M = tiles, N = K, z = 16): the
/// largest whose 16 x blocks still fill a wave (as choose_conv2d_gemm_tile).
inline conv2d_gemm_tile choose_conv2d_winograd_tile(std::size_t tiles, std::size_t k, int sm_count) {
  constexpr std::size_t batches = 16;
  const std::size_t goal = conv2d_gemm_wave(sm_count);
  if (k > 64 && batches * conv2d_gemm_blocks(tiles, k, 128, 128) >= goal) return conv2d_gemm_tile::m128_n128;
  if (batches * conv2d_gemm_blocks(tiles, k, 128, 64) >= goal) return conv2d_gemm_tile::m128_n64;
  return conv2d_gemm_tile::m64_n64;
}

// ---- fused Winograd F(2x2,3x3) (step 8, 08_winograd_fused.cuh) -----------------

/// The shape of step 8's work: one block computes all 16 positions of
/// `filters` output channels x `tiles` tiles (2 x 2 outputs each), reading the
/// input channels `channels` at a time; its only workspace is the transformed
/// filters U [16][C][k_ld] (k_ld = round_up(K, 4): 16-byte rows).
struct conv2d_winograd_fused_layout {
  static constexpr std::size_t filters = 64;                        // K per block (grid y)
  static constexpr std::size_t tiles_per_block = 32;                // tiles per block (grid x)
  static constexpr std::size_t max_grid_y = 65535;                  // gridDim.y limit
  static constexpr std::size_t index_limit = std::size_t{1} << 31;  // the kernels index U with int
  /// The block's shared memory (08_winograd_fused.cuh checks it): devices that
  /// grant less per block (sm_80, sm_86, sm_89, sm_120) cannot run the variant.
  static constexpr std::size_t smem_bytes = 172032;
  std::size_t tiles_h = 0, tiles_w = 0, tiles = 0, k_ld = 0;
  std::size_t u_floats = 0;
  std::size_t grid_x = 0, grid_y = 0;

  /// Whether the kernels' int indexing reaches all of U and the grid fits.
  [[nodiscard]] bool launchable() const { return u_floats < index_limit && grid_y <= max_grid_y; }
  [[nodiscard]] std::size_t bytes() const { return u_floats * sizeof(float); }
};

/// Whether `blocks` blocks, `resident` at a time, keep 9/10 of their waves busy.
inline bool conv2d_winograd_fused_fills_waves(std::size_t blocks, std::size_t resident) {
  if (blocks == 0 || resident == 0) return false;
  const std::size_t slots = ceil_div(blocks, resident) * resident;
  return blocks * conv2d_winograd_fused_fill_den >= slots * conv2d_winograd_fused_fill_num;
}

/// n, c, k: batch, channels, filters; p, q: the output's height and width.
inline conv2d_winograd_fused_layout make_conv2d_winograd_fused_layout(std::size_t n, std::size_t c, std::size_t k,
                                                                      std::size_t p, std::size_t q) {
  using L = conv2d_winograd_fused_layout;
  L l;
  l.tiles_h = ceil_div(p, conv2d_winograd_layout::tile);
  l.tiles_w = ceil_div(q, conv2d_winograd_layout::tile);
  l.tiles = n * l.tiles_h * l.tiles_w;
  l.k_ld = ceil_div(k, conv2d_winograd_layout::row_align) * conv2d_winograd_layout::row_align;
  l.u_floats = conv2d_winograd_layout::positions * c * l.k_ld;
  l.grid_x = ceil_div(l.tiles, L::tiles_per_block);
  l.grid_y = ceil_div(k, L::filters);
  return l;
}

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
