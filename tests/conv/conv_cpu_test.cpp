// CPU tests of the convolution family (no GPU needed): the references on
// hand-computed cases, the border rule of the kernels against the reference's
// definition, the fast division of the implicit GEMM, output geometry, tile
// planning, and argument validation (thrown before any CUDA call).
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernelforge/conv.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/kernels/conv/border.cuh"
#include "kernelforge/kernels/conv/conv2d_plan.hpp"
#include "kernelforge/kernels/conv/fast_divmod.cuh"
#include "kernelforge/reference/conv.hpp"

namespace {

namespace ref = kf::reference;

// ---- border rules -------------------------------------------------------------

TEST(ConvBorder, ReflectIsReflect101WithPeriodicRepeat) {
  using kf::border;
  // n = 5: ... 2 1 | 0 1 2 3 4 | 3 2 ...
  EXPECT_EQ(ref::border_index(-1, 5, border::reflect), 1);
  EXPECT_EQ(ref::border_index(-2, 5, border::reflect), 2);
  EXPECT_EQ(ref::border_index(5, 5, border::reflect), 3);
  EXPECT_EQ(ref::border_index(6, 5, border::reflect), 2);
  // Tiny image, filter reaching past the far edge: the mirror repeats (period 2(n-1) = 4).
  EXPECT_EQ(ref::border_index(-3, 3, border::reflect), 1);
  EXPECT_EQ(ref::border_index(-4, 3, border::reflect), 0);
  EXPECT_EQ(ref::border_index(-5, 3, border::reflect), 1);
  EXPECT_EQ(ref::border_index(5, 3, border::reflect), 1);
  EXPECT_EQ(ref::border_index(6, 3, border::reflect), 2);
  // n = 2: 0 1 | 0 1 0 1 ...; n = 1: everything is pixel 0.
  EXPECT_EQ(ref::border_index(-1, 2, border::reflect), 1);
  EXPECT_EQ(ref::border_index(2, 2, border::reflect), 0);
  EXPECT_EQ(ref::border_index(-15, 1, border::reflect), 0);
  EXPECT_EQ(ref::border_index(15, 1, border::reflect), 0);
}

TEST(ConvBorder, ClampAndZero) {
  using kf::border;
  EXPECT_EQ(ref::border_index(-7, 5, border::clamp), 0);
  EXPECT_EQ(ref::border_index(9, 5, border::clamp), 4);
  EXPECT_EQ(ref::border_index(-1, 5, border::zero), -1);
  EXPECT_EQ(ref::border_index(5, 5, border::zero), -1);
  EXPECT_EQ(ref::border_index(3, 5, border::zero), 3);
}

TEST(ConvBorder, KernelRuleMatchesReferenceDefinition) {
  for (kf::border mode : {kf::border::zero, kf::border::clamp, kf::border::reflect}) {
    for (int n = 1; n <= 12; ++n) {
      for (int i = -70; i < n + 70; ++i) {
        EXPECT_EQ(kf::detail::border_map(i, n, mode), ref::border_index(i, n, mode))
            << "i = " << i << ", n = " << n << ", mode " << kf::to_string(mode);
      }
    }
  }
}

// ---- filter2d reference ------------------------------------------------------

TEST(ConvReference, Filter2dHandComputed3x3) {
  // 3 x 3 image 1..9, filter with a single 1 at (0, 0): out[y][x] = in[y - 1][x - 1].
  const std::vector<double> in = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> f(9, 0.0);
  f[0] = 1;
  std::vector<double> out(9);
  ref::filter2d_exact<double>(1, 3, 3, in.data(), 3, f.data(), 3, 3, kf::border::zero, out.data(), 3);
  EXPECT_EQ(out, (std::vector<double>{0, 0, 0, 0, 1, 2, 0, 4, 5}));
  ref::filter2d_exact<double>(1, 3, 3, in.data(), 3, f.data(), 3, 3, kf::border::clamp, out.data(), 3);
  EXPECT_EQ(out, (std::vector<double>{1, 1, 2, 1, 1, 2, 4, 4, 5}));
  ref::filter2d_exact<double>(1, 3, 3, in.data(), 3, f.data(), 3, 3, kf::border::reflect, out.data(), 3);
  EXPECT_EQ(out, (std::vector<double>{5, 4, 5, 2, 1, 2, 5, 4, 5}));
}

TEST(ConvReference, Filter2dEvenFilterAnchorsAtHalf) {
  // 2 x 2 filter: anchor (1, 1), so out[y][x] = f00 in[y-1][x-1] + f01 in[y-1][x] + f10 in[y][x-1] + f11 in[y][x].
  const std::vector<double> in = {1, 2, 3, 4};
  const std::vector<double> f = {1000, 100, 10, 1};
  std::vector<double> out(4), scale(4);
  ref::filter2d_exact<double>(1, 2, 2, in.data(), 2, f.data(), 2, 2, kf::border::zero, out.data(), 2, scale.data());
  EXPECT_EQ(out, (std::vector<double>{1, 12, 103, 1234}));
  EXPECT_EQ(scale, out);  // all terms positive
}

TEST(ConvReference, Filter2dPitchAndChannels) {
  // Two channels, pitch 3 > width 2: padding elements are neither read nor written.
  const double pad = -1e300;
  const std::vector<double> in = {1, 2, pad, 3, 4, pad, 10, 20, pad, 30, 40, pad};
  const std::vector<double> f = {2};
  std::vector<double> out(12, 7.0);
  ref::filter2d_exact<double>(2, 2, 2, in.data(), 3, f.data(), 1, 1, kf::border::zero, out.data(), 3);
  EXPECT_EQ(out, (std::vector<double>{2, 4, 7, 6, 8, 7, 20, 40, 7, 60, 80, 7}));
}

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

void expect_error(kf::errc code, const std::string& needle, const std::function<void()>& call) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected " << kf::to_string(code) << " mentioning '" << needle << "'";
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ConvGeometry, ImpossibleGeometryIsInvalidWithTheNumbers) {
  kf::conv2d_params p{1, 1, 4, 4, 1, 7, 3};  // 7 rows on a 4-row input, no padding
  expect_error(kf::errc::invalid_argument, "= 7 pixels", [&] { kf::conv2d_output_height(p); });
  p.pad_h = 1;  // padded 6 < 7
  expect_error(kf::errc::invalid_argument, "4 + 2 x 1 = 6", [&] { kf::conv2d_output_height(p); });
  p.pad_h = 2;  // padded 8 >= 7: fine
  EXPECT_EQ(kf::conv2d_output_height(p), 2u);
  kf::conv2d_params d{1, 1, 10, 10, 1, 3, 3, 1, 1, 0, 0, 5, 1};  // reach 11 > 10
  expect_error(kf::errc::invalid_argument, "dilation_h", [&] { kf::conv2d_output_height(d); });
  kf::conv2d_params zero_stride{1, 1, 10, 10, 1, 3, 3, 0, 1};
  expect_error(kf::errc::invalid_argument, "stride_h = 0", [&] { kf::conv2d_output_height(zero_stride); });
  kf::conv2d_params zero_dilation{1, 1, 10, 10, 1, 3, 3, 1, 1, 0, 0, 1, 0};
  expect_error(kf::errc::invalid_argument, "dilation_w = 0", [&] { kf::conv2d_output_width(zero_dilation); });
  kf::conv2d_params zero_filter{1, 1, 10, 10, 1, 0, 3};
  expect_error(kf::errc::invalid_argument, "params.filter_height = 0", [&] { kf::conv2d_output_height(zero_filter); });
  kf::conv2d_params zero_width{1, 1, 10, 0, 1, 3, 3};
  expect_error(kf::errc::invalid_argument, "params.in_width = 0", [&] { kf::conv2d_output_width(zero_width); });
  kf::conv2d_params huge{1, 1, 10, 10, 1, SIZE_MAX / 2, 3, 1, 1, 0, 0, 4, 1};
  expect_error(kf::errc::invalid_argument, "overflows", [&] { kf::conv2d_output_height(huge); });
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
  divisors.push_back(3136);       // 56 * 56
  divisors.push_back(12544);      // 112 * 112
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
  using kf::detail::conv2d_gemm_tile;
  using kf::detail::choose_conv2d_gemm_tile;
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

// ---- validation: thrown before any CUDA call, so these run without a GPU ------

// Fake device addresses: validation never dereferences them, and every case
// below throws (or returns for empty work) before anything is enqueued.
float* fake(std::uintptr_t address) { return reinterpret_cast<float*>(address); }

TEST(Filter2dValidation, FilterSize) {
  float* in = fake(0x100000);
  float* out = fake(0x200000);
  float* f = fake(0x300000);
  expect_error(kf::errc::invalid_argument, "0 x 3", [&] { kf::filter2d<float>(1, 8, 8, in, 8, f, 0, 3, out, 8); });
  expect_error(kf::errc::invalid_argument, "32 x 3", [&] { kf::filter2d<float>(1, 8, 8, in, 8, f, 32, 3, out, 8); });
  expect_error(kf::errc::invalid_argument, "'filter'", [&] { kf::filter2d<float>(1, 8, 8, in, 8, nullptr, 3, 3, out, 8); });
}

TEST(Filter2dValidation, PointersPitchesAndOverlap) {
  float* in = fake(0x100000);
  float* out = fake(0x200000);
  float* f = fake(0x300000);
  expect_error(kf::errc::invalid_argument, "'in'", [&] { kf::filter2d<float>(1, 8, 8, nullptr, 8, f, 3, 3, out, 8); });
  expect_error(kf::errc::invalid_argument, "'out'", [&] { kf::filter2d<float>(1, 8, 8, in, 8, f, 3, 3, nullptr, 8); });
  expect_error(kf::errc::invalid_argument, "in_pitch = 7", [&] { kf::filter2d<float>(1, 8, 8, in, 7, f, 3, 3, out, 8); });
  expect_error(kf::errc::invalid_argument, "out_pitch = 5", [&] { kf::filter2d<float>(1, 8, 8, in, 8, f, 3, 3, out, 5); });
  expect_error(kf::errc::invalid_argument, "in place", [&] { kf::filter2d<float>(2, 8, 8, in, 8, f, 3, 3, in + 100, 8); });
  expect_error(kf::errc::invalid_argument, "'filter' and 'out'",
               [&] { kf::filter2d<float>(1, 8, 8, in, 8, out + 3, 3, 3, out, 8); });
  kf::filter2d_options bad_variant;
  bad_variant.variant = static_cast<kf::filter2d_variant>(42);
  expect_error(kf::errc::invalid_argument, "variant = 42",
               [&] { kf::filter2d<float>(1, 8, 8, in, 8, f, 3, 3, out, 8, bad_variant); });
  kf::filter2d_options bad_border;
  bad_border.mode = static_cast<kf::border>(7);
  expect_error(kf::errc::invalid_argument, "mode = 7",
               [&] { kf::filter2d<float>(1, 8, 8, in, 8, f, 3, 3, out, 8, bad_border); });
}

TEST(Filter2dValidation, DoubleIsNaiveOnly) {
  double* in = reinterpret_cast<double*>(0x100000);
  double* out = reinterpret_cast<double*>(0x200000);
  double* f = reinterpret_cast<double*>(0x300000);
  for (auto v : {kf::filter2d_variant::constant_memory, kf::filter2d_variant::smem_tiled,
                 kf::filter2d_variant::register_window}) {
    kf::filter2d_options o;
    o.variant = v;
    expect_error(kf::errc::unsupported, kf::to_string(v), [&] { kf::filter2d<double>(1, 8, 8, in, 8, f, 3, 3, out, 8, o); });
  }
  kf::filter2d_options o;
  o.variant = kf::filter2d_variant::register_window;
  expect_error(kf::errc::unsupported, "not double", [&] { kf::filter2d<double>(1, 8, 8, in, 8, f, 3, 3, out, 8, o); });
}

// register_window is float only: __half gets errc::unsupported naming the type
// and smem_tiled, before any device call (these pointers are never dereferenced).
TEST(Filter2dValidation, RegisterWindowIsFloatOnly) {
  __half* in = reinterpret_cast<__half*>(0x100000);
  __half* out = reinterpret_cast<__half*>(0x200000);
  __half* f = reinterpret_cast<__half*>(0x300000);
  kf::filter2d_options o;
  o.variant = kf::filter2d_variant::register_window;
  expect_error(kf::errc::unsupported, "not __half", [&] { kf::filter2d<__half>(1, 8, 8, in, 8, f, 3, 3, out, 8, o); });
  expect_error(kf::errc::unsupported, "smem_tiled", [&] { kf::filter2d<__half>(1, 8, 8, in, 8, f, 3, 3, out, 8, o); });
  EXPECT_STREQ(kf::to_string(kf::filter2d_variant::register_window), "register_window");
}

TEST(Filter2dValidation, EmptyImageIsANoOp) {
  float* f = fake(0x300000);
  EXPECT_NO_THROW(kf::filter2d<float>(0, 8, 8, nullptr, 8, f, 3, 3, nullptr, 8));
  EXPECT_NO_THROW(kf::filter2d<float>(3, 0, 8, nullptr, 8, f, 3, 3, nullptr, 8));
  EXPECT_NO_THROW(kf::filter2d<float>(3, 8, 0, nullptr, 0, f, 3, 3, nullptr, 0));
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
  expect_error(kf::errc::invalid_argument, "params.in_channels = 0", [&] { kf::conv2d_forward<float>(no_channels, x, w, nullptr, y); });
  kf::conv2d_params too_big_filter = p;
  too_big_filter.filter_height = 11;
  expect_error(kf::errc::invalid_argument, "no output", [&] { kf::conv2d_forward<float>(too_big_filter, x, w, nullptr, y); });
  kf::conv2d_options tf32_exact;
  tf32_exact.variant = kf::conv2d_variant::implicit_gemm_tf32;
  expect_error(kf::errc::invalid_argument, "math_mode::tf32",
               [&] { kf::conv2d_forward<float>(p, x, w, nullptr, y, tf32_exact); });
  kf::conv2d_options bad_variant;
  bad_variant.variant = static_cast<kf::conv2d_variant>(9);
  expect_error(kf::errc::invalid_argument, "variant = 9", [&] { kf::conv2d_forward<float>(p, x, w, nullptr, y, bad_variant); });
  kf::conv2d_options bad_math;
  bad_math.math = static_cast<kf::math_mode>(5);
  expect_error(kf::errc::invalid_argument, "math = 5", [&] { kf::conv2d_forward<float>(p, x, w, nullptr, y, bad_math); });
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
