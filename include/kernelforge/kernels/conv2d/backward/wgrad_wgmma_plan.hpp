// SPDX-License-Identifier: Apache-2.0
// Host-side planning of gradient step 3 (03_wgrad_wgmma.cuh), as pure
// functions the CPU tests cover (tests/conv2d/wgrad_wgmma_cpu_test.cpp): which
// layers the wgmma filter gradient computes, the output-pixel patch of one
// reduction step, the CTA's output tile and the split of the reduction. No
// CUDA calls.
//
// The GEMM: dw (K x RSC, KRSC order) = dy^T (K x NPQ) * im2col(x) (NPQ x RSC),
// M = K, N = R S C, reduced over the N P Q output pixels. A CTA owns one output
// tile -- bm output channels x one filter tap (r, s) x bn input channels -- and
// one slice of the reduction: a run of whole patches, a patch being nt images
// x ht output rows x wt output columns (<= 64 pixels, one reduction step). The
// patch is what both operands' TMA boxes cover: dy's box (bm channels of the
// patch's pixels, dy seen as K x Q x P x N) and x's box (bn channels of the
// input pixels under tap (r, s) of the patch, at the layer's stride), so the
// two boxes hold the same output pixels in the same order (q fastest, then p,
// then n) and row i of both is pixel i of the patch.
//
// Filter-column tiles (filter_rows = 3): for a 3-row filter at stride_h =
// dilation_h = 1, a tile may instead be 64 output channels x the 3 taps (0, s),
// (1, s), (2, s) of one filter column x 64 input channels (N = 192), over
// patches of 8 x 8 output pixels of one image. The three taps' x boxes are then
// one box of 8 columns x 10 input rows: tap r's 64 rows start r image rows (r x
// 8 box rows) down it. Per patch the CTA loads 64 + 80 box rows for 3 taps'
// products, where one-tap tiles load 3 x (64 + 64): the operand traffic that
// bounds this kernel (ncu: 20% of the SM's math, 22% of memory throughput at
// 64 x 64 tiles) falls by 2.7x on the N32 C64 56x56 layer. The planner takes
// the tiling whose boxes load fewer rows (conv2d_wgrad_wgmma_rows_cost).
#pragma once

#include <cstddef>
#include <cstdint>

#include "../../common/grid.hpp"
#include "../../common/split_k_plan.hpp"
#include "../filter_column.hpp"
#include "../wgmma_plan.hpp"

namespace kf::detail {

/// Output pixels per reduction step: the rows of a stage's boxes (4 products of wgmma k16).
constexpr std::size_t conv2d_wgrad_wgmma_step_pixels = 64;
/// Channels of one TMA box (either operand): 64 16-bit values, one 128-byte swizzled row.
constexpr std::size_t conv2d_wgrad_wgmma_box_channels = 64;
/// Split the reduction only into slices of at least this many steps on average
/// (two per consumer warpgroup): shorter ones are mostly pipeline fill.
constexpr std::size_t conv2d_wgrad_wgmma_min_slice_steps = 4;
/// The split's fp32 partial tiles stay within this many bytes (a pooled workspace).
constexpr std::size_t conv2d_wgrad_wgmma_max_workspace_bytes = std::size_t{256} << 20;

/// nullptr when the wgmma filter gradient computes this NHWC layer in place
/// (x, dy read by TMA where they are); else what rules it out. element_bytes: 2
/// (__half, __nv_bfloat16): TF32 wgmma reads both operands k-major only, and
/// here both are MN-major (channels contiguous, pixels the reduction), so
/// float takes the im2col + matmul path. Pointers' alignment is the caller's
/// check (conv2d_wgrad_wgmma_aligned).
inline const char* conv2d_wgrad_wgmma_unsupported_reason(std::size_t c, std::size_t k, std::size_t element_bytes,
                                                         std::size_t stride_h, std::size_t stride_w) {
  if (element_bytes != 2) return "not a 16-bit type (TF32 wgmma reads k-major operands only)";
  if ((c * element_bytes) % 16 != 0) return "C * sizeof(T) is not a multiple of 16 bytes (TMA's row stride)";
  if ((k * element_bytes) % 16 != 0) return "K * sizeof(T) is not a multiple of 16 bytes (TMA's row stride)";
  return conv2d_nhwc_wgmma_unsupported_reason(stride_h, stride_w);
}

/// TMA reads x and dy in place: both 16-byte aligned.
inline bool conv2d_wgrad_wgmma_aligned(const void* x, const void* dy) {
  constexpr std::size_t tma_alignment = 16;
  return reinterpret_cast<std::uintptr_t>(x) % tma_alignment == 0 &&
         reinterpret_cast<std::uintptr_t>(dy) % tma_alignment == 0;
}

/// The output tile's rows (output channels): 64 (one wgmma m64 block) where K <= 64, else 128.
inline std::size_t conv2d_wgrad_wgmma_bm(std::size_t k) { return k <= 64 ? 64 : 128; }
/// The output tile's columns (input channels of one tap): 64 where C <= 64, else 128.
inline std::size_t conv2d_wgrad_wgmma_bn(std::size_t c) { return c <= 64 ? 64 : 128; }

/// A wgrad launch: the patch, the tiles, the split.
struct conv2d_wgrad_wgmma_plan {
  std::size_t wt = 1, ht = 1, nt = 1;  ///< the patch: wt columns x ht rows x nt images
  std::size_t patches_q = 0, patches_p = 0, patches_n = 0;
  /// The output tile: bm channels of K x bn columns (bn channels of C of one tap;
  /// filter-column tiles: 64 channels of C of each of filter_rows taps).
  std::size_t bm = 64, bn = 64;
  std::size_t filter_rows = 1;                     ///< taps of one filter column a tile spans (1 or 3)
  std::size_t tiles_k = 0, tiles_c = 0, taps = 0;  ///< tiles along K, along C, and R S taps
  std::size_t split = 1;                           ///< slices of the reduction (grid.y)
  std::size_t patches_per_split = 0;               ///< each slice's patches (the last one fewer)

  [[nodiscard]] std::size_t patch_pixels() const { return wt * ht * nt; }
  [[nodiscard]] std::size_t patches() const { return patches_q * patches_p * patches_n; }
  /// Input channels a tile covers (of each of its taps).
  [[nodiscard]] std::size_t tile_channels() const { return bn / filter_rows; }
  /// Tiles along the taps: one per tap, or one per filter column.
  [[nodiscard]] std::size_t tap_tiles() const { return taps / filter_rows; }
  [[nodiscard]] std::size_t tiles() const { return tiles_k * tiles_c * tap_tiles(); }
  /// Rows of x's box: the patch's, and the filter-column tile's 2 rows below it.
  [[nodiscard]] std::size_t x_box_rows() const { return conv2d_filter_column_box_rows(ht, filter_rows); }
  /// Slice z's patches: [first, end).
  [[nodiscard]] std::size_t slice_first(std::size_t z) const { return z * patches_per_split; }
  [[nodiscard]] std::size_t slice_end(std::size_t z) const {
    const std::size_t end = (z + 1) * patches_per_split;
    return end < patches() ? end : patches();
  }
  /// The fp32 partial sums of a split launch (split slabs of K x RSC), none unsplit.
  [[nodiscard]] std::size_t workspace_bytes(std::size_t k, std::size_t rsc) const {
    return split > 1 ? split * k * rsc * sizeof(float) : 0;
  }
};

/// Patch index g -> its origin (n0, p0, q0): q fastest, then p, then n (as the kernel's producer).
struct conv2d_wgrad_patch_origin {
  std::size_t n0 = 0, p0 = 0, q0 = 0;
};
inline conv2d_wgrad_patch_origin conv2d_wgrad_patch_of(const conv2d_wgrad_wgmma_plan& plan, std::size_t g) {
  conv2d_wgrad_patch_origin o;
  o.q0 = (g % plan.patches_q) * plan.wt;
  g /= plan.patches_q;
  o.p0 = (g % plan.patches_p) * plan.ht;
  o.n0 = (g / plan.patches_p) * plan.nt;
  return o;
}

/// Filter rows of a filter-column tile, and its patch: 8 x 8 output pixels of
/// one image (8 wide: the box geometry the forward shares, filter_column.hpp).
constexpr std::size_t conv2d_wgrad_wgmma_column_rows = 3;
constexpr std::size_t conv2d_wgrad_wgmma_column_patch = conv2d_filter_column_width;

/// Whether filter-column tiles apply: R = 3 filter rows at stride_h = dilation_h
/// = 1 (the taps' input rows are then consecutive rows of one box).
inline bool conv2d_wgrad_wgmma_columns_fit(std::size_t r, std::size_t stride_h, std::size_t dilation_h) {
  return r == conv2d_wgrad_wgmma_column_rows && conv2d_filter_column_rows_adjacent(stride_h, dilation_h);
}

/// The cost the planner compares between tilings: the box rows (128 bytes
/// each) a launch loads over all its steps, plus 64 a step for the step itself
/// (its barrier round trip and products). Boxes wholly past K or C are skipped
/// by the producer and counted out here too.
inline std::size_t conv2d_wgrad_wgmma_rows_cost(const conv2d_wgrad_wgmma_plan& plan, std::size_t k, std::size_t c) {
  constexpr std::size_t step_overhead_rows = 64;
  // Per tap tile and patch: every 64-channel block of K once per C tile, of C once per K tile.
  const std::size_t dy_rows = ceil_div(k, std::size_t{64}) * plan.patch_pixels() * plan.tiles_c;
  const std::size_t x_rows = ceil_div(c, std::size_t{64}) * plan.wt * plan.x_box_rows() * plan.nt * plan.tiles_k;
  return plan.tap_tiles() * plan.patches() * (dy_rows + x_rows) + plan.tiles() * plan.patches() * step_overhead_rows;
}

/// The plan for an N x P x Q output, K output channels, C input channels and an
/// R x S filter at the given stride and dilation_h, on a GPU that holds
/// `resident_ctas` CTAs at once (one per SM). The patch: choose_conv2d_wgmma_tile's
/// box of at most 64 pixels (fewest patches, the widest on ties; stride_w wt
/// and stride_h ht within TMA's 256), or the filter-column tiles' 8 x 8 where
/// those apply and load fewer rows (conv2d_wgrad_wgmma_rows_cost). The split:
/// where the output tiles are fewer than the resident CTAs, the shared planner
/// (plan_split_k) cuts the patches into the most slices that keep the grid
/// within one wave, slices of at least conv2d_wgrad_wgmma_min_slice_steps
/// patches and the workspace within conv2d_wgrad_wgmma_max_workspace_bytes.
/// unsplit: one slice (no workspace).
inline conv2d_wgrad_wgmma_plan plan_conv2d_wgrad_wgmma(std::size_t n, std::size_t p, std::size_t q, std::size_t k,
                                                       std::size_t c, std::size_t r, std::size_t s,
                                                       std::size_t stride_h, std::size_t stride_w,
                                                       std::size_t dilation_h, std::size_t resident_ctas,
                                                       bool unsplit = false) {
  conv2d_wgrad_wgmma_plan plan;
  const conv2d_wgmma_tile box =
      choose_conv2d_wgmma_tile(n, p, q, k, stride_h, stride_w, conv2d_wgrad_wgmma_step_pixels);
  plan.wt = box.wt;
  plan.ht = box.ht;
  plan.nt = box.nt;
  plan.patches_q = box.tiles_q;
  plan.patches_p = box.tiles_p;
  plan.patches_n = box.tiles_n;
  plan.bm = conv2d_wgrad_wgmma_bm(k);
  plan.bn = conv2d_wgrad_wgmma_bn(c);
  plan.tiles_k = ceil_div(k, plan.bm);
  plan.tiles_c = ceil_div(c, plan.bn);
  plan.taps = r * s;
  if (conv2d_wgrad_wgmma_columns_fit(r, stride_h, dilation_h)) {
    conv2d_wgrad_wgmma_plan columns = plan;
    constexpr std::size_t side = conv2d_wgrad_wgmma_column_patch;
    columns.wt = side;
    columns.ht = side;
    columns.nt = 1;
    columns.patches_q = ceil_div(q, side);
    columns.patches_p = ceil_div(p, side);
    columns.patches_n = n;
    columns.filter_rows = conv2d_wgrad_wgmma_column_rows;
    columns.bm = 64;
    columns.bn = 64 * conv2d_wgrad_wgmma_column_rows;
    columns.tiles_k = ceil_div(k, columns.bm);
    columns.tiles_c = ceil_div(c, std::size_t{64});
    if (side * stride_w <= 256 &&
        conv2d_wgrad_wgmma_rows_cost(columns, k, c) < conv2d_wgrad_wgmma_rows_cost(plan, k, c)) {
      plan = columns;
    }
  }
  plan.patches_per_split = plan.patches();
  if (unsplit) return plan;
  split_k_policy policy;
  policy.max_tiles = resident_ctas;
  policy.max_blocks = resident_ctas;
  policy.min_mean_slice = conv2d_wgrad_wgmma_min_slice_steps;
  policy.slice_bytes = k * c * r * s * sizeof(float);
  policy.max_workspace_bytes = conv2d_wgrad_wgmma_max_workspace_bytes;
  const split_k_plan cut = plan_split_k(plan.tiles(), plan.patches(), policy);
  plan.split = static_cast<std::size_t>(cut.split);
  plan.patches_per_split = cut.k_slice;
  return plan;
}

}  // namespace kf::detail
