// SPDX-License-Identifier: Apache-2.0
// CPU tests of conv2d_forward (no GPU needed): the reference on a hand-computed
// case, output geometry, the fast division of the implicit GEMM, and argument
// validation (thrown before any CUDA call). Planning, Winograd and wgmma have
// files of their own in the same binary (test_conv2d).
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
  kf::conv2d_options emulated_named;  // fp32_emulated is best's own kernel (step 9)
  emulated_named.math = kf::math_mode::fp32_emulated;
  emulated_named.variant = kf::conv2d_variant::winograd;
  expect_error(kf::errc::invalid_argument, "options.variant = winograd",
               [&] { kf::conv2d_forward<float>(p, x, w, nullptr, y, emulated_named); });
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
