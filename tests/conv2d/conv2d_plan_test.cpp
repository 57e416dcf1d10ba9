// SPDX-License-Identifier: Apache-2.0
// CPU tests of conv2d's tile and split-K planning (plan.hpp, over the shared
// split-k planner common/split_k_plan.hpp). Part of test_conv2d.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernelforge/conv.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/kernels/common/fast_divmod.cuh"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/kernels/conv2d/winograd_transforms.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"

namespace {

namespace ref = kf::reference;

using kf::test::expect_error;
using kf::test::fake;

// ---- planning -----------------------------------------------------------------

TEST(ConvPlan, GemmTileFillsTheGpu) {
  using kf::detail::choose_conv2d_gemm_tile;
  using kf::detail::conv2d_gemm_tile;
  const int h200_sms = 132;
  // The anchor layers: N32 C64 56x56 K64; N32 C128 28x28 K128; N32 C256 14x14 K256; the stem.
  EXPECT_EQ(choose_conv2d_gemm_tile(32 * 56 * 56, 64, h200_sms), conv2d_gemm_tile::m128_n64);
  EXPECT_EQ(choose_conv2d_gemm_tile(32 * 28 * 28, 128, h200_sms), conv2d_gemm_tile::m128_n64);
  EXPECT_EQ(choose_conv2d_gemm_tile(32 * 14 * 14, 256, h200_sms), conv2d_gemm_tile::m64_n64);
  EXPECT_EQ(choose_conv2d_gemm_tile(16 * 112 * 112, 64, h200_sms), conv2d_gemm_tile::m128_n64);
  // Large K and M: 128 x 128.
  EXPECT_EQ(choose_conv2d_gemm_tile(8 * 64 * 64, 256, h200_sms), conv2d_gemm_tile::m128_n128);
  // Tiny problems: the smallest tile.
  EXPECT_EQ(choose_conv2d_gemm_tile(1, 1, h200_sms), conv2d_gemm_tile::m64_n64);
  EXPECT_EQ(choose_conv2d_gemm_tile(1 << 20, 1024, 0), conv2d_gemm_tile::m128_n128);
}

// The one table from a tile to the kernels' template arguments: the block
// tile its name says (the sizes choose_conv2d_gemm_tile counts blocks with),
// the exact kernels' minimum blocks per SM, the TF32 kernel's warp grid.
TEST(ConvPlan, TileTableGivesEachTileItsTemplateArguments) {
  using kf::detail::conv2d_gemm_tile;
  const auto row = [](conv2d_gemm_tile tile) {
    return kf::detail::with_conv2d_gemm_tile(tile, [](auto config) {
      using c = decltype(config);
      return std::vector<int>{c::bm, c::bn, c::min_blocks, c::tf32_warps_m, c::tf32_warps_n};
    });
  };
  EXPECT_EQ(row(conv2d_gemm_tile::m128_n128), (std::vector<int>{128, 128, 2, 2, 4}));
  EXPECT_EQ(row(conv2d_gemm_tile::m128_n64), (std::vector<int>{128, 64, 2, 4, 2}));
  EXPECT_EQ(row(conv2d_gemm_tile::m64_n64), (std::vector<int>{64, 64, 1, 2, 2}));
}

TEST(ConvPlan, SplitKOnlyWhenTheTilesCannotFillTheGpu) {
  using kf::detail::choose_conv2d_gemm_plan;
  using kf::detail::conv2d_gemm_tile;
  const int h200_sms = 132;
  // Layer A, N32 C64 56x56 K64 3x3: 784 blocks of 128 x 64, no split.
  auto plan = choose_conv2d_gemm_plan(32 * 56 * 56, 64, 64 * 9, h200_sms);
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m128_n64);
  EXPECT_EQ(plan.split, 1u);
  EXPECT_EQ(plan.slices_per_split, 72u);  // all of C*R*S / BK
  // Layer B, N32 C128 28x28 K128 3x3: 392 blocks of 128 x 64, no split (measured: no gain).
  plan = choose_conv2d_gemm_plan(32 * 28 * 28, 128, 128 * 9, h200_sms);
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m128_n64);
  EXPECT_EQ(plan.split, 1u);
  EXPECT_EQ(plan.slices_per_split, 144u);
  // Layer C, N32 C256 14x14 K256 3x3: 98 blocks of 128 x 128; split 4 (72 slices each) -> 392 blocks.
  plan = choose_conv2d_gemm_plan(32 * 14 * 14, 256, 256 * 9, h200_sms);
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m128_n128);
  EXPECT_EQ(plan.split, 4u);
  EXPECT_EQ(plan.slices_per_split, 72u);
  // Large M: the tile chooser's 128 x 128, no split.
  plan = choose_conv2d_gemm_plan(8 * 64 * 64, 256, 16 * 9, h200_sms);
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m128_n128);
  EXPECT_EQ(plan.split, 1u);
  // K <= 64 with a small M: 128 x 64 tiles, split.
  plan = choose_conv2d_gemm_plan(2 * 8 * 8, 40, 96 * 9, h200_sms);
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m128_n64);
  EXPECT_EQ(plan.split, 4u);
  EXPECT_EQ(plan.slices_per_split, 27u);
}

TEST(ConvPlan, SplitKKeepsSixteenSlicesAndTwoWaves) {
  using kf::detail::choose_conv2d_gemm_plan;
  using kf::detail::conv2d_gemm_tile;
  const int h200_sms = 132;
  // Tiny M and tiny C*R*S: 64 x 64, no split (as before split-K).
  auto plan = choose_conv2d_gemm_plan(1, 1, 1, h200_sms);
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m64_n64);
  EXPECT_EQ(plan.split, 1u);
  EXPECT_EQ(plan.slices_per_split, 1u);
  // Tiny M, C*R*S = 255 -> 32 slices: two splits of 16.
  plan = choose_conv2d_gemm_plan(1, 256, 255, h200_sms);
  EXPECT_EQ(plan.split, 2u);
  EXPECT_EQ(plan.slices_per_split, 16u);
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m128_n128);
  // 31 slices: too short for two splits of 16.
  plan = choose_conv2d_gemm_plan(1, 256, 248, h200_sms);
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m64_n64);
  EXPECT_EQ(plan.split, 1u);
  EXPECT_EQ(plan.slices_per_split, 31u);
  // 47 slices: 3 splits would leave 15 each -> 2 splits (24 and 23).
  plan = choose_conv2d_gemm_plan(1, 256, 47 * 8, h200_sms);
  EXPECT_EQ(plan.split, 2u);
  EXPECT_EQ(plan.slices_per_split, 24u);
  // 48 slices: 3 splits of 16 (4 would leave 12).
  plan = choose_conv2d_gemm_plan(1, 256, 48 * 8, h200_sms);
  EXPECT_EQ(plan.split, 3u);
  EXPECT_EQ(plan.slices_per_split, 16u);
  // Never an empty split, never more than 4, and split x slices covers C*R*S.
  for (std::size_t crs : {1u, 7u, 128u, 255u, 256u, 257u, 520u, 1179u, 4608u, 100000u}) {
    for (std::size_t m : {1u, 392u, 6272u, 25088u}) {
      plan = choose_conv2d_gemm_plan(m, 256, crs, h200_sms);
      const std::size_t slices = (crs + 7) / 8;
      ASSERT_GE(plan.split, 1u);
      ASSERT_LE(plan.split, 4u);
      ASSERT_GE(plan.split * plan.slices_per_split, slices) << crs << " " << m;
      ASSERT_LT((plan.split - 1) * plan.slices_per_split, slices) << crs << " " << m;
      if (plan.split > 1) ASSERT_GE(slices - (plan.split - 1) * plan.slices_per_split, 16u) << crs << " " << m;
    }
  }
  // Two waves at most (2 x 132 x 2 = 528 blocks). K = 192: 80 x 2 = 160 blocks
  // of 128 x 128 (240 of 128 x 64 < 264, so the tile chooser alone would pick
  // 64 x 64); split 4 would reach 640, split 3 reaches 480.
  plan = choose_conv2d_gemm_plan(80 * 128, 192, 4608, h200_sms);
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m128_n128);
  EXPECT_EQ(plan.split, 3u);
  EXPECT_EQ(plan.slices_per_split, 192u);
  // K <= 64: 200 blocks of 128 x 64; split 3 would reach 600, split 2 reaches 400.
  plan = choose_conv2d_gemm_plan(200 * 128, 64, 4608, h200_sms);
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m128_n64);
  EXPECT_EQ(plan.split, 2u);
  // A tile that fills a wave is never split: 4 SMs (a wave of 8), M = 128,
  // K = 256: 2 blocks of 128 x 128, 4 of 128 x 64 -> split 4, 8 blocks.
  plan = choose_conv2d_gemm_plan(128, 256, 4608, 4);
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m128_n128);
  EXPECT_EQ(plan.split, 4u);
  plan = choose_conv2d_gemm_plan(128, 512, 4608, 1);  // 4 blocks of 128 x 128 fill a wave of 2
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m128_n128);
  EXPECT_EQ(plan.split, 1u);
  // sm_count 0 (unknown) counts as 1.
  plan = choose_conv2d_gemm_plan(1, 1, 4608, 0);
  EXPECT_EQ(plan.tile, conv2d_gemm_tile::m128_n64);
  EXPECT_EQ(plan.split, 4u);
}

}  // namespace
