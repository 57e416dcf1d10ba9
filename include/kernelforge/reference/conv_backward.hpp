// SPDX-License-Identifier: Apache-2.0
// CPU references for conv2d's gradients (kernelforge/conv_backward.hpp),
// accumulated in double, for both layouts (NCHW / KCRS / NKPQ and NHWC / KRSC /
// NPQK, as kernelforge/reference/conv.hpp's conv2d_indexer). Each *_exact
// function returns the unrounded double results and, optionally, their error
// scales: the sum of |term| over the terms of each output (|w| |dy| for dx,
// |dy| |x| for dw, |dy| for dbias), the magnitude that the rounding errors of a
// floating-point sum are proportional to (see reference/conv.hpp).
//
// Written independently of the kernels, which gather (one output element per
// thread) or run the gradients as forward convolutions and matrix products:
// these scatter. Every element of dy, read through the ReLU mask, adds its
// product with each filter tap into the one dx element that tap read in the
// forward, and with each input pixel into the dw element that multiplied it.
// The products of float, __half and __nv_bfloat16 values are exact in double.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "kernelforge/conv.hpp"
#include "kernelforge/reference/conv.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "kernelforge/reference/parallel.hpp"

namespace kf::reference {

/// The forward's fused threshold ReLU as the gradients read it
/// (conv2d_backward_options::relu): dy counts as 0 where the forward's output
/// y <= threshold. y null: no mask.
template <class T>
struct conv2d_relu_mask {
  const T* y = nullptr;  ///< the forward's output, N x K x P x Q in params.layout
  double threshold = 0;
};

/// dy[i] as the gradients read it, in double.
template <class T>
double conv2d_masked_dy(const T* dy, std::size_t i, const conv2d_relu_mask<T>& mask) {
  if (mask.y != nullptr && to_double(mask.y[i]) <= mask.threshold) return 0.0;
  return to_double(dy[i]);
}

/// The forward's input coordinate that output coordinate o reads with tap t
/// (-1 where that falls in the padding).
inline long long conv2d_input_coordinate(std::size_t o, std::size_t t, std::size_t stride, std::size_t pad,
                                         std::size_t dilation, std::size_t extent) {
  const long long i = static_cast<long long>(o * stride + t * dilation) - static_cast<long long>(pad);
  return i >= 0 && i < static_cast<long long>(extent) ? i : -1;
}

/// Calls tap(r, s, h, w) for every filter tap (r, s) of output pixel (oh, ow)
/// that reads inside the image, at input pixel (h, w), in (r, s) order.
template <class F>
void conv2d_for_each_tap_inside(const conv2d_params& p, std::size_t oh, std::size_t ow, F tap) {
  for (std::size_t r = 0; r < p.filter_height; ++r) {
    const long long h = conv2d_input_coordinate(oh, r, p.stride_h, p.pad_h, p.dilation_h, p.in_height);
    if (h < 0) continue;
    for (std::size_t s = 0; s < p.filter_width; ++s) {
      const long long w = conv2d_input_coordinate(ow, s, p.stride_w, p.pad_w, p.dilation_w, p.in_width);
      if (w >= 0) tap(r, s, static_cast<std::size_t>(h), static_cast<std::size_t>(w));
    }
  }
}

/// dx = conv2d_backward_data in double: dx (x's size, p.layout) gets, for every
/// (n, c, h, w), the sum of w[k][c][r][s] dy[n][k][p][q] over the (k, r, s, p, q)
/// whose forward tap read x[n][c][h][w]; 0 where none did (and everywhere for
/// K = 0). scale (optional, dx's layout): the sum of |w| |dy| over those terms.
template <class T>
void conv2d_backward_data_exact(const conv2d_params& p, const T* dy, const T* weight, double* dx,
                                double* scale = nullptr, conv2d_relu_mask<nondeduced_t<T>> mask = {}) {
  const conv2d_indexer ix = conv2d_reference_indexer(p, "kf::reference::conv2d_backward_data_exact");
  const std::size_t C = p.in_channels, K = p.out_channels, R = p.filter_height, S = p.filter_width;
  const double work = static_cast<double>(p.batch) * K * ix.P * ix.Q * C * R * S;
  // Row (n, c) owns dx[n][c][.][.]: its scatters never meet another row's.
  parallel_rows(p.batch * C, work, [&](std::size_t begin, std::size_t end) {
    for (std::size_t nc = begin; nc < end; ++nc) {
      const std::size_t n = nc / C, c = nc % C;
      for (std::size_t h = 0; h < p.in_height; ++h) {
        for (std::size_t w = 0; w < p.in_width; ++w) {
          dx[ix.x(n, c, h, w)] = 0;
          if (scale) scale[ix.x(n, c, h, w)] = 0;
        }
      }
      for (std::size_t k = 0; k < K; ++k) {
        for (std::size_t oh = 0; oh < ix.P; ++oh) {
          for (std::size_t ow = 0; ow < ix.Q; ++ow) {
            const double g = conv2d_masked_dy(dy, ix.y(n, k, oh, ow), mask);
            conv2d_for_each_tap_inside(p, oh, ow, [&](std::size_t r, std::size_t s, std::size_t h, std::size_t w) {
              const double term = to_double(weight[ix.weight(k, c, r, s)]) * g;
              dx[ix.x(n, c, h, w)] += term;
              if (scale) scale[ix.x(n, c, h, w)] += std::fabs(term);
            });
          }
        }
      }
    }
  });
}

/// dweight and dbias = conv2d_backward_filter in double: dweight (the filter's
/// size, p.layout) gets, for every (k, c, r, s), the sum over (n, p, q) of
/// dy[n][k][p][q] x[n][c][p sh - ph + r dh][q sw - pw + s dw] (taps in the
/// padding add nothing), dbias (optional, K values) the sum of dy[n][k][.][.];
/// both 0 for N = 0. dweight_scale and dbias_scale (optional, the same shapes):
/// the sums of |dy| |x| and |dy| over those terms.
template <class T>
void conv2d_backward_filter_exact(const conv2d_params& p, const T* x, const T* dy, double* dweight, double* dbias,
                                  double* dweight_scale = nullptr, double* dbias_scale = nullptr,
                                  conv2d_relu_mask<nondeduced_t<T>> mask = {}) {
  const conv2d_indexer ix = conv2d_reference_indexer(p, "kf::reference::conv2d_backward_filter_exact");
  const std::size_t C = p.in_channels, K = p.out_channels, R = p.filter_height, S = p.filter_width;
  const double work = static_cast<double>(p.batch) * K * ix.P * ix.Q * C * R * S;
  // Row (k, c) owns dweight[k][c][.][.].
  parallel_rows(K * C, work, [&](std::size_t begin, std::size_t end) {
    for (std::size_t kc = begin; kc < end; ++kc) {
      const std::size_t k = kc / C, c = kc % C;
      for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t s = 0; s < S; ++s) {
          dweight[ix.weight(k, c, r, s)] = 0;
          if (dweight_scale) dweight_scale[ix.weight(k, c, r, s)] = 0;
        }
      }
      for (std::size_t n = 0; n < p.batch; ++n) {
        for (std::size_t oh = 0; oh < ix.P; ++oh) {
          for (std::size_t ow = 0; ow < ix.Q; ++ow) {
            const double g = conv2d_masked_dy(dy, ix.y(n, k, oh, ow), mask);
            conv2d_for_each_tap_inside(p, oh, ow, [&](std::size_t r, std::size_t s, std::size_t h, std::size_t w) {
              const double term = g * to_double(x[ix.x(n, c, h, w)]);
              dweight[ix.weight(k, c, r, s)] += term;
              if (dweight_scale) dweight_scale[ix.weight(k, c, r, s)] += std::fabs(term);
            });
          }
        }
      }
    }
  });
  if (dbias == nullptr && dbias_scale == nullptr) return;
  for (std::size_t k = 0; k < K; ++k) {
    double sum = 0, abs_sum = 0;
    for (std::size_t n = 0; n < p.batch; ++n) {
      for (std::size_t oh = 0; oh < ix.P; ++oh) {
        for (std::size_t ow = 0; ow < ix.Q; ++ow) {
          const double g = conv2d_masked_dy(dy, ix.y(n, k, oh, ow), mask);
          sum += g;
          abs_sum += std::fabs(g);
        }
      }
    }
    if (dbias) dbias[k] = sum;
    if (dbias_scale) dbias_scale[k] = abs_sum;
  }
}

}  // namespace kf::reference
