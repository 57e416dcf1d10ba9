// SPDX-License-Identifier: Apache-2.0
// Host-side planning of gradient steps 3 and 4 (03_wgrad_wgmma.cuh: 16-bit;
// 04_wgrad_wgmma_tf32.cuh: float under math_mode::tf32), as pure functions the
// CPU tests cover (tests/conv2d/wgrad_wgmma_cpu_test.cpp): which layers the
// wgmma filter gradient computes, the output-pixel patch of one reduction step,
// the CTA's output tile and the split of the reduction. No CUDA calls.
//
// The GEMM: dw (K x RSC, KRSC order) = dy^T (K x NPQ) * im2col(x) (NPQ x RSC),
// reduced over the N P Q output pixels. A CTA owns one output tile -- bm output
// channels x one filter tap (r, s) x bn input channels -- and one slice of the
// reduction: a run of whole patches, a patch being nt images x ht output rows
// x wt output columns (at most step_pixels: 64 in 16 bits, 32 in TF32; one
// reduction step). The patch is what x's TMA box covers (bn channels of the
// input pixels under tap (r, s) of the patch, at the layer's stride), and, in
// 16 bits, dy's (bm channels of the patch's pixels, dy seen as K x Q x P x N);
// in TF32 dy is read from dy_t, written by a pre-pass in patch order (K rows of
// 32-pixel runs, one a patch). Either way row i of both operands is pixel i of
// the patch (q fastest, then p, then n).
//
// The tile is described by the layer (bm output channels, bn input-channel
// columns), whichever operand the kernel makes of it: step 3 computes dw's tile
// (M = K), step 4 its transpose (M = the input channels, from registers).
//
// Filter-column tiles (filter_rows = 3): for a 3-row filter at stride_h =
// dilation_h = 1, a tile may instead be 64 output channels x the 3 taps (0, s),
// (1, s), (2, s) of one filter column x 64 input channels (192 columns), over
// patches of 8 output columns x step_pixels / 8 rows of one image. The three
// taps' x boxes are then one box 2 rows taller: tap r's rows start r image rows
// (r x 8 box rows) down it. In 16 bits, per 8 x 8 patch the CTA loads 64 + 80
// box rows for 3 taps' products, where one-tap tiles load 3 x (64 + 64): the
// operand traffic that bounds this kernel (ncu: 20% of the SM's math, 22% of
// memory throughput at 64 x 64 tiles) falls by 2.7x on the N32 C64 56x56 layer.
// The planner takes the tiling whose boxes load fewer rows
// (conv2d_wgrad_wgmma_rows_cost).
#pragma once

#include <cstddef>
#include <cstdint>

#include "../../common/grid.hpp"
#include "../../common/split_k_plan.hpp"
#include "../filter_column.hpp"
#include "../wgmma_plan.hpp"

namespace kf::detail {

/// Output pixels per reduction step, by element size: 16-bit, the rows of a
/// stage's boxes (4 products of wgmma k16); TF32 (4 bytes), one 128-byte row
/// of dy_t (4 products of wgmma k8).
constexpr std::size_t conv2d_wgrad_wgmma_step_pixels_of(std::size_t element_bytes) {
  return element_bytes == 2 ? 64 : 32;
}
/// Channels of one 128-byte swizzled box row (x's, and 16-bit dy's): 64 16-bit values or 32 floats.
constexpr std::size_t conv2d_wgrad_wgmma_box_channels_of(std::size_t element_bytes) { return 128 / element_bytes; }
/// The 16-bit kernel's (03_wgrad_wgmma.cuh).
constexpr std::size_t conv2d_wgrad_wgmma_step_pixels = conv2d_wgrad_wgmma_step_pixels_of(2);
constexpr std::size_t conv2d_wgrad_wgmma_box_channels = conv2d_wgrad_wgmma_box_channels_of(2);
/// Split the reduction only into slices of at least this many 64-pixel steps on
/// average (two per consumer warpgroup; TF32: as many pixels in twice the
/// 32-pixel steps): shorter ones are mostly pipeline fill.
constexpr std::size_t conv2d_wgrad_wgmma_min_slice_steps = 4;
/// The split's fp32 partial tiles stay within this many bytes (a pooled workspace).
constexpr std::size_t conv2d_wgrad_wgmma_max_workspace_bytes = std::size_t{256} << 20;

/// nullptr when the wgmma filter gradient computes this NHWC layer with x read
/// in place by TMA; else what rules it out. element_bytes: 2 (__half,
/// __nv_bfloat16: step 3, dy read in place too) or 4 (float under
/// math_mode::tf32: step 4, whose dy_t the pre-pass writes, so K is free).
/// Pointers' alignment is the caller's check (conv2d_wgrad_wgmma_aligned).
inline const char* conv2d_wgrad_wgmma_unsupported_reason(std::size_t c, std::size_t k, std::size_t element_bytes,
                                                         std::size_t stride_h, std::size_t stride_w) {
  if (element_bytes != 2 && element_bytes != 4) return "not a 16-bit type or float";
  if ((c * element_bytes) % 16 != 0) return "C * sizeof(T) is not a multiple of 16 bytes (TMA's row stride)";
  if (element_bytes == 2 && (k * element_bytes) % 16 != 0) {
    return "K * sizeof(T) is not a multiple of 16 bytes (TMA's row stride)";
  }
  return conv2d_nhwc_wgmma_unsupported_reason(stride_h, stride_w);
}

/// Whether `best` runs the TF32 filter gradient (step 4) for this float NHWC
/// layer of c input channels under math_mode::tf32, where the device has it;
/// else step 2 (im2col and a TF32 matmul). Not where x is its own im2col
/// matrix (1x1, stride 1, no padding): gradient step 9 reads x and dy once
/// there (09_wgrad_mma_tf32_pointwise.cuh; step 2 where it does not apply),
/// where step 4 moves dy twice more for its dy_t pre-pass (H200, N32 C256
/// 56x56 K64 1x1: step 4 0.57 of cuDNN, step 2 0.75). Nor where x's pixels are not a whole number of 16 bytes (C not
/// a multiple of 4), which step 4 reads through the column fold: the RGB stem
/// (N16 C3 224x224 K64 7x7 s2) ran 0.68 of cuDNN there, step 2 0.88.
inline bool conv2d_wgrad_tf32_preferred(std::size_t c, std::size_t r, std::size_t s, std::size_t stride_h,
                                        std::size_t stride_w, std::size_t pad_h, std::size_t pad_w) {
  constexpr std::size_t tma_row_bytes = 16;
  if ((c * sizeof(float)) % tma_row_bytes != 0) return false;
  return !(r == 1 && s == 1 && stride_h == 1 && stride_w == 1 && pad_h == 0 && pad_w == 0);
}

/// TMA reads x and dy in place: both 16-byte aligned.
inline bool conv2d_wgrad_wgmma_aligned(const void* x, const void* dy) {
  constexpr std::size_t tma_alignment = 16;
  return reinterpret_cast<std::uintptr_t>(x) % tma_alignment == 0 &&
         reinterpret_cast<std::uintptr_t>(dy) % tma_alignment == 0;
}

/// The output tile's rows (output channels): 64 (one wgmma m64 block) where K <= 64, else 128.
inline std::size_t conv2d_wgrad_wgmma_bm(std::size_t k) { return k <= 64 ? 64 : 128; }
/// The output tile's columns (input channels of one tap): 64 where C <= 64, else 128
/// (or the split tile's 256: plan_conv2d_wgrad_wgmma).
inline std::size_t conv2d_wgrad_wgmma_bn(std::size_t c) { return c <= 64 ? 64 : 128; }

/// The split tile's columns (16-bit, C > 128, K > 64): 256 input channels of one
/// tap by 128 output channels split by rows between the two consumers (each
/// m64n256 on every stage: 03_wgrad_wgmma.cuh's split_rows). It does 4.2 MFLOP a
/// landed 48 KiB where 128 x 128 does 2.1 a 32 KiB: an SM takes in about 73 GB/s
/// by TMA (wip/probes/tma_rows.cu, H100), so the 128-wide tiles wait on their
/// loads (benchmarks/tuning/conv2d.md, "What bounds gradient step 3"). Not where
/// K <= 64: 64 x 256 split by columns measured slower on the 1x1 C256 K64 layer
/// (38.1 against 33.2 us, H200: twice the fp32 partial slabs for its 131 slices).
constexpr std::size_t conv2d_wgrad_wgmma_split_bn = 256;

/// A wgrad launch: the patch, the tiles, the split.
struct conv2d_wgrad_wgmma_plan {
  std::size_t wt = 1, ht = 1, nt = 1;  ///< the patch: wt columns x ht rows x nt images
  std::size_t patches_q = 0, patches_p = 0, patches_n = 0;
  /// The output tile: bm channels of K x bn columns (bn channels of C of one tap;
  /// filter-column tiles: 64 channels of C of each of filter_rows taps).
  std::size_t bm = 64, bn = 64;
  std::size_t filter_rows = 1;                               ///< taps of one filter column a tile spans (1 or 3)
  std::size_t tiles_k = 0, tiles_c = 0, taps = 0;            ///< tiles along K, along C, and R S taps
  std::size_t split = 1;                                     ///< slices of the reduction (grid.y)
  std::size_t patches_per_split = 0;                         ///< each slice's patches (the last one fewer)
  std::size_t step_pixels = conv2d_wgrad_wgmma_step_pixels;  ///< a patch's most pixels (64; TF32: 32)

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
  /// TF32: the columns of dy_t (K rows of one step_pixels run a patch).
  [[nodiscard]] std::size_t dy_t_columns() const { return patches() * step_pixels; }
  /// The fp32 partial sums of a split launch (split slabs of K x RSC), none unsplit.
  [[nodiscard]] std::size_t slab_bytes(std::size_t k, std::size_t rsc) const {
    return split > 1 ? split * k * rsc * sizeof(float) : 0;
  }
  /// A split launch's workspace: the slabs, then a 32-bit arrival counter a tile
  /// (gradient step 3 sums the slabs in the kernel: wgrad_wgmma/slab_sum.cuh); none unsplit.
  [[nodiscard]] std::size_t workspace_bytes(std::size_t k, std::size_t rsc) const {
    return split > 1 ? slab_bytes(k, rsc) + tiles() * sizeof(unsigned) : 0;
  }
};

/// Threads of gradient step 3's CTA that store a tile's sums: one consumer
/// warpgroup, or both where the 128 x 256 tile is split between them by rows.
inline std::size_t conv2d_wgrad_wgmma_storing_threads(const conv2d_wgrad_wgmma_plan& plan) {
  return plan.bn == conv2d_wgrad_wgmma_split_bn ? 256 : 128;
}

/// Whether a split 16-bit launch sums its slabs in the kernel, the tile's
/// slices together (wgrad_wgmma/slab_sum.cuh), rather than in the reduction
/// kernel: where each storing thread has at most one quad (four outputs) of
/// its CTA's share of the tile to sum (bm x bn / 4 / split quads). The slabs'
/// loads of one quad are latency-bound from L2 with one CTA an SM, so the
/// shares of several quads a thread were slower than the kernel (H100, fp16 dw,
/// 2026-12-05: 44 slices of 64 x 192 column tiles, 70 quads a CTA, 27.3 ->
/// 26.5 us; the 1x1 C256 K64's 66 of 64 x 128, 32 quads, 42.6 -> 40.1; but 14
/// slices of 128 x 128, 293 quads, 28.0 -> 29.9 and 7 of 128 x 256, 1,171
/// quads, 27.7 -> 29.9: benchmarks/tuning/conv2d.md, "the split's slabs summed
/// by its own CTAs").
inline bool conv2d_wgrad_wgmma_sums_in_kernel(const conv2d_wgrad_wgmma_plan& plan) {
  if (plan.split <= 1) return false;
  const std::size_t quads = plan.bm * plan.bn / 4;
  return ceil_div(quads, plan.split) <= conv2d_wgrad_wgmma_storing_threads(plan);
}

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

/// Filter rows of a filter-column tile, and its patch's width: 8 output
/// columns (the box geometry the forward shares, filter_column.hpp) x
/// step_pixels / 8 rows of one image (8 x 8; TF32: 8 x 4).
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
/// by the producer and counted out here too. element_bytes 4 (TF32): a box row
/// of x is 32 channels, and dy_t's box one row (32 pixels) an output channel.
inline std::size_t conv2d_wgrad_wgmma_rows_cost(const conv2d_wgrad_wgmma_plan& plan, std::size_t k, std::size_t c,
                                                std::size_t element_bytes = 2) {
  constexpr std::size_t step_overhead_rows = 64;
  const std::size_t box_channels = conv2d_wgrad_wgmma_box_channels_of(element_bytes);
  // Per tap tile and patch: every block of K once per C tile, of C once per K tile.
  const std::size_t dy_rows = (element_bytes == 2 ? ceil_div(k, box_channels) * plan.patch_pixels() : k) * plan.tiles_c;
  const std::size_t x_rows = ceil_div(c, box_channels) * plan.wt * plan.x_box_rows() * plan.nt * plan.tiles_k;
  return plan.tap_tiles() * plan.patches() * (dy_rows + x_rows) + plan.tiles() * plan.patches() * step_overhead_rows;
}

/// The split of a filter-gradient plan's patches (its tiles and patches set;
/// steps 3, 4 and 9): where the tiles are fewer than the `resident_ctas` CTAs
/// the GPU holds at once, the shared planner (plan_split_k) cuts the patches
/// into the most slices that keep the grid within one wave, slices of at least
/// min_mean_slice patches on average and the fp32 slabs (slab_floats each)
/// within conv2d_wgrad_wgmma_max_workspace_bytes.
inline void conv2d_wgrad_split_patches(conv2d_wgrad_wgmma_plan& plan, std::size_t slab_floats,
                                       std::size_t resident_ctas, std::size_t min_mean_slice) {
  split_k_policy policy;
  policy.max_tiles = resident_ctas;
  policy.max_blocks = resident_ctas;
  policy.min_mean_slice = min_mean_slice;
  policy.slice_bytes = slab_floats * sizeof(float);
  policy.max_workspace_bytes = conv2d_wgrad_wgmma_max_workspace_bytes;
  const split_k_plan cut = plan_split_k(plan.tiles(), plan.patches(), policy);
  plan.split = static_cast<std::size_t>(cut.split);
  plan.patches_per_split = cut.k_slice;
}

/// The plan for an N x P x Q output, K output channels, C input channels and an
/// R x S filter at the given stride and dilation_h, on a GPU that holds
/// `resident_ctas` CTAs at once (one per SM), for elements of element_bytes (2:
/// step 3; 4: TF32, step 4). The patch: choose_conv2d_wgmma_tile's box of at
/// most step_pixels (64; TF32: 32) pixels (fewest patches, the widest on ties;
/// stride_w wt and stride_h ht within TMA's 256), or the filter-column tiles'
/// 8 x step_pixels / 8 where those apply and load fewer rows
/// (conv2d_wgrad_wgmma_rows_cost). The split: where the output tiles are fewer
/// than the resident CTAs, the shared planner (plan_split_k) cuts the patches
/// into the most slices that keep the grid within one wave, slices of at least
/// conv2d_wgrad_wgmma_min_slice_steps x 64 pixels and the workspace within
/// conv2d_wgrad_wgmma_max_workspace_bytes. unsplit: one slice (no workspace).
inline conv2d_wgrad_wgmma_plan plan_conv2d_wgrad_wgmma(std::size_t n, std::size_t p, std::size_t q, std::size_t k,
                                                       std::size_t c, std::size_t r, std::size_t s,
                                                       std::size_t stride_h, std::size_t stride_w,
                                                       std::size_t dilation_h, std::size_t resident_ctas,
                                                       bool unsplit = false, std::size_t element_bytes = 2) {
  conv2d_wgrad_wgmma_plan plan;
  plan.step_pixels = conv2d_wgrad_wgmma_step_pixels_of(element_bytes);
  const conv2d_wgmma_tile box = choose_conv2d_wgmma_tile(n, p, q, k, stride_h, stride_w, plan.step_pixels);
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
  if (element_bytes == 2 && c > 128 && plan.bm == 128) {  // the split tile, where it loads fewer rows
    conv2d_wgrad_wgmma_plan split = plan;
    split.bn = conv2d_wgrad_wgmma_split_bn;
    split.tiles_c = ceil_div(c, split.bn);
    if (conv2d_wgrad_wgmma_rows_cost(split, k, c, element_bytes) <
        conv2d_wgrad_wgmma_rows_cost(plan, k, c, element_bytes)) {
      plan = split;
    }
  }
  if (conv2d_wgrad_wgmma_columns_fit(r, stride_h, dilation_h)) {
    conv2d_wgrad_wgmma_plan columns = plan;
    constexpr std::size_t side = conv2d_wgrad_wgmma_column_patch;
    columns.wt = side;
    columns.ht = plan.step_pixels / side;
    columns.nt = 1;
    columns.patches_q = ceil_div(q, side);
    columns.patches_p = ceil_div(p, columns.ht);
    columns.patches_n = n;
    columns.filter_rows = conv2d_wgrad_wgmma_column_rows;
    columns.bm = 64;
    columns.bn = 64 * conv2d_wgrad_wgmma_column_rows;
    columns.tiles_k = ceil_div(k, columns.bm);
    columns.tiles_c = ceil_div(c, std::size_t{64});
    if (side * stride_w <= 256 && conv2d_wgrad_wgmma_rows_cost(columns, k, c, element_bytes) <
                                      conv2d_wgrad_wgmma_rows_cost(plan, k, c, element_bytes)) {
      plan = columns;
    }
  }
  plan.patches_per_split = plan.patches();
  if (unsplit) return plan;
  conv2d_wgrad_split_patches(plan, k * c * r * s, resident_ctas,
                             conv2d_wgrad_wgmma_min_slice_steps * conv2d_wgrad_wgmma_step_pixels / plan.step_pixels);
  return plan;
}

}  // namespace kf::detail
