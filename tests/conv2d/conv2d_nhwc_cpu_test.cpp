// SPDX-License-Identifier: Apache-2.0
// CPU tests of conv2d_layout (no GPU needed): the NHWC reference against the
// NCHW one on the same data transposed, the reference for __half and
// __nv_bfloat16 against float, conv2d_forward's layout rules (the variants and
// types NHWC and NCHW take, errc::unsupported before any CUDA call) and
// to_string(conv2d_layout), and the NHWC route (nhwc_plan.hpp: which kernels
// an NHWC call tries, and the copies of float's route through the NCHW
// kernels). The GPU results: conv2d_nhwc_gpu_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernelforge/conv.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/kernels/conv2d/nhwc_plan.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"

namespace {

namespace ref = kf::reference;

using kf::test::expect_error;
using kf::test::fake;
using kf::test::random_vector;

/// a (d0 x d1 x d2 x d3, row-major) -> d0 x d2 x d3 x d1: NCHW -> NHWC, KCRS -> KRSC, NKPQ -> NPQK.
template <class T>
std::vector<T> channels_last(const std::vector<T>& a, std::size_t d0, std::size_t d1, std::size_t d2, std::size_t d3) {
  std::vector<T> b(a.size());
  for (std::size_t i0 = 0; i0 < d0; ++i0)
    for (std::size_t i1 = 0; i1 < d1; ++i1)
      for (std::size_t i2 = 0; i2 < d2; ++i2)
        for (std::size_t i3 = 0; i3 < d3; ++i3)
          b[((i0 * d2 + i2) * d3 + i3) * d1 + i1] = a[((i0 * d1 + i1) * d2 + i2) * d3 + i3];
  return b;
}

kf::conv2d_params make(std::size_t n, std::size_t c, std::size_t h, std::size_t w, std::size_t k, std::size_t r,
                       std::size_t s, std::size_t stride_h, std::size_t stride_w, std::size_t pad_h, std::size_t pad_w,
                       std::size_t dilation_h, std::size_t dilation_w) {
  kf::conv2d_params p;
  p.batch = n;
  p.in_channels = c;
  p.in_height = h;
  p.in_width = w;
  p.out_channels = k;
  p.filter_height = r;
  p.filter_width = s;
  p.stride_h = stride_h;
  p.stride_w = stride_w;
  p.pad_h = pad_h;
  p.pad_w = pad_w;
  p.dilation_h = dilation_h;
  p.dilation_w = dilation_w;
  return p;
}

/// Awkward layers: C = 3, prime extents, stride 2, padding, dilation 2, 1x1 and 7x7 filters, asymmetric geometry.
std::vector<kf::conv2d_params> layout_cases() {
  return {
      make(2, 3, 11, 13, 5, 3, 3, 1, 1, 1, 1, 1, 1),   // C = 3, 3x3 same
      make(1, 3, 17, 19, 7, 7, 7, 2, 2, 3, 3, 1, 1),   // 7x7 stem-like, stride 2
      make(3, 5, 13, 11, 2, 1, 1, 1, 1, 0, 0, 1, 1),   // 1x1
      make(2, 7, 13, 17, 3, 1, 1, 2, 2, 0, 0, 1, 1),   // 1x1, stride 2
      make(2, 7, 23, 17, 3, 3, 3, 2, 2, 2, 2, 2, 2),   // dilation 2, stride 2, padding
      make(1, 3, 29, 31, 11, 3, 5, 2, 1, 1, 2, 1, 2),  // asymmetric stride, padding, dilation
      make(2, 1, 7, 7, 1, 7, 7, 1, 1, 3, 3, 1, 1),     // one channel in and out
      make(1, 13, 5, 3, 17, 5, 3, 1, 1, 2, 0, 1, 1),   // more channels than pixels
  };
}

std::string describe(const kf::conv2d_params& p) {
  return "N C H W K R S = " + std::to_string(p.batch) + " " + std::to_string(p.in_channels) + " " +
         std::to_string(p.in_height) + " " + std::to_string(p.in_width) + " " + std::to_string(p.out_channels) + " " +
         std::to_string(p.filter_height) + " " + std::to_string(p.filter_width) + ", stride " +
         std::to_string(p.stride_h) + "x" + std::to_string(p.stride_w) + ", pad " + std::to_string(p.pad_h) + "x" +
         std::to_string(p.pad_w) + ", dilation " + std::to_string(p.dilation_h) + "x" + std::to_string(p.dilation_w);
}

// ---- (a) NHWC reference == NCHW reference on transposed data -------------------

TEST(Conv2dLayoutReference, NhwcEqualsNchwOnTransposedDataBitForBit) {
  std::uint64_t seed = 2700;
  for (kf::conv2d_params p : layout_cases()) {
    SCOPED_TRACE(describe(p));
    const std::size_t N = p.batch, C = p.in_channels, H = p.in_height, W = p.in_width, K = p.out_channels,
                      R = p.filter_height, S = p.filter_width;
    const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
    const auto x = random_vector<float>(N * C * H * W, ++seed);
    const auto w = random_vector<float>(K * C * R * S, ++seed);
    const auto bias = random_vector<float>(K, ++seed);

    p.layout = kf::conv2d_layout::nchw;
    std::vector<double> y_nchw(N * K * P * Q), scale_nchw(y_nchw.size());
    ref::conv2d_forward_exact(p, x.data(), w.data(), bias.data(), y_nchw.data(), scale_nchw.data());
    std::vector<float> yf_nchw(y_nchw.size());
    ref::conv2d_forward(p, x.data(), w.data(), bias.data(), yf_nchw.data());

    p.layout = kf::conv2d_layout::nhwc;
    const auto x_nhwc = channels_last(x, N, C, H, W);
    const auto w_krsc = channels_last(w, K, C, R, S);
    std::vector<double> y_nhwc(y_nchw.size()), scale_nhwc(y_nchw.size());
    ref::conv2d_forward_exact(p, x_nhwc.data(), w_krsc.data(), bias.data(), y_nhwc.data(), scale_nhwc.data());
    std::vector<float> yf_nhwc(y_nchw.size());
    ref::conv2d_forward(p, x_nhwc.data(), w_krsc.data(), bias.data(), yf_nhwc.data());

    // The same products summed in the same (c, r, s) order: identical doubles, not merely close.
    EXPECT_EQ(y_nhwc, channels_last(y_nchw, N, K, P, Q));
    EXPECT_EQ(scale_nhwc, channels_last(scale_nchw, N, K, P, Q));
    EXPECT_EQ(yf_nhwc, channels_last(yf_nchw, N, K, P, Q));
    // Random non-zero inputs: the outputs are not trivially zero.
    std::size_t nonzero = 0;
    for (double v : y_nchw) nonzero += v != 0.0;
    EXPECT_GT(nonzero, y_nchw.size() / 2);
  }
}

TEST(Conv2dLayoutReference, NhwcHandComputed) {
  // x: 1 x 2 x 2 x 2 (H x W x C: pixel (h, w) holds channels {c0, c1}), one 1x2 filter, no padding.
  kf::conv2d_params p = make(1, 2, 2, 2, 1, 1, 2, 1, 1, 0, 0, 1, 1);
  p.layout = kf::conv2d_layout::nhwc;
  // NHWC: (h0 w0) = {1, 10}, (h0 w1) = {2, 20}, (h1 w0) = {3, 30}, (h1 w1) = {4, 40}.
  const std::vector<double> x = {1, 10, 2, 20, 3, 30, 4, 40};
  // KRSC: (s0) = {c0: 1, c1: 0}, (s1) = {c0: 0, c1: 1}: y[p][0] = x[p][0][c0] + x[p][1][c1].
  const std::vector<double> w = {1, 0, 0, 1};
  std::vector<double> y(2);
  ref::conv2d_forward_exact<double>(p, x.data(), w.data(), nullptr, y.data());
  EXPECT_EQ(y, (std::vector<double>{1 + 20, 3 + 40}));
}

// ---- (b) __half and __nv_bfloat16 against float ---------------------------------

/// The reference for T against the float reference of the same values converted
/// to float (exactly): the double sums must be identical (every T is a float and
/// every product exact in double), and T's one rounding of that sum within
/// u_T |y| + (the float reference's own rounding) u_f |y| + min_subnormal_T / 2
/// (y the exact sum),
/// u_T = 2^-11 for __half and 2^-8 for __nv_bfloat16, u_f = 2^-24.
template <class T>
void check_narrow_type_against_float(double unit_roundoff, double half_min_subnormal) {
  std::uint64_t seed = 2750;
  for (kf::conv2d_layout layout : {kf::conv2d_layout::nchw, kf::conv2d_layout::nhwc}) {
    for (kf::conv2d_params p : layout_cases()) {
      p.layout = layout;
      SCOPED_TRACE(describe(p) + ", layout " + kf::to_string(layout));
      const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
      const auto x = random_vector<T>(p.batch * p.in_channels * p.in_height * p.in_width, ++seed);
      const auto w = random_vector<T>(p.out_channels * p.in_channels * p.filter_height * p.filter_width, ++seed);
      const auto bias = random_vector<T>(p.out_channels, ++seed);
      const auto as_float = [](const std::vector<T>& v) {
        std::vector<float> f(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) f[i] = static_cast<float>(ref::to_double(v[i]));
        return f;
      };
      const auto xf = as_float(x), wf = as_float(w), bf = as_float(bias);
      const std::size_t count = p.batch * p.out_channels * P * Q;

      std::vector<double> exact_t(count), exact_f(count);
      ref::conv2d_forward_exact(p, x.data(), w.data(), bias.data(), exact_t.data());
      ref::conv2d_forward_exact(p, xf.data(), wf.data(), bf.data(), exact_f.data());
      EXPECT_EQ(exact_t, exact_f);

      std::vector<T> y_t(count);
      std::vector<float> y_f(count);
      ref::conv2d_forward(p, x.data(), w.data(), bias.data(), y_t.data());
      ref::conv2d_forward(p, xf.data(), wf.data(), bf.data(), y_f.data());
      for (std::size_t i = 0; i < count; ++i) {
        const double got = ref::to_double(y_t[i]), want = static_cast<double>(y_f[i]);
        const double tol = (unit_roundoff + 0x1p-24) * std::fabs(exact_f[i]) + half_min_subnormal;
        ASSERT_LE(std::fabs(got - want), tol) << "output " << i << ": " << got << " vs " << want;
      }
    }
  }
}

TEST(Conv2dLayoutReference, HalfMatchesFloatWithinOneRounding) {
  check_narrow_type_against_float<__half>(0x1p-11, 0x1p-25);
}

TEST(Conv2dLayoutReference, Bfloat16MatchesFloatWithinOneRounding) {
  check_narrow_type_against_float<__nv_bfloat16>(0x1p-8, 0x1p-134);
}

// ---- (c) conv2d_forward's layout rules, checked before any CUDA call --------------

TEST(Conv2dLayoutValidation, NhwcTakesBestNaiveAndWgmmaOnly) {
  float* x = fake(0x1000000);
  float* w = fake(0x2000000);
  float* y = fake(0x3000000);
  kf::conv2d_params p = make(2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1);
  EXPECT_EQ(p.layout, kf::conv2d_layout::nchw);  // the default keeps existing callers NCHW
  p.layout = kf::conv2d_layout::nhwc;
  using v = kf::conv2d_variant;
  for (v variant : {v::smem_tiled, v::implicit_gemm, v::implicit_gemm_tf32, v::implicit_gemm_pipelined, v::winograd,
                    v::winograd_fused}) {
    kf::conv2d_options o;
    o.variant = variant;
    if (variant == v::implicit_gemm_tf32) o.math = kf::math_mode::tf32;
    SCOPED_TRACE(kf::to_string(variant));
    expect_error(kf::errc::unsupported, "reads NCHW only", [&] { kf::conv2d_forward<float>(p, x, w, nullptr, y, o); });
    expect_error(kf::errc::unsupported, "best, naive and implicit_gemm_wgmma",
                 [&] { kf::conv2d_forward<float>(p, x, w, nullptr, y, o); });
    // Before the pointers and the no-op check.
    kf::conv2d_params empty = p;
    empty.batch = 0;
    expect_error(kf::errc::unsupported, "reads NCHW only",
                 [&] { kf::conv2d_forward<float>(empty, nullptr, w, nullptr, nullptr, o); });
  }
  // A layout that is not an enumerator: invalid_argument with the number.
  kf::conv2d_params bad = p;
  bad.layout = static_cast<kf::conv2d_layout>(7);
  expect_error(kf::errc::invalid_argument, "params.layout = 7",
               [&] { kf::conv2d_forward<float>(bad, x, w, nullptr, y); });
  // The geometry helpers do not depend on the layout.
  EXPECT_EQ(kf::conv2d_output_height(p), 8u);
  EXPECT_EQ(kf::conv2d_output_width(p), 8u);
  // N = 0 is a no-op in NHWC as in NCHW (no CUDA call: this machine may have no GPU).
  kf::conv2d_params empty = p;
  empty.batch = 0;
  EXPECT_NO_THROW(kf::conv2d_forward<float>(empty, nullptr, w, nullptr, nullptr));
}

TEST(Conv2dLayoutValidation, SixteenBitTypesAreNhwcOnly) {
  auto* x = reinterpret_cast<__half*>(fake(0x1000000));
  auto* w = reinterpret_cast<__half*>(fake(0x2000000));
  auto* y = reinterpret_cast<__half*>(fake(0x3000000));
  kf::conv2d_params p = make(2, 8, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1);
  expect_error(kf::errc::unsupported, "read the NHWC layout only",
               [&] { kf::conv2d_forward<__half>(p, x, w, nullptr, y); });
  auto* xb = reinterpret_cast<__nv_bfloat16*>(x);
  auto* wb = reinterpret_cast<__nv_bfloat16*>(w);
  auto* yb = reinterpret_cast<__nv_bfloat16*>(y);
  expect_error(kf::errc::unsupported, "params.layout = kf::conv2d_layout::nhwc",
               [&] { kf::conv2d_forward<__nv_bfloat16>(p, xb, wb, nullptr, yb); });
  // NHWC: the wgmma variant by name takes either math mode for 16-bit data
  // (nothing to round), but float needs tf32.
  p.layout = kf::conv2d_layout::nhwc;
  p.batch = 0;
  kf::conv2d_options wgmma;
  wgmma.variant = kf::conv2d_variant::implicit_gemm_wgmma;
  EXPECT_NO_THROW(kf::conv2d_forward<__half>(p, nullptr, w, nullptr, nullptr, wgmma));
  expect_error(kf::errc::invalid_argument, "options.math = exact forbids",
               [&] { kf::conv2d_forward<float>(p, nullptr, fake(0x2000000), nullptr, nullptr, wgmma); });
  // fp32 emulation is for float data: 16-bit types are refused with the reason (before the no-op).
  kf::conv2d_options emulated;
  emulated.math = kf::math_mode::fp32_emulated;
  expect_error(kf::errc::invalid_argument, "fp32_emulated is for float data",
               [&] { kf::conv2d_forward<__half>(p, nullptr, w, nullptr, nullptr, emulated); });
  EXPECT_NO_THROW(kf::conv2d_forward<float>(p, nullptr, fake(0x2000000), nullptr, nullptr, emulated));
}

/// The wgmma kernel reads the bias through the read-only path and stages it in
/// shared memory once per tile (wgmma_store.cuh), which is right only because y
/// may not overlap the bias: a bias that overlaps y by one element at either end
/// is refused before any CUDA call, for every type and variant that runs NHWC.
template <class T>
void expect_bias_overlapping_y_refused() {
  auto* x = reinterpret_cast<T*>(fake(0x1000000));
  auto* w = reinterpret_cast<T*>(fake(0x2000000));
  auto* y = reinterpret_cast<T*>(fake(0x3000000));
  kf::conv2d_params p = make(2, 8, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1);
  p.layout = kf::conv2d_layout::nhwc;
  const std::size_t y_n = 2 * 8 * 8 * 4;  // N P Q K
  for (kf::conv2d_variant variant : {kf::conv2d_variant::best, kf::conv2d_variant::implicit_gemm_wgmma}) {
    kf::conv2d_options o;
    o.variant = variant;
    o.relu = true;
    if (sizeof(T) == sizeof(float)) o.math = kf::math_mode::tf32;
    SCOPED_TRACE(kf::to_string(variant));
    for (const T* bias : {y + y_n - 1, y - (p.out_channels - 1), y + 1}) {  // its first, last, every element in y
      expect_error(kf::errc::invalid_argument, "'y' and 'bias' overlap; the output must be a separate array",
                   [&] { kf::conv2d_forward<T>(p, x, w, bias, y, o); });
    }
  }
}

TEST(Conv2dLayoutValidation, NhwcBiasOverlappingYIsRefused) {
  expect_bias_overlapping_y_refused<__half>();
  expect_bias_overlapping_y_refused<__nv_bfloat16>();
  expect_bias_overlapping_y_refused<float>();
}

TEST(Conv2dLayoutValidation, NhwcWgmmaByNameNamesTheUnmetCondition) {
  kf::conv2d_params p = make(1, 8, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1);
  p.layout = kf::conv2d_layout::nhwc;
  kf::conv2d_options o;
  o.variant = kf::conv2d_variant::implicit_gemm_wgmma;
  o.math = kf::math_mode::tf32;
  float* x = fake(0x1000000);
  float* w = fake(0x2000000);
  float* y = fake(0x3000000);
  kf::conv2d_params strided = p;
  strided.in_height = 40;  // room for a stride of 9
  strided.stride_h = 9;
  expect_error(kf::errc::unsupported, "the stride is above 8",
               [&] { kf::conv2d_forward<float>(strided, x, w, nullptr, y, o); });
}

TEST(Conv2dLayoutValidation, ExplicitNchwBehavesAsTheDefault) {
  kf::conv2d_params p = make(0, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1);
  p.layout = kf::conv2d_layout::nchw;
  EXPECT_NO_THROW(kf::conv2d_forward<float>(p, nullptr, fake(0x2000000), nullptr, nullptr));
  p.batch = 2;
  expect_error(kf::errc::invalid_argument, "'x'",
               [&] { kf::conv2d_forward<float>(p, nullptr, fake(0x2000000), nullptr, fake(0x3000000)); });
}

// ---- (d) names -------------------------------------------------------------------

TEST(Conv2dLayoutNames, ToString) {
  EXPECT_STREQ(kf::to_string(kf::conv2d_layout::nchw), "nchw");
  EXPECT_STREQ(kf::to_string(kf::conv2d_layout::nhwc), "nhwc");
  EXPECT_STREQ(kf::to_string(static_cast<kf::conv2d_layout>(7)), "unknown");
}

// ---- (e) the route of an NHWC call (nhwc_plan.hpp) --------------------------------

// Float under best takes the NCHW kernels through transposed copies whatever
// the math mode (exact: the default, and the layers fp32_emulated's step 9
// leaves, which conv2d.cu hands on as exact), after the wgmma kernel under
// tf32 only; the 16-bit types never (those kernels are float only); naive and
// implicit_gemm_wgmma by name never fall back to them.
TEST(Conv2dNhwcRoute, FloatBestTakesTheNchwKernels) {
  using v = kf::conv2d_variant;
  using m = kf::math_mode;
  const auto route = kf::detail::route_conv2d_nhwc;
  for (const m math : {m::exact, m::tf32}) {
    SCOPED_TRACE(math == m::exact ? "exact" : "tf32");
    EXPECT_TRUE(route(v::best, math, true).nchw_kernels);
    EXPECT_EQ(route(v::best, math, true).wgmma, math == m::tf32);  // TF32 products: tf32 only
    EXPECT_FALSE(route(v::best, math, false).nchw_kernels);
    EXPECT_TRUE(route(v::best, math, false).wgmma);
    EXPECT_FALSE(route(v::best, math, true).few_channels);  // 16-bit only
    EXPECT_EQ(route(v::best, math, false).few_channels, kf::detail::conv2d_best_uses_few_channels);
    EXPECT_FALSE(route(v::best, math, true).few_channels_persistent);  // 16-bit only
    EXPECT_EQ(route(v::best, math, false).few_channels_persistent,
              kf::detail::conv2d_best_uses_few_channels_persistent);
    for (const bool is_float : {true, false}) {
      EXPECT_FALSE(route(v::naive, math, is_float).wgmma);
      EXPECT_FALSE(route(v::naive, math, is_float).nchw_kernels);
      EXPECT_TRUE(route(v::implicit_gemm_wgmma, math, is_float).wgmma);
      EXPECT_FALSE(route(v::implicit_gemm_wgmma, math, is_float).nchw_kernels);
      EXPECT_FALSE(route(v::naive, math, is_float).few_channels);
      EXPECT_FALSE(route(v::implicit_gemm_wgmma, math, is_float).few_channels);
      EXPECT_FALSE(route(v::naive, math, is_float).few_channels_persistent);
      EXPECT_FALSE(route(v::implicit_gemm_wgmma, math, is_float).few_channels_persistent);
    }
  }
}

// The copies: x, the filter and y each where its NHWC and NCHW orders differ,
// each part a whole number of 256-byte blocks; none for a 1x1 layer's filter,
// C = 1, K = 1, a one-pixel input or output.
TEST(Conv2dNhwcRoute, CopiesWhereTheLayoutsDiffer) {
  const auto plan = [](std::size_t n, std::size_t c, std::size_t h, std::size_t w, std::size_t k, std::size_t r,
                       std::size_t s, std::size_t p, std::size_t q) {
    return kf::detail::plan_conv2d_nhwc_as_nchw(n, c, h, w, k, r, s, p, q, sizeof(float), 256);
  };
  // The ResNet stem at N = 16: all three, x 16 * 3 * 224 * 224 floats.
  const kf::detail::conv2d_nhwc_as_nchw_plan stem = plan(16, 3, 224, 224, 64, 7, 7, 112, 112);
  EXPECT_TRUE(stem.x && stem.w && stem.y);
  EXPECT_EQ(stem.x_bytes, 16u * 3 * 224 * 224 * 4);
  EXPECT_EQ(stem.w_bytes, 37632u);  // 64 * 3 * 49 * 4 = 37632 = 147 * 256
  EXPECT_EQ(stem.y_bytes, 16u * 64 * 112 * 112 * 4);
  EXPECT_EQ(stem.bytes(), stem.x_bytes + stem.w_bytes + stem.y_bytes);
  // Odd sizes round each part up to 256 bytes.
  const kf::detail::conv2d_nhwc_as_nchw_plan odd = plan(1, 5, 3, 3, 7, 3, 3, 1, 1);
  EXPECT_TRUE(odd.x && odd.w);
  EXPECT_FALSE(odd.y);               // one output pixel: y is K long either way
  EXPECT_EQ(odd.x_bytes, 256u);      // 45 floats
  EXPECT_EQ(odd.w_bytes, 256u * 5);  // 315 floats
  EXPECT_EQ(odd.y_bytes, 0u);
  // 1x1: the filter is K x C in both orders.
  const kf::detail::conv2d_nhwc_as_nchw_plan one = plan(2, 64, 14, 14, 256, 1, 1, 14, 14);
  EXPECT_TRUE(one.x && one.y);
  EXPECT_FALSE(one.w);
  EXPECT_EQ(one.w_bytes, 0u);
  // C = 1: x and the filter as they lie; K = 1: y written where it lies.
  const kf::detail::conv2d_nhwc_as_nchw_plan c1 = plan(2, 1, 9, 11, 16, 3, 3, 9, 11);
  EXPECT_FALSE(c1.x || c1.w);
  EXPECT_TRUE(c1.y);
  const kf::detail::conv2d_nhwc_as_nchw_plan k1 = plan(2, 8, 17, 19, 1, 3, 3, 17, 19);
  EXPECT_TRUE(k1.x && k1.w);
  EXPECT_FALSE(k1.y);
  // A one-pixel input (padded to a 3x3 filter's reach): x as it lies.
  EXPECT_FALSE(plan(2, 64, 1, 1, 7, 3, 3, 1, 1).x);
  // A 1x1 layer on one image of one channel into one filter: nothing to copy.
  EXPECT_EQ(plan(1, 1, 5, 5, 1, 1, 1, 5, 5).bytes(), 0u);
}

}  // namespace
