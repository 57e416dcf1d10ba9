// SPDX-License-Identifier: Apache-2.0
// Winograd F(2x2,3x3)'s error bound (conv2d_variant::winograd and winograd_fused)
// for the conv2d GPU tests (conv2d_gpu_test.cpp
// states and justifies it at its top; conv2d_epilogue_gpu_test.cu uses it where
// `best` runs Winograd): every output within 4 sqrt(C + 12) 2^-24 E of the double
// reference, E the sum of the magnitudes of every term the algorithm adds.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/backward/wgrad_simt_plan.hpp"
#include "kernelforge/kernels/conv2d/plan.hpp"

namespace kf::test {

/// b[i][k][j] = a[i][j][k] for `batches` rows x cols matrices: NHWC -> NCHW
/// (rows = H W, cols = C) and back (rows = C, cols = H W), KRSC -> KCRS. The
/// NHWC suites compute winograd_scale (NCHW only) through it.
template <class T>
std::vector<T> transpose_inner(const std::vector<T>& a, std::size_t batches, std::size_t rows, std::size_t cols) {
  std::vector<T> b(a.size());
  for (std::size_t i = 0; i < batches; ++i) {
    for (std::size_t j = 0; j < rows; ++j) {
      for (std::size_t k = 0; k < cols; ++k) b[(i * cols + k) * rows + j] = a[(i * rows + j) * cols + k];
    }
  }
  return b;
}

/// The Winograd error scale E of every output (see the top of this file), in
/// double, from the same inputs: y's layout (N x K x P x Q).
inline std::vector<double> winograd_scale(const kf::conv2d_params& p, const std::vector<float>& x,
                                          const std::vector<float>& w, const float* bias) {
  static const double abs_g[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, 0.5, 0.5}, {0, 0, 1}};
  static const double abs_bt[4][4] = {{1, 0, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 0, 1}};
  static const double abs_at[2][4] = {{1, 1, 1, 0}, {0, 1, 1, 1}};
  const std::size_t N = p.batch, C = p.in_channels, H = p.in_height, W = p.in_width, K = p.out_channels;
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  const std::size_t TH = (P + 1) / 2, TW = (Q + 1) / 2;
  std::vector<double> u(K * C * 16), v(C * 16), scale(N * K * P * Q);
  for (std::size_t kc = 0; kc < K * C; ++kc) {  // |G| |g| |G^T|
    const float* g = w.data() + kc * 9;
    for (int xi = 0; xi < 4; ++xi) {
      for (int nu = 0; nu < 4; ++nu) {
        double t = 0;
        for (int r = 0; r < 3; ++r) {
          for (int s2 = 0; s2 < 3; ++s2) t += abs_g[xi][r] * std::fabs(g[r * 3 + s2]) * abs_g[nu][s2];
        }
        u[kc * 16 + xi * 4 + nu] = t;
      }
    }
  }
  for (std::size_t n = 0; n < N; ++n) {
    for (std::size_t th = 0; th < TH; ++th) {
      for (std::size_t tw = 0; tw < TW; ++tw) {
        for (std::size_t c = 0; c < C; ++c) {  // |B^T| |d| |B|
          double d[4][4];
          for (int i = 0; i < 4; ++i) {
            for (int j = 0; j < 4; ++j) {
              const long ih = static_cast<long>(2 * th + i) - static_cast<long>(p.pad_h);
              const long iw = static_cast<long>(2 * tw + j) - static_cast<long>(p.pad_w);
              const bool in = ih >= 0 && iw >= 0 && ih < static_cast<long>(H) && iw < static_cast<long>(W);
              d[i][j] =
                  in ? std::fabs(x[((n * C + c) * H + static_cast<std::size_t>(ih)) * W + static_cast<std::size_t>(iw)])
                     : 0.0;
            }
          }
          for (int xi = 0; xi < 4; ++xi) {
            for (int nu = 0; nu < 4; ++nu) {
              double t = 0;
              for (int i = 0; i < 4; ++i) {
                for (int j = 0; j < 4; ++j) t += abs_bt[xi][i] * d[i][j] * abs_bt[nu][j];
              }
              v[c * 16 + xi * 4 + nu] = t;
            }
          }
        }
        for (std::size_t k = 0; k < K; ++k) {
          double m[16] = {};
          for (std::size_t c = 0; c < C; ++c) {
            for (int b = 0; b < 16; ++b) m[b] += u[(k * C + c) * 16 + b] * v[c * 16 + b];
          }
          for (int i = 0; i < 2; ++i) {
            for (int j = 0; j < 2; ++j) {
              const std::size_t pp = 2 * th + i, qq = 2 * tw + j;
              if (pp >= P || qq >= Q) continue;
              double e = bias ? std::fabs(bias[k]) : 0.0;
              for (int xi = 0; xi < 4; ++xi) {
                for (int nu = 0; nu < 4; ++nu) e += abs_at[i][xi] * m[xi * 4 + nu] * abs_at[j][nu];
              }
              scale[((n * K + k) * P + pp) * Q + qq] = e;
            }
          }
        }
      }
    }
  }
  return scale;
}

/// winograd_scale of an NHWC layer p (x NHWC, w KRSC), in y's NHWC order (N x P x Q x K).
inline std::vector<double> winograd_scale_nhwc(const kf::conv2d_params& p, const std::vector<float>& x,
                                               const std::vector<float>& w, const float* bias) {
  const std::size_t hw = p.in_height * p.in_width, rs = p.filter_height * p.filter_width;
  const std::size_t pq = kf::conv2d_output_height(p) * kf::conv2d_output_width(p);
  kf::conv2d_params nchw = p;
  nchw.layout = kf::conv2d_layout::nchw;
  const std::vector<double> e = winograd_scale(nchw, transpose_inner(x, p.batch, hw, p.in_channels),
                                               transpose_inner(w, p.out_channels, rs, p.in_channels), bias);
  return transpose_inner(e, p.batch, p.out_channels, pq);
}

/// Whether `best` with exact math runs Winograd (step 6 or step 8) on this layer
/// (plan.hpp's choose_conv2d_exact_kernel).
inline bool best_runs_winograd(const kf::conv2d_params& p) {
  const kf::detail::conv2d_exact_kernel kernel =
      kf::detail::choose_conv2d_exact_kernel(p.in_channels, p.out_channels, p.filter_height, p.filter_width, p.stride_h,
                                             p.stride_w, p.dilation_h, p.dilation_w);
  return kernel == kf::detail::conv2d_exact_kernel::winograd ||
         kernel == kf::detail::conv2d_exact_kernel::winograd_fused;
}

/// out (rows x rows) = L in L^T, L rows x inner and in inner x inner, row-major:
/// the magnitudes' transforms of wgrad_winograd_scale.
inline void sandwich(const double* l, int rows, int inner, const double* in, double* out) {
  for (int xi = 0; xi < rows; ++xi) {
    for (int nu = 0; nu < rows; ++nu) {
      double t = 0;
      for (int i = 0; i < inner; ++i) {
        for (int j = 0; j < inner; ++j) t += l[xi * inner + i] * in[i * inner + j] * l[nu * inner + j];
      }
      out[xi * rows + nu] = t;
    }
  }
}

/// The Winograd error scale of the filter gradient by F(m x m, 3 x 3) (gradient
/// step 6, 06_wgrad_winograd.cuh; m = 2 or 4), per dw element (K x C x 3 x 3, NCHW
/// layer): |G^T| (sum over the m x m output blocks t of (|A| |dy_t| |A^T|) (.)
/// (|B^T| |x_t| |B|)) |G|, dy the gradient as the kernels read it (masked).
inline std::vector<double> wgrad_winograd_scale(const kf::conv2d_params& p, const std::vector<float>& x,
                                                const std::vector<float>& dy,
                                                int m = kf::detail::conv2d_wgrad_winograd_m) {
  // |B^T| (n x n), |A| (n x m), |G^T| (3 x n), n = m + 2, row-major.
  static const std::vector<double> bt2 = {1, 0, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1};
  static const std::vector<double> a2 = {1, 0, 1, 1, 1, 1, 0, 1};
  static const std::vector<double> gt2 = {1, 0.5, 0.5, 0, 0, 0.5, 0.5, 0, 0, 0.5, 0.5, 1};
  static const std::vector<double> bt4 = {4, 0, 5, 0, 1, 0, 0, 4, 4, 1, 1, 0, 0, 4, 4, 1, 1, 0,
                                          0, 2, 1, 2, 1, 0, 0, 2, 1, 2, 1, 0, 0, 4, 0, 5, 0, 1};
  static const std::vector<double> a4 = {1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8, 1, 2, 4, 8, 0, 0, 0, 1};
  static const std::vector<double> gt4 = {0.25, 1.0 / 6, 1.0 / 6, 1.0 / 24, 1.0 / 24, 0,
                                          0,    1.0 / 6, 1.0 / 6, 1.0 / 12, 1.0 / 12, 0,
                                          0,    1.0 / 6, 1.0 / 6, 1.0 / 6,  1.0 / 6,  1};
  const std::vector<double>& bt = m == 4 ? bt4 : bt2;
  const std::vector<double>& am = m == 4 ? a4 : a2;
  const std::vector<double>& gt = m == 4 ? gt4 : gt2;
  const int n = m + 2, pos = n * n;
  const std::size_t N = p.batch, C = p.in_channels, H = p.in_height, W = p.in_width, K = p.out_channels;
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  const std::size_t M = static_cast<std::size_t>(m), TH = (P + M - 1) / M, TW = (Q + M - 1) / M;
  std::vector<double> acc(K * C * pos, 0.0), u(K * pos), v(C * pos), scale(K * C * 9), g(M * M), d(pos);
  for (std::size_t img = 0; img < N; ++img) {
    for (std::size_t th = 0; th < TH; ++th) {
      for (std::size_t tw = 0; tw < TW; ++tw) {
        for (std::size_t k = 0; k < K; ++k) {  // |A| |dy_t| |A^T|
          for (std::size_t i = 0; i < M; ++i) {
            for (std::size_t j = 0; j < M; ++j) {
              const std::size_t pp = M * th + i, qq = M * tw + j;
              g[i * M + j] = pp < P && qq < Q ? std::fabs(dy[((img * K + k) * P + pp) * Q + qq]) : 0.0;
            }
          }
          sandwich(am.data(), n, m, g.data(), &u[k * pos]);
        }
        for (std::size_t c = 0; c < C; ++c) {  // |B^T| |x_t| |B|
          for (int i = 0; i < n; ++i) {
            for (int j = 0; j < n; ++j) {
              const long ih = static_cast<long>(M * th) + i - static_cast<long>(p.pad_h);
              const long iw = static_cast<long>(M * tw) + j - static_cast<long>(p.pad_w);
              const bool in = ih >= 0 && iw >= 0 && ih < static_cast<long>(H) && iw < static_cast<long>(W);
              d[i * n + j] =
                  in ? std::fabs(
                           x[((img * C + c) * H + static_cast<std::size_t>(ih)) * W + static_cast<std::size_t>(iw)])
                     : 0.0;
            }
          }
          sandwich(bt.data(), n, n, d.data(), &v[c * pos]);
        }
        for (std::size_t k = 0; k < K; ++k) {
          for (std::size_t c = 0; c < C; ++c) {
            for (int b = 0; b < pos; ++b) acc[(k * C + c) * pos + b] += u[k * pos + b] * v[c * pos + b];
          }
        }
      }
    }
  }
  for (std::size_t kc = 0; kc < K * C; ++kc) sandwich(gt.data(), 3, n, &acc[kc * pos], &scale[kc * 9]);  // |G^T| . |G|
  return scale;
}

/// Whether `best` under exact math runs the filter gradient of this float NCHW
/// layer by Winograd (gradient step 6; backward_filter.cu's rule).
inline bool best_runs_wgrad_winograd(const kf::conv2d_params& p) {
  return kf::detail::conv2d_wgrad_winograd_applies(p);
}

/// 4 sqrt(T + (m + 2)^2) 2^-24 relative to wgrad_winograd_scale, T the m x m
/// output blocks summed (N ceil(P / m) ceil(Q / m)): winograd_tolerance's form (its
/// 12 for F(2x2)'s transforms taken as the positions), the sum running over the
/// blocks instead of the channels.
inline double wgrad_winograd_tolerance(const kf::conv2d_params& p, int m = kf::detail::conv2d_wgrad_winograd_m) {
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p), M = static_cast<std::size_t>(m);
  const double blocks = static_cast<double>(p.batch * ((P + M - 1) / M) * ((Q + M - 1) / M));
  return 4 * std::sqrt(blocks + (m + 2) * (m + 2)) * std::ldexp(1.0, -24);
}

/// 4 sqrt(C + 12) 2^-24: Winograd's tolerance relative to winograd_scale.
inline double winograd_tolerance(const kf::conv2d_params& p) {
  return 4 * std::sqrt(static_cast<double>(p.in_channels) + 12) * std::ldexp(1.0, -24);
}

}  // namespace kf::test
