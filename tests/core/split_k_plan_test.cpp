// SPDX-License-Identifier: Apache-2.0
// CPU tests of the split-k planner matmul and conv2d share
// (include/kernelforge/kernels/common/split_k_plan.hpp): each limit of
// split_k_policy on its own, and the cut's rounding. The families' limits and
// their named shapes are tested with each family (matmul_tuning_test.cpp,
// conv2d_cpu_test.cpp).
#include <gtest/gtest.h>

#include <cstddef>

#include "kernelforge/kernels/common/split_k_plan.hpp"

namespace {

using kf::detail::plan_split_k;
using kf::detail::split_k_plan;
using kf::detail::split_k_policy;

split_k_policy most(std::size_t max_split) {
  split_k_policy p;
  p.max_split = max_split;
  return p;
}

TEST(SplitKPlan, UnsplitWithoutRoomOrWork) {
  const split_k_policy p = most(4);
  auto plan = plan_split_k(0, 1000, p);  // no tiles
  EXPECT_EQ(plan.split, 1);
  EXPECT_EQ(plan.k_slice, 1000u);
  plan = plan_split_k(1, 0, p);  // nothing to reduce
  EXPECT_EQ(plan.split, 1);
  EXPECT_EQ(plan.k_slice, 0u);
  plan = plan_split_k(1, 1, p);  // one element of k: one slice
  EXPECT_EQ(plan.split, 1);
  split_k_policy few = p;
  few.max_tiles = 10;
  EXPECT_EQ(plan_split_k(11, 1000, few).split, 1);  // too many tiles to split
  EXPECT_EQ(plan_split_k(10, 1000, few).split, 4);
  EXPECT_EQ(plan_split_k(1, 1000, most(1)).split, 1);
  EXPECT_EQ(plan.workspace_bytes(100, 100), 0u);
}

TEST(SplitKPlan, EachLimitBinds) {
  // The most slices.
  auto plan = plan_split_k(1, 1000, most(4));
  EXPECT_EQ(plan.split, 4);
  EXPECT_EQ(plan.k_slice, 250u);
  EXPECT_EQ(plan.workspace_bytes(2, 3), 4u * 2 * 3 * sizeof(float));
  // Blocks: 10 tiles within 35 blocks -> 3 slices.
  split_k_policy p = most(16);
  p.max_blocks = 35;
  EXPECT_EQ(plan_split_k(10, 1000, p).split, 3);
  EXPECT_EQ(plan_split_k(18, 1000, p).split, 1);  // 2 x 18 > 35
  // Mean slice: k / 300 = 3 slices.
  p = most(16);
  p.min_mean_slice = 300;
  EXPECT_EQ(plan_split_k(1, 1000, p).split, 3);
  EXPECT_EQ(plan_split_k(1, 599, p).split, 1);
  // Workspace: 100 bytes per slice within 250 -> 2 slices.
  p = most(16);
  p.slice_bytes = 100;
  p.max_workspace_bytes = 250;
  EXPECT_EQ(plan_split_k(1, 1000, p).split, 2);
  // Last slice: 65 in 4 leaves 14 (< 16), 3 leave 21.
  p = most(4);
  p.min_last_slice = 16;
  plan = plan_split_k(1, 65, p);
  EXPECT_EQ(plan.split, 3);
  EXPECT_EQ(plan.k_slice, 22u);
  EXPECT_EQ(plan_split_k(1, 31, p).split, 1);  // two slices of 16 need 32
  EXPECT_EQ(plan_split_k(1, 32, p).split, 2);
}

TEST(SplitKPlan, SlicesRoundUpToTheGranule) {
  // 4100 in 16: slices of 257 round up to 288 (granule 32), which cover k in
  // 15, the last one 68 long; with granule 16, 272: still 16.
  split_k_policy p = most(16);
  p.granule = 32;
  auto plan = plan_split_k(1, 4100, p);
  EXPECT_EQ(plan.split, 15);
  EXPECT_EQ(plan.k_slice, 288u);
  p.granule = 16;
  plan = plan_split_k(1, 4100, p);
  EXPECT_EQ(plan.split, 16);
  EXPECT_EQ(plan.k_slice, 272u);
  // Every plan covers k with no empty slice.
  for (std::size_t k : {2u, 3u, 31u, 257u, 1000u, 4097u, 65537u}) {
    for (std::size_t granule : {1u, 8u, 32u, 64u}) {
      for (std::size_t max_split : {2u, 3u, 4u, 16u}) {
        p = most(max_split);
        p.granule = granule;
        plan = plan_split_k(1, k, p);
        const auto split = static_cast<std::size_t>(plan.split);
        ASSERT_LE(split, max_split);
        ASSERT_GE(split * plan.k_slice, k) << k << " " << granule << " " << max_split;
        ASSERT_LT((split - 1) * plan.k_slice, k) << k << " " << granule << " " << max_split;
        if (split > 1) ASSERT_EQ(plan.k_slice % granule, 0u) << k << " " << granule << " " << max_split;
      }
    }
  }
}

}  // namespace
