// SPDX-License-Identifier: Apache-2.0
// CPU tests of conv2d's gradients' double references
// (kernelforge/reference/conv_backward.hpp): on hand-computed cases, and against
// the forward's reference through the adjoint identities. The argument checks
// of conv2d_backward_data / _filter: conv2d_backward_validation_cpu_test.cpp;
// the GPU results: conv2d_backward_gpu_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conv2d_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/conv_backward.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/reference/conv.hpp"
#include "kernelforge/reference/conv_backward.hpp"
#include "test_support.hpp"

namespace {

namespace ref = kf::reference;

using kf::test::expect_error;
using kf::test::conv2d::make;

kf::conv2d_params in_layout(kf::conv2d_params p, kf::conv2d_layout layout) {
  p.layout = layout;
  return p;
}

/// n exact, never-zero values: halves from -5.5 to 5.5 (products and their
/// sums stay exact in double, so hand-computed results compare with ==).
std::vector<double> halves(std::size_t n, std::size_t salt) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 37 + salt * 11) % 12) - 5.5;
  return v;
}

/// The extents of a call's tensors.
struct sizes {
  std::size_t P, Q, x, w, y;
};
sizes sizes_of(const kf::conv2d_params& p) {
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  return {P, Q, p.batch * p.in_channels * p.in_height * p.in_width,
          p.out_channels * p.in_channels * p.filter_height * p.filter_width, p.batch * p.out_channels * P * Q};
}

// ---- the references on hand-computed cases ---------------------------------------

// A 1x1 stride-1 layer is a matrix product per image: with X (C x HW), DY (K x HW)
// and W (K x C), dx = W^T DY and dw = sum over images of DY X^T. Computed here as
// plain matrix products (for each layout's addressing) and compared exactly.
TEST(Conv2dBackwardReference, OneByOneIsAMatrixProduct) {
  for (kf::conv2d_layout layout : {kf::conv2d_layout::nchw, kf::conv2d_layout::nhwc}) {
    SCOPED_TRACE(kf::to_string(layout));
    const kf::conv2d_params p = in_layout(make(2, 3, 4, 5, 2, 1, 1, 1, 0, 1), layout);
    const std::size_t N = 2, C = 3, HW = 20, K = 2;
    const auto x = halves(N * C * HW, 1), w = halves(K * C, 2), dy = halves(N * K * HW, 3);
    const bool nhwc = layout == kf::conv2d_layout::nhwc;
    const auto at_x = [&](std::size_t n, std::size_t c, std::size_t i) {
      return x[nhwc ? (n * HW + i) * C + c : (n * C + c) * HW + i];
    };
    const auto at_dy = [&](std::size_t n, std::size_t k, std::size_t i) {
      return dy[nhwc ? (n * HW + i) * K + k : (n * K + k) * HW + i];
    };
    std::vector<double> want_dx(x.size()), want_dw(w.size(), 0.0), want_db(K, 0.0);
    for (std::size_t n = 0; n < N; ++n) {
      for (std::size_t i = 0; i < HW; ++i) {
        for (std::size_t c = 0; c < C; ++c) {
          double sum = 0;
          for (std::size_t k = 0; k < K; ++k) sum += w[k * C + c] * at_dy(n, k, i);  // 1x1: KCRS = KRSC = K x C
          want_dx[nhwc ? (n * HW + i) * C + c : (n * C + c) * HW + i] = sum;
        }
        for (std::size_t k = 0; k < K; ++k) {
          for (std::size_t c = 0; c < C; ++c) want_dw[k * C + c] += at_dy(n, k, i) * at_x(n, c, i);
          want_db[k] += at_dy(n, k, i);
        }
      }
    }
    std::vector<double> dx(x.size()), dw(w.size()), db(K);
    ref::conv2d_backward_data_exact<double>(p, dy.data(), w.data(), dx.data());
    ref::conv2d_backward_filter_exact<double>(p, x.data(), dy.data(), dw.data(), db.data());
    EXPECT_EQ(dx, want_dx);
    EXPECT_EQ(dw, want_dw);
    EXPECT_EQ(db, want_db);
  }
}

// A 3x3 all-ones filter with padding 1 and dy = 1: dx[h][w] counts the taps
// that read (h, w), K x (rows of the filter that reach h) x (its columns that
// reach w); with x = 1, dw[r][s] counts the outputs whose tap (r, s) lies
// inside the image, N x (rows) x (columns); dbias = N P Q.
TEST(Conv2dBackwardReference, AllOnesCountTaps) {
  for (kf::conv2d_layout layout : {kf::conv2d_layout::nchw, kf::conv2d_layout::nhwc}) {
    SCOPED_TRACE(kf::to_string(layout));
    const kf::conv2d_params p = in_layout(make(2, 1, 4, 5, 3, 3, 3, 1, 1, 1), layout);  // P x Q = 4 x 5
    const sizes z = sizes_of(p);
    const std::vector<double> ones_x(z.x, 1.0), ones_w(z.w, 1.0), ones_dy(z.y, 1.0);
    std::vector<double> dx(z.x), dx_scale(z.x), dw(z.w), dw_scale(z.w), db(3), db_scale(3);
    ref::conv2d_backward_data_exact<double>(p, ones_dy.data(), ones_w.data(), dx.data(), dx_scale.data());
    ref::conv2d_backward_filter_exact<double>(p, ones_x.data(), ones_dy.data(), dw.data(), db.data(), dw_scale.data(),
                                              db_scale.data());
    const double rows_h[4] = {2, 3, 3, 2}, cols_w[5] = {2, 3, 3, 3, 2};  // filter taps reaching each pixel
    const double rows_r[3] = {3, 4, 3}, cols_s[3] = {4, 5, 4};           // outputs whose tap is inside
    for (std::size_t n = 0; n < 2; ++n) {
      for (std::size_t h = 0; h < 4; ++h) {
        for (std::size_t w = 0; w < 5; ++w) {  // C = 1: NCHW and NHWC agree
          EXPECT_EQ(dx[(n * 4 + h) * 5 + w], 3 * rows_h[h] * cols_w[w]) << n << " " << h << " " << w;
        }
      }
    }
    for (std::size_t k = 0; k < 3; ++k) {
      for (std::size_t r = 0; r < 3; ++r) {
        for (std::size_t s = 0; s < 3; ++s) EXPECT_EQ(dw[(k * 3 + r) * 3 + s], 2 * rows_r[r] * cols_s[s]);
      }
      EXPECT_EQ(db[k], 2 * 4 * 5);
    }
    // Every term is positive: the error scales equal the sums.
    EXPECT_EQ(dx_scale, dx);
    EXPECT_EQ(dw_scale, dw);
    EXPECT_EQ(db_scale, db);
  }
}

// Stride 2 without padding: H = 6, R = 3 gives P = 2, windows on rows 0-2 and
// 2-4; row 5 is read by no tap and gets dx = 0. Dilation 3 with R = 2 on H = 5
// gives P = 2 and taps at rows {0, 3} and {1, 4}: row 2 is read by none.
TEST(Conv2dBackwardReference, StrideAndDilationLeaveRowsUntouched) {
  {
    const kf::conv2d_params p = make(1, 1, 6, 1, 1, 3, 1, 2, 0, 1);
    const std::vector<double> w = {2, 3, 5}, dy = {7, 11};
    std::vector<double> dx(6);
    ref::conv2d_backward_data_exact<double>(p, dy.data(), w.data(), dx.data());
    EXPECT_EQ(dx, (std::vector<double>{2 * 7, 3 * 7, 5 * 7 + 2 * 11, 3 * 11, 5 * 11, 0}));
    const std::vector<double> x = {1, 2, 3, 4, 5, 6};
    std::vector<double> dw(3), db(1);
    ref::conv2d_backward_filter_exact<double>(p, x.data(), dy.data(), dw.data(), db.data());
    EXPECT_EQ(dw, (std::vector<double>{7 * 1 + 11 * 3, 7 * 2 + 11 * 4, 7 * 3 + 11 * 5}));  // x[5] never read
    EXPECT_EQ(db, (std::vector<double>{18}));
  }
  {
    kf::conv2d_params p = make(1, 1, 5, 1, 1, 2, 1, 1, 0, 1);
    p.dilation_h = 3;
    const std::vector<double> w = {2, 3}, dy = {7, 11};
    std::vector<double> dx(5);
    ref::conv2d_backward_data_exact<double>(p, dy.data(), w.data(), dx.data());
    EXPECT_EQ(dx, (std::vector<double>{2 * 7, 2 * 11, 0, 3 * 7, 3 * 11}));
  }
}

// The mask reads dy as 0 where the forward's output is <= the threshold (equal
// included): the same as the unmasked reference on dy zeroed there.
TEST(Conv2dBackwardReference, ReluMaskZeroesClippedOutputs) {
  const kf::conv2d_params p = make(1, 2, 3, 3, 2, 2, 2, 1, 0, 1);  // P x Q = 2 x 2
  const sizes z = sizes_of(p);
  const auto x = halves(z.x, 4), w = halves(z.w, 5), dy = halves(z.y, 6);
  // Forward outputs around the threshold 0.5: below, equal (clipped too), above.
  const std::vector<double> y = {0, 0.5, 0.75, 2, 0, 0.5, 1, 0.25};
  std::vector<double> zeroed = dy;
  for (std::size_t i = 0; i < y.size(); ++i) zeroed[i] = y[i] <= 0.5 ? 0.0 : dy[i];
  std::vector<double> dx(z.x), want_dx(z.x), dw(z.w), want_dw(z.w), db(2), want_db(2);
  const ref::conv2d_relu_mask<double> mask{y.data(), 0.5};
  ref::conv2d_backward_data_exact<double>(p, dy.data(), w.data(), dx.data(), nullptr, mask);
  ref::conv2d_backward_data_exact<double>(p, zeroed.data(), w.data(), want_dx.data());
  ref::conv2d_backward_filter_exact<double>(p, x.data(), dy.data(), dw.data(), db.data(), nullptr, nullptr, mask);
  ref::conv2d_backward_filter_exact<double>(p, x.data(), zeroed.data(), want_dw.data(), want_db.data());
  EXPECT_EQ(dx, want_dx);
  EXPECT_EQ(dw, want_dw);
  EXPECT_EQ(db, want_db);
  EXPECT_EQ(db, (std::vector<double>{dy[2] + dy[3], dy[6]}));
  // The mask matters here: without it the results differ.
  std::vector<double> unmasked(z.w);
  ref::conv2d_backward_filter_exact<double>(p, x.data(), dy.data(), unmasked.data(), nullptr);
  EXPECT_NE(unmasked, dw);
}

// ---- the references against the forward's: the adjoint identities ---------------

/// Awkward layers: prime extents, stride 2 and 3 (with input rows no tap
/// reads), dilation 2, padding wider than the filter's reach, 1x1 with
/// padding, asymmetric strides, paddings and dilations, 7x7 stride 2.
std::vector<kf::conv2d_params> adjoint_cases() {
  std::vector<kf::conv2d_params> cases = {
      make(2, 3, 11, 13, 5, 3, 3, 1, 1, 1), make(1, 3, 17, 19, 7, 7, 7, 2, 3, 1), make(3, 5, 13, 11, 2, 1, 1, 1, 0, 1),
      make(2, 7, 13, 17, 3, 1, 1, 2, 1, 1), make(2, 7, 23, 17, 3, 3, 3, 2, 2, 2), make(2, 4, 16, 17, 3, 5, 5, 3, 1, 1),
      make(1, 2, 9, 11, 3, 3, 3, 1, 4, 1),  make(2, 1, 7, 7, 1, 7, 7, 1, 3, 1),
  };
  kf::conv2d_params asymmetric = make(1, 3, 29, 31, 11, 3, 5, 2, 1, 1);
  asymmetric.stride_w = 1;
  asymmetric.pad_w = 2;
  asymmetric.dilation_w = 2;
  cases.push_back(asymmetric);
  return cases;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

double abs_dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += std::fabs(a[i] * b[i]);
  return sum;
}

// The gradients are the forward's adjoints: for any x, w, b and dy,
//   <dy, conv(x, w)> = <dx(dy, w), x> = <dw(x, dy), w>  and  <dy, conv(0, w, b)> = <dbias(dy), b>,
// every side the same sum of products dy w x regrouped, so equal up to double
// rounding (2^-53 per term of sum |dy| |w| |x|; 1e-12 of it is ample). The error
// scales: those of a call on |inputs| are its results.
TEST(Conv2dBackwardReference, AdjointsOfTheForward) {
  std::uint64_t seed = 3100;
  for (kf::conv2d_layout layout : {kf::conv2d_layout::nchw, kf::conv2d_layout::nhwc}) {
    for (const kf::conv2d_params& base : adjoint_cases()) {
      const kf::conv2d_params p = in_layout(base, layout);
      SCOPED_TRACE(std::string(kf::to_string(layout)) + " N C H W K R S " + std::to_string(p.batch) + " " +
                   std::to_string(p.in_channels) + " " + std::to_string(p.in_height) + " " +
                   std::to_string(p.in_width) + " " + std::to_string(p.out_channels) + " " +
                   std::to_string(p.filter_height) + " " + std::to_string(p.filter_width));
      const sizes z = sizes_of(p);
      const auto x = kf::test::random_vector<double>(z.x, ++seed);
      const auto w = kf::test::random_vector<double>(z.w, ++seed);
      const auto b = kf::test::random_vector<double>(p.out_channels, ++seed);
      const auto dy = kf::test::random_vector<double>(z.y, ++seed);
      std::vector<double> y(z.y), y_scale(z.y), y_bias(z.y), zeros(z.x, 0.0);
      ref::conv2d_forward_exact<double>(p, x.data(), w.data(), nullptr, y.data(), y_scale.data());
      ref::conv2d_forward_exact<double>(p, zeros.data(), w.data(), b.data(), y_bias.data());
      std::vector<double> dx(z.x), dw(z.w), db(p.out_channels);
      ref::conv2d_backward_data_exact<double>(p, dy.data(), w.data(), dx.data());
      ref::conv2d_backward_filter_exact<double>(p, x.data(), dy.data(), dw.data(), db.data());
      const double forward = dot(dy, y), tol = 1e-12 * abs_dot(dy, y_scale);
      ASSERT_GT(tol, 0.0);
      EXPECT_NEAR(dot(dx, x), forward, tol);
      EXPECT_NEAR(dot(dw, w), forward, tol);
      EXPECT_NEAR(dot(db, b), dot(dy, y_bias), 1e-12 * abs_dot(dy, y_bias));

      const auto abs_of = [](std::vector<double> v) {
        for (double& e : v) e = std::fabs(e);
        return v;
      };
      const auto ax = abs_of(x), aw = abs_of(w), ady = abs_of(dy);
      std::vector<double> dx_scale(z.x), dw_scale(z.w), db_scale(p.out_channels);
      std::vector<double> dx_abs(z.x), dw_abs(z.w), db_abs(p.out_channels);
      ref::conv2d_backward_data_exact<double>(p, dy.data(), w.data(), dx.data(), dx_scale.data());
      ref::conv2d_backward_data_exact<double>(p, ady.data(), aw.data(), dx_abs.data());
      ref::conv2d_backward_filter_exact<double>(p, x.data(), dy.data(), dw.data(), db.data(), dw_scale.data(),
                                                db_scale.data());
      ref::conv2d_backward_filter_exact<double>(p, ax.data(), ady.data(), dw_abs.data(), db_abs.data());
      EXPECT_EQ(dx_scale, dx_abs);
      EXPECT_EQ(dw_scale, dw_abs);
      EXPECT_EQ(db_scale, db_abs);
    }
  }
}

// N = 0: dw = dbias = 0; K = 0: dx = 0 (the references write every element).
TEST(Conv2dBackwardReference, EmptyBatchOrNoFiltersGiveZeros) {
  kf::conv2d_params p = make(0, 2, 5, 5, 3, 3, 3, 1, 1, 1);
  const std::vector<double> w(3 * 2 * 9, 1.0);
  std::vector<double> dw(w.size(), std::nan("")), db(3, std::nan(""));
  ref::conv2d_backward_filter_exact<double>(p, nullptr, nullptr, dw.data(), db.data());
  EXPECT_EQ(dw, std::vector<double>(w.size(), 0.0));
  EXPECT_EQ(db, std::vector<double>(3, 0.0));
  p.batch = 2;
  p.out_channels = 0;
  std::vector<double> dx(2 * 2 * 25, std::nan(""));
  ref::conv2d_backward_data_exact<double>(p, nullptr, nullptr, dx.data());
  EXPECT_EQ(dx, std::vector<double>(dx.size(), 0.0));
}

TEST(Conv2dBackwardReference, RejectsLayersWithoutOutput) {
  const kf::conv2d_params p = make(1, 1, 4, 4, 1, 7, 3, 1, 0, 1);
  std::vector<double> buffer(64);
  expect_error(kf::errc::invalid_argument, "conv2d_backward_data_exact: no output",
               [&] { ref::conv2d_backward_data_exact<double>(p, buffer.data(), buffer.data(), buffer.data()); });
  expect_error(kf::errc::invalid_argument, "conv2d_backward_filter_exact: no output", [&] {
    ref::conv2d_backward_filter_exact<double>(p, buffer.data(), buffer.data(), buffer.data(), nullptr);
  });
}

}  // namespace
