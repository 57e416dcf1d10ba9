// SPDX-License-Identifier: Apache-2.0
// CPU tests of conv2d_forward (no GPU needed): the reference on a hand-computed
// case, output geometry, the fast division of the implicit GEMM, tile and
// split-K planning (plan.hpp, over the shared split-k planner), and argument
// validation (thrown before any CUDA call).
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

// ---- conv2d reference and geometry --------------------------------------------

TEST(ConvReference, Conv2dHandComputed) {
  // x: 1 x 1 x 3 x 3 (1..9); w: 2 filters 2 x 2; stride 1, pad 0 -> 2 x 2 outputs.
  kf::conv2d_params p{1, 1, 3, 3, 2, 2, 2};
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<double> w = {1, 0, 0, 0, 0, 0, 0, 1};  // k0: top-left tap; k1: bottom-right tap
  const std::vector<double> bias = {100, 200};
  std::vector<double> y(8);
  ref::conv2d_forward_exact<double>(p, x.data(), w.data(), bias.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{101, 102, 104, 105, 205, 206, 208, 209}));
  // Stride 2, pad 1, dilation 2 on the same input: P = (3 + 2 - 2 - 1)/2 + 1 = 2.
  p.stride_h = p.stride_w = 2;
  p.pad_h = p.pad_w = 1;
  p.dilation_h = p.dilation_w = 2;
  ref::conv2d_forward_exact<double>(p, x.data(), w.data(), nullptr, y.data());
  // k0 reads x[2p - 1][2q - 1] (zero outside), k1 reads x[2p + 1][2q + 1].
  EXPECT_EQ(y, (std::vector<double>{0, 0, 0, 5, 5, 0, 0, 0}));
}

TEST(ConvGeometry, OutputExtents) {
  kf::conv2d_params stem{16, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3};
  EXPECT_EQ(kf::conv2d_output_height(stem), 112u);
  EXPECT_EQ(kf::conv2d_output_width(stem), 112u);
  kf::conv2d_params same{1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1};
  EXPECT_EQ(kf::conv2d_output_height(same), 56u);
  kf::conv2d_params odd{5, 3, 31, 29, 7, 3, 5, 2, 2};
  EXPECT_EQ(kf::conv2d_output_height(odd), 15u);  // (31 - 3)/2 + 1
  EXPECT_EQ(kf::conv2d_output_width(odd), 13u);   // (29 - 5)/2 + 1
  kf::conv2d_params dilated{1, 1, 23, 21, 1, 3, 3, 1, 1, 2, 2, 2, 2};
  EXPECT_EQ(kf::conv2d_output_height(dilated), 23u);
  kf::conv2d_params exact_fit{1, 1, 5, 40, 1, 5, 3};
  EXPECT_EQ(kf::conv2d_output_height(exact_fit), 1u);
  EXPECT_EQ(ref::conv2d_extent(31, 0, 3, 2, 1), 15u);
}

TEST(ConvGeometry, ImpossibleGeometryIsInvalidWithTheNumbers) {
  kf::conv2d_params p{1, 1, 4, 4, 1, 7, 3};  // 7 rows on a 4-row input, no padding
  expect_error(kf::errc::invalid_argument, "= 7 pixels", [&] { (void)kf::conv2d_output_height(p); });
  p.pad_h = 1;  // padded 6 < 7
  expect_error(kf::errc::invalid_argument, "4 + 2 x 1 = 6", [&] { (void)kf::conv2d_output_height(p); });
  p.pad_h = 2;  // padded 8 >= 7: fine
  EXPECT_EQ(kf::conv2d_output_height(p), 2u);
  kf::conv2d_params d{1, 1, 10, 10, 1, 3, 3, 1, 1, 0, 0, 5, 1};  // reach 11 > 10
  expect_error(kf::errc::invalid_argument, "dilation_h", [&] { (void)kf::conv2d_output_height(d); });
  kf::conv2d_params zero_stride{1, 1, 10, 10, 1, 3, 3, 0, 1};
  expect_error(kf::errc::invalid_argument, "stride_h = 0", [&] { (void)kf::conv2d_output_height(zero_stride); });
  kf::conv2d_params zero_dilation{1, 1, 10, 10, 1, 3, 3, 1, 1, 0, 0, 1, 0};
  expect_error(kf::errc::invalid_argument, "dilation_w = 0", [&] { (void)kf::conv2d_output_width(zero_dilation); });
  kf::conv2d_params zero_filter{1, 1, 10, 10, 1, 0, 3};
  expect_error(kf::errc::invalid_argument, "params.filter_height = 0",
               [&] { (void)kf::conv2d_output_height(zero_filter); });
  kf::conv2d_params zero_width{1, 1, 10, 0, 1, 3, 3};
  expect_error(kf::errc::invalid_argument, "params.in_width = 0", [&] { (void)kf::conv2d_output_width(zero_width); });
  kf::conv2d_params huge{1, 1, 10, 10, 1, SIZE_MAX / 2, 3, 1, 1, 0, 0, 4, 1};
  expect_error(kf::errc::invalid_argument, "overflows", [&] { (void)kf::conv2d_output_height(huge); });
}

// ---- fast division ----------------------------------------------------------

TEST(ConvFastDivmod, ExactForAllSmallDivisorsAndWideDividends) {
  std::vector<int> dividends;
  for (int n = 0; n < 5000; ++n) dividends.push_back(n);
  std::uint64_t state = 12345;
  for (int i = 0; i < 2000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    dividends.push_back(static_cast<int>(state >> 33));  // [0, 2^31)
  }
  dividends.push_back(INT_MAX);
  dividends.push_back(INT_MAX - 1);
  std::vector<unsigned> divisors;
  for (unsigned d = 1; d <= 1030; ++d) divisors.push_back(d);
  for (unsigned shift = 11; shift < 31; ++shift) {
    for (int delta : {-1, 0, 1}) divisors.push_back((1u << shift) + delta);
  }
  divisors.push_back(3136);   // 56 * 56
  divisors.push_back(12544);  // 112 * 112
  divisors.push_back(INT_MAX);
  for (unsigned d : divisors) {
    const kf::detail::fast_divmod f(d);
    for (int n : dividends) {
      int q, r;
      f.divmod(n, q, r);
      ASSERT_EQ(q, static_cast<int>(static_cast<unsigned>(n) / d)) << n << " / " << d;
      ASSERT_EQ(r, static_cast<int>(static_cast<unsigned>(n) % d)) << n << " % " << d;
    }
  }
}

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

// ---- Winograd F(2x2,3x3): transforms, qualification, layout, choice -------------

// A^T ((G g G^T) (.) (B^T d B)) A is the 2 x 2 cross-correlation of the 4 x 4
// tile d with the 3 x 3 filter g: in double, to roundoff (the transforms only
// add and halve, magnitudes here are O(10)).
TEST(Conv2dWinograd, TransformsComputeTheCorrelation) {
  const auto values = kf::test::random_vector<double>(25 * 200, 41);
  for (int trial = 0; trial < 200; ++trial) {
    const double* r = values.data() + trial * 25;
    double g[9], d[4][4], u[16], v[16], m[16], y[2][2];
    for (int e = 0; e < 9; ++e) g[e] = r[e];
    for (int e = 0; e < 16; ++e) d[e / 4][e % 4] = r[9 + e];
    kf::detail::winograd_filter_transform(g, u);
    kf::detail::winograd_input_transform(d, v);
    for (int b = 0; b < 16; ++b) m[b] = u[b] * v[b];
    kf::detail::winograd_output_transform(m, y);
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        double direct = 0;
        for (int rr = 0; rr < 3; ++rr) {
          for (int ss = 0; ss < 3; ++ss) direct += g[rr * 3 + ss] * d[i + rr][j + ss];
        }
        ASSERT_NEAR(y[i][j], direct, 1e-12) << "trial " << trial << " output (" << i << ", " << j << ")";
      }
    }
  }
  // Each filter tap and input pixel reaches the outputs it should: a unit
  // filter tap (r, s) and a unit pixel (i + r, j + s) give exactly 1 at (i, j).
  for (int tap = 0; tap < 9; ++tap) {
    for (int pix = 0; pix < 16; ++pix) {
      double g[9] = {}, d[4][4] = {}, u[16], v[16], m[16], y[2][2];
      g[tap] = 1;
      d[pix / 4][pix % 4] = 1;
      kf::detail::winograd_filter_transform(g, u);
      kf::detail::winograd_input_transform(d, v);
      for (int b = 0; b < 16; ++b) m[b] = u[b] * v[b];
      kf::detail::winograd_output_transform(m, y);
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          const bool hit = pix / 4 == i + tap / 3 && pix % 4 == j + tap % 3;
          EXPECT_EQ(y[i][j], hit ? 1.0 : 0.0) << "tap " << tap << " pixel " << pix;
        }
      }
    }
  }
}

TEST(Conv2dWinograd, QualifiesOnly3x3Stride1Dilation1) {
  EXPECT_STREQ(kf::to_string(kf::conv2d_variant::winograd), "winograd");
  EXPECT_STREQ(kf::to_string(kf::conv2d_variant::winograd_fused), "winograd_fused");
  EXPECT_STREQ(kf::to_string(kf::conv2d_variant::implicit_gemm_pipelined), "implicit_gemm_pipelined");
  using kf::detail::conv2d_winograd_unsupported_reason;
  EXPECT_EQ(conv2d_winograd_unsupported_reason(3, 3, 1, 1, 1, 1), nullptr);
  EXPECT_STREQ(conv2d_winograd_unsupported_reason(5, 5, 1, 1, 1, 1), "the filter is not 3x3");
  EXPECT_STREQ(conv2d_winograd_unsupported_reason(3, 1, 1, 1, 1, 1), "the filter is not 3x3");
  EXPECT_STREQ(conv2d_winograd_unsupported_reason(3, 3, 2, 1, 1, 1), "the stride is not 1");
  EXPECT_STREQ(conv2d_winograd_unsupported_reason(3, 3, 1, 2, 1, 1), "the stride is not 1");
  EXPECT_STREQ(conv2d_winograd_unsupported_reason(3, 3, 1, 1, 1, 2), "the dilation is not 1");
}

TEST(Conv2dWinograd, UnsupportedLayersAreRefusedBeforeAnyLaunch) {
  float* x = fake(0x1000000);
  float* w = fake(0x2000000);
  float* y = fake(0x3000000);
  kf::conv2d_options o;
  o.variant = kf::conv2d_variant::winograd;
  kf::conv2d_params stride2{2, 3, 9, 9, 4, 3, 3, 2, 2, 1, 1};
  expect_error(kf::errc::unsupported, "stride 2 x 2", [&] { kf::conv2d_forward<float>(stride2, x, w, nullptr, y, o); });
  kf::conv2d_params dilated{2, 3, 9, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2};
  expect_error(kf::errc::unsupported, "dilation 2 x 2",
               [&] { kf::conv2d_forward<float>(dilated, x, w, nullptr, y, o); });
  kf::conv2d_params five{2, 3, 9, 9, 4, 5, 5, 1, 1, 2, 2};
  expect_error(kf::errc::unsupported, "filter 5 x 5", [&] { kf::conv2d_forward<float>(five, x, w, nullptr, y, o); });
  kf::conv2d_params stem{1, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3};
  expect_error(kf::errc::unsupported, "use implicit_gemm or best",
               [&] { kf::conv2d_forward<float>(stem, x, w, nullptr, y, o); });
  // Transformed tensors past int indexing (x itself is 2^30 elements): N 8, C 2048,
  // 256 x 256, pad 1 -> 8 x 128 x 128 = 2^17 tiles, V = 16 x 2048 x 2^17 = 2^32 floats.
  kf::conv2d_params wide{8, 2048, 256, 256, 1, 3, 3, 1, 1, 1, 1};
  expect_error(kf::errc::unsupported, "2^31", [&] { kf::conv2d_forward<float>(wide, x, w, nullptr, y, o); });
}

// Step 8 refuses the same layers, naming itself; its own limits are U's int
// indexing and the grid's y extent (64 filters per block).
TEST(Conv2dWinograd, FusedRefusesUnsupportedLayersBeforeAnyLaunch) {
  float* x = fake(0x1000000);
  float* w = fake(0x2000000);
  float* y = fake(0x3000000);
  kf::conv2d_options o;
  o.variant = kf::conv2d_variant::winograd_fused;
  kf::conv2d_params stride2{2, 3, 9, 9, 4, 3, 3, 2, 2, 1, 1};
  expect_error(kf::errc::unsupported, "conv2d_variant::winograd_fused (F(2x2,3x3)) computes 3x3 filters at stride 1",
               [&] { kf::conv2d_forward<float>(stride2, x, w, nullptr, y, o); });
  expect_error(kf::errc::unsupported, "stride 2 x 2", [&] { kf::conv2d_forward<float>(stride2, x, w, nullptr, y, o); });
  kf::conv2d_params dilated{2, 3, 9, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2};
  expect_error(kf::errc::unsupported, "dilation 2 x 2",
               [&] { kf::conv2d_forward<float>(dilated, x, w, nullptr, y, o); });
  kf::conv2d_params five{2, 3, 9, 9, 4, 5, 5, 1, 1, 2, 2};
  expect_error(kf::errc::unsupported, "filter 5 x 5", [&] { kf::conv2d_forward<float>(five, x, w, nullptr, y, o); });
  kf::conv2d_params one_by_three{2, 3, 9, 9, 4, 1, 3, 1, 1, 0, 1};
  expect_error(kf::errc::unsupported, "filter 1 x 3",
               [&] { kf::conv2d_forward<float>(one_by_three, x, w, nullptr, y, o); });
  // K = 2^22 filters of 1 channel: 65536 blocks of 64 filters, one past gridDim.y's limit.
  kf::conv2d_params many_filters{1, 1, 4, 4, std::size_t{1} << 22, 3, 3, 1, 1, 1, 1};
  expect_error(kf::errc::unsupported, "65536 blocks",
               [&] { kf::conv2d_forward<float>(many_filters, x, w, nullptr, y, o); });
  // U = 16 x C x round_up(K, 4) = 16 x 2^20 x 2^7 = 2^31 floats (w: 9 x 2^27 < 2^31 elements).
  kf::conv2d_params wide_u{1, std::size_t{1} << 20, 1, 1, 128, 3, 3, 1, 1, 1, 1};
  expect_error(kf::errc::unsupported, "2147483648 floats",
               [&] { kf::conv2d_forward<float>(wide_u, x, w, nullptr, y, o); });
}

TEST(Conv2dWinograd, FusedLayout) {
  using kf::detail::make_conv2d_winograd_fused_layout;
  // N 3, C 5, K 7, P 9, Q 7: 5 x 4 tiles per image, 60 tiles -> 2 blocks of 32;
  // K 7 -> one block of 64 filters, U rows of 8 floats.
  const auto l = make_conv2d_winograd_fused_layout(3, 5, 7, 9, 7);
  EXPECT_EQ(l.tiles_h, 5u);
  EXPECT_EQ(l.tiles_w, 4u);
  EXPECT_EQ(l.tiles, 60u);
  EXPECT_EQ(l.k_ld, 8u);
  EXPECT_EQ(l.u_floats, 16u * 5 * 8);
  EXPECT_EQ(l.bytes(), 16u * 5 * 8 * sizeof(float));
  EXPECT_EQ(l.grid_x, 2u);
  EXPECT_EQ(l.grid_y, 1u);
  EXPECT_TRUE(l.launchable());
  // bench_conv's ResNet layers: N32 C64 56x56 K64 -> 25088 tiles, 784 x 1 blocks;
  // N32 C256 14x14 K256 -> 1568 tiles, 49 x 4 blocks.
  const auto first = make_conv2d_winograd_fused_layout(32, 64, 64, 56, 56);
  EXPECT_EQ(first.tiles, 25088u);
  EXPECT_EQ(first.grid_x, 784u);
  EXPECT_EQ(first.grid_y, 1u);
  const auto third = make_conv2d_winograd_fused_layout(32, 256, 256, 14, 14);
  EXPECT_EQ(third.grid_x, 49u);
  EXPECT_EQ(third.grid_y, 4u);
  // K = 65: a second block of filters; one output: one tile, one block.
  EXPECT_EQ(make_conv2d_winograd_fused_layout(1, 1, 65, 1, 1).grid_y, 2u);
  EXPECT_EQ(make_conv2d_winograd_fused_layout(1, 1, 65, 1, 1).grid_x, 1u);
  EXPECT_EQ(make_conv2d_winograd_fused_layout(1, 1, 65, 1, 1).k_ld, 68u);
  EXPECT_TRUE(make_conv2d_winograd_fused_layout(1, 1, 64 * 65535, 1, 1).launchable());
  EXPECT_FALSE(make_conv2d_winograd_fused_layout(1, 1, 64 * 65535 + 1, 1, 1).launchable());
  EXPECT_FALSE(make_conv2d_winograd_fused_layout(1, std::size_t{1} << 20, 128, 1, 1).launchable());
  EXPECT_TRUE(make_conv2d_winograd_fused_layout(1, std::size_t{1} << 20, 124, 1, 1).launchable());
}

TEST(Conv2dWinograd, WorkspaceLayout) {
  using kf::detail::make_conv2d_winograd_layout;
  // N 3, C 5, K 7, P 9, Q 7: 5 x 4 tiles per image, 60 tiles, rows of 60 (V, M)
  // and 8 (U) floats.
  const auto l = make_conv2d_winograd_layout(3, 5, 7, 9, 7);
  EXPECT_EQ(l.tiles_h, 5u);
  EXPECT_EQ(l.tiles_w, 4u);
  EXPECT_EQ(l.tiles, 60u);
  EXPECT_EQ(l.tiles_ld, 60u);
  EXPECT_EQ(l.c_ld, 8u);
  EXPECT_EQ(l.u_floats, 16u * 7 * 8);
  EXPECT_EQ(l.v_floats, 16u * 5 * 60);
  EXPECT_EQ(l.m_floats, 16u * 7 * 60);
  EXPECT_EQ(l.bytes(), (16u * 7 * 8 + 16u * 5 * 60 + 16u * 7 * 60) * sizeof(float));
  EXPECT_TRUE(l.indexable());
  // One output: one tile, padded to a row of 4.
  const auto one = make_conv2d_winograd_layout(1, 1, 1, 1, 1);
  EXPECT_EQ(one.tiles, 1u);
  EXPECT_EQ(one.tiles_ld, 4u);
  EXPECT_EQ(one.c_ld, 4u);
  EXPECT_FALSE(make_conv2d_winograd_layout(8, 2048, 1, 256, 256).indexable());
}

TEST(Conv2dWinograd, BestTableAndTiles) {
  using kf::detail::choose_conv2d_exact_kernel;
  using kf::detail::conv2d_exact_kernel;
  using kf::detail::conv2d_winograd_min_channels;
  using kf::detail::conv2d_winograd_min_filters;
  const conv2d_exact_kernel not_winograd = kf::detail::conv2d_best_uses_pipelined
                                               ? conv2d_exact_kernel::implicit_gemm_pipelined
                                               : conv2d_exact_kernel::implicit_gemm;
  using kf::detail::conv2d_winograd_expected_to_win;
  const std::size_t c = conv2d_winograd_min_channels, k = conv2d_winograd_min_filters;
  EXPECT_TRUE(conv2d_winograd_expected_to_win(c, k, 3, 3, 1, 1, 1, 1));
  EXPECT_FALSE(conv2d_winograd_expected_to_win(c - 1, k, 3, 3, 1, 1, 1, 1));
  EXPECT_FALSE(conv2d_winograd_expected_to_win(c, k - 1, 3, 3, 1, 1, 1, 1));
  EXPECT_FALSE(conv2d_winograd_expected_to_win(c, k, 3, 3, 2, 2, 1, 1));
  EXPECT_FALSE(conv2d_winograd_expected_to_win(c, k, 3, 3, 1, 1, 2, 2));
  EXPECT_FALSE(conv2d_winograd_expected_to_win(c, k, 7, 7, 2, 2, 1, 1));  // the stem
  // best takes Winograd only where it is expected to win, and only once switched
  // on; the fused step 8 first when its switch is on.
  const conv2d_exact_kernel on_3x3 = kf::detail::conv2d_best_uses_winograd_fused ? conv2d_exact_kernel::winograd_fused
                                     : kf::detail::conv2d_best_uses_winograd     ? conv2d_exact_kernel::winograd
                                                                                 : not_winograd;
  EXPECT_EQ(choose_conv2d_exact_kernel(c, k, 3, 3, 1, 1, 1, 1), on_3x3);
  EXPECT_EQ(choose_conv2d_exact_kernel(c - 1, k, 3, 3, 1, 1, 1, 1), not_winograd);
  EXPECT_EQ(choose_conv2d_exact_kernel(c, k, 7, 7, 2, 2, 1, 1), not_winograd);
  // Step 8 only where its blocks keep 9/10 of their waves busy (132 resident on
  // the H200): the ResNet layers' 784 and 392 blocks do, 196 does not.
  using kf::detail::conv2d_winograd_fused_fills_waves;
  using kf::detail::make_conv2d_winograd_fused_layout;
  const auto blocks = [](std::size_t c_k, std::size_t hw) {
    const auto l = make_conv2d_winograd_fused_layout(32, c_k, c_k, hw, hw);
    return l.grid_x * l.grid_y;
  };
  EXPECT_EQ(blocks(64, 56), 784u);
  EXPECT_EQ(blocks(128, 28), 392u);
  EXPECT_EQ(blocks(256, 14), 196u);
  EXPECT_TRUE(conv2d_winograd_fused_fills_waves(784, 132));
  EXPECT_TRUE(conv2d_winograd_fused_fills_waves(392, 132));
  EXPECT_FALSE(conv2d_winograd_fused_fills_waves(196, 132));
  EXPECT_TRUE(conv2d_winograd_fused_fills_waves(132, 132));
  EXPECT_TRUE(conv2d_winograd_fused_fills_waves(119, 132));   // 0.90 of one wave
  EXPECT_FALSE(conv2d_winograd_fused_fills_waves(118, 132));  // 0.89
  EXPECT_FALSE(conv2d_winograd_fused_fills_waves(0, 132));
  EXPECT_FALSE(conv2d_winograd_fused_fills_waves(784, 0));
  using kf::detail::choose_conv2d_winograd_tile;
  using kf::detail::conv2d_gemm_tile;
  const int h200_sms = 132;  // a wave: 264 blocks
  // N32 C256 14x14 K256: 1568 tiles -> 13 x 2 x 16 = 416 blocks of 128 x 128.
  EXPECT_EQ(choose_conv2d_winograd_tile(1568, 256, h200_sms), conv2d_gemm_tile::m128_n128);
  // N32 C64 56x56 K64: K <= 64 -> 128 x 64.
  EXPECT_EQ(choose_conv2d_winograd_tile(25088, 64, h200_sms), conv2d_gemm_tile::m128_n64);
  // 98 tiles, K 256: 16 x 2 = 32 blocks of 128 x 128, 64 of 128 x 64 -> 64 x 64.
  EXPECT_EQ(choose_conv2d_winograd_tile(98, 256, h200_sms), conv2d_gemm_tile::m64_n64);
}

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
  // Awkward sizes: primes, 1, non-multiples of every box and tile.
  for (std::size_t n : {1u, 2u, 5u, 32u}) {
    for (std::size_t pq : {1u, 3u, 7u, 13u, 14u, 17u, 28u, 56u, 129u}) {
      expect_valid_minimal_wgmma_plan(n, pq, pq, 67);
      expect_valid_minimal_wgmma_plan(n, pq, 2 * pq + 1, 1);
    }
  }
}

TEST(Conv2dValidation, ArgumentsAndOptions) {
  float* x = fake(0x1000000);
  float* w = fake(0x2000000);
  float* y = fake(0x3000000);
  const kf::conv2d_params p{2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1};
  expect_error(kf::errc::invalid_argument, "'x'", [&] { kf::conv2d_forward<float>(p, nullptr, w, nullptr, y); });
  expect_error(kf::errc::invalid_argument, "'weight'", [&] { kf::conv2d_forward<float>(p, x, nullptr, nullptr, y); });
  expect_error(kf::errc::invalid_argument, "'y'", [&] { kf::conv2d_forward<float>(p, x, w, nullptr, nullptr); });
  expect_error(kf::errc::invalid_argument, "'y' and 'x'", [&] { kf::conv2d_forward<float>(p, x, w, nullptr, x + 10); });
  expect_error(kf::errc::invalid_argument, "'y' and 'bias'", [&] { kf::conv2d_forward<float>(p, x, w, y + 5, y); });
  kf::conv2d_params no_channels = p;
  no_channels.in_channels = 0;
  expect_error(kf::errc::invalid_argument, "params.in_channels = 0",
               [&] { kf::conv2d_forward<float>(no_channels, x, w, nullptr, y); });
  kf::conv2d_params too_big_filter = p;
  too_big_filter.filter_height = 11;
  expect_error(kf::errc::invalid_argument, "no output",
               [&] { kf::conv2d_forward<float>(too_big_filter, x, w, nullptr, y); });
  kf::conv2d_options tf32_exact;
  tf32_exact.variant = kf::conv2d_variant::implicit_gemm_tf32;
  expect_error(kf::errc::invalid_argument, "math_mode::tf32",
               [&] { kf::conv2d_forward<float>(p, x, w, nullptr, y, tf32_exact); });
  kf::conv2d_options bad_variant;
  bad_variant.variant = static_cast<kf::conv2d_variant>(9);
  expect_error(kf::errc::invalid_argument, "variant = 9",
               [&] { kf::conv2d_forward<float>(p, x, w, nullptr, y, bad_variant); });
  kf::conv2d_options bad_math;
  bad_math.math = static_cast<kf::math_mode>(5);
  expect_error(kf::errc::invalid_argument, "math = 5",
               [&] { kf::conv2d_forward<float>(p, x, w, nullptr, y, bad_math); });
  kf::conv2d_params huge = p;
  huge.batch = 1u << 20;
  huge.in_channels = 1u << 10;
  expect_error(kf::errc::unsupported, "2^31", [&] { kf::conv2d_forward<float>(huge, x, w, nullptr, y); });
}

TEST(Conv2dValidation, EmptyBatchOrNoFiltersIsANoOp) {
  kf::conv2d_params p{0, 3, 8, 8, 4, 3, 3};
  EXPECT_NO_THROW(kf::conv2d_forward<float>(p, nullptr, fake(0x2000000), nullptr, nullptr));
  p.batch = 2;
  p.out_channels = 0;
  EXPECT_NO_THROW(kf::conv2d_forward<float>(p, fake(0x1000000), nullptr, nullptr, nullptr));
}

}  // namespace
