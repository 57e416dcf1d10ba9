// SPDX-License-Identifier: Apache-2.0
// conv2d_forward on the GPU: every variant x every case against the double
// reference, output poisoned first (NaN never passes).
//
// Tolerance, relative to the error scale sum |x| |w| + |bias| of each output:
//   exact fp32 (naive, smem_tiled, implicit_gemm, best):  4 * sqrt(C*R*S) * 2^-24
//     -- fp32 accumulation of C*R*S products; rounding errors of random-sign
//     terms grow like the square root of their count, 4x is the margin.
//   tf32 (implicit_gemm_tf32, best with math_mode::tf32 on sm_80+): 4 * 2^-10
//     -- each product carries up to 2^-10 relative error from rounding both
//     inputs to TF32's 10-bit mantissa.
// A wrong tap, channel or filter changes an output by about |x| |w| ~
// scale / (C*R*S), well above both for every case up to C*R*S = 603. The
// splitk_* cases (C*R*S up to 1179, small N*P*Q: tuning.hpp splits C*R*S
// over grid z and sums the slices with conv2d_splitk_reduce) reach further:
// there the exact tolerance still catches one wrong tap, and the tf32 one
// catches a lost or repeated BK slice (8 taps, >= 8/1179 of the scale) or
// split -- the errors split-K could make.
// Conv2dSplitK.CasesSplitOnThisDevice checks that they do split here.
// implicit_gemm_pipelined (exact fp32) runs every case at the exact tolerance;
// in_offset = 1 cases shift x, weight and bias by one element (4-byte filter
// copies instead of 16-byte ones).
//
// Winograd F(2x2,3x3) (conv2d_variant::winograd, and best where tuning.hpp's
// table picks it) does not sum the same products as direct convolution, so
// its error is measured against its own error scale, per output:
//   E = |A^T| ( sum over c of (|G| |g_kc| |G^T|) (.) (|B^T| |d_nc| |B|) ) |A| + |bias|,
// the sum of the magnitudes of every term the algorithm adds (winograd_scale
// below; the transforms are in kernels/conv2d/winograd_transforms.hpp). The
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
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/tuning.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"
#include "winograd_bound.hpp"

namespace {
using kf::test::best_runs_winograd;
using kf::test::winograd_scale;
using kf::test::winograd_tolerance;

struct conv_case {
  const char* name;
  kf::conv2d_params p;
  bool bias;
  std::size_t y_offset;       // elements: a misaligned y forces the scalar store path
  std::size_t in_offset = 0;  // elements: x, weight and bias start this far into their buffers
};

kf::conv2d_params make(std::size_t n, std::size_t c, std::size_t h, std::size_t w, std::size_t k, std::size_t r,
                       std::size_t s, std::size_t stride, std::size_t pad, std::size_t dilation) {
  kf::conv2d_params p{n, c, h, w, k, r, s};
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  p.dilation_h = p.dilation_w = dilation;
  return p;
}

const conv_case conv_cases[] = {
    {"pointwise_1x1_c67", make(2, 67, 9, 11, 13, 1, 1, 1, 0, 1), true, 0},
    {"same_3x3_pad1_c3_n5", make(5, 3, 17, 19, 20, 3, 3, 1, 1, 1), false, 0},
    {"resnet_stem_7x7_s2_p3", make(1, 3, 224, 224, 64, 7, 7, 2, 3, 1), true, 0},
    {"dilated_3x3_d2_c67", make(2, 67, 23, 21, 35, 3, 3, 1, 2, 2), false, 0},
    {"stride2_pad0_odd_3x5",
     [] {
       auto p = make(5, 3, 31, 29, 7, 3, 5, 2, 0, 1);
       return p;
     }(),
     true, 0},
    {"single_output_row_p1", make(1, 67, 5, 40, 9, 5, 3, 1, 0, 1), true, 0},
    {"single_output_column_q1", make(5, 3, 12, 3, 17, 3, 3, 1, 0, 1), false, 0},
    {"gemm_edges_k130_c67", make(5, 67, 14, 14, 130, 3, 3, 1, 1, 1), true, 0},
    {"gemm_tile_128x128", make(8, 16, 64, 64, 256, 3, 3, 1, 1, 1), true, 0},
    {"gemm_tile_128x64_misaligned_y", make(3, 5, 112, 112, 48, 3, 3, 1, 1, 1), true, 1},
    // Split-K (144 BK slices; 128 x 128 tiles, P*Q % 4 == 0: float4 reduction with bias).
    {"splitk_c128_14x14_k256", make(2, 128, 14, 14, 256, 3, 3, 1, 1, 1), true, 0},
    // Split-K, P*Q = 63 and y misaligned: scalar stores and reduction, bias; K = 67 edges.
    {"splitk_c131_9x7_k67_misaligned_y", make(1, 131, 9, 7, 67, 3, 3, 1, 1, 1), true, 1},
    // Split-K with K <= 64 (128 x 64 tiles), float4 reduction without bias.
    {"splitk_c96_8x8_k40_no_bias", make(2, 96, 8, 8, 40, 3, 3, 1, 1, 1), false, 0},
    // Misaligned x, weight, bias and y; C*R*S = 180 (a multiple of 4: only the
    // offset keeps the pipelined kernel off its 16-byte filter copies).
    {"misaligned_inputs_c20_15x13_k33", make(3, 20, 15, 13, 33, 3, 3, 1, 1, 1), true, 1, 1},
};

// Layers Winograd computes (3x3, stride 1, dilation 1): partial edge tiles (odd
// P or Q), odd channel counts (U rows padded to 4), N = 1, pads 0-2, a single
// output pixel, each GEMM tile (64 x 64, 128 x 64, 128 x 128 on 132 SMs), misaligned pointers.
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
};

struct variant_case {
  const char* name;
  kf::conv2d_variant variant;
  kf::math_mode math;
};

const variant_case variant_cases[] = {
    {"naive", kf::conv2d_variant::naive, kf::math_mode::exact},
    {"smem_tiled", kf::conv2d_variant::smem_tiled, kf::math_mode::exact},
    {"implicit_gemm", kf::conv2d_variant::implicit_gemm, kf::math_mode::exact},
    {"implicit_gemm_tf32", kf::conv2d_variant::implicit_gemm_tf32, kf::math_mode::tf32},
    {"implicit_gemm_pipelined", kf::conv2d_variant::implicit_gemm_pipelined, kf::math_mode::exact},
    {"best_exact", kf::conv2d_variant::best, kf::math_mode::exact},
    {"best_tf32", kf::conv2d_variant::best, kf::math_mode::tf32},
};

bool device_has_tf32() {
  const auto info = kf::get_device_info();
  return info.cc_major >= 8;
}

/// `host` on the device, starting `offset` elements into its buffer (the
/// elements before it: NaN, never read).
kf::device_buffer<float> to_device_at(const std::vector<float>& host, std::size_t offset) {
  std::vector<float> shifted(offset, std::nanf(""));
  shifted.insert(shifted.end(), host.begin(), host.end());
  return kf::to_device(shifted);
}

// Readable parameter values in test (and so ctest) names.
void PrintTo(const conv_case& c, std::ostream* os) { *os << c.name; }
void PrintTo(const variant_case& v, std::ostream* os) { *os << v.name; }

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
  if (!tf32_used && vc.variant == kf::conv2d_variant::best && best_runs_winograd(p)) {
    const std::vector<double> w_scale = winograd_scale(p, x, w, cc.bias ? bias.data() : nullptr);
    EXPECT_TRUE(kf::test::all_close(got, expected, {winograd_tolerance(p), 0}, &w_scale, cc.y_offset));
    return;
  }
  const kf::test::tolerance tol{
      tf32_used ? 4 * std::ldexp(1.0, -10) : 4 * std::sqrt(static_cast<double>(crs)) * std::ldexp(1.0, -24), 0};
  EXPECT_TRUE(kf::test::all_close(got, expected, tol, &scale, cc.y_offset));
}

// conv2d_variant::winograd on the layers it computes, at its own bound (top of file).
class Conv2dWinogradFloat : public ::testing::TestWithParam<conv_case> {};

TEST_P(Conv2dWinogradFloat, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  const conv_case& cc = GetParam();
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
  options.variant = kf::conv2d_variant::winograd;
  kf::conv2d_forward<float>(p, d_x.data() + cc.in_offset, d_w.data() + cc.in_offset,
                            cc.bias ? d_bias.data() + cc.in_offset : nullptr, d_y.data() + cc.y_offset, options);
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
    options.variant = kf::conv2d_variant::winograd;
    try {
      kf::conv2d_forward<float>(p, d_x.data(), d_w.data(), nullptr, d_y.data(), options);
      ADD_FAILURE() << cc.name << ": winograd ran";
    } catch (const kf::error& e) {
      EXPECT_EQ(e.code(), kf::errc::unsupported) << cc.name << ": " << e.what();
    }
    for (float v : kf::to_host(d_y)) ASSERT_TRUE(std::isnan(v)) << cc.name << ": y was written";
    ++refused;
  }
  EXPECT_GE(refused, 5);  // 1x1, 7x7/2, dilated, stride 2, 5x3
}

// The splitk_* cases must take the split-K path on this device (else the
// tests above would not cover it): the launcher's plan, from the same inputs.
TEST(Conv2dSplitK, CasesSplitOnThisDevice) {
  KF_SKIP_WITHOUT_GPU();
  const int sm_count = kf::get_device_info().sm_count;
  int checked = 0;
  for (const conv_case& cc : conv_cases) {
    if (std::strncmp(cc.name, "splitk_", 7) != 0) continue;
    const kf::conv2d_params& p = cc.p;
    const std::size_t m = p.batch * kf::conv2d_output_height(p) * kf::conv2d_output_width(p);
    const auto plan = kf::detail::choose_conv2d_gemm_plan(m, p.out_channels,
                                                          p.in_channels * p.filter_height * p.filter_width, sm_count);
    EXPECT_GT(plan.split, 1u) << cc.name << " does not split on " << sm_count << " SMs";
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

std::string param_name(const ::testing::TestParamInfo<conv2d_param>& info) {
  return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dWinogradFloat, ::testing::ValuesIn(winograd_cases),
                         [](const ::testing::TestParamInfo<conv_case>& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dFloat,
                         ::testing::Combine(::testing::ValuesIn(variant_cases), ::testing::ValuesIn(conv_cases)),
                         param_name);

}  // namespace
