// SPDX-License-Identifier: Apache-2.0
// CPU tests of step 7's filter-column tiles (16-bit NHWC: 07_implicit_gemm_wgmma.cuh
// with Rows = 3): where they apply, the bench layers' plans, that the plan is the
// cheapest of the one-tap and the two filter-column forms, and the box geometry (each
// tap's pixels, every tap once). Part of test_conv2d; step 7's other CPU tests are in
// wgmma_cpu_test.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/conv2d/filter_column.hpp"
#include "kernelforge/kernels/conv2d/wgmma_k_steps.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"

namespace {

// ---- filter-column tiles (16-bit NHWC): plan, cost and box geometry --------------

using kf::detail::conv2d_wgmma_tile;
using kf::detail::plan_conv2d_nhwc_wgmma;

TEST(Conv2dWgmmaFilterColumns, Applicability) {
  using kf::detail::conv2d_nhwc_wgmma_columns_fit;
  EXPECT_TRUE(conv2d_nhwc_wgmma_columns_fit(3, 1, 1, 2));
  EXPECT_TRUE(conv2d_nhwc_wgmma_columns_fit(6, 1, 1, 2));   // two column groups a filter column
  EXPECT_FALSE(conv2d_nhwc_wgmma_columns_fit(3, 1, 1, 4));  // float: 32 channels a row, 8 pixels not an atom
  EXPECT_FALSE(conv2d_nhwc_wgmma_columns_fit(3, 2, 1, 2));  // taps' rows two apart
  EXPECT_FALSE(conv2d_nhwc_wgmma_columns_fit(3, 1, 2, 2));
  EXPECT_FALSE(conv2d_nhwc_wgmma_columns_fit(1, 1, 1, 2));
  EXPECT_FALSE(conv2d_nhwc_wgmma_columns_fit(5, 1, 1, 2));  // not a multiple of 3: one-tap
  EXPECT_FALSE(conv2d_nhwc_wgmma_columns_fit(7, 1, 1, 2));
  // Where they do not fit, the plan is choose_conv2d_wgmma_tile's, one tap a k-step.
  for (const std::size_t bytes : {std::size_t{2}, std::size_t{4}}) {
    const conv2d_wgmma_tile stride2 = plan_conv2d_nhwc_wgmma(32, 28, 28, 128, 64, 3, 3, 2, 2, 1, bytes);
    EXPECT_EQ(stride2.filter_rows, 1u);
    const conv2d_wgmma_tile dilated = plan_conv2d_nhwc_wgmma(32, 54, 54, 64, 64, 3, 3, 1, 1, 2, bytes);
    EXPECT_EQ(dilated.filter_rows, 1u);
    const conv2d_wgmma_tile one_by_one = plan_conv2d_nhwc_wgmma(32, 56, 56, 64, 256, 1, 1, 1, 1, 1, bytes);
    EXPECT_EQ(one_by_one.filter_rows, 1u);
  }
  // A 3 x 5 float layer (too wide for halo tiles): one tap a k-step, choose_conv2d_wgmma_tile's box.
  const conv2d_wgmma_tile tf32 = plan_conv2d_nhwc_wgmma(32, 56, 56, 64, 64, 3, 5, 1, 1, 1, 4);
  const conv2d_wgmma_tile box = kf::detail::choose_conv2d_wgmma_tile(32, 56, 56, 64);
  EXPECT_EQ(tf32.filter_rows, 1u);
  EXPECT_EQ(tf32.halo_width, 0u);
  EXPECT_EQ(tf32.wt, box.wt);
  EXPECT_EQ(tf32.ht, box.ht);
  EXPECT_EQ(tf32.nt, box.nt);
}

/// Layers 5 taps wide like bench_conv's NHWC rows (N = 32) in 16-bit: which k-step each takes
/// (the 3 x 3 layers themselves take halo tiles: wgmma_halo_cpu_test.cpp).
TEST(Conv2dWgmmaFilterColumns, BenchLayersPlans) {
  using kf::detail::conv2d_nhwc_wgmma_k_steps;
  using kf::detail::conv2d_nhwc_wgmma_rows_cost;
  // C64 56x56 3x5: 8 x 8 x 2 filter-column tiles (as many tiles as the one-tap 8 x 8 x 2 boxes,
  // 5 k-steps of 160 + 3 x 64 rows where one-tap runs 15 of 128 + 64).
  const conv2d_wgmma_tile c64 = plan_conv2d_nhwc_wgmma(32, 56, 56, 64, 64, 3, 5, 1, 1, 1, 2);
  EXPECT_EQ(c64.filter_rows, 3u);
  EXPECT_EQ(c64.wt, 8u);
  EXPECT_EQ(c64.ht, 8u);
  EXPECT_EQ(c64.nt, 2u);
  EXPECT_EQ(c64.box_rows(), 10u);
  EXPECT_EQ(c64.a_box_pixels(), 160u);
  EXPECT_EQ(c64.tiles(), 32u * 56 * 56 / 128);
  EXPECT_EQ(conv2d_nhwc_wgmma_k_steps(c64, 64, 3, 5, 2), 5u);
  const conv2d_wgmma_tile one_tap = kf::detail::choose_conv2d_wgmma_tile(32, 56, 56, 64);
  EXPECT_EQ(conv2d_nhwc_wgmma_k_steps(one_tap, 64, 3, 5, 2), 15u);
  EXPECT_LT(conv2d_nhwc_wgmma_rows_cost(c64, 64, 3, 5, 2) * 3, conv2d_nhwc_wgmma_rows_cost(one_tap, 64, 3, 5, 2) * 2);
  // C128 28x28: 28 = 3.5 x 8 columns; still fewer rows than one-tap 4 x 4 x 8 boxes, by the cost's count.
  const conv2d_wgmma_tile c128 = plan_conv2d_nhwc_wgmma(32, 28, 28, 128, 128, 3, 5, 1, 1, 1, 2);
  EXPECT_EQ(c128.filter_rows, 3u);
  EXPECT_EQ(c128.bn, 128u);
  EXPECT_EQ(conv2d_nhwc_wgmma_k_steps(c128, 128, 3, 5, 2), 10u);
  // 1x1 and strided layers: one-tap.
  EXPECT_EQ(plan_conv2d_nhwc_wgmma(32, 56, 56, 64, 256, 1, 1, 1, 1, 1, 2).filter_rows, 1u);
}

/// The plan of a 3 x 5 layer (too wide for halo tiles) is the cheapest of the one-tap box and the two filter-column
/// forms, and its filter-column tiles are 128 pixels of 8 columns whose m64 blocks start on an output row (so each is
/// one stretch of the taller box).
TEST(Conv2dWgmmaFilterColumns, PlanIsTheCheapestForm) {
  using kf::detail::ceil_div;
  using kf::detail::conv2d_nhwc_wgmma_rows_cost;
  int columns = 0, one_tap = 0, two_images = 0;
  for (const std::size_t n : {1, 2, 3, 32}) {
    for (const std::size_t pq : {1, 5, 7, 8, 13, 14, 17, 28, 56, 57}) {
      for (const std::size_t k : {16, 64, 130}) {
        for (const std::size_t c : {8, 64, 136}) {
          const std::size_t p = pq, q = pq + 3;
          SCOPED_TRACE("n " + std::to_string(n) + " p " + std::to_string(p) + " q " + std::to_string(q) + " k " +
                       std::to_string(k) + " c " + std::to_string(c));
          const conv2d_wgmma_tile t = plan_conv2d_nhwc_wgmma(n, p, q, k, c, 3, 5, 1, 1, 1, 2);
          const conv2d_wgmma_tile box = kf::detail::choose_conv2d_wgmma_tile(n, p, q, k);
          const std::size_t cost = conv2d_nhwc_wgmma_rows_cost(t, c, 3, 5, 2);
          EXPECT_LE(cost, conv2d_nhwc_wgmma_rows_cost(box, c, 3, 5, 2));
          for (const std::size_t images : {1, 2}) {
            conv2d_wgmma_tile other = box;
            other.filter_rows = 3;
            other.wt = 8;
            other.nt = images;
            other.ht = 16 / images;
            other.tiles_q = ceil_div(q, 8);
            other.tiles_p = ceil_div(p, other.ht);
            other.tiles_n = ceil_div(n, images);
            EXPECT_LE(cost, conv2d_nhwc_wgmma_rows_cost(other, c, 3, 5, 2));
          }
          EXPECT_EQ(t.tiles_q * t.wt >= q && t.tiles_p * t.ht >= p && t.tiles_n * t.nt >= n, true);
          if (t.filter_rows == 1) {
            ++one_tap;
            continue;
          }
          ++columns;
          two_images += t.nt == 2 ? 1 : 0;
          EXPECT_EQ(t.filter_rows, 3u);
          EXPECT_EQ(t.wt, 8u);
          EXPECT_EQ(t.box_pixels(), kf::detail::conv2d_wgmma_block_m);
          EXPECT_EQ(t.ht % 8, 0u);  // 64 pixels: 8 whole output rows of one image
          EXPECT_LE(t.a_box_pixels(), kf::detail::conv2d_nhwc_wgmma_column_box_pixels(3));  // the kernel's A slot
          EXPECT_EQ(t.bn, k <= 64 ? 64u : 128u);
        }
      }
    }
  }
  EXPECT_GT(columns, 0);
  EXPECT_GT(one_tap, 0);
  EXPECT_GT(two_images, 0);
}

/// The kernel's operand addressing of a filter-column tile (07_implicit_gemm_wgmma.cuh):
/// m64 block b of the tile starts at box row a_block_row(b), tap j's operand j x 8
/// rows (j swizzle atoms) further; row i % 64 of the block is then the box row of
/// pixel i under tap j, which is the input pixel tap j reads for output pixel i.
TEST(Conv2dWgmmaFilterColumns, BoxRowsAreTheTapsPixels) {
  using kf::detail::conv2d_filter_column_box_row;
  EXPECT_EQ(kf::detail::conv2d_filter_column_tap_bytes(1), 1024u);  // one swizzle atom
  EXPECT_EQ(kf::detail::conv2d_filter_column_tap_bytes(2), 2048u);
  for (const std::size_t images : {1, 2}) {
    conv2d_wgmma_tile t;
    t.filter_rows = 3;
    t.wt = 8;
    t.nt = images;
    t.ht = 16 / images;
    const std::size_t box_h = t.box_rows();
    EXPECT_EQ(box_h, t.ht + 2);
    EXPECT_LE(t.a_box_pixels(), kf::detail::conv2d_nhwc_wgmma_column_box_pixels(3));
    EXPECT_EQ(t.a_block_row(0), 0u);
    EXPECT_EQ(t.a_block_row(1), images == 1 ? 64u : 80u);  // 8 output rows on, or the next image's box
    for (std::size_t b = 0; b < 2; ++b) EXPECT_EQ(t.a_block_row(b) % 8, 0u) << "a block starts on a swizzle atom";
    for (std::size_t i = 0; i < 128; ++i) {
      const std::size_t bq = i % 8, bp = i / 8 % t.ht, bn = i / (8 * t.ht);
      for (std::size_t j = 0; j < 3; ++j) {
        const std::size_t kernel_row = t.a_block_row(i / 64) + 8 * j + i % 64;
        EXPECT_EQ(kernel_row, conv2d_filter_column_box_row(i, t.ht, 3, j));
        // TMA's order in the box: column fastest (8), then image row (box_h), then image.
        const std::size_t w = kernel_row % 8, h = kernel_row / 8 % box_h, n = kernel_row / (8 * box_h);
        EXPECT_EQ(w, bq);
        EXPECT_EQ(h, bp + j);  // the box starts at the group's first tap's row: tap j reads j rows down
        EXPECT_EQ(n, bn);
        EXPECT_LT(kernel_row, t.a_box_pixels());
      }
    }
  }
}

/// The k-steps of a filter-column tile (the producer's and the consumers' walk:
/// k-step = (g S + s) c_chunks + chunk, taps (3 g + j, s)) visit every tap and
/// channel block of the filter exactly once, also where R = 6 (two groups).
TEST(Conv2dWgmmaFilterColumns, KStepsVisitEveryTapOnce) {
  for (const std::size_t r : {3, 6}) {
    for (const std::size_t s : {1, 3, 5}) {
      const std::size_t c_chunks = 3, rows = 3;
      conv2d_wgmma_tile t;
      t.filter_rows = rows;
      const std::size_t steps = kf::detail::conv2d_nhwc_wgmma_k_steps(t, 64 * c_chunks - 8, r, s, 2);
      EXPECT_EQ(steps, r / rows * s * c_chunks);
      std::vector<int> seen(r * s * c_chunks, 0);
      std::size_t group = 0, chunk = 0;
      for (std::size_t kt = 0; kt < steps; ++kt) {
        const std::size_t g = group / s, col = group - g * s;
        for (std::size_t j = 0; j < rows; ++j) {
          const std::size_t tap = (g * rows + j) * s + col;  // the B box's tap index
          ASSERT_LT(tap, r * s);
          ++seen[tap * c_chunks + chunk];
        }
        if (++chunk == c_chunks) {
          chunk = 0;
          ++group;
        }
      }
      for (const int v : seen) EXPECT_EQ(v, 1);
    }
  }
}

}  // namespace
