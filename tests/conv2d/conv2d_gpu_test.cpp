// SPDX-License-Identifier: Apache-2.0
// conv2d_forward on the GPU: every variant x every case (conv2d_cases.hpp,
// shared with the epilogue suite) against the double reference, output
// poisoned first (NaN never passes). conv2d_variant::winograd and winograd_fused
// run their own cases (Conv2dWinogradFloat) and refuse the others
// (RefusesLayersItDoesNotCompute); winograd_fused also runs the shared cases
// (Conv2dFloat: at Winograd's bound where it applies, errc::unsupported elsewhere,
// and on devices that cannot grant its 168 KB of shared memory per block).
//
// Tolerance, relative to the error scale sum |x| |w| + |bias| of each output:
//   exact fp32 (naive, smem_tiled, implicit_gemm, best):  4 * sqrt(C*R*S) * 2^-24
//     -- fp32 accumulation of C*R*S products; rounding errors of random-sign
//     terms grow like the square root of their count, 4x is the margin.
//   tf32 (implicit_gemm_tf32, implicit_gemm_wgmma, best with math_mode::tf32 on sm_80+): 4 * 2^-10
//     -- each product carries up to 2^-10 relative error from rounding both
//     inputs to TF32's 10-bit mantissa.
// A wrong tap, channel or filter changes an output by about |x| |w| ~
// scale / (C*R*S), well above both for every case up to C*R*S = 603. The
// splitk_* cases (C*R*S up to 1179, small N*P*Q: plan.hpp splits C*R*S
// over grid z and sums the slices with the shared split-k reduction) reach further:
// there the exact tolerance still catches one wrong tap, and the tf32 one
// catches a lost or repeated BK slice (8 taps, >= 8/1179 of the scale) or
// split -- the errors split-K could make.
// Conv2dSplitK.CasesSplitOnThisDevice checks that they do split here.
// implicit_gemm_wgmma (sm_90a) runs the stride-1 cases at the tf32 tolerance
// (its copies round x and w to TF32 as step 4 does) and must refuse the others
// (and every case on other devices) with errc::unsupported, leaving y unwritten.
// implicit_gemm_pipelined (exact fp32) runs every case at the exact tolerance;
// in_offset = 1 cases shift x, weight and bias by one element (4-byte filter
// copies instead of 16-byte ones).
//
// Winograd F(2x2,3x3) (conv2d_variant::winograd, winograd_fused -- step 8, the
// same transforms and C-long fp32 sums in one kernel -- and best where plan.hpp's
// table picks either) does not sum the same products as direct convolution, so
// its error is measured against its own error scale, per output:
//   E = |A^T| ( sum over c of (|G| |g_kc| |G^T|) (.) (|B^T| |d_nc| |B|) ) |A| + |bias|,
// the sum of the magnitudes of every term the algorithm adds (winograd_scale
// below; the transforms are in include/kernelforge/kernels/conv2d/winograd_transforms.hpp). The
// rounding steps each term goes through: the filter transform (2 additions per
// stage, 2 stages; halving is exact), the input transform (1 per stage), the
// product, the C-long fp32 sum, and the output transform (2 per stage): at
// worst (C + 12) 2^-24 E. As for the exact variants we test at the random-sign
// growth with a margin: 4 sqrt(C + 12) 2^-24 E. Measured (a CPU emulation of
// the fp32 algorithm with these transforms, C = 3 ... 1024): errors stay below
// 2e-8 E, under a hundredth of the bound. For these data (|x|, |w| in [1/8, 2])
// E is 5-16x the direct scale S = sum |x| |w|, so at C = 256 the bound is at
// most 6e-5 S, while a wrong or lost channel, tap or tile moves an output by
// about |x| |w| ~ S / (9 C) = 4e-4 S: the test can fail.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "conv2d_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"
#include "winograd_bound.hpp"

namespace {
using kf::test::best_runs_winograd;
using kf::test::winograd_scale;
using kf::test::winograd_tolerance;
using namespace kf::test::conv2d;  // conv2d_cases.hpp

// Layers Winograd computes (3x3, stride 1, dilation 1): partial edge tiles (odd
// P or Q), odd channel counts (U rows padded to 4), N = 1, pads 0-2, a single
// output pixel, each GEMM tile of step 6 (64 x 64, 128 x 64, 128 x 128 on 132 SMs),
// misaligned pointers. For step 8 (64 filters x 32 tiles per block, 8 channels
// per stage): blocks of tiles that span images (w_c3_n5: 90 tiles per image),
// a last block of tiles mostly empty (w_n1_c64_56x56_k64: 784 = 24 x 32 + 16),
// a second filter block holding one filter (K = 65) with a last channel chunk
// of one channel (C = 9), K below one block (K = 1, 3, 7), C < 8 (one partial
// chunk), and the first ResNet layer's shape at N = 1.
const conv_case winograd_cases[] = {
    {"w_c3_n5_17x19_k20", make(5, 3, 17, 19, 20, 3, 3, 1, 1, 1), true, 0},
    {"w_c67_14x14_k130", make(2, 67, 14, 14, 130, 3, 3, 1, 1, 1), true, 0},
    {"w_n1_c131_9x7_k67_misaligned", make(1, 131, 9, 7, 67, 3, 3, 1, 1, 1), true, 1, 1},
    {"w_pad0_c16_13x11_k16_no_bias", make(2, 16, 13, 11, 16, 3, 3, 1, 0, 1), false, 0},
    {"w_pad2_c5_6x5_k7", make(3, 5, 6, 5, 7, 3, 3, 1, 2, 1), true, 0},
    {"w_one_pixel_c4_k3", make(2, 4, 1, 1, 3, 3, 3, 1, 1, 1), true, 0},
    {"w_c256_14x14_k256", make(2, 256, 14, 14, 256, 3, 3, 1, 1, 1), true, 0},
    {"w_tile_128x64_n4_c32_48x48_k48", make(4, 32, 48, 48, 48, 3, 3, 1, 1, 1), true, 0},
    {"w_tile_128x128_n4_c8_64x64_k160_no_bias", make(4, 8, 64, 64, 160, 3, 3, 1, 1, 1), false, 0},
    {"w_n1_c64_56x56_k64", make(1, 64, 56, 56, 64, 3, 3, 1, 1, 1), true, 0},
    {"w_c9_10x12_k65_no_bias", make(3, 9, 10, 12, 65, 3, 3, 1, 1, 1), false, 0},
    {"w_pad0_3x3_to_1x1_c2_k1", make(1, 2, 3, 3, 1, 3, 3, 1, 0, 1), true, 0},
};

using conv2d_param = std::tuple<variant_case, conv_case>;

class Conv2dFloat : public ::testing::TestWithParam<conv2d_param> {};

TEST_P(Conv2dFloat, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  const variant_case& vc = std::get<0>(GetParam());
  const conv_case& cc = std::get<1>(GetParam());
  const kf::conv2d_params& p = cc.p;
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  const std::size_t crs = p.in_channels * p.filter_height * p.filter_width;
  const auto x = kf::test::random_vector<float>(p.batch * p.in_channels * p.in_height * p.in_width, 11);
  const auto w = kf::test::random_vector<float>(p.out_channels * crs, 12);
  const auto bias = kf::test::random_vector<float>(p.out_channels, 13);
  const std::size_t y_n = p.batch * p.out_channels * P * Q;
  std::vector<double> expected(y_n), scale(y_n);
  kf::reference::conv2d_forward_exact(p, x.data(), w.data(), cc.bias ? bias.data() : nullptr, expected.data(),
                                      scale.data());

  const auto d_x = to_device_at(x, cc.in_offset);
  const auto d_w = to_device_at(w, cc.in_offset);
  const auto d_bias = to_device_at(bias, cc.in_offset);
  kf::device_buffer<float> d_y(cc.y_offset + y_n);
  kf::test::poison(d_y.data(), d_y.size_bytes());
  kf::conv2d_options options;
  options.variant = vc.variant;
  options.math = vc.math;

  if (vc.variant == kf::conv2d_variant::winograd_fused && !winograd_fused_runs(p)) {
    // Layers Winograd does not compute, devices without 168 KB of shared memory per block.
    kf::test::expect_error(kf::errc::unsupported, "winograd_fused", [&] {
      kf::conv2d_forward<float>(p, d_x.data() + cc.in_offset, d_w.data() + cc.in_offset, nullptr, d_y.data(), options);
    });
    for (float v : kf::to_host(d_y)) ASSERT_TRUE(std::isnan(v)) << "y was written";
    return;
  }
  if (vc.variant == kf::conv2d_variant::implicit_gemm_wgmma && !wgmma_runs(p)) {
    // Strided layers, devices other than sm_90, builds without sm_90a: refused, y untouched.
    kf::test::expect_error(kf::errc::unsupported, "implicit_gemm_wgmma", [&] {
      kf::conv2d_forward<float>(p, d_x.data() + cc.in_offset, d_w.data() + cc.in_offset, nullptr, d_y.data(), options);
    });
    for (float v : kf::to_host(d_y)) ASSERT_TRUE(std::isnan(v)) << "y was written";
    return;
  }
  const bool tf32_requested = vc.variant == kf::conv2d_variant::implicit_gemm_tf32;
  if (tf32_requested && !device_has_tf32()) {
    try {
      kf::conv2d_forward<float>(p, d_x.data() + cc.in_offset, d_w.data() + cc.in_offset, nullptr, d_y.data(), options);
      FAIL() << "implicit_gemm_tf32 ran on a device without TF32 tensor cores";
    } catch (const kf::error& e) {
      EXPECT_EQ(e.code(), kf::errc::unsupported) << e.what();
    }
    return;
  }
  kf::conv2d_forward<float>(p, d_x.data() + cc.in_offset, d_w.data() + cc.in_offset,
                            cc.bias ? d_bias.data() + cc.in_offset : nullptr, d_y.data() + cc.y_offset, options);
  const auto got = kf::to_host(d_y);
  if (cc.y_offset) {
    ASSERT_TRUE(std::isnan(got[0])) << "the element before y was written";
  }
  const bool tf32_used = vc.math == kf::math_mode::tf32 && device_has_tf32();
  if (vc.variant == kf::conv2d_variant::winograd_fused ||
      (!tf32_used && vc.variant == kf::conv2d_variant::best && best_runs_winograd(p))) {
    const std::vector<double> w_scale = winograd_scale(p, x, w, cc.bias ? bias.data() : nullptr);
    EXPECT_TRUE(kf::test::all_close(got, expected, {winograd_tolerance(p), 0}, &w_scale, cc.y_offset));
    return;
  }
  const kf::test::tolerance tol{
      tf32_used ? 4 * std::ldexp(1.0, -10) : 4 * std::sqrt(static_cast<double>(crs)) * std::ldexp(1.0, -24), 0};
  EXPECT_TRUE(kf::test::all_close(got, expected, tol, &scale, cc.y_offset));
}

// conv2d_variant::winograd and winograd_fused on the layers they compute, at
// Winograd's bound (top of file).
using winograd_param = std::tuple<variant_case, conv_case>;
class Conv2dWinogradFloat : public ::testing::TestWithParam<winograd_param> {};

const variant_case winograd_variants[] = {
    {"winograd", kf::conv2d_variant::winograd, kf::math_mode::exact},
    {"winograd_fused", kf::conv2d_variant::winograd_fused, kf::math_mode::exact},
};

TEST_P(Conv2dWinogradFloat, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  const variant_case& vc = std::get<0>(GetParam());
  const conv_case& cc = std::get<1>(GetParam());
  const kf::conv2d_params& p = cc.p;
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  const auto x = kf::test::random_vector<float>(p.batch * p.in_channels * p.in_height * p.in_width, 21);
  const auto w = kf::test::random_vector<float>(p.out_channels * p.in_channels * 9, 22);
  const auto bias = kf::test::random_vector<float>(p.out_channels, 23);
  const float* host_bias = cc.bias ? bias.data() : nullptr;
  const std::size_t y_n = p.batch * p.out_channels * P * Q;
  std::vector<double> expected(y_n), direct_scale(y_n);
  kf::reference::conv2d_forward_exact(p, x.data(), w.data(), host_bias, expected.data(), direct_scale.data());
  const std::vector<double> scale = winograd_scale(p, x, w, host_bias);

  const auto d_x = to_device_at(x, cc.in_offset);
  const auto d_w = to_device_at(w, cc.in_offset);
  const auto d_bias = to_device_at(bias, cc.in_offset);
  kf::device_buffer<float> d_y(cc.y_offset + y_n + 1);  // one element past y: must stay NaN
  kf::test::poison(d_y.data(), d_y.size_bytes());
  kf::conv2d_options options;
  options.variant = vc.variant;
  const auto run = [&] {
    kf::conv2d_forward<float>(p, d_x.data() + cc.in_offset, d_w.data() + cc.in_offset,
                              cc.bias ? d_bias.data() + cc.in_offset : nullptr, d_y.data() + cc.y_offset, options);
  };
  if (!winograd_variant_runs(vc.variant, p)) {  // winograd_fused on a device without the shared memory
    kf::test::expect_error(kf::errc::unsupported, "shared memory", run);
    for (float v : kf::to_host(d_y)) ASSERT_TRUE(std::isnan(v)) << "y was written";
    return;
  }
  run();
  const auto got = kf::to_host(d_y);
  if (cc.y_offset) {
    ASSERT_TRUE(std::isnan(got[0])) << "the element before y was written";
  }
  ASSERT_TRUE(std::isnan(got[cc.y_offset + y_n])) << "the element after y was written";
  EXPECT_TRUE(kf::test::all_close(got, expected, {winograd_tolerance(p), 0}, &scale, cc.y_offset));
}

// Every layer Winograd does not compute is refused (errc::unsupported), and
// nothing is written.
TEST(Conv2dWinograd, RefusesLayersItDoesNotCompute) {
  KF_SKIP_WITHOUT_GPU();
  int refused = 0;
  for (const conv_case& cc : conv_cases) {
    for (kf::conv2d_variant variant : {kf::conv2d_variant::winograd, kf::conv2d_variant::winograd_fused}) {
      const kf::conv2d_params& p = cc.p;
      if (kf::detail::conv2d_winograd_unsupported_reason(p.filter_height, p.filter_width, p.stride_h, p.stride_w,
                                                         p.dilation_h, p.dilation_w) == nullptr) {
        continue;
      }
      const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
      kf::device_buffer<float> d_x(p.batch * p.in_channels * p.in_height * p.in_width);
      kf::device_buffer<float> d_w(p.out_channels * p.in_channels * p.filter_height * p.filter_width);
      kf::device_buffer<float> d_y(p.batch * p.out_channels * P * Q);
      kf::test::poison(d_y.data(), d_y.size_bytes());
      kf::conv2d_options options;
      options.variant = variant;
      try {
        kf::conv2d_forward<float>(p, d_x.data(), d_w.data(), nullptr, d_y.data(), options);
        ADD_FAILURE() << cc.name << ": " << kf::to_string(variant) << " ran";
      } catch (const kf::error& e) {
        EXPECT_EQ(e.code(), kf::errc::unsupported) << cc.name << ": " << e.what();
        EXPECT_NE(std::string(e.what()).find(kf::to_string(variant)), std::string::npos) << e.what();
      }
      for (float v : kf::to_host(d_y)) ASSERT_TRUE(std::isnan(v)) << cc.name << ": y was written";
      ++refused;
    }
  }
  EXPECT_GE(refused, 10);  // 1x1, 7x7/2, dilated, stride 2, 5x3, by each of the two variants
}

// The splitk_* cases must take the split-K path on this device (else the
// tests above would not cover it): the launcher's plan, from the same inputs.
TEST(Conv2dSplitK, CasesSplitOnThisDevice) {
  KF_SKIP_WITHOUT_GPU();
  expect_splitk_cases_split();
}

std::string param_name(const ::testing::TestParamInfo<conv2d_param>& info) {
  return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dWinogradFloat,
                         ::testing::Combine(::testing::ValuesIn(winograd_variants),
                                            ::testing::ValuesIn(winograd_cases)),
                         param_name);

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dFloat,
                         ::testing::Combine(::testing::ValuesIn(variants_except({kf::conv2d_variant::winograd})),
                                            ::testing::ValuesIn(conv_cases)),
                         param_name);

}  // namespace
