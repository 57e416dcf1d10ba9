// SPDX-License-Identifier: Apache-2.0
// CPU self-test of the GPU test harness (elementwise_case.hpp): a checker that
// cannot fail would make every GPU test pass vacuously, so each check is shown
// to catch the fault it exists for.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "elementwise_case.hpp"
#include "kernelforge/reference/elementwise.hpp"

namespace {

using kf::test::elementwise_case;
using kf::test::elementwise_op;

template <class T>
T poisoned() {
  unsigned char bytes[sizeof(T)];
  std::memset(bytes, 0xFF, sizeof(T));
  T v;
  std::memcpy(static_cast<void*>(&v), bytes, sizeof(T));
  return v;
}

TEST(ElementwiseHarness, PoisonIsNaNForEveryType) {
  EXPECT_TRUE(std::isnan(kf::reference::to_double(poisoned<float>())));
  EXPECT_TRUE(std::isnan(kf::reference::to_double(poisoned<double>())));
  EXPECT_TRUE(std::isnan(kf::reference::to_double(poisoned<__half>())));
  EXPECT_TRUE(std::isnan(kf::reference::to_double(poisoned<__nv_bfloat16>())));
}

TEST(ElementwiseHarness, SlackCheckFindsWritesOutsideTheArray) {
  std::vector<__half> host(2 + 5 + kf::test::slack_after, poisoned<__half>());
  std::size_t first = 0;
  for (std::size_t i = 2; i < 7; ++i) host[i] = kf::reference::from_double<__half>(1.0);
  EXPECT_EQ(kf::test::damaged_slack(host, 2, 5, &first), 0u);
  host[7] = kf::reference::from_double<__half>(0.0);  // one past the end
  EXPECT_EQ(kf::test::damaged_slack(host, 2, 5, &first), 1u);
  EXPECT_EQ(first, 7u);
  host[1] = kf::reference::from_double<__half>(std::nan(""));  // a NaN that is not the poison pattern
  EXPECT_EQ(kf::test::damaged_slack(host, 2, 5, &first), 2u);
  EXPECT_EQ(first, 1u);
}

TEST(ElementwiseHarness, ReluComparisonIsExactAndRejectsNaN) {
  elementwise_case c;
  c.op = elementwise_op::relu_forward;
  c.n = 3;
  const std::vector<float> in = {1.0f, -1.0f, std::nanf("")};
  const std::vector<float> ref = kf::test::reference_result<float>(c, in, {});
  EXPECT_TRUE(std::isnan(ref[2]));
  EXPECT_TRUE(kf::test::check_output<float>(c, ref, 0, ref, in, {}));
  std::vector<float> got = ref;
  got[0] = std::nextafter(1.0f, 2.0f);
  EXPECT_FALSE(kf::test::check_output<float>(c, got, 0, ref, in, {}));
  got = ref;
  got[1] = std::nanf("");  // unwritten (poisoned) where the reference is 0
  EXPECT_FALSE(kf::test::check_output<float>(c, got, 0, ref, in, {}));
  got = ref;
  got[2] = 0.0f;  // NaN zeroed instead of propagated
  EXPECT_FALSE(kf::test::check_output<float>(c, got, 0, ref, in, {}));
}

TEST(ElementwiseHarness, SaxpyToleranceIsTwoUnitRoundoffsOfTheScale) {
  elementwise_case c;
  c.op = elementwise_op::saxpy;
  c.n = 1;
  c.a = 1.0;
  const std::vector<float> x = {1.0f}, y = {-0.75f};
  const std::vector<float> ref = kf::test::reference_result<float>(c, x, y);  // 0.25, scale 1.75
  ASSERT_EQ(ref[0], 0.25f);
  const double allowed = 2 * kf::test::unit_roundoff<float>() * 1.75;
  EXPECT_TRUE(kf::test::check_output<float>(c, {static_cast<float>(0.25 + 0.9 * allowed)}, 0, ref, x, y));
  EXPECT_FALSE(kf::test::check_output<float>(c, {static_cast<float>(0.25 + 1.5 * allowed)}, 0, ref, x, y));
  EXPECT_FALSE(kf::test::check_output<float>(c, {std::nanf("")}, 0, ref, x, y));
}

TEST(ElementwiseHarness, ComparisonHonoursTheOffset) {
  elementwise_case c;
  c.op = elementwise_op::vector_add;
  c.n = 2;
  const std::vector<double> a = {1, 2}, b = {3, 4};
  const std::vector<double> ref = kf::test::reference_result<double>(c, a, b);
  const double p = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(kf::test::check_output<double>(c, {p, 4, 6, p}, 1, ref, a, b));
  EXPECT_FALSE(kf::test::check_output<double>(c, {4, 6, p, p}, 1, ref, a, b));
}

TEST(ElementwiseHarness, WiringMatchesTheApi) {
  using kf::test::wire;
  const auto saxpy = wire(elementwise_op::saxpy, -1);
  EXPECT_EQ(saxpy.out, saxpy.in[1]);  // y is input and output
  EXPECT_NE(saxpy.in[0], saxpy.in[1]);
  const auto saxpy_in_place = wire(elementwise_op::saxpy, 0);
  EXPECT_EQ(saxpy_in_place.in[0], saxpy_in_place.in[1]);
  EXPECT_EQ(saxpy_in_place.allocations, 1);
  const auto add = wire(elementwise_op::vector_add, -1);
  EXPECT_EQ(add.allocations, 3);
  EXPECT_EQ(wire(elementwise_op::relu_backward, 0).out, 0);  // dx == dy
  EXPECT_EQ(wire(elementwise_op::relu_backward, 1).out, 1);  // dx == x
  EXPECT_EQ(wire(elementwise_op::relu_forward, 0).out, 0);   // y == x
}

TEST(ElementwiseHarness, SpecialValuesAreSprinkled) {
  const auto v = kf::test::make_input<float>(4096, 5, true, 0.5);
  std::size_t nans = 0, pos_inf = 0, neg_inf = 0, at_threshold = 0, zeros = 0;
  for (float x : v) {
    nans += std::isnan(x);
    pos_inf += x == INFINITY;
    neg_inf += x == -INFINITY;
    at_threshold += x == 0.5f;
    zeros += x == 0.0f;
  }
  EXPECT_GT(nans, 10u);
  EXPECT_GT(pos_inf, 10u);
  EXPECT_GT(neg_inf, 10u);
  EXPECT_GT(at_threshold, 10u);
  EXPECT_EQ(zeros, 0u);
}

}  // namespace
