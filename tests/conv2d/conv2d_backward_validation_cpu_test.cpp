// SPDX-License-Identifier: Apache-2.0
// CPU tests of the argument checks of conv2d_backward_data / _filter (thrown
// before any CUDA call, so they run without a GPU): null and overlapping
// pointers, the ReLU mask's rule, types and layouts, enums, geometry, empty
// outputs, names. The references: conv2d_backward_cpu_test.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <limits>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conv2d_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/conv_backward.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/kernels/conv2d/validate.hpp"
#include "test_support.hpp"

namespace {

using kf::test::expect_error;
using kf::test::fake;
using kf::test::conv2d::make;

// ---- argument checks, before any CUDA call --------------------------------------

// N C H W K R S = 2 3 8 8 4 3 3, pad 1: x 384, weight 108, y 512 elements; the
// fake addresses are 16 MiB apart.
const kf::conv2d_params checked = make(2, 3, 8, 8, 4, 3, 3, 1, 1, 1);
float* const fake_x = fake(0x1000000);
float* const fake_w = fake(0x2000000);
float* const fake_dy = fake(0x3000000);
float* const fake_dx = fake(0x4000000);
float* const fake_dw = fake(0x5000000);
float* const fake_db = fake(0x6000000);
float* const fake_relu_y = fake(0x7000000);

void data(const kf::conv2d_params& p, const float* dy, const float* w, float* dx,
          const kf::conv2d_backward_options& o = {}, const float* relu_y = nullptr) {
  kf::conv2d_backward_data<float>(p, dy, w, dx, o, relu_y);
}

void filter(const kf::conv2d_params& p, const float* x, const float* dy, float* dw, float* db,
            const kf::conv2d_backward_options& o = {}, const float* relu_y = nullptr) {
  kf::conv2d_backward_filter<float>(p, x, dy, dw, db, o, relu_y);
}

kf::conv2d_backward_options relu_options(float threshold) {
  kf::conv2d_backward_options o;
  o.relu = true;
  o.relu_threshold = threshold;
  return o;
}

TEST(Conv2dBackwardValidation, NullPointersAreNamed) {
  const kf::conv2d_params& p = checked;
  expect_error(kf::errc::invalid_argument, "'dy'", [&] { data(p, nullptr, fake_w, fake_dx); });
  expect_error(kf::errc::invalid_argument, "'weight'", [&] { data(p, fake_dy, nullptr, fake_dx); });
  expect_error(kf::errc::invalid_argument, "'dx'", [&] { data(p, fake_dy, fake_w, nullptr); });
  expect_error(kf::errc::invalid_argument, "'x'", [&] { filter(p, nullptr, fake_dy, fake_dw, fake_db); });
  expect_error(kf::errc::invalid_argument, "'dy'", [&] { filter(p, fake_x, nullptr, fake_dw, fake_db); });
  expect_error(kf::errc::invalid_argument, "'dweight'", [&] { filter(p, fake_x, fake_dy, nullptr, fake_db); });
  expect_error(kf::errc::invalid_argument, "'dweight'", [&] { filter(p, fake_x, fake_dy, nullptr, nullptr); });
}

TEST(Conv2dBackwardValidation, OutputsOverlappingInputsAreNamed) {
  const kf::conv2d_params& p = checked;
  const kf::conv2d_backward_options relu = relu_options(0.0f);
  // dx (384 elements) against dy, weight and relu_y: overlapping by one element at either end.
  expect_error(kf::errc::invalid_argument, "'dx' and 'dy'", [&] { data(p, fake_dy, fake_w, fake_dy + 511); });
  expect_error(kf::errc::invalid_argument, "'dx' and 'dy'", [&] { data(p, fake_dy + 383, fake_w, fake_dy); });
  expect_error(kf::errc::invalid_argument, "'dx' and 'weight'", [&] { data(p, fake_dy, fake_w, fake_w + 100); });
  expect_error(kf::errc::invalid_argument, "'dx' and 'relu_y'",
               [&] { data(p, fake_dy, fake_w, fake_relu_y + 7, relu, fake_relu_y); });
  // Touching is not overlapping; relu_y is no input without options.relu.
  EXPECT_NO_THROW(kf::detail::validate_conv2d_backward_data("test", p, fake_dy, fake_w, fake_dy + 512, nullptr, 4, {}));
  EXPECT_NO_THROW(kf::detail::validate_conv2d_backward_data("test", p, fake_dy, fake_w, fake_dx, fake_dx + 1, 4, {}));
  // dweight (108) and dbias (4) against x, dy, relu_y, and each other.
  expect_error(kf::errc::invalid_argument, "'dweight' and 'x'",
               [&] { filter(p, fake_x, fake_dy, fake_x + 383, fake_db); });
  expect_error(kf::errc::invalid_argument, "'dweight' and 'dy'",
               [&] { filter(p, fake_x, fake_dy, fake_dy + 50, fake_db); });
  expect_error(kf::errc::invalid_argument, "'dweight' and 'relu_y'",
               [&] { filter(p, fake_x, fake_dy, fake_relu_y + 511, fake_db, relu, fake_relu_y); });
  expect_error(kf::errc::invalid_argument, "'dbias' and 'x'", [&] { filter(p, fake_x, fake_dy, fake_dw, fake_x); });
  expect_error(kf::errc::invalid_argument, "'dbias' and 'dy'",
               [&] { filter(p, fake_x, fake_dy, fake_dw, fake_dy + 510); });
  expect_error(kf::errc::invalid_argument, "'dbias' and 'relu_y'",
               [&] { filter(p, fake_x, fake_dy, fake_dw, fake_relu_y + 3, relu, fake_relu_y); });
  expect_error(kf::errc::invalid_argument, "'dbias' and 'dweight'",
               [&] { filter(p, fake_x, fake_dy, fake_dw, fake_dw + 107); });
  expect_error(kf::errc::invalid_argument, "'dbias' and 'dweight'",
               [&] { filter(p, fake_x, fake_dy, fake_db + 3, fake_db); });
  EXPECT_NO_THROW(
      kf::detail::validate_conv2d_backward_filter("test", p, fake_x, fake_dy, fake_dw, fake_dw + 108, nullptr, 4, {}));
}

TEST(Conv2dBackwardValidation, ReluNeedsTheForwardOutputAndANonNegativeThreshold) {
  const kf::conv2d_params& p = checked;
  const kf::conv2d_backward_options relu = relu_options(0.0f);
  expect_error(kf::errc::invalid_argument, "relu_y is null", [&] { data(p, fake_dy, fake_w, fake_dx, relu); });
  expect_error(kf::errc::invalid_argument, "relu_y is null",
               [&] { filter(p, fake_x, fake_dy, fake_dw, fake_db, relu); });
  for (float threshold : {-0.5f, -std::numeric_limits<float>::min(), std::numeric_limits<float>::quiet_NaN()}) {
    SCOPED_TRACE(threshold);
    const kf::conv2d_backward_options negative = relu_options(threshold);
    expect_error(kf::errc::invalid_argument,
                 "options.relu_threshold = ", [&] { data(p, fake_dy, fake_w, fake_dx, negative, fake_relu_y); });
    expect_error(kf::errc::invalid_argument, "relu_threshold_backward",
                 [&] { filter(p, fake_x, fake_dy, fake_dw, fake_db, negative, fake_relu_y); });
    // Checked before the empty call returns.
    kf::conv2d_params empty = p;
    empty.batch = 0;
    expect_error(kf::errc::invalid_argument,
                 "options.relu_threshold = ", [&] { data(empty, nullptr, fake_w, nullptr, negative, fake_relu_y); });
  }
  // -0 is >= 0, and the mask reads clipped outputs (0) as clipped.
  EXPECT_NO_THROW(kf::detail::validate_conv2d_backward_data("test", p, fake_dy, fake_w, fake_dx, fake_relu_y, 4,
                                                            relu_options(-0.0f)));
  EXPECT_NO_THROW(kf::detail::validate_conv2d_backward_filter("test", p, fake_x, fake_dy, fake_dw, fake_db, fake_relu_y,
                                                              4, relu_options(2)));
}

TEST(Conv2dBackwardValidation, SixteenBitTypesAreNhwcOnly) {
  const kf::conv2d_params& p = checked;  // NCHW
  auto* h = reinterpret_cast<__half*>(fake_x);
  auto* b = reinterpret_cast<__nv_bfloat16*>(fake_x);
  auto* hd = reinterpret_cast<__half*>(fake_dx);
  auto* bd = reinterpret_cast<__nv_bfloat16*>(fake_dx);
  const auto* hy = reinterpret_cast<const __half*>(fake_dy);
  const auto* by = reinterpret_cast<const __nv_bfloat16*>(fake_dy);
  const auto* hw = reinterpret_cast<const __half*>(fake_w);
  const auto* bw = reinterpret_cast<const __nv_bfloat16*>(fake_w);
  expect_error(kf::errc::unsupported, "NHWC layout only", [&] { kf::conv2d_backward_data<__half>(p, hy, hw, hd); });
  expect_error(kf::errc::unsupported, "NHWC layout only",
               [&] { kf::conv2d_backward_data<__nv_bfloat16>(p, by, bw, bd); });
  expect_error(kf::errc::unsupported, "NHWC layout only",
               [&] { kf::conv2d_backward_filter<__half>(p, h, hy, hd, nullptr); });
  expect_error(kf::errc::unsupported, "NHWC layout only",
               [&] { kf::conv2d_backward_filter<__nv_bfloat16>(p, b, by, bd, nullptr); });
  // Before the empty call returns.
  kf::conv2d_params empty = p;
  empty.batch = 0;
  expect_error(kf::errc::unsupported, "NHWC layout only",
               [&] { kf::conv2d_backward_data<__half>(empty, nullptr, hw, nullptr); });
  // NHWC takes them (N = 0: no CUDA call).
  empty.layout = kf::conv2d_layout::nhwc;
  EXPECT_NO_THROW(kf::conv2d_backward_data<__half>(empty, nullptr, hw, nullptr));
  EXPECT_NO_THROW(kf::conv2d_backward_data<__nv_bfloat16>(empty, nullptr, bw, nullptr));
}

TEST(Conv2dBackwardValidation, EnumsOutsideTheirValues) {
  const kf::conv2d_params& p = checked;
  kf::conv2d_backward_options bad_variant;
  bad_variant.variant = static_cast<kf::conv2d_backward_variant>(7);
  expect_error(kf::errc::invalid_argument, "options.variant = 7",
               [&] { data(p, fake_dy, fake_w, fake_dx, bad_variant); });
  expect_error(kf::errc::invalid_argument, "best, naive, implicit_gemm",
               [&] { filter(p, fake_x, fake_dy, fake_dw, fake_db, bad_variant); });
  kf::conv2d_backward_options bad_math;
  bad_math.math = static_cast<kf::math_mode>(5);
  expect_error(kf::errc::invalid_argument, "options.math = 5", [&] { data(p, fake_dy, fake_w, fake_dx, bad_math); });
  expect_error(kf::errc::invalid_argument, "options.math = 5",
               [&] { filter(p, fake_x, fake_dy, fake_dw, fake_db, bad_math); });
  kf::conv2d_backward_options emulated;
  emulated.math = kf::math_mode::fp32_emulated;  // the forward's and matmul's, not the gradients'
  expect_error(kf::errc::unsupported, "fp32_emulated covers conv2d_forward and kf::matmul, not the gradients",
               [&] { data(p, fake_dy, fake_w, fake_dx, emulated); });
  kf::conv2d_params bad_layout = p;
  bad_layout.layout = static_cast<kf::conv2d_layout>(7);
  expect_error(kf::errc::invalid_argument, "params.layout = 7", [&] { data(bad_layout, fake_dy, fake_w, fake_dx); });
  expect_error(kf::errc::invalid_argument, "params.layout = 7",
               [&] { filter(bad_layout, fake_x, fake_dy, fake_dw, fake_db); });
  // Before the empty call returns.
  kf::conv2d_params empty = p;
  empty.batch = 0;
  expect_error(kf::errc::invalid_argument, "options.variant = 7",
               [&] { data(empty, nullptr, fake_w, nullptr, bad_variant); });
}

TEST(Conv2dBackwardValidation, GeometryAsTheForward) {
  struct bad_layer {
    kf::errc code;
    const char* needle;
    void (*edit)(kf::conv2d_params&);
  };
  const bad_layer layers[] = {
      {kf::errc::invalid_argument, "params.in_channels = 0", [](kf::conv2d_params& p) { p.in_channels = 0; }},
      {kf::errc::invalid_argument, "no output", [](kf::conv2d_params& p) { p.filter_height = 11; }},  // > 8 + 2
      {kf::errc::invalid_argument, "params.stride_h = 0", [](kf::conv2d_params& p) { p.stride_h = 0; }},
      {kf::errc::invalid_argument, "params.dilation_w = 0", [](kf::conv2d_params& p) { p.dilation_w = 0; }},
      {kf::errc::invalid_argument, "params.in_width = 0", [](kf::conv2d_params& p) { p.in_width = 0; }},
      {kf::errc::invalid_argument, "params.filter_width = 0", [](kf::conv2d_params& p) { p.filter_width = 0; }},
      {kf::errc::invalid_argument, "dilation_h", [](kf::conv2d_params& p) { p.dilation_h = 5; }},  // reach 11 > 10
      {kf::errc::unsupported, "2^31",
       [](kf::conv2d_params& p) {
         p.batch = std::size_t{1} << 20;
         p.in_channels = 1024;
       }},
  };
  for (const bad_layer& bad : layers) {
    SCOPED_TRACE(bad.needle);
    kf::conv2d_params p = checked;
    bad.edit(p);
    expect_error(bad.code, bad.needle, [&] { data(p, fake_dy, fake_w, fake_dx); });
    expect_error(bad.code, bad.needle, [&] { filter(p, fake_x, fake_dy, fake_dw, fake_db); });
  }
  // Geometry is checked before the empty call returns.
  kf::conv2d_params p = checked;
  p.batch = 0;
  p.filter_height = 11;
  expect_error(kf::errc::invalid_argument, "no output", [&] { data(p, nullptr, fake_w, nullptr); });
  p = checked;
  p.out_channels = 0;
  p.stride_w = 0;
  expect_error(kf::errc::invalid_argument, "params.stride_w = 0",
               [&] { filter(p, fake_x, nullptr, nullptr, nullptr); });
}

// Nothing to compute, nothing enqueued: dx of N = 0 and dw of K = 0 return
// after validation, before any CUDA call (this machine may have no GPU).
// (dx of K = 0 and dw of N = 0 must write zeros: GPU tests.)
TEST(Conv2dBackwardValidation, EmptyOutputsAreNoOps) {
  kf::conv2d_params p = checked;
  p.batch = 0;
  EXPECT_NO_THROW(data(p, nullptr, fake_w, nullptr));
  EXPECT_NO_THROW(data(p, nullptr, fake_w, nullptr, relu_options(0.0f), fake_relu_y));
  expect_error(kf::errc::invalid_argument, "'weight'", [&] { data(p, nullptr, nullptr, nullptr); });
  p = checked;
  p.out_channels = 0;
  EXPECT_NO_THROW(filter(p, fake_x, nullptr, nullptr, nullptr));
  EXPECT_NO_THROW(filter(p, fake_x, nullptr, nullptr, nullptr, relu_options(0.5f), fake_relu_y));
  expect_error(kf::errc::invalid_argument, "'x'", [&] { filter(p, nullptr, nullptr, nullptr, nullptr); });
  p.layout = kf::conv2d_layout::nhwc;
  EXPECT_NO_THROW(filter(p, fake_x, nullptr, nullptr, nullptr));
}

TEST(Conv2dBackwardNames, ToString) {
  EXPECT_STREQ(kf::to_string(kf::conv2d_backward_variant::best), "best");
  EXPECT_STREQ(kf::to_string(kf::conv2d_backward_variant::naive), "naive");
  EXPECT_STREQ(kf::to_string(kf::conv2d_backward_variant::implicit_gemm), "implicit_gemm");
  EXPECT_STREQ(kf::to_string(kf::conv2d_backward_variant::implicit_gemm_wgmma), "implicit_gemm_wgmma");
  EXPECT_STREQ(kf::to_string(static_cast<kf::conv2d_backward_variant>(7)), "unknown");
}

}  // namespace
