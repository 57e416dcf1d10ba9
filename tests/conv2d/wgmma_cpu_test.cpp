// SPDX-License-Identifier: Apache-2.0
// CPU tests of conv2d's implicit_gemm_wgmma (step 7): which layers it applies
// to, its schedule and resident filter, its refusals before any launch, the
// pixel-box plan and the last round's split. Part of test_conv2d; the layer as
// the kernel reads it (the column fold, pointwise layers as one row) is in
// wgmma_layer_views_cpu_test.cpp, the filter-column tiles in
// wgmma_filter_column_cpu_test.cpp.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernelforge/conv.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/kernels/conv2d/args.cuh"
#include "kernelforge/kernels/conv2d/filter_column.hpp"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/kernels/conv2d/winograd_transforms.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"

namespace {

namespace ref = kf::reference;

using kf::test::expect_error;
using kf::test::fake;

// ---- implicit_gemm_wgmma (step 7): applicability and the pixel-box plan ----------

TEST(Conv2dWgmma, AppliesToStride1Only) {
  EXPECT_STREQ(kf::to_string(kf::conv2d_variant::implicit_gemm_wgmma), "implicit_gemm_wgmma");
  using kf::detail::conv2d_wgmma_preferred;
  using kf::detail::conv2d_wgmma_unsupported_reason;
  EXPECT_EQ(conv2d_wgmma_unsupported_reason(1, 1), nullptr);
  EXPECT_STREQ(conv2d_wgmma_unsupported_reason(2, 1), "the stride is not 1");
  EXPECT_STREQ(conv2d_wgmma_unsupported_reason(1, 2), "the stride is not 1");
  // best: stride 1 and at least 32 channels (a stage at least half real data).
  EXPECT_TRUE(conv2d_wgmma_preferred(64, 1, 1));
  EXPECT_TRUE(conv2d_wgmma_preferred(32, 1, 1));
  EXPECT_FALSE(conv2d_wgmma_preferred(31, 1, 1));
  EXPECT_FALSE(conv2d_wgmma_preferred(3, 1, 1));
  EXPECT_FALSE(conv2d_wgmma_preferred(256, 2, 2));
}

TEST(Conv2dWgmma, NhwcConditionsAndSchedule) {
  using kf::detail::conv2d_nhwc_folded_channels;
  using kf::detail::conv2d_nhwc_wgmma_reads_in_place;
  using kf::detail::conv2d_nhwc_wgmma_unsupported_reason;
  using kf::detail::conv2d_wgmma_pingpong;
  alignas(16) static unsigned char buffer[64];
  const void* aligned = buffer;
  const void* off = buffer + 2;
  // Strides up to 8 (TMA element strides); nothing else rules a layer out.
  EXPECT_EQ(conv2d_nhwc_wgmma_unsupported_reason(1, 1), nullptr);
  EXPECT_EQ(conv2d_nhwc_wgmma_unsupported_reason(2, 1), nullptr);
  EXPECT_EQ(conv2d_nhwc_wgmma_unsupported_reason(8, 8), nullptr);
  EXPECT_STREQ(conv2d_nhwc_wgmma_unsupported_reason(9, 1), "the stride is above 8 (TMA's largest element stride)");
  EXPECT_STREQ(conv2d_nhwc_wgmma_unsupported_reason(1, 9), "the stride is above 8 (TMA's largest element stride)");
  // In place where TMA can read the tensors; else the column fold.
  EXPECT_TRUE(conv2d_nhwc_wgmma_reads_in_place(8, 2, aligned, aligned));  // 8 halves: 16 bytes
  EXPECT_TRUE(conv2d_nhwc_wgmma_reads_in_place(4, 4, aligned, aligned));  // 4 floats: 16 bytes
  EXPECT_FALSE(conv2d_nhwc_wgmma_reads_in_place(3, 2, aligned, aligned));
  EXPECT_FALSE(conv2d_nhwc_wgmma_reads_in_place(6, 4, aligned, aligned));
  EXPECT_FALSE(conv2d_nhwc_wgmma_reads_in_place(8, 2, off, aligned));
  EXPECT_FALSE(conv2d_nhwc_wgmma_reads_in_place(8, 2, aligned, off));
  // The fold's channels: S C rounded up to 16 bytes (the stem: 7 x 3 = 21 -> 24 in 16-bit and float).
  EXPECT_EQ(conv2d_nhwc_folded_channels(7, 3, 2), 24u);
  EXPECT_EQ(conv2d_nhwc_folded_channels(7, 3, 4), 24u);
  EXPECT_EQ(conv2d_nhwc_folded_channels(3, 5, 2), 16u);
  EXPECT_EQ(conv2d_nhwc_folded_channels(1, 8, 2), 8u);
  // Ping-pong from 9 k-steps (tuning/conv2d.md#conv2d_nhwc_pingpong): a 3x3 layer with one
  // channel block runs it, the 1x1 C256 layer (4 k-steps in 16-bit, 8 in TF32) does not.
  EXPECT_TRUE(conv2d_wgmma_pingpong(9));
  EXPECT_TRUE(conv2d_wgmma_pingpong(72));
  EXPECT_FALSE(conv2d_wgmma_pingpong(8));
  EXPECT_FALSE(conv2d_wgmma_pingpong(4));
  EXPECT_FALSE(conv2d_wgmma_pingpong(1));
}

/// The resident filter and what it makes possible: the loads of a tile together, y through TMA.
TEST(Conv2dWgmma, ResidentFilterRules) {
  // A resident filter (tuning/conv2d.md#conv2d_wgmma_resident_filter): one channel tile, the cooperative
  // schedule, every k-step's slices in a stage of the ring (8 stages for 64-wide one-tap tiles).
  using kf::detail::conv2d_wgmma_resident_filter;
  EXPECT_TRUE(conv2d_wgmma_resident_filter(1, false, 4, 8));   // the 1x1 C256 K64 layer in 16-bit
  EXPECT_TRUE(conv2d_wgmma_resident_filter(1, false, 8, 8));   // ... in TF32: every stage of the ring
  EXPECT_TRUE(conv2d_wgmma_resident_filter(1, false, 7, 8));   // the TF32 stem's column fold (R = 7 k-steps)
  EXPECT_FALSE(conv2d_wgmma_resident_filter(1, false, 9, 8));  // more k-steps than stages
  EXPECT_FALSE(conv2d_wgmma_resident_filter(2, false, 4, 8));  // two channel tiles read different slices
  EXPECT_FALSE(conv2d_wgmma_resident_filter(1, true, 3, 8));   // ping-pong keeps its turn barriers
  // A tile's boxes asked for together (tuning/conv2d.md#conv2d_wgmma_tile_loads_together): a resident
  // filter whose k-steps fill at most half the ring.
  using kf::detail::conv2d_wgmma_tile_loads_together;
  EXPECT_TRUE(conv2d_wgmma_tile_loads_together(true, 4, 8));    // the 1x1 C256 K64 layer in 16-bit
  EXPECT_TRUE(conv2d_wgmma_tile_loads_together(true, 1, 8));    // one channel block
  EXPECT_FALSE(conv2d_wgmma_tile_loads_together(true, 8, 8));   // ... in TF32: the whole ring at once
  EXPECT_FALSE(conv2d_wgmma_tile_loads_together(true, 7, 8));   // the TF32 stem's column fold
  EXPECT_FALSE(conv2d_wgmma_tile_loads_together(false, 4, 8));  // stages that carry filter slices too
  // y through shared memory and TMA (tuning/conv2d.md#conv2d_wgmma_staged_y): 16-bit, one row of
  // pixels, cooperative, a resident filter of one 64-wide tile leaving 4 B slots, K x 2 bytes a multiple
  // of 16, y aligned.
  using kf::detail::conv2d_wgmma_staged_y;
  EXPECT_TRUE(conv2d_wgmma_staged_y(2, true, false, true, 64, 1, 4, 8, 64, true));     // the 1x1 C256 K64 layer
  EXPECT_TRUE(conv2d_wgmma_staged_y(2, true, false, true, 64, 1, 1, 8, 8, true));      // K = 8: 16-byte rows
  EXPECT_FALSE(conv2d_wgmma_staged_y(4, true, false, true, 64, 1, 4, 8, 64, true));    // TF32
  EXPECT_FALSE(conv2d_wgmma_staged_y(2, false, false, true, 64, 1, 4, 8, 64, true));   // rows and images
  EXPECT_FALSE(conv2d_wgmma_staged_y(2, true, true, true, 64, 1, 4, 8, 64, true));     // ping-pong
  EXPECT_FALSE(conv2d_wgmma_staged_y(2, true, false, false, 64, 1, 4, 8, 64, true));   // the filter in the B slots
  EXPECT_FALSE(conv2d_wgmma_staged_y(2, true, false, true, 128, 1, 2, 6, 128, true));  // 128-wide tiles
  EXPECT_FALSE(conv2d_wgmma_staged_y(2, true, false, true, 64, 1, 5, 8, 64, true));    // 3 B slots free
  EXPECT_FALSE(conv2d_wgmma_staged_y(2, true, false, true, 64, 1, 4, 8, 60, true));    // 120-byte rows
  EXPECT_FALSE(conv2d_wgmma_staged_y(2, true, false, true, 64, 1, 4, 8, 64, false));   // y misaligned
}

TEST(Conv2dWgmma, RefusedBeforeAnyLaunch) {
  float* x = fake(0x1000000);
  float* w = fake(0x2000000);
  float* y = fake(0x3000000);
  kf::conv2d_options o;
  o.variant = kf::conv2d_variant::implicit_gemm_wgmma;
  const kf::conv2d_params p{2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1};
  // TF32 products need math_mode::tf32.
  expect_error(kf::errc::invalid_argument, "math_mode::tf32",
               [&] { kf::conv2d_forward<float>(p, x, w, nullptr, y, o); });
  o.math = kf::math_mode::tf32;
  kf::conv2d_params stride2{2, 3, 9, 9, 4, 3, 3, 2, 2, 1, 1};
  expect_error(kf::errc::unsupported, "stride 2 x 2", [&] { kf::conv2d_forward<float>(stride2, x, w, nullptr, y, o); });
  kf::conv2d_params stride_w{2, 3, 9, 9, 4, 3, 3, 1, 2, 1, 1};
  expect_error(kf::errc::unsupported, "use implicit_gemm_tf32 or best",
               [&] { kf::conv2d_forward<float>(stride_w, x, w, nullptr, y, o); });
}

/// Checks one plan: boxes within TMA's limits and the 128-row tile, tiles that
/// cover the output, and no box shape (any wt, ht, nt) with fewer tiles.
void expect_valid_minimal_wgmma_plan(std::size_t n, std::size_t p, std::size_t q, std::size_t k) {
  using kf::detail::ceil_div;
  const kf::detail::conv2d_wgmma_tile t = kf::detail::choose_conv2d_wgmma_tile(n, p, q, k);
  SCOPED_TRACE("n " + std::to_string(n) + " p " + std::to_string(p) + " q " + std::to_string(q) + " k " +
               std::to_string(k));
  EXPECT_GE(t.wt, 1u);
  EXPECT_GE(t.ht, 1u);
  EXPECT_GE(t.nt, 1u);
  EXPECT_LE(t.box_pixels(), kf::detail::conv2d_wgmma_block_m);
  EXPECT_LE(t.wt, q);
  EXPECT_LE(t.ht, p);
  EXPECT_LE(t.nt, n);
  EXPECT_EQ(t.bn, k <= 64 ? 64u : 128u);
  EXPECT_EQ(t.tiles_q, ceil_div(q, t.wt));
  EXPECT_EQ(t.tiles_p, ceil_div(p, t.ht));
  EXPECT_EQ(t.tiles_n, ceil_div(n, t.nt));
  EXPECT_EQ(t.tiles_k, ceil_div(k, t.bn));
  EXPECT_EQ(t.tiles(), t.tiles_q * t.tiles_p * t.tiles_n * t.tiles_k);
  std::size_t fewest = SIZE_MAX;
  for (std::size_t wt = 1; wt <= 128; ++wt) {
    for (std::size_t ht = 1; wt * ht <= 128; ++ht) {
      for (std::size_t nt = 1; wt * ht * nt <= 128; ++nt) {
        const std::size_t tiles = ceil_div(n, nt) * ceil_div(p, ht) * ceil_div(q, wt);
        if (tiles < fewest) fewest = tiles;
      }
    }
  }
  EXPECT_EQ(t.tiles_m(), fewest);
}

TEST(Conv2dWgmma, PixelBoxPlan) {
  using kf::detail::choose_conv2d_wgmma_tile;
  // bench_conv's ResNet layers (N 32, 3x3, pad 1: P = H): boxes that span images
  // fill every tile (N P Q is a multiple of 128 in all three).
  const auto l1 = choose_conv2d_wgmma_tile(32, 56, 56, 64);
  EXPECT_EQ(std::vector<std::size_t>({l1.wt, l1.ht, l1.nt, l1.bn, l1.tiles()}),
            (std::vector<std::size_t>{8, 8, 2, 64, 32 * 56 * 56 / 128}));
  const auto l2 = choose_conv2d_wgmma_tile(32, 28, 28, 128);
  EXPECT_EQ(std::vector<std::size_t>({l2.wt, l2.ht, l2.nt, l2.bn, l2.tiles()}),
            (std::vector<std::size_t>{4, 4, 8, 128, 32 * 28 * 28 / 128}));
  const auto l3 = choose_conv2d_wgmma_tile(32, 14, 14, 256);
  EXPECT_EQ(std::vector<std::size_t>({l3.wt, l3.ht, l3.nt, l3.bn, l3.tiles()}),
            (std::vector<std::size_t>{2, 2, 32, 128, 32 * 14 * 14 / 128 * 2}));
  // Ties go to the widest box: 3 x 200 -> 42 x 3 (5 boxes, the last past Q).
  const auto wide = choose_conv2d_wgmma_tile(1, 3, 200, 20);
  EXPECT_EQ(std::vector<std::size_t>({wide.wt, wide.ht, wide.nt, wide.tiles()}),
            (std::vector<std::size_t>{42, 3, 1, 5}));
  // Single pixels batch up along n; one row of 300 splits into 128-wide boxes.
  const auto pixels = choose_conv2d_wgmma_tile(300, 1, 1, 13);
  EXPECT_EQ(std::vector<std::size_t>({pixels.wt, pixels.ht, pixels.nt, pixels.tiles()}),
            (std::vector<std::size_t>{1, 1, 128, 3}));
  const auto row = choose_conv2d_wgmma_tile(1, 1, 300, 200);
  EXPECT_EQ(std::vector<std::size_t>({row.wt, row.ht, row.nt, row.tiles_q, row.tiles_k}),
            (std::vector<std::size_t>{128, 1, 1, 3, 2}));
  // Strided (NHWC): a box spans stride x its pixels of input, at most 256 along w and h.
  const auto s2 = choose_conv2d_wgmma_tile(1, 1, 300, 64, 2, 2);
  EXPECT_EQ(std::vector<std::size_t>({s2.wt, s2.ht, s2.tiles_q}), (std::vector<std::size_t>{128, 1, 3}));
  const auto s4 = choose_conv2d_wgmma_tile(1, 1, 300, 64, 4, 4);
  EXPECT_EQ(std::vector<std::size_t>({s4.wt, s4.ht, s4.tiles_q}), (std::vector<std::size_t>{64, 1, 5}));
  const auto tall = choose_conv2d_wgmma_tile(1, 300, 1, 64, 8, 1);  // ht * 8 <= 256
  EXPECT_EQ(std::vector<std::size_t>({tall.wt, tall.ht, tall.tiles_p}), (std::vector<std::size_t>{1, 32, 10}));
  for (std::size_t sh : {1u, 2u, 3u, 8u}) {
    for (std::size_t sw : {1u, 2u, 5u, 8u}) {
      const auto t = choose_conv2d_wgmma_tile(3, 57, 113, 70, sh, sw);
      EXPECT_LE(t.wt * sw, 256u);
      EXPECT_LE(t.ht * sh, 256u);
      EXPECT_LE(t.box_pixels(), 128u);
      EXPECT_GE(t.tiles_q * t.wt, 113u);
      EXPECT_GE(t.tiles_p * t.ht, 57u);
      EXPECT_GE(t.tiles_n * t.nt, 3u);
    }
  }
  // Awkward sizes: primes, 1, non-multiples of every box and tile.
  for (std::size_t n : {1u, 2u, 5u, 32u}) {
    for (std::size_t pq : {1u, 3u, 7u, 13u, 14u, 17u, 28u, 56u, 129u}) {
      expect_valid_minimal_wgmma_plan(n, pq, pq, 67);
      expect_valid_minimal_wgmma_plan(n, pq, 2 * pq + 1, 1);
    }
  }
}

/// Every tile's k-steps computed exactly once by the units of `plan`
/// (last_round_unit_of), each unit's run non-empty and on k-block
/// boundaries, a tile's parts numbered 0 .. parts - 1 in order.
void expect_units_cover_every_tile(const kf::detail::last_round_plan& plan, int tiles, int k_steps, int block_steps) {
  std::vector<std::vector<int>> visits(tiles, std::vector<int>(k_steps, 0));
  const int units = static_cast<int>(plan.units(static_cast<std::size_t>(tiles)));
  for (int u = 0; u < units; ++u) {
    const auto unit = kf::detail::last_round_unit_of(u, static_cast<int>(plan.split_from), static_cast<int>(plan.parts),
                                                     static_cast<int>(plan.part_steps), k_steps);
    ASSERT_GE(unit.tile, 0);
    ASSERT_LT(unit.tile, tiles);
    ASSERT_LT(unit.kt_begin, unit.kt_end) << "unit " << u;
    EXPECT_EQ(unit.kt_begin % block_steps, 0);
    EXPECT_EQ(unit.part,
              unit.tile < static_cast<int>(plan.split_from) ? 0 : unit.kt_begin / static_cast<int>(plan.part_steps));
    for (int kt = unit.kt_begin; kt < unit.kt_end; ++kt) ++visits[unit.tile][kt];
  }
  for (int t = 0; t < tiles; ++t) {
    for (int kt = 0; kt < k_steps; ++kt) ASSERT_EQ(visits[t][kt], 1) << "tile " << t << ", k-step " << kt;
  }
}

// The persistent grid's last round (plan_conv2d_wgmma_last_round,
// wgmma_last_round.cuh): split where it leaves most of the grid idle, into at
// most 4 parts of at least 4 k-blocks, and the units cover every tile's k-steps once.
TEST(Conv2dWgmma, LastRoundSplit) {
  using kf::detail::plan_conv2d_wgmma_last_round;
  // N32 C128 28x28 K128 3x3 in fp32 emulation: 196 tiles of 36 k-blocks (9 taps x 4 channel
  // chunks, each a hi and a lo k-step) on 132 CTAs: the last round's 64 tiles in 2 parts of 18.
  const auto c128 = plan_conv2d_wgmma_last_round(196, 132, 36, 2);
  EXPECT_EQ(std::vector<std::size_t>({c128.split_from, c128.parts, c128.part_steps, c128.units(196)}),
            (std::vector<std::size_t>{132, 2, 36, 132 + 128}));
  expect_units_cover_every_tile(c128, 196, 72, 2);
  // One round, or every round full: no split. N32 C64 56x56 K64 (784 tiles) and C256 14x14 (98).
  for (const std::size_t tiles : {98u, 132u, 264u}) {
    const auto p = plan_conv2d_wgmma_last_round(tiles, 132, 36, 2);
    EXPECT_EQ(p.parts, 1u) << tiles;
    EXPECT_EQ(p.split_from, tiles);
    EXPECT_EQ(p.units(tiles), tiles);
  }
  EXPECT_EQ(plan_conv2d_wgmma_last_round(784, 132, 18, 2).parts, 1u);  // 124 of 132 left: 132 / 124 = 1, no split
  // A last round of few tiles: at most 4 parts; fewer where the tile's k-blocks run short.
  EXPECT_EQ(plan_conv2d_wgmma_last_round(140, 132, 36, 2).parts, 4u);
  EXPECT_EQ(plan_conv2d_wgmma_last_round(140, 132, 12, 2).parts, 3u);
  EXPECT_EQ(plan_conv2d_wgmma_last_round(140, 132, 7, 2).parts, 1u);
  // 18 k-blocks in 4 parts: 5, 5, 5, 3.
  const auto four = plan_conv2d_wgmma_last_round(150, 132, 18, 2);
  EXPECT_EQ(std::vector<std::size_t>({four.split_from, four.parts, four.part_steps}),
            (std::vector<std::size_t>{132, 4, 10}));
  expect_units_cover_every_tile(four, 150, 36, 2);
  // The part count never leaves a part empty, and every split fits the idle CTAs.
  for (std::size_t grid : {1u, 7u, 66u, 132u}) {
    for (std::size_t tiles = 1; tiles < 3 * grid + 2; tiles += 1 + grid / 13) {
      for (std::size_t k_blocks : {1u, 4u, 9u, 13u, 36u}) {
        const auto p = plan_conv2d_wgmma_last_round(tiles, grid, k_blocks, 2);
        SCOPED_TRACE("tiles " + std::to_string(tiles) + ", grid " + std::to_string(grid) + ", k-blocks " +
                     std::to_string(k_blocks));
        EXPECT_LE(p.parts, 4u);
        EXPECT_LE((tiles - p.split_from) * p.parts, grid);
        expect_units_cover_every_tile(p, static_cast<int>(tiles), static_cast<int>(2 * k_blocks), 2);
      }
    }
  }
}

}  // namespace
