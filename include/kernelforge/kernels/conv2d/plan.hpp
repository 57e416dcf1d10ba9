// SPDX-License-Identifier: Apache-2.0
// conv2d's selection rules, pure functions of the layer and the device's SM
// count over the data in tuning.hpp, tested on the CPU
// (tests/conv2d/conv2d_cpu_test.cpp): the implicit GEMM's block tile and its
// split-K (the shared planner, common/split_k_plan.hpp, with conv2d's
// limits), where Winograd F(2x2,3x3) applies and what `best` runs in exact
// fp32 and the workspace layouts of the two Winograd steps. No CUDA calls here.
// (The wgmma step's rules: wgmma_plan.hpp; steps 10 and 11's bands for
// few-channel NHWC layers: few_channels_plan.hpp.)
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

}  // namespace kf::detail
