// SPDX-License-Identifier: Apache-2.0
// The column fold's index arithmetic (the kernel: wgmma_nhwc_fold.cuh), on the
// host and the device: the geometry the launch computes once, and the values
// of one 16-byte vector of the folded input. The CPU tests (wgmma_cpu_test.cpp)
// run it against the fold's definition where there is no GPU.
#pragma once

#include <climits>
#include <cstddef>

#include "../common/fast_divmod.cuh"
#include "../common/host_device.hpp"

namespace kf::detail {

/// The column fold of an NHWC input x (N x H x W x C) into dst (N x H x Q x C'),
/// walked in 16-byte vectors of dst (C' a whole number of them:
/// conv2d_nhwc_folded_channels). Offsets `o` into one input row (n, h) count
/// elements: o = iw C + ch, inside the image iff 0 <= o < W C.
struct conv2d_nhwc_fold_geometry {
  int vectors = 0;        ///< N H Q C' / (16 / sizeof(T)): dst's 16-byte vectors
  fast_divmod per_pixel;  ///< C' / (16 / sizeof(T)): the vectors of one output pixel
  fast_divmod q;          ///< Q: the output pixels of one row (n, h)
  fast_divmod c;          ///< C: the channels of one filter tap
  int row = 0;            ///< W C: one input row's elements
  int data = 0;           ///< S C: the values of a pixel that are data (the rest of C' are 0)
  int stride = 0;         ///< stride_w C: from one output pixel's first tap to the next one's
  int pad = 0;            ///< pad_w C
  int tap_gap = 0;        ///< (dilation_w - 1) C: from past one tap's last channel to the next tap's first
};

/// The geometry of the fold of x (N x H x W x C of `element_bytes`) for a filter
/// of S columns at (stride_w, pad_w, dilation_w), Q output columns, C' folded
/// channels; false when an index would overflow the kernel's ints (dst's
/// elements, an input row, an offset) or C' is not a whole number of vectors.
inline bool make_conv2d_nhwc_fold_geometry(std::size_t n, std::size_t h, std::size_t w, std::size_t c, std::size_t q,
                                           std::size_t s, std::size_t stride_w, std::size_t pad_w,
                                           std::size_t dilation_w, std::size_t c_folded, std::size_t element_bytes,
                                           conv2d_nhwc_fold_geometry& g) {
  constexpr std::size_t limit = INT_MAX;
  const std::size_t lanes = 16 / element_bytes;
  if (n == 0 || h == 0 || w == 0 || c == 0 || q == 0 || s == 0 || c_folded % lanes != 0 || c_folded < s * c) {
    return false;
  }
  // Past the largest offset a thread reaches: its pixel's last tap, then fewer than `lanes`
  // values past the data (each a channel or a tap further on).
  const std::size_t reach = ((q - 1) * stride_w + (s + lanes) * dilation_w) * c + c_folded;
  if (n * h * q * c_folded > limit || w * c > limit || reach > limit || pad_w * c > limit) return false;
  g.vectors = static_cast<int>(n * h * q * c_folded / lanes);
  g.per_pixel = fast_divmod(static_cast<unsigned>(c_folded / lanes));
  g.q = fast_divmod(static_cast<unsigned>(q));
  g.c = fast_divmod(static_cast<unsigned>(c));
  g.row = static_cast<int>(w * c);
  g.data = static_cast<int>(s * c);
  g.stride = static_cast<int>(stride_w * c);
  g.pad = static_cast<int>(pad_w * c);
  g.tap_gap = static_cast<int>((dilation_w - 1) * c);
  return true;
}

/// The 16 / sizeof(T) values of dst's vector `vector` (0 <= vector < g.vectors),
/// read from x; `zero` outside the image and past S C:
///   dst[((n H + h) Q + q) C' + s C + c] = x[n][h][q stride_w - pad_w + s dilation_w][c].
/// Two divisions by a run-time constant per vector (fast_divmod: a multiply-high
/// each), three with dilation; per value an add, one range check and a load.
template <class T>
KF_HOST_DEVICE inline void conv2d_nhwc_fold_vector(const T* x, const conv2d_nhwc_fold_geometry& g, int vector, T zero,
                                                   T* out) {
  constexpr int lanes = static_cast<int>(16 / sizeof(T));
  int pixel = 0, part = 0, nh = 0, qq = 0;
  g.per_pixel.divmod(vector, pixel, part);
  g.q.divmod(pixel, nh, qq);    // pixel = (n H + h) Q + q
  const int j0 = part * lanes;  // the first of the vector's C' values: tap s, channel c at j = s C + c
  const long long row = static_cast<long long>(nh) * g.row;  // x's offset of the row (n, h)
  // Values j0... at offsets o... of the row: o = (q stride - pad + s dilation) C + c.
  int o = qq * g.stride - g.pad + j0;
  if (g.tap_gap == 0) {  // dilation 1: consecutive values at consecutive offsets, one address
    const long long first = row + o;
    for (int e = 0; e < lanes; ++e) {
      const bool inside = j0 + e < g.data && static_cast<unsigned>(o + e) < static_cast<unsigned>(g.row);
      out[e] = inside ? x[first + e] : zero;
    }
    return;
  }
  int tap = 0, ch = 0;
  g.c.divmod(j0, tap, ch);
  o += tap * g.tap_gap;
  for (int e = 0; e < lanes; ++e) {
    const bool inside = j0 + e < g.data && static_cast<unsigned>(o) < static_cast<unsigned>(g.row);
    out[e] = inside ? x[row + o] : zero;
    ++o;
    if (++ch == static_cast<int>(g.c.divisor)) {  // past the tap's last channel: the next tap
      ch = 0;
      o += g.tap_gap;
    }
  }
}

}  // namespace kf::detail
