// SPDX-License-Identifier: Apache-2.0
// Launch planning (include/kernelforge/kernels/runtime/launch_plan.hpp): pure functions, so every
// rule is checked here on the CPU with made-up device limits.
#include <gtest/gtest.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "kernelforge/kernels/runtime/launch_plan.hpp"
#include "kernelforge/error.hpp"

namespace {

using kf::detail::choose_block_size;
using kf::detail::device_limits;
using kf::detail::is_valid_block_size;
using kf::detail::occupancy_table;
using kf::detail::plan_grid_stride;
using kf::detail::plan_one_per_thread;

constexpr std::uint32_t grid_limit_since_sm30 = 2147483647u;  // 2^31 - 1
constexpr std::uint32_t grid_limit_16bit = 65535u;            // gridDim.y/z limit: a small cap for tests

// An H200-like device: 132 SMs, 2048 threads per SM, 1024 per block.
device_limits h200_like() { return {132, 2048, 1024, grid_limit_since_sm30}; }

// Occupancy of a light kernel on an SM with `threads_per_sm` threads and at most
// `max_blocks` resident blocks: min(max_blocks, threads_per_sm / block).
occupancy_table light_kernel_table(int threads_per_sm = 2048, int max_blocks = 32) {
  occupancy_table t{};
  for (int warps = 1; warps <= 32; ++warps) t[warps - 1] = std::min(max_blocks, threads_per_sm / (warps * 32));
  return t;
}

int index_of(int block) { return block / 32 - 1; }

// ---- choose_block_size -----------------------------------------------------

TEST(ChooseBlockSize, RealisticTableTiesGoToPreferred256) {
  // 64, 128, 256, 512 and 1024 all reach 2048 resident threads; 256 is preferred.
  EXPECT_EQ(choose_block_size(light_kernel_table()), 256);
}

TEST(ChooseBlockSize, TiesGoToTheBlockClosestToPreferred) {
  const occupancy_table t = light_kernel_table();  // full occupancy at 64, 128, 256, 512, 1024
  EXPECT_EQ(choose_block_size(t, 128), 128);
  EXPECT_EQ(choose_block_size(t, 180), 128);  // |128-180| = 52 < |256-180| = 76
  EXPECT_EQ(choose_block_size(t, 200), 256);  // |256-200| = 56 < |128-200| = 72
  EXPECT_EQ(choose_block_size(t, 1024), 1024);
  EXPECT_EQ(choose_block_size(t, 4096), 1024);
  EXPECT_EQ(choose_block_size(t, 1), 64);  // 32 reaches only 32 x 32 = 1024 threads: not a tie
}

TEST(ChooseBlockSize, MoreResidentThreadsBeatsPreference) {
  occupancy_table t{};
  t[index_of(96)] = 21;  // 2016 threads
  t[index_of(256)] = 7;  // 1792 threads
  EXPECT_EQ(choose_block_size(t, 256), 96);
}

TEST(ChooseBlockSize, AllZeroRowsMeanNothingCanLaunch) {
  const occupancy_table none{};
  EXPECT_EQ(choose_block_size(none), 0);
  EXPECT_EQ(choose_block_size(none, 32), 0);
}

TEST(ChooseBlockSize, ZeroRowsAreNeverChosen) {
  // A kernel limited to 512 threads per block (registers): rows above 512 are 0.
  occupancy_table t = light_kernel_table();
  for (int block = 544; block <= 1024; block += 32) t[index_of(block)] = 0;
  EXPECT_EQ(choose_block_size(t, 1024), 512);
  // Only one row can launch at all.
  occupancy_table single{};
  single[index_of(160)] = 1;
  EXPECT_EQ(choose_block_size(single, 256), 160);
  EXPECT_EQ(choose_block_size(single, 32), 160);
}

TEST(ChooseBlockSize, ResultIsAlwaysAValidBlockSize) {
  for (int preferred : {0, 1, 32, 100, 256, 999, 1024, 5000}) {
    const int block = choose_block_size(light_kernel_table(1536, 16), preferred);
    EXPECT_TRUE(is_valid_block_size(block)) << "preferred " << preferred << " -> " << block;
  }
}

// ---- is_valid_block_size ---------------------------------------------------

TEST(IsValidBlockSize, MultiplesOf32From32To1024) {
  for (int block = 32; block <= 1024; block += 32) EXPECT_TRUE(is_valid_block_size(block)) << block;
}

TEST(IsValidBlockSize, RejectsEverythingElse) {
  for (int block : {0, 1, 16, 31, 33, 63, 100, 1000, 1023, 1025, 1056, 2048, -32, -1, INT_MIN, INT_MAX}) {
    EXPECT_FALSE(is_valid_block_size(block)) << block;
  }
}

// ---- plan_one_per_thread ---------------------------------------------------

TEST(PlanOnePerThread, GridIsExactCeilDiv) {
  const device_limits limits = h200_like();
  struct expected_plan {
    int block;
    std::size_t items;
    std::uint32_t grid;
  };
  const expected_plan cases[] = {
      {256, 1, 1},
      {256, 255, 1},
      {256, 256, 1},
      {256, 257, 2},
      {32, 33, 2},
      {96, 1023, 11},
      {1024, 1048583, 1025},                        // 2^20 + 7
      {256, (std::size_t{1} << 31) + 17, 8388609},  // 2^23 + 1 blocks
  };
  for (const auto& c : cases) {
    const auto plan = plan_one_per_thread(limits, c.block, c.items);
    EXPECT_EQ(plan.grid, c.grid) << "block " << c.block << ", items " << c.items;
    EXPECT_EQ(plan.block, static_cast<std::uint32_t>(c.block));
  }
}

TEST(PlanOnePerThread, ExactlyAtTheGridLimitIsAllowed) {
  device_limits limits = h200_like();
  limits.max_grid_x = grid_limit_16bit;
  const auto plan = plan_one_per_thread(limits, 256, std::size_t{grid_limit_16bit} * 256);
  EXPECT_EQ(plan.grid, grid_limit_16bit);
}

TEST(PlanOnePerThread, OverTheGridLimitIsUnsupported) {
  device_limits limits = h200_like();
  limits.max_grid_x = grid_limit_16bit;
  const std::size_t items = std::size_t{grid_limit_16bit} * 256 + 1;
  try {
    plan_one_per_thread(limits, 256, items);
    FAIL() << "expected kf::error(unsupported)";
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), kf::errc::unsupported);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("65536"), std::string::npos) << msg;        // the blocks needed
    EXPECT_NE(msg.find("65535"), std::string::npos) << msg;        // the limit
    EXPECT_NE(msg.find("grid-stride"), std::string::npos) << msg;  // what to do
  }
}

TEST(PlanOnePerThread, RealGridLimitIsUnsupported) {
  // 2^31 blocks of 32 threads: one block over gridDim.x's 2^31 - 1.
  EXPECT_THROW(
      {
        try {
          plan_one_per_thread(h200_like(), 32, (std::size_t{1} << 31) * 32);
        } catch (const kf::error& e) {
          EXPECT_EQ(e.code(), kf::errc::unsupported);
          throw;
        }
      },
      kf::error);
}

TEST(PlanOnePerThread, ItemsNearSizeMaxDoNotWrapAround) {
  // items + block - 1 overflows size_t here; the plan must still see that
  // ~2^56 blocks are needed (unsupported), not wrap to a tiny grid.
  const std::size_t items = std::numeric_limits<std::size_t>::max();
  try {
    const auto plan = plan_one_per_thread(h200_like(), 256, items);
    FAIL() << "expected kf::error(unsupported), got grid " << plan.grid;
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), kf::errc::unsupported);
  }
}

// ---- plan_grid_stride ------------------------------------------------------

constexpr int no_wave_cap = 0;

TEST(PlanGridStride, EnoughBlocksToCoverItemsNotMultipleOfPerBlock) {
  const device_limits limits = h200_like();
  // items in units of chunks; items_per_block = block x chunks per thread.
  for (int waves : {no_wave_cap, 1, 4}) {
    SCOPED_TRACE("max_waves " + std::to_string(waves));
    EXPECT_EQ(plan_grid_stride(limits, 256, 8, 1, 1024, waves).grid, 1u);
    EXPECT_EQ(plan_grid_stride(limits, 256, 8, 1024, 1024, waves).grid, 1u);
    EXPECT_EQ(plan_grid_stride(limits, 256, 8, 1025, 1024, waves).grid, 2u);
    EXPECT_EQ(plan_grid_stride(limits, 256, 8, 1000, 256, waves).grid, 4u);
    EXPECT_EQ(plan_grid_stride(limits, 128, 16, 7, 3, waves).grid, 3u);
    EXPECT_EQ(plan_grid_stride(limits, 96, 21, 1000, 256, waves).block, 96u);
  }
}

TEST(PlanGridStride, ZeroItemsStillGetOneBlock) {
  for (int waves : {no_wave_cap, 1}) {
    const auto plan = plan_grid_stride(h200_like(), 256, 8, 0, 1024, waves);
    EXPECT_EQ(plan.grid, 1u);
    EXPECT_EQ(plan.block, 256u);
  }
}

TEST(PlanGridStride, CappedAtFullWaves) {
  const device_limits limits = h200_like();
  const std::size_t wave = 132 * 8;  // sm_count x resident blocks per SM
  EXPECT_EQ(plan_grid_stride(limits, 256, 8, wave * 1024, 1024, 1).grid, wave);
  EXPECT_EQ(plan_grid_stride(limits, 256, 8, wave * 1024 + 1, 1024, 1).grid, wave);
  EXPECT_EQ(plan_grid_stride(limits, 256, 8, wave * 1024 - 1, 1024, 1).grid, wave);
  EXPECT_EQ(plan_grid_stride(limits, 256, 8, std::size_t{1} << 40, 1024, 1).grid, wave);
  EXPECT_EQ(plan_grid_stride(limits, 256, 8, std::size_t{1} << 40, 1024, 3).grid, 3 * wave);
  EXPECT_EQ(plan_grid_stride(limits, 256, 8, 2 * wave * 1024 + 5, 1024, 3).grid, 2 * wave + 1);  // under the cap
  EXPECT_EQ(plan_grid_stride(limits, 1024, 2, (std::size_t{1} << 31) + 17, 4096, 1).grid, 264u);
}

TEST(PlanGridStride, ZeroBlocksPerSmCountsAsOne) {
  const auto plan = plan_grid_stride(h200_like(), 1024, 0, std::size_t{1} << 30, 1024, 1);
  EXPECT_EQ(plan.grid, 132u);
}

TEST(PlanGridStride, NoWaveCapMeansOneTilePerBlock) {
  const device_limits limits = h200_like();
  EXPECT_EQ(plan_grid_stride(limits, 256, 8, std::size_t{1} << 40, 1024, no_wave_cap).grid, 1u << 30);
  EXPECT_EQ(plan_grid_stride(limits, 256, 8, (std::size_t{1} << 28) / 4, 256, no_wave_cap).grid, 1u << 18);
  EXPECT_EQ(plan_grid_stride(limits, 256, 8, (std::size_t{1} << 31) + 17, 1024, no_wave_cap).grid, (1u << 21) + 1);
}

TEST(PlanGridStride, NeverExceedsTheGridLimit) {
  device_limits limits = h200_like();
  limits.max_grid_x = 100;
  EXPECT_EQ(plan_grid_stride(limits, 256, 8, std::size_t{1} << 30, 256, 1).grid, 100u);
  EXPECT_EQ(plan_grid_stride(limits, 256, 8, std::size_t{1} << 30, 256, no_wave_cap).grid, 100u);
  // The real limit, with no wave cap: 2^31 - 1 blocks, not a wrapped 32-bit value.
  EXPECT_EQ(plan_grid_stride(h200_like(), 32, 32, std::size_t{1} << 50, 32, no_wave_cap).grid, grid_limit_since_sm30);
}

TEST(PlanGridStride, ItemsNearSizeMaxDoNotWrapAround) {
  // items + items_per_block - 1 overflows size_t; the answer must be the cap.
  const std::size_t items = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(plan_grid_stride(h200_like(), 256, 8, items, 1024, 1).grid, 132u * 8u);
  EXPECT_EQ(plan_grid_stride(h200_like(), 256, 8, items, 1024, no_wave_cap).grid, grid_limit_since_sm30);
}

}  // namespace
