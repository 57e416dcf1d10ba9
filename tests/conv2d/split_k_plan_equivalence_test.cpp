// SPDX-License-Identifier: Apache-2.0
// The conv2d tile and split-K plan against the planner it replaced (kept here,
// not in the library): since split-K moved to the shared planner
// (common/split_k_plan.hpp), choose_conv2d_gemm_plan must make exactly the
// previous decisions over a grid of layers and SM counts. Part of test_conv2d.
#include <gtest/gtest.h>

#include <cstddef>

#include "kernelforge/kernels/conv2d/plan.hpp"

namespace {

// The tile and split-K plan before split-K moved to the shared planner
// (common/split_k_plan.hpp): choose_conv2d_gemm_plan as it was, on tuning.hpp's
// constants; the plan must make exactly its decisions.
kf::detail::conv2d_gemm_plan previous_conv2d_gemm_plan(std::size_t m, std::size_t k, std::size_t crs, int sm_count) {
  using namespace kf::detail;
  conv2d_gemm_plan plan;
  const std::size_t slices = ceil_div(crs, conv2d_plan_bk);
  plan.slices_per_split = slices;
  plan.tile = choose_conv2d_gemm_tile(m, k, sm_count);
  if (plan.tile != conv2d_gemm_tile::m64_n64) return plan;
  const conv2d_gemm_tile large = k > 64 ? conv2d_gemm_tile::m128_n128 : conv2d_gemm_tile::m128_n64;
  const std::size_t blocks = conv2d_gemm_blocks(m, k, 128, large == conv2d_gemm_tile::m128_n128 ? 128 : 64);
  const std::size_t max_blocks = conv2d_split_max_waves * conv2d_gemm_wave(sm_count);
  for (std::size_t split = conv2d_split_max; split >= 2; --split) {
    const std::size_t per_split = ceil_div(slices, split);
    const std::size_t used = ceil_div(slices, per_split);
    const std::size_t last = slices - (used - 1) * per_split;
    if (used < 2 || last < conv2d_split_min_slices || blocks * used > max_blocks) continue;
    plan.tile = large;
    plan.slices_per_split = per_split;
    plan.split = used;
    return plan;
  }
  return plan;
}

TEST(ConvPlan, SplitKPlanMakesThePreviousPlannersDecisions) {
  const int sm_counts[] = {0, 1, 2, 4, 8, 16, 46, 78, 108, 114, 132, 144, 170};
  const std::size_t ms[] = {1,   2,    7,    49,   64,   100,   128,   196,   392,
                            500, 1000, 2048, 3136, 6272, 10240, 12544, 25088, 100352};
  const std::size_t ks[] = {1, 3, 16, 40, 63, 64, 65, 67, 96, 128, 192, 256, 512, 1024, 2048};
  long checked = 0, split = 0;
  const auto check = [&](std::size_t m, std::size_t k, std::size_t crs, int sms) {
    const auto want = previous_conv2d_gemm_plan(m, k, crs, sms);
    const auto got = kf::detail::choose_conv2d_gemm_plan(m, k, crs, sms);
    EXPECT_EQ(static_cast<int>(got.tile), static_cast<int>(want.tile)) << m << " " << k << " " << crs << " " << sms;
    EXPECT_EQ(got.split, want.split) << m << " " << k << " " << crs << " " << sms;
    EXPECT_EQ(got.slices_per_split, want.slices_per_split) << m << " " << k << " " << crs << " " << sms;
    ++checked;
    split += want.split > 1;
  };
  for (int sms : sm_counts) {
    for (std::size_t m : ms) {
      for (std::size_t k : ks) {
        for (std::size_t crs = 1; crs <= 1300; crs += (crs < 600 ? 1 : 7)) check(m, k, crs, sms);
        for (std::size_t crs : {2304u, 4608u, 9216u, 100000u}) check(m, k, crs, sms);
      }
    }
  }
  EXPECT_GT(checked, 100000);
  EXPECT_GT(split, 10000);
}

}  // namespace
