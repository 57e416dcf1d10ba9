// SPDX-License-Identifier: Apache-2.0
// CPU tests of step 12's halo tiles (12_implicit_gemm_wgmma_halo.cuh): where they
// apply, the bench layers' plans, and the box geometry the kernel's descriptors
// read (each tap's pixels, inside the A slot); and where fp32 emulation takes them
// (step 13) rather than step 9. Part of test_conv2d.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/conv2d/wgmma_k_steps.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"

namespace {

using kf::detail::conv2d_wgmma_tile;
using kf::detail::plan_conv2d_nhwc_wgmma;

TEST(Conv2dWgmmaHalo, Applicability) {
  using kf::detail::conv2d_nhwc_wgmma_halo_fit;
  EXPECT_TRUE(conv2d_nhwc_wgmma_halo_fit(3, 3, 1, 1, 1, 1));
  EXPECT_TRUE(conv2d_nhwc_wgmma_halo_fit(2, 2, 1, 1, 1, 1));
  EXPECT_TRUE(conv2d_nhwc_wgmma_halo_fit(1, 3, 1, 1, 1, 1));
  EXPECT_TRUE(conv2d_nhwc_wgmma_halo_fit(3, 2, 1, 1, 1, 1));
  EXPECT_FALSE(conv2d_nhwc_wgmma_halo_fit(3, 1, 1, 1, 1, 1));  // one column: the filter-column box
  EXPECT_FALSE(conv2d_nhwc_wgmma_halo_fit(1, 1, 1, 1, 1, 1));
  EXPECT_FALSE(conv2d_nhwc_wgmma_halo_fit(3, 5, 1, 1, 1, 1));  // wider than the A slot
  EXPECT_FALSE(conv2d_nhwc_wgmma_halo_fit(4, 3, 1, 1, 1, 1));
  EXPECT_FALSE(conv2d_nhwc_wgmma_halo_fit(3, 3, 2, 1, 1, 1));  // strided or dilated: the taps' pixels interleave
  EXPECT_FALSE(conv2d_nhwc_wgmma_halo_fit(3, 3, 1, 2, 1, 1));
  EXPECT_FALSE(conv2d_nhwc_wgmma_halo_fit(3, 3, 1, 1, 2, 1));
  EXPECT_FALSE(conv2d_nhwc_wgmma_halo_fit(3, 3, 1, 1, 1, 2));
  // A dilated or strided 3 x 3 layer keeps step 7's plan; so does one with too few k-steps for ping-pong.
  for (const std::size_t bytes : {std::size_t{2}, std::size_t{4}}) {
    EXPECT_EQ(plan_conv2d_nhwc_wgmma(32, 28, 28, 128, 64, 3, 3, 2, 2, 1, bytes).halo_width, 0u);
    EXPECT_EQ(plan_conv2d_nhwc_wgmma(32, 54, 54, 64, 64, 3, 3, 1, 1, 1, bytes, 2).halo_width, 0u);
    EXPECT_EQ(plan_conv2d_nhwc_wgmma(32, 54, 54, 64, 8, 2, 2, 1, 1, 1, bytes).halo_width, 0u);  // 4 k-steps
  }
}

/// bench_conv's 3x3 NHWC layers (N = 32), in 16-bit and float: the tiles and boxes each takes.
TEST(Conv2dWgmmaHalo, BenchLayersPlans) {
  using kf::detail::conv2d_nhwc_wgmma_k_steps;
  for (const std::size_t bytes : {std::size_t{2}, std::size_t{4}}) {
    SCOPED_TRACE("element bytes " + std::to_string(bytes));
    const std::size_t chunk = 128 / bytes;
    // C64 56x56: 8 x 8 x 2 (784 tiles, every one full); 8 x 16 would take 896.
    const conv2d_wgmma_tile c64 = plan_conv2d_nhwc_wgmma(32, 56, 56, 64, 64, 3, 3, 1, 1, 1, bytes);
    EXPECT_EQ(c64.halo_width, 10u);
    EXPECT_EQ(c64.filter_rows, 3u);
    EXPECT_EQ(c64.wt, 8u);
    EXPECT_EQ(c64.ht, 8u);
    EXPECT_EQ(c64.nt, 2u);
    EXPECT_EQ(c64.bn, 64u);
    EXPECT_EQ(c64.tiles(), 784u);
    EXPECT_EQ(c64.a_box_pixels(), 2u * 10 * 10);
    EXPECT_EQ(c64.a_block_row(1), 100u);  // image 1 of the box
    EXPECT_EQ(conv2d_nhwc_wgmma_k_steps(c64, 64, 3, 3, bytes), 9 * kf::detail::ceil_div(std::size_t{64}, chunk));
    // C128 28x28 and C256 14x14: 8 x 16 of one image (as many tiles as 8 x 8 x 2, a smaller box).
    const conv2d_wgmma_tile c128 = plan_conv2d_nhwc_wgmma(32, 28, 28, 128, 128, 3, 3, 1, 1, 1, bytes);
    EXPECT_EQ(c128.halo_width, 10u);
    EXPECT_EQ(c128.nt, 1u);
    EXPECT_EQ(c128.ht, 16u);
    EXPECT_EQ(c128.tiles(), 4u * 2 * 32);
    EXPECT_EQ(c128.a_box_pixels(), 10u * 18);
    EXPECT_EQ(c128.a_block_row(1), 8u * 10);  // output row 8
    const conv2d_wgmma_tile c256 = plan_conv2d_nhwc_wgmma(32, 14, 14, 256, 256, 3, 3, 1, 1, 1, bytes);
    EXPECT_EQ(c256.halo_width, 10u);
    EXPECT_EQ(c256.tiles(), 2u * 1 * 32 * 2);
  }
}

/// The kernel's operand addressing (12_implicit_gemm_wgmma_halo.cuh): tap (r, s) of m64 block b
/// reads box rows a_block_row(b) + (r + i / 8) W + s + i % 8 for its row i (W the box's width,
/// 8-row groups W rows apart): that is the box row of the input pixel tap (r, s) reads for the
/// block's output pixel i, and it lies inside the box and the kernel's A slot.
TEST(Conv2dWgmmaHalo, BoxRowsAreTheTapsPixels) {
  for (const std::size_t images : {1, 2}) {
    for (const std::size_t r : {1, 2, 3}) {
      for (const std::size_t s : {2, 3}) {
        SCOPED_TRACE("images " + std::to_string(images) + " filter " + std::to_string(r) + " x " + std::to_string(s));
        conv2d_wgmma_tile t;
        t.filter_rows = r;
        t.halo_width = kf::detail::conv2d_nhwc_wgmma_halo_width(s);
        t.wt = 8;
        t.nt = images;
        t.ht = 16 / images;
        const std::size_t w = t.halo_width;
        EXPECT_GE(w, 8 + s - 1);
        EXPECT_LE(t.a_box_pixels(), kf::detail::conv2d_nhwc_wgmma_halo_box_pixels());  // the kernel's A slot
        for (std::size_t b = 0; b < 2; ++b) {
          for (std::size_t tr = 0; tr < r; ++tr) {
            for (std::size_t ts = 0; ts < s; ++ts) {
              for (std::size_t i = 0; i < 64; ++i) {
                const std::size_t pixel = 64 * b + i;  // in the tile: column fastest, then row, then image
                const std::size_t q = pixel % 8, p = pixel / 8 % t.ht, n = pixel / (8 * t.ht);
                const std::size_t expected = (n * t.box_rows() + p + tr) * w + q + ts;
                const std::size_t read = t.a_block_row(b) + (tr + i / 8) * w + ts + i % 8;
                ASSERT_EQ(read, expected) << "block " << b << " tap " << tr << "," << ts << " row " << i;
                ASSERT_LT(read, t.a_box_pixels());
              }
            }
          }
        }
      }
    }
  }
}

/// fp32 emulation's choice between step 9 and step 13 (halo tiles) on bench_conv's 3x3 layers
/// at 132 resident CTAs (H100 / H200), by rounds of the persistent grid: equal rounds take the
/// halo tiles; C128 28x28's 256 halo tiles (2 rounds) lose to step 9's 196 (1 round, then its
/// last round split in 2).
TEST(Conv2dWgmmaHalo, Fp32EmulatedTakesHaloTilesByRounds) {
  using kf::detail::choose_conv2d_wgmma_tile;
  using kf::detail::plan_conv2d_nhwc_wgmma_halo;
  const std::size_t sms = 132;
  // As the launcher asks (wgmma_sm90a_fp32_emulated.cu): step 9's grid and last round from its
  // tiles, resident CTAs and k-blocks, then step 13's tiles against them.
  const auto prefers = [](std::size_t halo_tiles, std::size_t halo_resident, std::size_t tiles, std::size_t resident,
                          std::size_t k_blocks) {
    const std::size_t grid = std::min(tiles, resident);
    return kf::detail::conv2d_fp32_emulated_prefers_halo(
        halo_tiles, halo_resident, tiles, grid, kf::detail::plan_conv2d_wgmma_last_round(tiles, grid, k_blocks, 2));
  };
  struct layer {
    std::size_t c, hw;
    bool halo;
  };
  for (const layer l : {layer{64, 56, true}, layer{128, 28, false}, layer{256, 14, true}}) {
    SCOPED_TRACE("C" + std::to_string(l.c) + " " + std::to_string(l.hw));
    const conv2d_wgmma_tile step9 = choose_conv2d_wgmma_tile(32, l.hw, l.hw, l.c);
    const conv2d_wgmma_tile step13 = plan_conv2d_nhwc_wgmma_halo(step9, 32, l.hw, l.hw, 3, 3);
    const std::size_t k_blocks = 9 * l.c / 32;
    EXPECT_EQ(prefers(step13.tiles(), sms, step9.tiles(), sms, k_blocks), l.halo);
  }
  EXPECT_EQ(plan_conv2d_nhwc_wgmma_halo(choose_conv2d_wgmma_tile(32, 28, 28, 128), 32, 28, 28, 3, 3).tiles(), 256u);
  EXPECT_EQ(choose_conv2d_wgmma_tile(32, 28, 28, 128).tiles(), 196u);
  // A layer of one round either way, and an unsplit last round against a whole one.
  EXPECT_TRUE(prefers(40, sms, 30, sms, 18));
  EXPECT_TRUE(prefers(264, sms, 200, sms, 2));    // 2 rounds each: step 9 does not split
  EXPECT_FALSE(prefers(400, sms, 264, sms, 18));  // 4 rounds against 2
  EXPECT_FALSE(prefers(0, sms, 30, sms, 18));
  EXPECT_FALSE(prefers(40, 0, 30, sms, 18));
}

}  // namespace
