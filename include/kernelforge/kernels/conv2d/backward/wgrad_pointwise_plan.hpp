// SPDX-License-Identifier: Apache-2.0
// Host-side planning of gradient step 9 (09_wgrad_mma_tf32_pointwise.cuh: the
// TF32 filter gradient of a pointwise NHWC float layer on mma.sync), as pure
// functions the CPU tests cover (tests/conv2d/wgrad_pointwise_cpu_test.cpp):
// which layers it computes and how a launch is cut. No CUDA calls.
//
// A pointwise layer (1x1, stride 1, no padding) has x as its own im2col
// matrix: dw (K x C) = dy^T (K x NPQ) * x (NPQ x C), both operands pixel-major
// ([pixel][channel] in NHWC). A CTA owns a 64 x 256 output tile (64 output
// channels x 256 input channels) and one slice of the pixels, read in steps
// of 32 pixels; the slices' fp32 slabs are summed by the CTAs themselves
// (wgrad_wgmma/slab_sum.cuh) or the split-k reduction. The plan is gradient
// steps 3 and 4's struct (conv2d_wgrad_wgmma_plan), a patch being 32
// consecutive pixels of the layer's one-row view (conv2d_one_row_if_pointwise).
#pragma once

#include <climits>
#include <cstddef>

#include "../../common/grid.hpp"
#include "wgrad_wgmma_plan.hpp"

namespace kf::detail {

/// The output tile: 64 output channels (two 32-channel dy boxes) x 256 input
/// channels (eight 32-channel x boxes); a step: 32 pixels (one 128-byte row
/// of floats down each box).
constexpr std::size_t conv2d_wgrad_pointwise_bm = 64;
constexpr std::size_t conv2d_wgrad_pointwise_bn = 256;
constexpr std::size_t conv2d_wgrad_pointwise_step_pixels = 32;
/// Split only into slices of at least this many 32-pixel steps on average: a
/// slice is loaded through a ring of 4-5 stages, shorter ones are mostly fill.
constexpr std::size_t conv2d_wgrad_pointwise_min_slice_steps = 8;

/// nullptr when gradient step 9 computes this pointwise float NHWC layer
/// (conv2d_is_pointwise: 1x1, stride 1, no padding) (C
/// input and K output channels, `pixels` = N P Q) under math_mode::tf32, its
/// operands read in place by TMA; else what rules it out. Pointers' alignment
/// is the caller's check (conv2d_wgrad_wgmma_aligned, for x, dy and relu_y).
inline const char* conv2d_wgrad_pointwise_unsupported_reason(std::size_t c, std::size_t k, std::size_t pixels) {
  constexpr std::size_t row_bytes = 16;  // TMA's row stride: a multiple of 16 bytes
  if ((c * sizeof(float)) % row_bytes != 0) return "C * 4 is not a multiple of 16 bytes (TMA's row stride)";
  if ((k * sizeof(float)) % row_bytes != 0) return "K * 4 is not a multiple of 16 bytes (TMA's row stride)";
  // The kernel's pixel coordinates, and its patch indices (plus a slice), are ints.
  if (pixels > static_cast<std::size_t>(INT_MAX) - 2 * conv2d_wgrad_pointwise_step_pixels) {
    return "N * P * Q past 2^31 (the kernel's pixel coordinates)";
  }
  return nullptr;
}

/// The plan for a pointwise layer of `pixels` = N P Q output pixels, K output
/// and C input channels on a GPU that holds `resident_ctas` CTAs at once (one
/// per SM): 32-pixel patches in pixel order, 64 x 256 tiles, and -- where the
/// tiles are fewer than the resident CTAs -- the shared planner's split of the
/// patches into the most slices that keep the grid within one wave, slices of
/// at least conv2d_wgrad_pointwise_min_slice_steps patches and the slabs within
/// conv2d_wgrad_wgmma_max_workspace_bytes. unsplit: one slice (no workspace).
inline conv2d_wgrad_wgmma_plan plan_conv2d_wgrad_pointwise(std::size_t pixels, std::size_t k, std::size_t c,
                                                           std::size_t resident_ctas, bool unsplit = false) {
  conv2d_wgrad_wgmma_plan plan;
  plan.step_pixels = conv2d_wgrad_pointwise_step_pixels;
  plan.wt = conv2d_wgrad_pointwise_step_pixels;  // a patch: 32 pixels of the one-row view
  plan.ht = 1;
  plan.nt = 1;
  plan.patches_q = ceil_div(pixels, plan.wt);
  plan.patches_p = 1;
  plan.patches_n = 1;
  plan.bm = conv2d_wgrad_pointwise_bm;
  plan.bn = conv2d_wgrad_pointwise_bn;
  plan.tiles_k = ceil_div(k, plan.bm);
  plan.tiles_c = ceil_div(c, plan.bn);
  plan.taps = 1;
  plan.patches_per_split = plan.patches();
  if (unsplit) return plan;
  conv2d_wgrad_split_patches(plan, k * c, resident_ctas, conv2d_wgrad_pointwise_min_slice_steps);
  return plan;
}

}  // namespace kf::detail
