// SPDX-License-Identifier: Apache-2.0
// CPU references for the convolution family, accumulated in double. Tests,
// examples and benchmarks check the GPU against these. Each *_exact function
// returns the unrounded double result and, optionally, the error scale
// sum |filter| * |input| (plus |bias|) of every output: the magnitude that
// rounding errors of a floating-point sum are proportional to, and so the
// right thing for a relative tolerance to multiply (|result| alone can be tiny
// by cancellation). Large cases run on all hardware threads.
//
// Written independently of the kernels: the border rules below are the
// definitions in kernelforge/conv.hpp spelled out the plainest way.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "kernelforge/conv.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "kernelforge/reference/parallel.hpp"

namespace kf::reference {

/// The input index that border `mode` reads for index i of a dimension of n
/// (n >= 1); -1 means "zero" (border::zero outside the image).
inline long long border_index(long long i, long long n, border mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case border::zero: return -1;
    case border::clamp: return i < 0 ? 0 : n - 1;
    case border::reflect: {
      if (n == 1) return 0;
      // Mirror about 0 and about n-1, again and again, until inside (reflect-101).
      while (i < 0 || i >= n) {
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
      }
      return i;
    }
  }
  return -1;
}

/// filter2d in double: out[c * height * out_pitch + y * out_pitch + x] for x < width
/// (other elements untouched); scale (same layout, optional) gets sum |f| |in|.
template <class T>
void filter2d_exact(std::size_t channels, std::size_t height, std::size_t width, const T* in, std::size_t in_pitch,
                    const T* filter, std::size_t r, std::size_t s, border mode, double* out, std::size_t out_pitch,
                    double* scale = nullptr) {
  const long long h = static_cast<long long>(height), w = static_cast<long long>(width);
  const long long ar = static_cast<long long>(r / 2), as = static_cast<long long>(s / 2);
  std::vector<double> f(r * s);
  for (std::size_t i = 0; i < r * s; ++i) f[i] = to_double(filter[i]);
  const double work = static_cast<double>(channels) * height * width * r * s;
  parallel_rows(channels * height, work, [&](std::size_t begin, std::size_t end) {
    for (std::size_t row = begin; row < end; ++row) {
      const std::size_t c = row / height;
      const long long y = static_cast<long long>(row % height);
      const T* plane = in + c * height * in_pitch;
      for (long long x = 0; x < w; ++x) {
        double sum = 0, abs_sum = 0;
        for (std::size_t i = 0; i < r; ++i) {
          const long long yy = border_index(y + static_cast<long long>(i) - ar, h, mode);
          for (std::size_t j = 0; j < s; ++j) {
            const long long xx = border_index(x + static_cast<long long>(j) - as, w, mode);
            const double v = (yy < 0 || xx < 0) ? 0.0 : to_double(plane[yy * static_cast<long long>(in_pitch) + xx]);
            sum += f[i * s + j] * v;
            abs_sum += std::fabs(f[i * s + j] * v);
          }
        }
        const std::size_t o =
            c * height * out_pitch + static_cast<std::size_t>(y) * out_pitch + static_cast<std::size_t>(x);
        out[o] = sum;
        if (scale) scale[o] = abs_sum;
      }
    }
  });
}

/// filter2d rounded once to T (for examples).
template <class T>
void filter2d(std::size_t channels, std::size_t height, std::size_t width, const T* in, std::size_t in_pitch,
              const T* filter, std::size_t r, std::size_t s, border mode, T* out, std::size_t out_pitch) {
  std::vector<double> exact(channels * height * out_pitch);
  filter2d_exact(channels, height, width, in, in_pitch, filter, r, s, mode, exact.data(), out_pitch);
  for (std::size_t c = 0; c < channels; ++c) {
    for (std::size_t y = 0; y < height; ++y) {
      for (std::size_t x = 0; x < width; ++x) {
        const std::size_t o = (c * height + y) * out_pitch + x;
        out[o] = from_double<T>(exact[o]);
      }
    }
  }
}

/// The standard output extent, or 0 when the geometry has no output (the
/// reference's own formula, independent of kf::conv2d_output_height).
inline std::size_t conv2d_extent(std::size_t in, std::size_t pad, std::size_t filter, std::size_t stride,
                                 std::size_t dilation) {
  if (in == 0 || filter == 0 || stride == 0 || dilation == 0) return 0;
  const double reach = static_cast<double>(dilation) * (static_cast<double>(filter) - 1) + 1;
  const double padded = static_cast<double>(in) + 2.0 * static_cast<double>(pad);
  if (reach > padded) return 0;
  return static_cast<std::size_t>((padded - reach) / static_cast<double>(stride)) + 1;
}

/// Where element (n, c, h, w) of x, (k, c, r, s) of weight and (n, k, p, q) of
/// y live for p.layout: NCHW / KCRS / NKPQ, or NHWC / KRSC / NPQK. Extents are
/// N C H W K R S P Q of the call.
struct conv2d_indexer {
  conv2d_layout layout;
  std::size_t C, H, W, K, R, S, P, Q;
  std::size_t x(std::size_t n, std::size_t c, std::size_t h, std::size_t w) const {
    return layout == conv2d_layout::nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
  }
  std::size_t weight(std::size_t k, std::size_t c, std::size_t r, std::size_t s) const {
    return layout == conv2d_layout::nhwc ? ((k * R + r) * S + s) * C + c : ((k * C + c) * R + r) * S + s;
  }
  std::size_t y(std::size_t n, std::size_t k, std::size_t p, std::size_t q) const {
    return layout == conv2d_layout::nhwc ? ((n * P + p) * Q + q) * K + k : ((n * K + k) * P + p) * Q + q;
  }
};

/// The indexer of a call's tensors (its P and Q by conv2d_extent), after the
/// checks every conv2d reference makes: errc::invalid_argument, naming `what`,
/// when the geometry has no output or params.layout is not nchw or nhwc.
inline conv2d_indexer conv2d_reference_indexer(const conv2d_params& p, const char* what) {
  const std::size_t P = conv2d_extent(p.in_height, p.pad_h, p.filter_height, p.stride_h, p.dilation_h);
  const std::size_t Q = conv2d_extent(p.in_width, p.pad_w, p.filter_width, p.stride_w, p.dilation_w);
  if (P == 0 || Q == 0) throw error(errc::invalid_argument, std::string(what) + ": no output for this geometry");
  if (p.layout != conv2d_layout::nchw && p.layout != conv2d_layout::nhwc) {
    throw error(errc::invalid_argument, std::string(what) + ": params.layout is not nchw or nhwc");
  }
  return conv2d_indexer{p.layout,        p.in_channels,  p.in_height, p.in_width, p.out_channels,
                        p.filter_height, p.filter_width, P,           Q};
}

/// Adds the products of output (n, oh, ow) to sum, and their magnitudes to
/// abs_sum: w_at(c, r, s) (the filter's element, as double) times x's element
/// under tap (r, s) of channel c, in (c, r, s) order, taps outside the image
/// skipped (zero padding adds nothing, not even 0 x inf).
template <class T, class WeightAt>
void conv2d_accumulate_exact(const conv2d_params& p, const conv2d_indexer& ix, const T* x, std::size_t n,
                             std::size_t oh, std::size_t ow, const WeightAt& w_at, double& sum, double& abs_sum) {
  const long long H = static_cast<long long>(p.in_height), W = static_cast<long long>(p.in_width);
  for (std::size_t c = 0; c < p.in_channels; ++c) {
    for (std::size_t i = 0; i < p.filter_height; ++i) {
      const long long ih = static_cast<long long>(oh * p.stride_h + i * p.dilation_h) - static_cast<long long>(p.pad_h);
      if (ih < 0 || ih >= H) continue;
      for (std::size_t j = 0; j < p.filter_width; ++j) {
        const long long iw =
            static_cast<long long>(ow * p.stride_w + j * p.dilation_w) - static_cast<long long>(p.pad_w);
        if (iw < 0 || iw >= W) continue;
        const double xv = to_double(x[ix.x(n, c, static_cast<std::size_t>(ih), static_cast<std::size_t>(iw))]);
        const double prod = w_at(c, i, j) * xv;
        sum += prod;
        abs_sum += std::fabs(prod);
      }
    }
  }
}

/// conv2d_forward in double for p.layout: y is N x K x P x Q (NCHW) or
/// N x P x Q x K (NHWC), scale (optional, y's layout) gets sum |w| |x| + |bias|
/// for every output. T is float, __half, __nv_bfloat16 or double: every element
/// is converted to double exactly and the products are exact for the first
/// three. The sum runs over (c, r, s) in that order whatever the layout, so the
/// NHWC result is bit-for-bit the NCHW one of the transposed data.
template <class T>
void conv2d_forward_exact(const conv2d_params& p, const T* x, const T* weight, const nondeduced_t<T>* bias, double* y,
                          double* scale = nullptr) {
  const conv2d_indexer ix = conv2d_reference_indexer(p, "kf::reference::conv2d_forward_exact");
  const std::size_t P = ix.P, Q = ix.Q;
  const double work =
      static_cast<double>(p.batch) * p.out_channels * P * Q * p.in_channels * p.filter_height * p.filter_width;
  parallel_rows(p.batch * p.out_channels, work, [&](std::size_t begin, std::size_t end) {
    // This (n, k)'s filter in double, (c, r, s) order whatever the layout.
    std::vector<double> wk(p.in_channels * p.filter_height * p.filter_width);
    const auto w_at = [&](std::size_t c, std::size_t i, std::size_t j) {
      return wk[(c * p.filter_height + i) * p.filter_width + j];
    };
    for (std::size_t nk = begin; nk < end; ++nk) {
      const std::size_t n = nk / p.out_channels, k = nk % p.out_channels;
      for (std::size_t c = 0; c < p.in_channels; ++c) {
        for (std::size_t i = 0; i < p.filter_height; ++i) {
          for (std::size_t j = 0; j < p.filter_width; ++j) {
            wk[(c * p.filter_height + i) * p.filter_width + j] = to_double(weight[ix.weight(k, c, i, j)]);
          }
        }
      }
      const double b = bias ? to_double(bias[k]) : 0.0;
      for (std::size_t oh = 0; oh < P; ++oh) {
        for (std::size_t ow = 0; ow < Q; ++ow) {
          double sum = b, abs_sum = std::fabs(b);
          conv2d_accumulate_exact(p, ix, x, n, oh, ow, w_at, sum, abs_sum);
          const std::size_t o = ix.y(n, k, oh, ow);
          y[o] = sum;
          if (scale) scale[o] = abs_sum;
        }
      }
    }
  });
}

/// One output of conv2d_forward_exact and its error scale.
struct conv2d_exact_output {
  double value = 0;  ///< the exact sum (no bias)
  double scale = 0;  ///< sum |w| |x|
};

/// Output (n, k, oh, ow) of conv2d_forward_exact without bias, alone: for
/// checks of a sample of an output too large to compute whole (the same sum,
/// bit for bit).
template <class T>
conv2d_exact_output conv2d_forward_exact_at(const conv2d_params& p, const T* x, const T* weight, std::size_t n,
                                            std::size_t k, std::size_t oh, std::size_t ow) {
  const conv2d_indexer ix = conv2d_reference_indexer(p, "kf::reference::conv2d_forward_exact_at");
  conv2d_exact_output out;
  const auto w_at = [&](std::size_t c, std::size_t i, std::size_t j) {
    return to_double(weight[ix.weight(k, c, i, j)]);
  };
  conv2d_accumulate_exact(p, ix, x, n, oh, ow, w_at, out.value, out.scale);
  return out;
}

/// conv2d_forward rounded once to T (float, __half, __nv_bfloat16 or double),
/// in p.layout: the double sum of conv2d_forward_exact converted once.
template <class T>
void conv2d_forward(const conv2d_params& p, const T* x, const T* weight, const nondeduced_t<T>* bias, T* y) {
  const std::size_t P = conv2d_extent(p.in_height, p.pad_h, p.filter_height, p.stride_h, p.dilation_h);
  const std::size_t Q = conv2d_extent(p.in_width, p.pad_w, p.filter_width, p.stride_w, p.dilation_w);
  std::vector<double> exact(p.batch * p.out_channels * P * Q);
  conv2d_forward_exact(p, x, weight, bias, exact.data());
  for (std::size_t i = 0; i < exact.size(); ++i) y[i] = from_double<T>(exact[i]);
}

}  // namespace kf::reference
