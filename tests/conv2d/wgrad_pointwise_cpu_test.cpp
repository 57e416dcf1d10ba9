// SPDX-License-Identifier: Apache-2.0
// CPU tests of gradient step 9's plan (wgrad_pointwise_plan.hpp; the kernel:
// kernels/conv2d/backward/09_wgrad_mma_tf32_pointwise.cuh): which pointwise
// layers it computes, and its plan replayed as the kernel walks it -- every CTA
// (tile, slice) and every 32-pixel patch of its slice -- to show that each
// pixel of every K x C tile is summed exactly once, that the split stays within
// one wave and the workspace cap, that the slices are long enough to fill the
// ring, and that the slab sums' shares (sum_tile_slabs, 8 lanes a quad) partition each
// tile's quads. Part of test_conv2d.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "kernelforge/kernels/conv2d/backward/wgrad_pointwise_plan.hpp"

namespace {

using kf::detail::conv2d_wgrad_wgmma_plan;
using kf::detail::plan_conv2d_wgrad_pointwise;
using z = std::size_t;

struct layer {
  z pixels, k, c;
};

/// bench_conv's 1x1 layer (N32 56x56), one pixel, a run short of one step,
/// primes, K and C past 64 / 256, a layer too short to split, one of many tiles.
const std::vector<layer> layers = {
    {32 * 56 * 56, 64, 256}, {1, 4, 4},      {31, 64, 256},   {33, 8, 8},       {35335, 64, 96},    {8633, 72, 32},
    {2668, 16, 264},         {1798, 24, 40}, {495, 200, 264}, {49, 1024, 1024}, {100003, 128, 512}, {4096, 2048, 4},
};

TEST(Conv2dWgradPointwise, UnsupportedReasons) {
  EXPECT_EQ(kf::detail::conv2d_wgrad_pointwise_unsupported_reason(256, 64, 100352), nullptr);
  EXPECT_EQ(kf::detail::conv2d_wgrad_pointwise_unsupported_reason(4, 4, 1), nullptr);
  EXPECT_NE(kf::detail::conv2d_wgrad_pointwise_unsupported_reason(3, 64, 100), nullptr);          // C * 4 off 16 bytes
  EXPECT_NE(kf::detail::conv2d_wgrad_pointwise_unsupported_reason(64, 6, 100), nullptr);          // K * 4 off 16 bytes
  EXPECT_NE(kf::detail::conv2d_wgrad_pointwise_unsupported_reason(64, 64, z{1} << 31), nullptr);  // int pixels
}

TEST(Conv2dWgradPointwise, PlanCoversEveryPixelOfEveryTileOnce) {
  constexpr z sms = 132;
  for (const layer& L : layers) {
    SCOPED_TRACE(::testing::Message() << L.pixels << " pixels, K " << L.k << ", C " << L.c);
    const conv2d_wgrad_wgmma_plan plan = plan_conv2d_wgrad_pointwise(L.pixels, L.k, L.c, sms);
    EXPECT_EQ(plan.step_pixels, 32u);
    EXPECT_EQ(plan.patch_pixels(), 32u);
    EXPECT_EQ(plan.tiles_k * plan.bm >= L.k && (plan.tiles_k - 1) * plan.bm < L.k, true);
    EXPECT_EQ(plan.tiles_c * plan.bn >= L.c && (plan.tiles_c - 1) * plan.bn < L.c, true);
    EXPECT_EQ(plan.tiles(), plan.tiles_k * plan.tiles_c);
    // The slices partition the patches; each patch covers its 32 pixels (the last one past the end:
    // TMA's zero fill), so each tile sums every pixel once.
    std::vector<int> seen(plan.patches() * plan.step_pixels, 0);
    for (z y = 0; y < plan.split; ++y) {
      EXPECT_LT(plan.slice_first(y), plan.slice_end(y));  // no empty slice
      for (z g = plan.slice_first(y); g < plan.slice_end(y); ++g) {
        for (z i = 0; i < plan.step_pixels; ++i) ++seen[g * plan.step_pixels + i];
      }
    }
    for (z pixel = 0; pixel < seen.size(); ++pixel) ASSERT_EQ(seen[pixel], 1) << "pixel " << pixel;
    EXPECT_GE(seen.size(), L.pixels);
    EXPECT_LT(seen.size() - L.pixels, plan.step_pixels);
    // One wave, slices long enough to fill the ring, slabs within the cap.
    EXPECT_LE(plan.tiles() * plan.split, std::max(plan.tiles(), sms));
    if (plan.split > 1) {
      EXPECT_GE(plan.patches() / plan.split, kf::detail::conv2d_wgrad_pointwise_min_slice_steps);
      EXPECT_LE(plan.slab_bytes(L.k, L.c), kf::detail::conv2d_wgrad_wgmma_max_workspace_bytes);
      EXPECT_EQ(plan.workspace_bytes(L.k, L.c), plan.slab_bytes(L.k, L.c) + plan.tiles() * sizeof(unsigned));
    } else {
      EXPECT_EQ(plan.workspace_bytes(L.k, L.c), 0u);
    }
    // Unsplit: one slice of every patch.
    const conv2d_wgrad_wgmma_plan one = plan_conv2d_wgrad_pointwise(L.pixels, L.k, L.c, sms, true);
    EXPECT_EQ(one.split, 1u);
    EXPECT_EQ(one.slice_end(0), one.patches());
  }
}

TEST(Conv2dWgradPointwise, TheOneByOneLayerFillsTheGpu) {
  // N32 C256 56x56 K64: one 64 x 256 tile, 3,136 patches over 131 slices of 24 (the last 16).
  const conv2d_wgrad_wgmma_plan plan = plan_conv2d_wgrad_pointwise(32 * 56 * 56, 64, 256, 132);
  EXPECT_EQ(plan.tiles(), 1u);
  EXPECT_EQ(plan.patches(), 3136u);
  EXPECT_EQ(plan.split, 131u);
  EXPECT_EQ(plan.patches_per_split, 24u);
}

/// sum_tile_slabs' shares at 8 lanes a quad: slice y sums quads [Q y / split, Q (y + 1) / split) of its tile's Q
/// = 64 x 256 / 4, Lanes = 8 threads a quad, each lane the slabs lane, lane + 8, ...: every (quad, slab)
/// pair is read once over the slices and lanes.
TEST(Conv2dWgradPointwise, SlabSumSharesPartitionTheTile) {
  constexpr z quads = 64 * 256 / 4, lanes = 8;
  for (z split : {2u, 7u, 12u, 30u, 123u, 131u}) {
    std::vector<int> seen(quads * split, 0);
    for (z y = 0; y < split; ++y) {
      for (z q = quads * y / split; q < quads * (y + 1) / split; ++q) {
        for (z lane = 0; lane < lanes; ++lane) {
          for (z s = lane; s < split; s += lanes) ++seen[q * split + s];
        }
      }
    }
    for (z i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "split " << split << ", pair " << i;
  }
}

}  // namespace
