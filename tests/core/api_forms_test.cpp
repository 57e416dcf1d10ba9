// SPDX-License-Identifier: Apache-2.0
// The call forms a new user writes first, compiled by the host C++ compiler
// alone (tests/core/CMakeLists.txt checks it is a CXX source): scalars of
// another type than the elements (2.0 for float, 0 for a threshold, 2.0f for
// __half), a literal nullptr bias, and BLAS-style 1.0 / 0.0 for float matrices.
// Each one must compile, and (on a GPU) compute what the CPU reference does.
#if defined(__CUDACC__) || defined(__NVCC__)
#error "api_forms_test.cpp must be compiled by the host C++ compiler, not nvcc"
#endif

#include <kernelforge/kernelforge.hpp>
#include <kernelforge/reference/conv.hpp>
#include <kernelforge/reference/elementwise.hpp>
#include <kernelforge/reference/matmul.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "test_support.hpp"

namespace {

using kf::test::all_close;
using kf::test::random_vector;
using kf::test::tolerance;

constexpr std::size_t n = 1009;  // prime: no tile or vector width divides it

TEST(ApiForms, SaxpyTakesADoubleLiteralForFloatArrays) {
  KF_SKIP_WITHOUT_GPU();
  const auto x = random_vector<float>(n, 1), y = random_vector<float>(n, 2);
  auto dx = kf::to_device(x), dy = kf::to_device(y);
  kf::saxpy(n, 2.0, dx.data(), dy.data());  // 2.0 is a double: T comes from the pointers
  auto expected = y;
  kf::reference::saxpy(n, 2.0, x.data(), expected.data());
  EXPECT_TRUE(all_close(kf::to_host(dy), expected, tolerance{4 * kf::test::unit_roundoff<float>(), 0}));
}

TEST(ApiForms, SaxpyTakesAFloatLiteralForHalfArrays) {
  KF_SKIP_WITHOUT_GPU();
  const auto x = random_vector<__half>(n, 3), y = random_vector<__half>(n, 4);
  auto dx = kf::to_device(x), dy = kf::to_device(y);
  kf::saxpy(n, 2.0f, dx.data(), dy.data());  // the scalar is the compute type, float
  auto expected = y;
  kf::reference::saxpy(n, 2.0f, x.data(), expected.data());
  // fp32 arithmetic, one rounding to half: at most one half-ulp off the double reference, plus fp32 noise.
  EXPECT_TRUE(all_close(kf::to_host(dy), expected, tolerance{2 * kf::test::unit_roundoff<__half>(), 0}));
}

TEST(ApiForms, ReluThresholdTakesAnIntThreshold) {
  KF_SKIP_WITHOUT_GPU();
  const auto x = random_vector<float>(n, 5);
  auto dx = kf::to_device(x);
  kf::device_buffer<float> dy(n);
  kf::relu_threshold_forward(n, dx.data(), dy.data(), 0);  // 0 is an int
  std::vector<float> expected(n);
  kf::reference::relu_threshold_forward(n, x.data(), expected.data(), 0);
  EXPECT_TRUE(all_close(kf::to_host(dy), expected, tolerance{}));

  kf::relu_threshold_backward(n, dx.data(), dx.data(), dy.data(), 1);  // dx = x where x > 1
  kf::reference::relu_threshold_backward(n, x.data(), x.data(), expected.data(), 1);
  EXPECT_TRUE(all_close(kf::to_host(dy), expected, tolerance{}));
}

TEST(ApiForms, MatmulTakesDoubleLiteralsForFloatMatrices) {
  KF_SKIP_WITHOUT_GPU();
  const std::size_t m = 37, nn = 41, k = 43;
  const auto a = random_vector<float>(m * k, 6), b = random_vector<float>(k * nn, 7);
  auto da = kf::to_device(a), db = kf::to_device(b);
  kf::device_buffer<float> dc(m * nn);
  kf::matmul(kf::op::none, kf::op::none, m, nn, k, 1.0, da.data(), k, db.data(), nn, 0.0, dc.data(), nn);
  std::vector<float> expected(m * nn);
  std::vector<double> scale;
  kf::reference::matmul(kf::op::none, kf::op::none, m, nn, k, 1.0, a.data(), k, b.data(), nn, 0.0, expected.data(), nn,
                        &scale);
  EXPECT_TRUE(all_close(kf::to_host(dc), expected, tolerance{2 * k * kf::test::unit_roundoff<float>(), 0}, &scale));
}

TEST(ApiForms, Conv2dTakesALiteralNullptrBias) {
  KF_SKIP_WITHOUT_GPU();
  kf::conv2d_params p;
  p.batch = 2, p.in_channels = 3, p.in_height = 11, p.in_width = 13;
  p.out_channels = 5, p.filter_height = 3, p.filter_width = 3;
  p.pad_h = p.pad_w = 1;
  const std::size_t out_n = p.batch * p.out_channels * kf::conv2d_output_height(p) * kf::conv2d_output_width(p);
  const auto x = random_vector<float>(p.batch * p.in_channels * p.in_height * p.in_width, 8);
  const auto w = random_vector<float>(p.out_channels * p.in_channels * 9, 9);
  auto dx = kf::to_device(x), dw = kf::to_device(w);
  kf::device_buffer<float> dy(out_n);
  kf::conv2d_forward(p, dx.data(), dw.data(), nullptr, dy.data());  // no bias
  std::vector<double> expected(out_n), scale(out_n);
  kf::reference::conv2d_forward_exact(p, x.data(), w.data(), nullptr, expected.data(), scale.data());
  std::vector<float> rounded(out_n);
  kf::reference::conv2d_forward(p, x.data(), w.data(), nullptr, rounded.data());  // the reference form too
  EXPECT_TRUE(all_close(rounded, expected, tolerance{kf::test::unit_roundoff<float>(), 0}));
  EXPECT_TRUE(all_close(kf::to_host(dy), expected, tolerance{64 * kf::test::unit_roundoff<float>(), 0}, &scale));
}

TEST(ApiForms, Conv2dParamsStartInitialized) {
  const kf::conv2d_params p;  // every extent 0, strides and dilations 1, no padding
  EXPECT_EQ(p.batch + p.in_channels + p.in_height + p.in_width + p.out_channels + p.filter_height + p.filter_width, 0u);
  EXPECT_EQ(p.stride_h * p.stride_w * p.dilation_h * p.dilation_w, 1u);
  EXPECT_EQ(p.pad_h + p.pad_w, 0u);
  // A forgotten extent is an error that names the field.
  try {
    (void)kf::conv2d_output_height(p);
    ADD_FAILURE() << "no error for in_height = 0";
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), kf::errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("params.in_height = 0"), std::string::npos) << e.what();
  }
}

}  // namespace
