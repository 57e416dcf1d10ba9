// SPDX-License-Identifier: Apache-2.0
// CPU tests of step 10's plan (few_channels_plan.hpp: plan_conv2d_few_channels, the layers
// it takes and how it cuts them into bands) and of best's route to it, and of
// step 11's (plan_conv2d_few_channels_persistent: its shared-memory layout and
// persistent grid). Part of test_conv2d. What the kernel relies on, over a sweep of layers: bands of at
// most conv2d_few_channels_max_pixels pixels that cover the output with no
// empty band, a patch that holds every tap of every pixel of a band, the
// shared-memory layout within the budget and 16-byte aligned, and grids within
// CUDA's limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <string>

#include "kernelforge/kernels/conv2d/few_channels_plan.hpp"
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

/// Calls f(layer) for a sweep of the domain with C from `channels`: H from 1 to
/// 601, W 6 more, R = S from 1 to 8, strides 1 to 4, dilations 1 to 3, N = 3,
/// K = 40, "same" padding; the layers with no output left out.
template <class F>
void for_each_swept_layer(std::initializer_list<std::size_t> channels, const F& f) {
  for (std::size_t c : channels) {
    for (std::size_t hw : {1, 7, 31, 97, 224, 601}) {
      for (std::size_t rs : {1, 3, 5, 7, 8}) {
        for (std::size_t stride : {1, 2, 3, 4}) {
          for (std::size_t dilation : {1, 2, 3}) {
            const layer lay{3, c, hw, hw + 6, 40, rs, rs, stride, rs / 2 * dilation, dilation};
            if (dilation * (rs - 1) + 1 <= hw + 2 * lay.pad) f(lay);
          }
        }
      }
    }
  }
}

/// The kernel's assumptions, over a sweep of the domain.
TEST(FewChannelsPlan, BandsCoverTheOutputAndFitTheBudget) {
  using L = conv2d_few_channels_plan;
  int planned = 0;
  for_each_swept_layer({1, 3, 4}, [&](const layer& lay) {
    const std::size_t c = lay.c, hw = lay.h, rs = lay.r, stride = lay.stride, dilation = lay.dilation;
    const conv2d_few_channels_plan l = lay.plan();
    if (l.unsupported != nullptr) {
      ADD_FAILURE() << "refused C " << c << " " << hw << " " << rs << "x" << rs << " stride " << stride << " dilation "
                    << dilation << ": " << l.unsupported;
      return;
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
  });
  EXPECT_GT(planned, 500);
}

// ---- step 11: step 10's bands on persistent CTAs (plan_conv2d_few_channels_persistent) ----

using kf::detail::conv2d_few_channels_persistent_plan;

conv2d_few_channels_persistent_plan persistent_plan(const layer& lay, std::size_t resident_ctas,
                                                    std::size_t element_bytes = 2) {
  return kf::detail::plan_conv2d_few_channels_persistent(lay.n, lay.c, lay.w, lay.p(), lay.q(), lay.k, lay.r, lay.s,
                                                         lay.stride, lay.stride, lay.dilation, lay.dilation,
                                                         element_bytes, resident_ctas);
}

TEST(FewChannelsPersistentPlan, TheStem) {
  // On the H200's 132 SMs x 2 CTAs, bands of 16 x 16 pixels (8 warps): 784 at N = 16, 3 rounds
  // of 264 CTAs (the last 256 full), where step 10's 2 x 112 (896 bands) take 4 rounds of 7
  // warps with the last one 104 CTAs deep.
  const layer stem{16, 3, 224, 224, 64, 7, 7, 2, 3, 1};
  ASSERT_EQ(stem.plan().bands, 896u);  // step 10's
  const conv2d_few_channels_persistent_plan l = persistent_plan(stem, 264);
  ASSERT_EQ(l.unsupported, nullptr);
  EXPECT_EQ(l.band.tile_p, 16u);
  EXPECT_EQ(l.band.tile_q, 16u);
  EXPECT_EQ(l.band.warps, 8u);
  EXPECT_EQ(l.band.bands, 784u);
  EXPECT_EQ(l.grid_x, 264u);          // 2 or 3 bands a CTA
  EXPECT_EQ(l.band.patch_rows, 37u);  // 15 x 2 + 7
  EXPECT_EQ(l.band.patch_cols, 37u);
  EXPECT_EQ(l.stage_row_bytes, 240u);  // 37 pixels x 6 bytes = 14 chunks, + 1 for a row's offset in its chunk
  EXPECT_EQ(l.stage_offset, 64u * 432u + 13u * 16u);
  EXPECT_EQ(l.patch_offset, l.stage_offset + 37u * 240u);
  EXPECT_EQ(l.out_offset, l.patch_offset + 10960u);  // 37 x 37 pixels of 8 bytes, rounded up to 16
  EXPECT_EQ(l.smem_bytes, l.out_offset + 8u * 16u * 128u);
  EXPECT_EQ(l.smem_bytes, 64080u);                     // the figure in 11_few_channels_persistent.cuh's header
  EXPECT_LE(2 * (l.smem_bytes + 1024), 164u * 1024u);  // two CTAs an SM on sm_80 (1 KB reserved a CTA)
  EXPECT_TRUE(kf::detail::conv2d_best_takes_few_channels_persistent(l));
  // A small batch: one round of bands of 4 warps (the fewest it takes), one band a CTA.
  const conv2d_few_channels_persistent_plan one = persistent_plan(layer{1, 3, 224, 224, 64, 7, 7, 2, 3, 1}, 264);
  EXPECT_EQ(one.band.warps, 4u);
  EXPECT_LE(one.band.bands, 264u);
  EXPECT_EQ(one.grid_x, one.band.bands);
}

/// Step 11's band against step 10's, over step 10's sweep, as the plan's cost
/// counts it: never more warp-rounds for the busiest CTA on 264 CTAs, never
/// more warps a band than 8 (the launch bounds), never fewer than 4 where the
/// image and step 10's band have them.
TEST(FewChannelsPersistentPlan, BandsNoWorseThanStep10s) {
  int planned = 0, better = 0;
  for_each_swept_layer({1, 2, 3, 4}, [&](const layer& lay) {
    const conv2d_few_channels_persistent_plan l = persistent_plan(lay, 264);
    if (l.unsupported != nullptr) return;
    ++planned;
    const kf::detail::conv2d_few_channels_plan ten = lay.plan();
    const auto rounds = [](std::size_t bands, std::size_t grid) { return (bands + grid - 1) / grid; };
    const std::size_t grid10 = std::min<std::size_t>(std::max<std::size_t>(264 / ten.k_blocks, 1), ten.bands);
    const std::size_t cost10 = rounds(ten.bands, grid10) * ten.warps;
    const std::size_t cost11 = rounds(l.band.bands, l.grid_x) * l.band.warps;
    EXPECT_LE(cost11, cost10);
    better += cost11 < cost10 ? 1 : 0;
    EXPECT_LE(l.band.warps, 8u);
    EXPECT_GE(l.band.warps, std::min<std::size_t>({4, (lay.p() * lay.q() + 31) / 32, ten.warps}));
    EXPECT_LE(l.band.tile_p * l.band.tile_q, 256u);
    EXPECT_GE(l.band.tile_p * l.band.tiles_p, lay.p());  // the bands cover the image
    EXPECT_GE(l.band.tile_q * l.band.tiles_q, lay.q());
    EXPECT_EQ(l.band.bands, lay.n * l.band.tiles_p * l.band.tiles_q);
  });
  EXPECT_GT(planned, 600);
  EXPECT_GT(better, 0);
}

TEST(FewChannelsPersistentPlan, Grid) {
  const layer l{2, 3, 45, 67, 130, 3, 3, 2, 1, 1};  // 3 channel blocks
  const conv2d_few_channels_persistent_plan p = persistent_plan(l, 264);
  ASSERT_EQ(p.unsupported, nullptr);
  ASSERT_EQ(p.band.k_blocks, 3u);
  EXPECT_EQ(p.grid_x, p.band.bands < 88u ? p.band.bands : 88u);  // 264 / 3 channel blocks
  EXPECT_EQ(persistent_plan(l, 5).grid_x, 1u);                   // fewer CTAs than blocks: one a block
  EXPECT_EQ(persistent_plan(l, 0).grid_x, 1u);
  EXPECT_EQ(persistent_plan(l, 7).grid_x, 2u);
  EXPECT_EQ(persistent_plan(l, 1000000).grid_x, p.band.bands);  // never more CTAs than bands
}

TEST(FewChannelsPersistentPlan, RefusesWhatStep10RefusesAndWhatOutgrowsItsBudget) {
  const layer five{2, 5, 224, 224, 64, 7, 7, 2, 3, 1};
  EXPECT_STREQ(persistent_plan(five, 264).unsupported, five.plan().unsupported);
  EXPECT_NE(persistent_plan(layer{2, 3, 224, 224, 64, 7, 7, 2, 3, 1}, 264, 4).unsupported, nullptr);  // float
  // Stride 8, 7x7: step 10 halves its band to fit 64 KB; step 11's staged rows and
  // tiles take it past 80 KB, so step 10 computes the layer.
  const layer strided{1, 3, 2048, 2048, 64, 7, 7, 8, 3, 1};
  ASSERT_EQ(strided.plan().unsupported, nullptr);
  const conv2d_few_channels_persistent_plan p = persistent_plan(strided, 264);
  ASSERT_NE(p.unsupported, nullptr);
  EXPECT_NE(std::string(p.unsupported).find("shared memory"), std::string::npos);
  EXPECT_GT(p.smem_bytes, kf::detail::conv2d_few_channels_persistent_smem_budget);
  EXPECT_FALSE(kf::detail::conv2d_best_takes_few_channels_persistent(p));
  EXPECT_TRUE(kf::detail::conv2d_best_takes_few_channels(strided.plan()));
}

/// The kernel's assumptions about the layout, over step 10's sweep: every
/// region 16-byte aligned (cp.async, ldmatrix, 16-byte reads), a staging row
/// holds the widest row of x a band reaches from any byte of its first chunk,
/// the scratch behind the staging rows holds the raw filter (64 x C*R*S elements
/// from any byte of a chunk) as well as the patch and the warps' tiles, and the
/// footprint is within the budget; where step 11 refuses a layer, step 10 takes it.
TEST(FewChannelsPersistentPlan, LayoutHoldsWhatTheKernelCopies) {
  using L = conv2d_few_channels_persistent_plan;
  int planned = 0, refused = 0;
  for_each_swept_layer({1, 2, 3, 4}, [&](const layer& lay) {
    const std::size_t c = lay.c, hw = lay.h, rs = lay.r, stride = lay.stride, dilation = lay.dilation;
    const L l = persistent_plan(lay, 264);
    ASSERT_EQ(lay.plan().unsupported, nullptr);
    if (l.unsupported != nullptr) {
      ++refused;
      return;
    }
    ++planned;
    const conv2d_few_channels_plan& b = l.band;
    SCOPED_TRACE("C " + std::to_string(c) + " " + std::to_string(hw) + " " + std::to_string(rs) + " stride " +
                 std::to_string(stride) + " dilation " + std::to_string(dilation));
    EXPECT_EQ(l.stage_offset % 16, 0u);
    EXPECT_EQ(l.stage_row_bytes % 16, 0u);
    EXPECT_EQ(l.patch_offset % 16, 0u);
    EXPECT_EQ(l.out_offset % 16, 0u);
    EXPECT_GE(l.stage_offset, b.table_offset + b.k_steps * 16);  // behind the tap table
    const std::size_t widest = (b.patch_cols < lay.w ? b.patch_cols : lay.w) * c * 2;
    EXPECT_GE(l.stage_row_bytes, 15 + widest);  // a row from byte 15 of its first chunk
    EXPECT_EQ(l.patch_offset, l.stage_offset + b.patch_rows * l.stage_row_bytes);
    EXPECT_GE(l.out_offset, l.patch_offset + b.patch_rows * b.patch_cols * 8);
    EXPECT_GE(l.smem_bytes, l.out_offset + b.warps * L::out_rows * L::out_row_bytes);
    EXPECT_GE(l.smem_bytes, l.patch_offset + 15 + 64 * rs * rs * c * 2);  // the raw filter
    EXPECT_LE(l.smem_bytes, kf::detail::conv2d_few_channels_persistent_smem_budget);
    EXPECT_GE(l.grid_x, 1u);
    EXPECT_LE(l.grid_x, b.bands);
  });
  EXPECT_GT(planned, 600);
  EXPECT_LT(refused, planned / 4);
}

}  // namespace
