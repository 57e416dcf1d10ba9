// SPDX-License-Identifier: Apache-2.0
// CPU tests of gradient step 5's plan (kernels/conv2d/backward/wgrad_simt_plan.hpp:
// dw of an exact-fp32 NCHW layer as an implicit GEMM on the CUDA cores): the
// tile grid covers dw, the slices partition the N P Q pixels in whole steps
// (the last one shorter, none empty), the grid stays within the resident CTAs
// it was planned for, and the ResNet layers get the splits the kernel's
// header describes. Part of test_conv2d.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>

#include "kernelforge/kernels/conv2d/backward/wgrad_simt_plan.hpp"

namespace {

using kf::detail::conv2d_wgrad_simt_plan;
using kf::detail::plan_conv2d_wgrad_simt;
using z = std::size_t;

constexpr int h200_resident = 2 * 132;  // the kernel's 2 CTAs an SM on 132 SMs

/// The slices of `plan` over `pixels`: whole steps but the last, every pixel in one.
void expect_partition(const conv2d_wgrad_simt_plan& plan, z pixels) {
  const z slice = plan.split.k_slice;
  ASSERT_GT(slice, 0u);
  if (plan.split.split > 1) EXPECT_EQ(slice % kf::detail::conv2d_wgrad_simt_step_pixels, 0u);
  const z split = static_cast<z>(plan.split.split);
  EXPECT_GE(split * slice, pixels) << "pixels left out";
  EXPECT_LT((split - 1) * slice, pixels) << "an empty slice";
}

TEST(Conv2dWgradSimtPlan, TilesCoverDw) {
  for (z k : {1u, 63u, 64u, 65u, 256u}) {
    for (z crs : {1u, 27u, 128u, 129u, 576u, 2304u}) {
      const conv2d_wgrad_simt_plan plan = plan_conv2d_wgrad_simt(k, crs, 5000, h200_resident);
      EXPECT_EQ(plan.tiles_k, (k + 63) / 64) << k;
      EXPECT_EQ(plan.tiles_taps, (crs + 127) / 128) << crs;
      expect_partition(plan, 5000);
      EXPECT_LE(plan.tiles() * static_cast<z>(plan.split.split),
                std::max<z>(plan.tiles(), static_cast<z>(h200_resident)));
    }
  }
}

TEST(Conv2dWgradSimtPlan, ResNetLayersFillTheGpu) {
  struct expected {
    z k, crs, pixels, tiles, split;
  };
  // K, C R S, N P Q of bench_python's training layers; split: the most slices
  // the 264 resident CTAs allow, at least 512 pixels each on average.
  const expected layers[] = {
      {64, 576, 100352, 5, 52},    // N32 C64 56x56 3x3
      {128, 1152, 25088, 18, 14},  // N32 C128 28x28 3x3
      {256, 2304, 6272, 72, 3},    // N32 C256 14x14 3x3
      {64, 147, 200704, 2, 131},   // N16 C3 224x224 7x7 stride 2 (the stem; 132 rounded to steps: 131)
      {64, 256, 100352, 2, 131},   // N32 C256 56x56 1x1
  };
  for (const expected& e : layers) {
    const conv2d_wgrad_simt_plan plan = plan_conv2d_wgrad_simt(e.k, e.crs, e.pixels, h200_resident);
    EXPECT_EQ(plan.tiles(), e.tiles) << e.crs;
    EXPECT_EQ(plan.split.split, static_cast<int>(e.split)) << e.crs;
    expect_partition(plan, e.pixels);
  }
}

TEST(Conv2dWgradSimtPlan, ShortReductionsAndManyTilesStayUnsplit) {
  // 511 pixels: not two slices of 512 on average.
  EXPECT_EQ(plan_conv2d_wgrad_simt(64, 576, 511, h200_resident).split.split, 1);
  // More tiles than half the resident CTAs: the tiles alone fill the GPU.
  EXPECT_EQ(plan_conv2d_wgrad_simt(1024, 9 * 1024, 100000, h200_resident).split.split, 1);
  // No pixels at all (the caller zeroes dw before: N = 0), and no resident count.
  EXPECT_EQ(plan_conv2d_wgrad_simt(64, 576, 0, h200_resident).split.split, 1);
  EXPECT_EQ(plan_conv2d_wgrad_simt(64, 576, 100000, 0).split.split, 1);
}

TEST(Conv2dWgradSimtPlan, BestTakesItUpToK128) {
  // The H200's same-run figures in wgrad_simt_plan.hpp: faster than step 2 at K = 64
  // and 128, slower at K = 256.
  EXPECT_TRUE(kf::detail::conv2d_wgrad_simt_preferred(1));
  EXPECT_TRUE(kf::detail::conv2d_wgrad_simt_preferred(64));
  EXPECT_TRUE(kf::detail::conv2d_wgrad_simt_preferred(128));
  EXPECT_FALSE(kf::detail::conv2d_wgrad_simt_preferred(129));
  EXPECT_FALSE(kf::detail::conv2d_wgrad_simt_preferred(256));
}

TEST(Conv2dWgradWinogradPlan, TheProductsFillTheGpu) {
  using kf::detail::plan_conv2d_wgrad_winograd;
  // F(2x2): N32 C128 28x28 (K128): 2 x 1 tiles x 16 positions, 6272 blocks of 2 x 2
  // outputs; N32 C256 14x14 (K256): 4 x 2 x 16, 1568 blocks.
  const auto c128 = plan_conv2d_wgrad_winograd(128, 128, 6272, h200_resident, 2);
  EXPECT_EQ(c128.grid_tiles(), 32u);
  EXPECT_EQ(c128.split.split, 8);
  EXPECT_EQ(c128.split.k_slice, 784u);
  const auto c256 = plan_conv2d_wgrad_winograd(256, 256, 1568, h200_resident, 2);
  EXPECT_EQ(c256.grid_tiles(), 128u);
  EXPECT_EQ(c256.split.split, 2);
  EXPECT_EQ(c256.split.k_slice, 784u);
  // F(4x4): 36 positions over N32 ceil(28 / 4)^2 = 1568 blocks at C128.
  const auto c128_4 = plan_conv2d_wgrad_winograd(128, 128, 1568, h200_resident, 4);
  EXPECT_EQ(c128_4.grid_tiles(), 72u);
  EXPECT_EQ(c128_4.split.split, 3);
  EXPECT_EQ(c128_4.split.k_slice, 528u);
  // F(4x4) at C256: 4 x 2 x 36 = 288 tiles over 264 resident CTAs, past half a wave:
  // unsplit they take 2 waves, the second 9% full; split 3 (slices of 176 of the 512
  // blocks), 4 waves of a third: 1.33.
  const auto c256_4 = plan_conv2d_wgrad_winograd(256, 256, 32 * 4 * 4, h200_resident, 4);
  EXPECT_EQ(c256_4.grid_tiles(), 288u);
  EXPECT_EQ(c256_4.split.split, 3);
  EXPECT_EQ(c256_4.split.k_slice, 176u);
  // A full wave stays unsplit: 264 tiles (2 waves at s = 2 or 3 would be no better).
  using kf::detail::even_out_the_waves;
  kf::detail::split_k_policy policy;
  policy.granule = 16;
  EXPECT_EQ(even_out_the_waves(264, 512, 264, policy).split, 1);
  // Too few blocks to cut (slices under 128): unsplit.
  EXPECT_EQ(even_out_the_waves(288, 200, 264, policy).split, 1);
  // Slabs past the workspace cap: unsplit.
  policy.slice_bytes = 40u << 20;
  policy.max_workspace_bytes = 64u << 20;
  EXPECT_EQ(even_out_the_waves(288, 512, 264, policy).split, 1);
  // The default M is the one the library compiles.
  EXPECT_EQ(plan_conv2d_wgrad_winograd(128, 128, 1568, h200_resident).positions,
            kf::detail::conv2d_wgrad_winograd_positions_of(kf::detail::conv2d_wgrad_winograd_m));
  // Slabs of 36 K x C partial sums within the cap: K = C = 512 (36 MiB a slab) at most 1.
  const auto wide = plan_conv2d_wgrad_winograd(512, 512, 1 << 20, 1 << 20, 4);
  EXPECT_LE(wide.split.workspace_bytes(36 * 512, 512), kf::detail::conv2d_wgrad_simt_max_workspace_bytes);
  // The rule: K and C both at least 128.
  EXPECT_TRUE(kf::detail::conv2d_wgrad_winograd_preferred(128, 128));
  EXPECT_FALSE(kf::detail::conv2d_wgrad_winograd_preferred(64, 256));
  EXPECT_FALSE(kf::detail::conv2d_wgrad_winograd_preferred(256, 64));
}

TEST(Conv2dWgradSimtPlan, WorkspaceWithinItsCap) {
  // 512 x 4608 floats a slab (9.4 MB): at most 7 slabs fit 64 MiB.
  const conv2d_wgrad_simt_plan plan = plan_conv2d_wgrad_simt(512, 4608, 1 << 20, 1 << 20);
  EXPECT_LE(plan.split.workspace_bytes(512, 4608), kf::detail::conv2d_wgrad_simt_max_workspace_bytes);
  EXPECT_GT(plan.split.split, 1);
}

}  // namespace
