// SPDX-License-Identifier: Apache-2.0
// Gradient step 6's bound (winograd_bound.hpp) on the gradient suite's cases, without a
// GPU: the Winograd dw algorithm emulated in float passes it at M = 2 and M = 4, and
// fails it when one block is lost, so the GPU suite's check can pass the kernels and
// catch a lost block. Part of test_conv2d_backward_gpu, beside the cases' own checks
// (conv2d_backward_cases_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "conv2d_backward_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/winograd_transforms.hpp"
#include "kernelforge/reference/conv_backward.hpp"
#include "test_support.hpp"
#include "winograd_bound.hpp"

namespace {

using namespace kf::test::conv2d_backward;

/// dw of an NCHW float layer by F(M x M, 3 x 3) as gradient step 6 computes it:
/// winograd_transforms.hpp's transforms in float, one fp32 sum per position and
/// (k, c) pair over the blocks in order; `drop_first_block` leaves block 0 out.
template <int M>
std::vector<float> winograd_dw_in_float(const kf::conv2d_params& p, const std::vector<float>& x,
                                        const std::vector<float>& dy, bool drop_first_block) {
  using transforms = kf::detail::winograd_dw_transforms<M>;
  constexpr int n = transforms::n, pos = transforms::positions;
  const std::size_t N = p.batch, C = p.in_channels, H = p.in_height, W = p.in_width, K = p.out_channels;
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  const std::size_t TH = (P + M - 1) / M, TW = (Q + M - 1) / M;
  std::vector<float> acc(K * C * pos, 0.0f), u(K * pos), v(C * pos), dw(K * C * 9);
  for (std::size_t img = 0; img < N; ++img) {
    for (std::size_t th = 0; th < TH; ++th) {
      for (std::size_t tw = 0; tw < TW; ++tw) {
        if (drop_first_block && img == 0 && th == 0 && tw == 0) continue;
        for (std::size_t k = 0; k < K; ++k) {
          float g[M][M], out[pos];
          for (int i = 0; i < M; ++i) {
            for (int j = 0; j < M; ++j) {
              const std::size_t pp = M * th + i, qq = M * tw + j;
              g[i][j] = pp < P && qq < Q ? dy[((img * K + k) * P + pp) * Q + qq] : 0.0f;
            }
          }
          transforms::dy(g, out);
          std::copy(out, out + pos, u.begin() + static_cast<std::ptrdiff_t>(k * pos));
        }
        for (std::size_t ch = 0; ch < C; ++ch) {
          float d[n][n], out[pos];
          for (int i = 0; i < n; ++i) {
            for (int j = 0; j < n; ++j) {
              const long ih = static_cast<long>(M * th) + i - static_cast<long>(p.pad_h);
              const long iw = static_cast<long>(M * tw) + j - static_cast<long>(p.pad_w);
              const bool in = ih >= 0 && iw >= 0 && ih < static_cast<long>(H) && iw < static_cast<long>(W);
              d[i][j] =
                  in ? x[((img * C + ch) * H + static_cast<std::size_t>(ih)) * W + static_cast<std::size_t>(iw)] : 0.0f;
            }
          }
          transforms::input(d, out);
          std::copy(out, out + pos, v.begin() + static_cast<std::ptrdiff_t>(ch * pos));
        }
        for (std::size_t k = 0; k < K; ++k) {
          for (std::size_t ch = 0; ch < C; ++ch) {
            float* a = &acc[(k * C + ch) * pos];
            for (int b = 0; b < pos; ++b) a[b] = std::fma(u[k * pos + b], v[ch * pos + b], a[b]);
          }
        }
      }
    }
  }
  for (std::size_t kc = 0; kc < K * C; ++kc) {
    float mm[pos], w[3][3];
    std::copy(&acc[kc * pos], &acc[kc * pos] + pos, mm);
    transforms::output(mm, w);
    for (int t = 0; t < 9; ++t) dw[kc * 9 + t] = w[t / 3][t % 3];
  }
  return dw;
}

/// Gradient step 6's bound (winograd_bound.hpp: wgrad_winograd_tolerance x
/// wgrad_winograd_scale) holds for the algorithm in float (winograd_dw_in_float)
/// on the cases best runs it on, at M = 2 and M = 4, and fails when one block is
/// left out: the GPU suite's check can pass the kernels and can catch a lost block.
TEST(Conv2dBackwardCases, WinogradDwBoundHoldsAndCanFail) {
  int checked = 0;
  for (const grad_case& c : grad_cases()) {
    const kf::conv2d_params& p = c.p;  // NCHW
    if (!kf::test::best_runs_wgrad_winograd(p)) continue;
    SCOPED_TRACE(c.name);
    const std::size_t N = p.batch, C = p.in_channels, H = p.in_height, W = p.in_width, K = p.out_channels;
    const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
    const auto x = kf::test::random_vector<float>(N * C * H * W, 71);
    const auto dy = kf::test::random_vector<float>(N * K * P * Q, 72);
    std::vector<double> ref(K * C * 9), scale(K * C * 9), db(K), db_scale(K);
    kf::reference::conv2d_backward_filter_exact(p, x.data(), dy.data(), ref.data(), db.data(), scale.data(),
                                                db_scale.data(), kf::reference::conv2d_relu_mask<float>{nullptr, 0.0f});
    for (const int m : {2, 4}) {
      const std::vector<double> e = kf::test::wgrad_winograd_scale(p, x, dy, m);
      const double tol = kf::test::wgrad_winograd_tolerance(p, m);
      for (const bool drop : {false, true}) {
        const std::vector<float> dw =
            m == 4 ? winograd_dw_in_float<4>(p, x, dy, drop) : winograd_dw_in_float<2>(p, x, dy, drop);
        double worst = 0;  // the largest error in units of the bound
        for (std::size_t i = 0; i < dw.size(); ++i) worst = std::max(worst, std::fabs(dw[i] - ref[i]) / (tol * e[i]));
        if (drop) {
          EXPECT_GT(worst, 1.0) << "F(" << m << "x" << m << "): a lost block stays within the bound";
        } else {
          EXPECT_LE(worst, 1.0) << "F(" << m << "x" << m << "): the float algorithm exceeds the bound";
        }
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

}  // namespace
