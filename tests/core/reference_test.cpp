// SPDX-License-Identifier: Apache-2.0
// CPU references (kernelforge/reference/elementwise.hpp) on hand-computed
// cases: the GPU tests trust these, so they are checked against arithmetic
// done by hand, including NaN/inf semantics and half/bfloat16 rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernelforge/reference/elementwise.hpp"

namespace {

namespace ref = kf::reference;

constexpr double nan_value = std::numeric_limits<double>::quiet_NaN();
constexpr double inf = std::numeric_limits<double>::infinity();

template <class T>
std::vector<T> make(std::initializer_list<double> values) {
  std::vector<T> v;
  for (double d : values) v.push_back(ref::from_double<T>(d));
  return v;
}

template <class T>
std::vector<double> doubles(const std::vector<T>& v) {
  std::vector<double> d;
  for (const T& x : v) d.push_back(ref::to_double(x));
  return d;
}

/// Element-wise exact equality in which NaN equals NaN (and only NaN).
::testing::AssertionResult same(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i];
    if (!ok) return ::testing::AssertionFailure() << "[" << i << "] got " << got[i] << ", expected " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// ---- conversions -------------------------------------------------------------

TEST(ReferenceConversion, HalfRoundsToNearestEvenOnce) {
  const double half_ulp_at_1 = std::ldexp(1.0, -11);                              // half has a 10-bit stored mantissa
  EXPECT_EQ(ref::to_double(ref::from_double<__half>(1.0 + half_ulp_at_1)), 1.0);  // tie -> even (1.0)
  EXPECT_EQ(ref::to_double(ref::from_double<__half>(1.0 + 3 * half_ulp_at_1)), 1.0 + 4 * half_ulp_at_1);  // tie -> even
  EXPECT_EQ(ref::to_double(ref::from_double<__half>(1.0 + half_ulp_at_1 + std::ldexp(1.0, -30))),
            1.0 + 2 * half_ulp_at_1);                                     // just above the tie rounds up
  EXPECT_EQ(ref::to_double(ref::from_double<__half>(65504.0)), 65504.0);  // largest finite half
  EXPECT_TRUE(std::isinf(ref::to_double(ref::from_double<__half>(1e6))));
  EXPECT_TRUE(std::isnan(ref::to_double(ref::from_double<__half>(nan_value))));
}

TEST(ReferenceConversion, BFloat16RoundsToNearestEvenOnce) {
  const double half_ulp_at_1 = std::ldexp(1.0, -8);  // bfloat16 has a 7-bit stored mantissa
  EXPECT_EQ(ref::to_double(ref::from_double<__nv_bfloat16>(1.0 + half_ulp_at_1)), 1.0);
  EXPECT_EQ(ref::to_double(ref::from_double<__nv_bfloat16>(1.0 + 3 * half_ulp_at_1)), 1.0 + 4 * half_ulp_at_1);
  EXPECT_EQ(ref::to_double(ref::from_double<__nv_bfloat16>(1.0 + half_ulp_at_1 + std::ldexp(1.0, -30))),
            1.0 + 2 * half_ulp_at_1);
  EXPECT_TRUE(std::isinf(ref::to_double(ref::from_double<__nv_bfloat16>(1e39))));           // max finite ~3.39e38
  EXPECT_EQ(ref::to_double(ref::from_double<__nv_bfloat16>(1e30)), std::ldexp(202.0, 92));  // 1e30 = 201.95 x 2^92
  EXPECT_TRUE(std::isnan(ref::to_double(ref::from_double<__nv_bfloat16>(nan_value))));
}

TEST(ReferenceConversion, ToDoubleIsExact) {
  EXPECT_EQ(ref::to_double(1.0f + std::ldexp(1.0f, -23)), 1.0 + std::ldexp(1.0, -23));
  EXPECT_EQ(ref::to_double(ref::from_double<__half>(std::ldexp(1.0, -24))),
            std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_EQ(ref::to_double(ref::from_double<__nv_bfloat16>(-1.5)), -1.5);
}

// ---- saxpy and vector_add ---------------------------------------------------

TEST(ReferenceSaxpy, HandComputedFloat) {
  const auto x = make<float>({1, -3, 0.5, 0, 1e30});
  auto y = make<float>({1, 1, 1, -2, -2e30});
  ref::saxpy<float>(x.size(), 2.0f, x.data(), y.data());
  EXPECT_TRUE(same(doubles(y), {3, -5, 2, -2, 0}));
}

TEST(ReferenceSaxpy, RoundsOnceFromDouble) {
  // float: 1 + 2^-24 (a tie) + 2^-40 must round up to 1 + 2^-23; a float FMA
  // also rounds once, so the reference and a correct kernel agree exactly.
  const float x = std::ldexp(1.0f, -24);
  const float a = 1.0f + std::ldexp(1.0f, -16);
  float y = 1.0f;
  ref::saxpy<float>(1, a, &x, &y);
  EXPECT_EQ(y, 1.0f + std::ldexp(1.0f, -23));
}

TEST(ReferenceSaxpy, HalfAvoidsDoubleRounding) {
  // y = 1 + 2^-10 (odd last bit), a*x = (1 + 2^-10)(1 - 2^-10) 2^-11 = 2^-11 - 2^-31:
  // the exact sum sits just below the tie 1 + 2^-10 + 2^-11, so it rounds down to
  // 1 + 2^-10. Rounding to fp32 first would land on the tie and go up to 1 + 2^-9.
  const __half a = ref::from_double<__half>(1.0 + std::ldexp(1.0, -10));
  const __half x = ref::from_double<__half>((1.0 - std::ldexp(1.0, -10)) * std::ldexp(1.0, -11));
  __half y = ref::from_double<__half>(1.0 + std::ldexp(1.0, -10));
  ASSERT_EQ(ref::to_double(a) * ref::to_double(x), std::ldexp(1.0, -11) - std::ldexp(1.0, -31));
  ref::saxpy<__half>(1, a, &x, &y);
  EXPECT_EQ(ref::to_double(y), 1.0 + std::ldexp(1.0, -10));
}

TEST(ReferenceSaxpy, BFloat16) {
  const auto x = make<__nv_bfloat16>({1, 0.5, -0.25});
  auto y = make<__nv_bfloat16>({1, 1, 256});
  ref::saxpy<__nv_bfloat16>(3, ref::from_double<__nv_bfloat16>(3.0), x.data(), y.data());
  // 256 - 0.75 = 255.25: bfloat16 has 8 significant bits, so 255.25 -> 255.
  EXPECT_TRUE(same(doubles(y), {4, 2.5, 255}));
}

TEST(ReferenceSaxpy, NaNAndInfinity) {
  const auto x = make<double>({nan_value, inf, inf, 1});
  auto y = make<double>({1, 1, -inf, nan_value});
  ref::saxpy<double>(4, 2.0, x.data(), y.data());
  EXPECT_TRUE(same(doubles(y), {nan_value, inf, nan_value, nan_value}));
}

TEST(ReferenceVectorAdd, HandComputed) {
  const auto a = make<float>({1, -3, 0.375, inf, nan_value, 16777216});
  const auto b = make<float>({2, 3, 0.125, -1, 1, 1});
  std::vector<float> c(a.size());
  ref::vector_add<float>(a.size(), a.data(), b.data(), c.data());
  // 2^24 + 1 is a tie in float (ulp 2 there): rounds to even, 2^24.
  EXPECT_TRUE(same(doubles(c), {3, 0, 0.5, inf, nan_value, 16777216}));
}

TEST(ReferenceVectorAdd, HalfRounding) {
  // 2048 + 1 is a tie in half (ulp 2 at 2048): rounds to even, 2048; 2048 + 3 -> 2052.
  const auto a = make<__half>({2048, 2048, 0.5});
  const auto b = make<__half>({1, 3, 0.25});
  std::vector<__half> c(3);
  ref::vector_add<__half>(3, a.data(), b.data(), c.data());
  EXPECT_TRUE(same(doubles(c), {2048, 2052, 0.75}));
}

// ---- threshold ReLU ---------------------------------------------------------

TEST(ReferenceReluForward, ThresholdSemantics) {
  // y = x <= t ? 0 : x, with t = 0.5: x == t -> 0; NaN passes; +inf passes; -inf -> 0.
  const auto x = make<float>({-1, 0, 0.5, 0.5000001, 2, nan_value, inf, -inf});
  std::vector<float> y(x.size());
  ref::relu_threshold_forward<float>(x.size(), x.data(), y.data(), 0.5f);
  EXPECT_TRUE(same(doubles(y), {0, 0, 0, static_cast<double>(0.5000001f), 2, nan_value, inf, 0}));
}

TEST(ReferenceReluForward, NegativeThresholdPassesSmallNegatives) {
  const auto x = make<double>({-2, -1, -0.5, 0});
  std::vector<double> y(x.size());
  ref::relu_threshold_forward<double>(x.size(), x.data(), y.data(), -1.0);
  EXPECT_TRUE(same(doubles(y), {0, 0, -0.5, 0}));
}

TEST(ReferenceReluForward, HalfTypesKeepTheValueBitForBit) {
  const auto x = make<__half>({0.1, -0.1, 1000.3});
  std::vector<__half> y(3);
  ref::relu_threshold_forward<__half>(3, x.data(), y.data(), ref::from_double<__half>(0.0));
  EXPECT_TRUE(same(doubles(y), {ref::to_double(x[0]), 0, ref::to_double(x[2])}));
  const auto xb = make<__nv_bfloat16>({0.1, -0.1});
  std::vector<__nv_bfloat16> yb(2);
  ref::relu_threshold_forward<__nv_bfloat16>(2, xb.data(), yb.data(), ref::from_double<__nv_bfloat16>(0.0));
  EXPECT_TRUE(same(doubles(yb), {ref::to_double(xb[0]), 0}));
}

TEST(ReferenceReluBackward, GradientPassesWhereXIsAboveThreshold) {
  // dx = x <= t ? 0 : dy, t = 0.5. NaN x is not <= t, so dy passes (as forward
  // passes NaN); NaN dy passes where x > t and is zeroed where x <= t.
  const auto x = make<float>({-1, 0.5, 0.75, nan_value, inf, -inf, 3, -3});
  const auto dy = make<float>({7, 7, 7, 7, 7, 7, nan_value, nan_value});
  std::vector<float> dx(x.size());
  ref::relu_threshold_backward<float>(x.size(), dy.data(), x.data(), dx.data(), 0.5f);
  EXPECT_TRUE(same(doubles(dx), {0, 0, 7, 7, 7, 0, nan_value, 0}));
}

TEST(ReferenceReluBackward, InPlaceOnGradient) {
  const auto x = make<__nv_bfloat16>({1, -1, 2});
  auto g = make<__nv_bfloat16>({0.25, 0.5, -4});
  ref::relu_threshold_backward<__nv_bfloat16>(3, g.data(), x.data(), g.data(), ref::from_double<__nv_bfloat16>(0));
  EXPECT_TRUE(same(doubles(g), {0.25, 0, -4}));
}

}  // namespace
