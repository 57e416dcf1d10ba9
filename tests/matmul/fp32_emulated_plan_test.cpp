// SPDX-License-Identifier: Apache-2.0
// CPU tests of where math_mode::fp32_emulated runs (test_matmul_cpu, beside
// matmul_tuning_test.cpp): include/kernelforge/kernels/matmul/plan.hpp's route
// (the device, then k, then wgmma or mma.sync), step 17's skinny shapes and
// step 16's tiles and stages.
#include <gtest/gtest.h>

#include <cstddef>

#include "kernelforge/kernels/matmul/plan.hpp"

namespace {

/// The device decides first (unsupported below 8.0, for every k), then short
/// sums run exact, then wgmma where its image and device allow, else mma.sync.
TEST(MatmulTuning, Fp32EmulatedRoute) {
  using kf::detail::choose_fp32_emulated_route;
  using kf::detail::fp32_emulated_min_k;
  using route = kf::detail::fp32_emulated_route;
  const std::size_t long_k = fp32_emulated_min_k, short_k = fp32_emulated_min_k - 1;
  for (const int cc : {50, 61, 70, 75}) {
    for (const std::size_t k : {std::size_t{1}, short_k, long_k, std::size_t{65536}}) {
      EXPECT_EQ(choose_fp32_emulated_route(cc, false, k), route::unsupported) << cc << " " << k;
      EXPECT_EQ(choose_fp32_emulated_route(cc, true, k), route::unsupported) << cc << " " << k;
    }
  }
  for (const int cc : {80, 86, 87, 89, 90, 100, 120}) {
    EXPECT_EQ(choose_fp32_emulated_route(cc, false, 1), route::exact) << cc;
    EXPECT_EQ(choose_fp32_emulated_route(cc, true, short_k), route::exact) << cc;
    EXPECT_EQ(choose_fp32_emulated_route(cc, false, long_k), route::mma_sync) << cc;
    EXPECT_EQ(choose_fp32_emulated_route(cc, false, 65536), route::mma_sync) << cc;
  }
  // wgmma_available is true only on 9.0 with the sm_90a image.
  EXPECT_EQ(choose_fp32_emulated_route(90, true, long_k), route::wgmma);
  EXPECT_EQ(choose_fp32_emulated_route(90, true, 65536), route::wgmma);
  EXPECT_EQ(kf::detail::mma_sync_min_cc, 80);
}

/// Step 17 (the large operand split in registers) where one side is at most
/// fp32_emulated_skinny_max_small and the other at least
/// fp32_emulated_skinny_min_large: B large where m is small (the swapped
/// product), A large where n is; k below fp32_emulated_min_k never (the exact
/// steps run). Forced, the larger side's operand (ties: B).
TEST(MatmulTuning, Fp32EmulatedSkinnyRoute) {
  using kf::detail::choose_fp32_emulated_large;
  using kf::detail::forced_fp32_emulated_large;
  using large = kf::detail::fp32_emulated_large;
  constexpr std::size_t small = kf::detail::fp32_emulated_skinny_max_small;
  constexpr std::size_t big = kf::detail::fp32_emulated_skinny_min_large;
  constexpr std::size_t k = kf::detail::fp32_emulated_min_k;
  static_assert(small == 256 && big == 1024 && big >= 4 * small, "the bounds the tuning notes state");
  // The shape the step is for: 128 x 8192 x 8192 (and its transpose).
  EXPECT_EQ(choose_fp32_emulated_large(128, 8192, 8192), large::b);
  EXPECT_EQ(choose_fp32_emulated_large(8192, 128, 8192), large::a);
  for (const std::size_t s : {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{200}, small}) {
    EXPECT_EQ(choose_fp32_emulated_large(s, big, k), large::b) << s;
    EXPECT_EQ(choose_fp32_emulated_large(big, s, k), large::a) << s;
    EXPECT_EQ(choose_fp32_emulated_large(s, 65536, 65536), large::b) << s;
    EXPECT_EQ(choose_fp32_emulated_large(s, big, k - 1), large::none) << s;  // the exact steps' k
    EXPECT_EQ(choose_fp32_emulated_large(s, big - 1, k), large::none) << s;  // both sides small
    EXPECT_EQ(choose_fp32_emulated_large(big - 1, s, k), large::none) << s;
  }
  EXPECT_EQ(choose_fp32_emulated_large(small + 1, 8192, 8192), large::none);
  EXPECT_EQ(choose_fp32_emulated_large(8192, small + 1, 8192), large::none);
  EXPECT_EQ(choose_fp32_emulated_large(4096, 4096, 4096), large::none);
  EXPECT_EQ(choose_fp32_emulated_large(small, small, 8192), large::none);
  EXPECT_EQ(forced_fp32_emulated_large(7, 1031), large::b);
  EXPECT_EQ(forced_fp32_emulated_large(1031, 7), large::a);
  EXPECT_EQ(forced_fp32_emulated_large(64, 64), large::b);
}

/// Step 16's stages fit the opt-in (3 at most), and its tile width: 128 where
/// two stages of it fit and its tiles make a wave, 64 on the 99 KiB GPUs and
/// for small products, none where not even 128 x 64 fits.
TEST(MatmulTuning, MmaFp32EmulatedTilesAndStages) {
  using kf::detail::choose_mma_fp32_emulated_block_n;
  using kf::detail::mma_fp32_emulated_stage_bytes;
  using kf::detail::mma_fp32_emulated_stages;
  EXPECT_EQ(mma_fp32_emulated_stage_bytes(128), 65536u);  // 256 rows of 64 floats
  EXPECT_EQ(mma_fp32_emulated_stage_bytes(64), 49152u);
  const std::size_t sm90 = 227 * 1024, sm80 = 163 * 1024, sm86 = 99 * 1024;
  EXPECT_EQ(mma_fp32_emulated_stages(128, sm90), 3);
  EXPECT_EQ(mma_fp32_emulated_stages(128, sm80), 2);
  EXPECT_EQ(mma_fp32_emulated_stages(128, sm86), 1);
  EXPECT_EQ(mma_fp32_emulated_stages(64, sm90), 3);
  EXPECT_EQ(mma_fp32_emulated_stages(64, sm80), 3);
  EXPECT_EQ(mma_fp32_emulated_stages(64, sm86), 2);
  EXPECT_EQ(mma_fp32_emulated_stages(64, 48 * 1024), 1);
  // H200 (132 SMs), A100 (108): 128-wide where the 128 x 128 tiles make a wave.
  EXPECT_EQ(choose_mma_fp32_emulated_block_n(4096, 4096, 132, sm90), 128);  // 1024 tiles
  EXPECT_EQ(choose_mma_fp32_emulated_block_n(1536, 1408, 132, sm90), 128);  // 12 x 11 = 132 tiles
  EXPECT_EQ(choose_mma_fp32_emulated_block_n(1536, 1407, 132, sm90), 128);
  EXPECT_EQ(choose_mma_fp32_emulated_block_n(1536, 1280, 132, sm90), 64);  // 120 tiles
  EXPECT_EQ(choose_mma_fp32_emulated_block_n(1024, 1024, 132, sm90), 64);  // 64 tiles
  EXPECT_EQ(choose_mma_fp32_emulated_block_n(1024, 1024, 108, sm80), 64);
  EXPECT_EQ(choose_mma_fp32_emulated_block_n(2048, 2048, 108, sm80), 128);  // 256 tiles
  EXPECT_EQ(choose_mma_fp32_emulated_block_n(1, 1, 132, sm90), 64);
  // 99 KiB a block (sm_86, sm_89, sm_120): two stages of 128 x 64 only.
  EXPECT_EQ(choose_mma_fp32_emulated_block_n(8192, 8192, 84, sm86), 64);
  EXPECT_EQ(choose_mma_fp32_emulated_block_n(8192, 8192, 84, 64 * 1024), 0);
  EXPECT_EQ(choose_mma_fp32_emulated_block_n(8192, 8192, 0, sm90), 128);  // no SM count: no wave to fill
}

}  // namespace
