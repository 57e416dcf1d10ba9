// SPDX-License-Identifier: Apache-2.0
// CPU tests of step 10's plan (plan.hpp: plan_conv2d_few_channels, the layers
// it takes and how it cuts them into bands) and of best's route to it. Part of
// test_conv2d. What the kernel relies on, over a sweep of layers: bands of at
// most conv2d_few_channels_max_pixels pixels that cover the output with no
// empty band, a patch that holds every tap of every pixel of a band, the
// shared-memory layout within the budget and 16-byte aligned, and grids within
// CUDA's limits.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/tuning.hpp"

namespace {

using kf::detail::conv2d_few_channels_plan;
using kf::detail::plan_conv2d_few_channels;

/// The plan of an NHWC 16-bit layer (output extents from the input's).
struct layer {
  std::size_t n, c, h, w, k, r, s, stride, pad, dilation;
  [[nodiscard]] std::size_t p() const { return (h + 2 * pad - dilation * (r - 1) - 1) / stride + 1; }
  [[nodiscard]] std::size_t q() const { return (w + 2 * pad - dilation * (s - 1) - 1) / stride + 1; }
  [[nodiscard]] conv2d_few_channels_plan plan(std::size_t element_bytes = 2) const {
    return plan_conv2d_few_channels(n, c, p(), q(), k, r, s, stride, stride, dilation, dilation, element_bytes);
  }
};

TEST(FewChannelsPlan, TheStem) {
  // N16 C3 224x224 K64 7x7 stride 2 pad 3: 112 x 112 outputs in bands of two rows.
  const conv2d_few_channels_plan l = layer{16, 3, 224, 224, 64, 7, 7, 2, 3, 1}.plan();
  ASSERT_EQ(l.unsupported, nullptr);
  EXPECT_EQ(l.tile_p, 2u);
  EXPECT_EQ(l.tile_q, 112u);
  EXPECT_EQ(l.tiles_p, 56u);
  EXPECT_EQ(l.tiles_q, 1u);
  EXPECT_EQ(l.warps, 7u);  // 224 pixels: no idle warp
  EXPECT_EQ(l.bands, 16u * 56u);
  EXPECT_EQ(l.k_blocks, 1u);
  EXPECT_EQ(l.k_steps, 13u);      // 49 taps in steps of 4: 3 padding taps
  EXPECT_EQ(l.patch_rows, 9u);    // (2 - 1) 2 + 7
  EXPECT_EQ(l.patch_cols, 229u);  // (112 - 1) 2 + 7
  EXPECT_EQ(l.smem_bytes, 64u * (13u * 32u + 16u) + 13u * 16u + 9u * 229u * 8u);
  EXPECT_LE(l.smem_bytes, 48u * 1024u);  // two CTAs an SM with room to spare
  EXPECT_TRUE(kf::detail::conv2d_best_takes_few_channels(l));
}

TEST(FewChannelsPlan, Domain) {
  const layer stem{2, 3, 224, 224, 64, 7, 7, 2, 3, 1};
  EXPECT_NE(stem.plan(4).unsupported, nullptr) << "float";
  EXPECT_NE(std::string(stem.plan(4).unsupported).find("16-bit"), std::string::npos);
  for (std::size_t c = 1; c <= 4; ++c) {
    layer l = stem;
    l.c = c;
    EXPECT_EQ(l.plan().unsupported, nullptr) << "C = " << c;
  }
  layer five = stem;
  five.c = 5;
  EXPECT_NE(five.plan().unsupported, nullptr);
  EXPECT_FALSE(kf::detail::conv2d_best_takes_few_channels(five.plan()));
  // 64 taps (8x8, 16 x 4) are the most; 9x9 and 13x5 are refused.
  EXPECT_EQ((layer{2, 3, 64, 64, 64, 8, 8, 2, 3, 1}.plan().unsupported), nullptr);
  EXPECT_NE((layer{2, 3, 64, 64, 64, 9, 9, 2, 4, 1}.plan().unsupported), nullptr);
  EXPECT_NE((layer{2, 3, 64, 64, 64, 13, 5, 1, 6, 1}.plan().unsupported), nullptr);
  // A reach no band fits: 7x7 at dilation 100 needs a 601 x 601 patch.
  const conv2d_few_channels_plan far = layer{1, 3, 700, 700, 64, 7, 7, 1, 0, 100}.plan();
  ASSERT_NE(far.unsupported, nullptr);
  EXPECT_NE(std::string(far.unsupported).find("shared memory"), std::string::npos);
  // Any K: 1 (one block, 63 zero filters) and 1000 (16 blocks).
  EXPECT_EQ((layer{1, 3, 32, 32, 1, 3, 3, 1, 1, 1}.plan().k_blocks), 1u);
  EXPECT_EQ((layer{1, 3, 32, 32, 1000, 3, 3, 1, 1, 1}.plan().k_blocks), 16u);
}

TEST(FewChannelsPlan, WideRowsSplitEvenly) {
  // Q = 601: three column tiles of 201, one row each.
  const conv2d_few_channels_plan l = layer{1, 3, 9, 601, 32, 3, 3, 1, 1, 1}.plan();
  ASSERT_EQ(l.unsupported, nullptr);
  EXPECT_EQ(l.tiles_q, 3u);
  EXPECT_EQ(l.tile_q, 201u);
  EXPECT_EQ(l.tile_p, 1u);
}

TEST(FewChannelsPlan, StridesShrinkTheBand) {
  // Stride 8 with a 7x7 filter: a 256-pixel band's patch is larger than the
  // budget, so the band is halved until it fits.
  const conv2d_few_channels_plan l = layer{1, 3, 2048, 2048, 64, 7, 7, 8, 3, 1}.plan();
  ASSERT_EQ(l.unsupported, nullptr);
  EXPECT_LE(l.smem_bytes, kf::detail::conv2d_few_channels_smem_budget);
  EXPECT_LT(l.tile_p * l.tile_q, kf::detail::conv2d_few_channels_max_pixels);
}

/// The kernel's assumptions, over a sweep of the domain.
TEST(FewChannelsPlan, BandsCoverTheOutputAndFitTheBudget) {
  using L = conv2d_few_channels_plan;
  int planned = 0;
  for (std::size_t c : {1, 3, 4}) {
    for (std::size_t hw : {1, 7, 31, 97, 224, 601}) {
      for (std::size_t rs : {1, 3, 5, 7, 8}) {
        for (std::size_t stride : {1, 2, 3, 4}) {
          for (std::size_t dilation : {1, 2, 3}) {
            const layer lay{3, c, hw, hw + 6, 40, rs, rs, stride, rs / 2 * dilation, dilation};
            if (dilation * (rs - 1) + 1 > hw + 2 * lay.pad) continue;  // no output
            const conv2d_few_channels_plan l = lay.plan();
            if (l.unsupported != nullptr) {
              ADD_FAILURE() << "refused C " << c << " " << hw << " " << rs << "x" << rs << " stride " << stride
                            << " dilation " << dilation << ": " << l.unsupported;
              continue;
            }
            ++planned;
            const std::size_t P = lay.p(), Q = lay.q();
            SCOPED_TRACE("P " + std::to_string(P) + " Q " + std::to_string(Q));
            EXPECT_LE(l.tile_p * l.tile_q, kf::detail::conv2d_few_channels_max_pixels);
            EXPECT_GE(l.tile_p * l.tiles_p, P);
            EXPECT_LT((l.tiles_p - 1) * l.tile_p, P);  // no empty band
            EXPECT_GE(l.tile_q * l.tiles_q, Q);
            EXPECT_LT((l.tiles_q - 1) * l.tile_q, Q);
            EXPECT_EQ(l.warps, (l.tile_p * l.tile_q + L::warp_pixels - 1) / L::warp_pixels);
            EXPECT_EQ(l.patch_rows, (l.tile_p - 1) * stride + (rs - 1) * dilation + 1);
            EXPECT_EQ(l.patch_cols, (l.tile_q - 1) * stride + (rs - 1) * dilation + 1);
            EXPECT_EQ(l.k_steps * L::taps_per_step >= rs * rs && (l.k_steps - 1) * L::taps_per_step < rs * rs, true);
            EXPECT_EQ(l.filter_row_bytes % 32, 16u);  // an odd number of 16-byte chunks: ldmatrix without conflicts
            EXPECT_EQ(l.table_offset % 16, 0u);
            EXPECT_EQ(l.patch_offset % 16, 0u);
            EXPECT_LE(l.smem_bytes, kf::detail::conv2d_few_channels_smem_budget);
            EXPECT_EQ(l.bands, 3 * l.tiles_p * l.tiles_q);
          }
        }
      }
    }
  }
  EXPECT_GT(planned, 500);
}

}  // namespace
