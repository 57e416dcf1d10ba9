// SPDX-License-Identifier: Apache-2.0
// CPU tests of the matrix-product family's selection rules for the exact fp32
// steps (test_matmul_cpu, beside matmul_cpu_test.cpp): include/kernelforge/
// kernels/matmul/plan.hpp's architecture classes, large_tile's orientation and
// split-k (the shared planner with the matmul's limits). The Hopper steps'
// policy: wgmma_policy_test.cpp; where math_mode::fp32_emulated runs:
// fp32_emulated_plan_test.cpp.
#include <gtest/gtest.h>

#include <cstddef>

#include "kernelforge/kernels/matmul/plan.hpp"

namespace {

// ---- tuning rules -------------------------------------------------------------
TEST(MatmulTuning, ArchitecturesMapToTheirConfiguration) {
  using kf::detail::warp_tiled_tuning_for;
  using kf::detail::warp_tiled_tuning_id;
  for (int cc : {80, 87, 90, 100, 103, 110})
    EXPECT_EQ(warp_tiled_tuning_for(cc), warp_tiled_tuning_id::large_smem) << cc;
  for (int cc : {75, 86, 89, 120, 121}) EXPECT_EQ(warp_tiled_tuning_for(cc), warp_tiled_tuning_id::small_smem) << cc;
}

/// large_tile's orientation: 256 x 128 only where it needs fewer waves and k is not split.
TEST(MatmulTuning, LargeTileOrientationByWaves) {
  using kf::detail::large_tile_prefers_256x128;
  const int resident = 132;                                        // H200: 132 SMs x 1 block
  EXPECT_TRUE(large_tile_prefers_256x128(4095, 4097, resident));   // 544 tiles (5 waves) vs 528 (4)
  EXPECT_FALSE(large_tile_prefers_256x128(4096, 4096, resident));  // 512 either way: 128 x 256
  EXPECT_FALSE(large_tile_prefers_256x128(8192, 8192, resident));
  EXPECT_FALSE(large_tile_prefers_256x128(128, 8192, resident));  // split-k fills the waves
  EXPECT_FALSE(large_tile_prefers_256x128(1024, 1024, resident));
  EXPECT_TRUE(large_tile_prefers_256x128(3329, 1025, resident));  // MatmulGpu.LargeTileTallOrientation
  EXPECT_FALSE(large_tile_prefers_256x128(4095, 4097, 0));
}

/// best runs large_tile for exact fp32 on the large_smem class (sm_80/90/100), warp_tiled elsewhere.
TEST(MatmulTuning, BestPicksLargeTileWhereTuned) {
  using kf::detail::best_is_large_tile;
  using kf::detail::warp_tiled_tuning_id;
  if (!kf::detail::best_uses_large_tile) GTEST_SKIP() << "best_uses_large_tile is off in tuning.hpp";
  EXPECT_TRUE(best_is_large_tile(warp_tiled_tuning_id::large_smem, 4096, 4096));
  EXPECT_TRUE(best_is_large_tile(warp_tiled_tuning_id::large_smem, 128, 8192));
  EXPECT_FALSE(best_is_large_tile(warp_tiled_tuning_id::large_smem, 1, 4096));
  EXPECT_FALSE(best_is_large_tile(warp_tiled_tuning_id::large_smem, 4096, 33));
  EXPECT_FALSE(best_is_large_tile(warp_tiled_tuning_id::small_smem, 4096, 4096));
}

TEST(MatmulTuning, SplitKOnlyWhenTilesCannotFillTheGpu) {
  const auto split = [](std::size_t tiles, std::size_t m, std::size_t n, std::size_t k, int resident) {
    return kf::detail::plan_matmul_split_k(tiles, m, n, k, 32, resident).split;
  };
  const int resident = 132;                               // H200: 132 SMs x 1 block
  EXPECT_EQ(split(1024, 4096, 4096, 4096, resident), 1);  // 4096^3: 1024 tiles
  EXPECT_EQ(split(67, 1024, 1088, 4096, resident), 1);    // more than half a wave
  EXPECT_EQ(split(64, 128, 8192, 8192, resident), 2);     // 128 x 8192 x 8192: 64 tiles -> 128 blocks
  EXPECT_EQ(split(1, 1, 1, 4096, resident), 16);          // slices of >= 256
  EXPECT_EQ(split(1, 1, 1, 1 << 20, resident), 64);       // capped at split_k_max
  EXPECT_EQ(split(3, 64, 576, 100352, resident), 44);     // conv2d fp32 wgrad: 3 tiles fill one wave
  EXPECT_EQ(split(1, 1, 1, 1000, resident), 3);           // slices of >= 256
  EXPECT_EQ(split(1, 1, 1, 300, resident), 1);            // too short to split
  EXPECT_EQ(split(0, 0, 0, 4096, resident), 1);
  EXPECT_EQ(split(1, 1, 1, 4096, 0), 1);  // no resident blocks known
  // The workspace cap: split x m x n x 4 bytes <= 64 MiB.
  EXPECT_EQ(split(16, 2048, 2048, 1 << 20, 8 * resident), 4);
}

// The split-k planner before it moved to common/split_k_plan.hpp (matmul's
// choose_split_k and plan_split_k as they were, on tuning.hpp's constants):
// plan_matmul_split_k must make exactly its decisions.
namespace previous {
int choose_split_k(std::size_t tiles, std::size_t m, std::size_t n, std::size_t k, int resident_blocks,
                   std::size_t min_slice) {
  using namespace kf::detail;
  if (tiles == 0 || resident_blocks <= 0 || tiles * split_k_wave_fraction_den > std::size_t(resident_blocks)) return 1;
  std::size_t split = std::size_t(resident_blocks) / tiles;
  if (split > std::size_t(split_k_max)) split = split_k_max;
  if (split > k / min_slice) split = k / min_slice;
  const std::size_t bytes_per_slice = m * n * sizeof(float);
  if (bytes_per_slice > 0 && split > split_k_max_workspace_bytes / bytes_per_slice) {
    split = split_k_max_workspace_bytes / bytes_per_slice;
  }
  return split < 2 ? 1 : static_cast<int>(split);
}

kf::detail::split_k_plan plan_split_k(std::size_t tiles, std::size_t m, std::size_t n, std::size_t k, int block_k,
                                      int resident_blocks, std::size_t min_slice) {
  using kf::detail::ceil_div;
  kf::detail::split_k_plan plan;
  plan.split = choose_split_k(tiles, m, n, k, resident_blocks, min_slice);
  plan.k_slice = k;
  if (plan.split > 1) {
    plan.k_slice = ceil_div(ceil_div(k, plan.split), block_k) * block_k;
    plan.split = static_cast<int>(ceil_div(k, plan.k_slice));
  }
  return plan;
}

}  // namespace previous

TEST(MatmulTuning, SplitKPlanMakesThePreviousPlannersDecisions) {
  const std::size_t shapes[][2] = {{1, 1}, {1, 4096}, {128, 8192}, {130, 300}, {513, 257}, {2048, 2048}, {4096, 4096}};
  const std::size_t ks[] = {0,   1,    31,   255,  256,  257,  300,  511,  512,   513,
                            767, 1000, 1024, 1031, 2051, 4096, 4100, 8192, 65537, 1 << 20};
  const int residents[] = {-1, 0, 1, 2, 3, 7, 16, 33, 66, 99, 100, 108, 114, 132, 133, 144, 170, 264, 396, 1056};
  long checked = 0, split = 0;
  for (const auto& mn : shapes) {
    for (int resident : residents) {
      for (std::size_t tiles = 0; tiles <= std::size_t(resident > 0 ? resident : 0) + 2; ++tiles) {
        for (std::size_t k : ks) {
          for (int block_k : {8, 16, 32, 64}) {
            for (std::size_t min_slice : {std::size_t{256}, std::size_t{1024}}) {
              const auto want = previous::plan_split_k(tiles, mn[0], mn[1], k, block_k, resident, min_slice);
              const auto got = kf::detail::plan_matmul_split_k(tiles, mn[0], mn[1], k, block_k, resident, min_slice);
              ASSERT_EQ(got.split, want.split) << mn[0] << " x " << mn[1] << " x " << k << ", " << tiles << " tiles, "
                                               << resident << " resident, block_k " << block_k << ", min " << min_slice;
              ASSERT_EQ(got.k_slice, want.k_slice) << mn[0] << " x " << mn[1] << " x " << k << ", " << tiles
                                                   << " tiles, " << resident << " resident, block_k " << block_k;
              ++checked;
              split += want.split > 1;
            }
          }
        }
      }
    }
  }
  // The grid exercises both outcomes.
  EXPECT_GT(checked, 100000);
  EXPECT_GT(split, 10000);
}

TEST(MatmulTuning, SplitKPlanRoundsSlicesToTheKernelsKStep) {
  const auto plan_split_k = [](std::size_t tiles, std::size_t m, std::size_t n, std::size_t k, int block_k,
                               int resident) {
    return kf::detail::plan_matmul_split_k(tiles, m, n, k, block_k, resident);
  };
  const int resident = 132;
  // Unsplit: one slice of all of k, no workspace.
  auto plan = plan_split_k(1024, 4096, 4096, 4096, 32, resident);
  EXPECT_EQ(plan.split, 1);
  EXPECT_EQ(plan.k_slice, 4096u);
  EXPECT_EQ(plan.workspace_bytes(4096, 4096), 0u);
  // 128 x 8192 x 8192 in 128 x 128 tiles: 2 slices of 4096.
  plan = plan_split_k(64, 128, 8192, 8192, 32, resident);
  EXPECT_EQ(plan.split, 2);
  EXPECT_EQ(plan.k_slice, 4096u);
  EXPECT_EQ(plan.workspace_bytes(128, 8192), 2u * 128 * 8192 * sizeof(float));
  // k = 1000 in 3: slices of 334 rounded up to 352 (block_k 32), still 3 of them.
  plan = plan_split_k(1, 1, 1, 1000, 32, resident);
  EXPECT_EQ(plan.split, 3);
  EXPECT_EQ(plan.k_slice, 352u);
  // k = 4100 in 16: slices of 257 round up to 288 with block_k 32, which cover k
  // in 15 (the last one 68 long); with block_k 16, to 272: still 16.
  plan = plan_split_k(1, 1, 1, 4100, 32, resident);
  EXPECT_EQ(plan.split, 15);
  EXPECT_EQ(plan.k_slice, 288u);
  EXPECT_EQ(plan.workspace_bytes(1, 1), 15 * sizeof(float));
  plan = plan_split_k(1, 1, 1, 4100, 16, resident);
  EXPECT_EQ(plan.split, 16);
  EXPECT_EQ(plan.k_slice, 272u);
  // Every plan covers k, and no slice is empty.
  for (std::size_t k : {257u, 511u, 1000u, 4097u, 65537u}) {
    for (int block_k : {8, 16, 32}) {
      plan = plan_split_k(1, 1, 1, k, block_k, resident);
      EXPECT_EQ(plan.k_slice % block_k, plan.split > 1 ? 0u : k % block_k) << k << " / " << block_k;
      EXPECT_GE(plan.k_slice * plan.split, k) << k << " / " << block_k;
      EXPECT_LT(plan.k_slice * (plan.split - 1), k) << k << " / " << block_k;
    }
  }
}

}  // namespace
