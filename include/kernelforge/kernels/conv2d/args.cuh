// SPDX-License-Identifier: Apache-2.0
// The arguments every conv2d kernel takes, already validated by the launcher
// (src/conv2d/conv2d.cu): every size >= 1, P and Q >= 1, and every tensor
// (x: N*C*H*W, w: K*C*R*S, y: N*K*P*Q) below 2^31 elements, so int indexing
// is exact. bias may be null. The layout (NCHW or NHWC) is the kernel's, not
// the arguments': the NHWC kernels index x[n][h][w][c], w[k][r][s][c] and
// y[n][p][q][k] with the same extents.
//
// The GEMM view used by the implicit-GEMM kernels:
//   M = N*P*Q rows (m = (n*P + p)*Q + q), N_gemm = K columns, K_gemm = C*R*S
//   (kk = (c*R + r)*S + s); A[m][kk] = x[n][c][p*stride_h - pad_h + r*dilation_h]
//   [q*stride_w - pad_w + s*dilation_w] (0 outside), B[kk][k] = w[k*CRS + kk],
//   y[n][k][p][q] = C[m][k] (+ bias[k]).
#pragma once

#include <cstddef>

#include "../common/fast_divmod.cuh"
#include "kernelforge/conv.hpp"

namespace kf::detail {

template <class T>
struct conv2d_args {
  int n = 0, c = 0, h = 0, w = 0;
  int k = 0, r = 0, s = 0;
  int p = 0, q = 0;
  int stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  int m = 0;    // N*P*Q
  int crs = 0;  // C*R*S
  int rs = 0;   // R*S
  int hw = 0;   // H*W
  int pq = 0;   // P*Q
  fast_divmod div_pq, div_q, div_rs, div_s;
  const T* x = nullptr;
  const T* wt = nullptr;
  const T* bias = nullptr;
  T* y = nullptr;
};

/// The kernels' arguments from validated parameters (P, Q from validate_conv2d):
/// the launchers and the CPU emulation test of step 8 build them here.
template <class T>
conv2d_args<T> make_conv2d_args(const conv2d_params& p, std::size_t P, std::size_t Q, const T* x, const T* w,
                                const nondeduced_t<T>* bias, T* y) {
  conv2d_args<T> a;
  a.n = static_cast<int>(p.batch);
  a.c = static_cast<int>(p.in_channels);
  a.h = static_cast<int>(p.in_height);
  a.w = static_cast<int>(p.in_width);
  a.k = static_cast<int>(p.out_channels);
  a.r = static_cast<int>(p.filter_height);
  a.s = static_cast<int>(p.filter_width);
  a.p = static_cast<int>(P);
  a.q = static_cast<int>(Q);
  a.stride_h = static_cast<int>(p.stride_h);
  a.stride_w = static_cast<int>(p.stride_w);
  a.pad_h = static_cast<int>(p.pad_h);
  a.pad_w = static_cast<int>(p.pad_w);
  a.dilation_h = static_cast<int>(p.dilation_h);
  a.dilation_w = static_cast<int>(p.dilation_w);
  a.m = static_cast<int>(p.batch * P * Q);
  a.crs = static_cast<int>(p.in_channels * p.filter_height * p.filter_width);
  a.rs = static_cast<int>(p.filter_height * p.filter_width);
  a.hw = static_cast<int>(p.in_height * p.in_width);
  a.pq = static_cast<int>(P * Q);
  a.div_pq = fast_divmod(static_cast<unsigned>(a.pq));
  a.div_q = fast_divmod(static_cast<unsigned>(a.q));
  a.div_rs = fast_divmod(static_cast<unsigned>(a.rs));
  a.div_s = fast_divmod(static_cast<unsigned>(a.s));
  a.x = x;
  a.wt = w;
  a.bias = bias;
  a.y = y;
  return a;
}

/// Whether each output pixel reads the input pixel at its own place and no other:
/// a 1 x 1 filter at stride 1 without padding (then P = H and Q = W, whatever the dilation).
template <class T>
bool conv2d_is_pointwise(const conv2d_args<T>& a) {
  return a.r == 1 && a.s == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 && a.pad_w == 0;
}

/// A pointwise layer (conv2d_is_pointwise) as one image of one row of N H W pixels, any
/// other layer as it is: the same memory, and every pixel keeps its GEMM row m = (n P + p)
/// Q + q (the epilogue's row). The NHWC wgmma kernels then tile runs of consecutive pixels
/// rather than boxes of rows and images (each k-step of a box reads pieces of pixels far apart).
template <class T>
conv2d_args<T> conv2d_one_row_if_pointwise(const conv2d_args<T>& a) {
  if (!conv2d_is_pointwise(a)) return a;
  conv2d_args<T> f = a;
  f.n = f.h = f.p = 1;
  f.w = f.q = f.hw = f.pq = a.m;  // N H W = N P Q pixels
  f.dilation_h = f.dilation_w = 1;
  f.div_pq = fast_divmod(static_cast<unsigned>(f.pq));
  f.div_q = fast_divmod(static_cast<unsigned>(f.q));
  return f;
}

}  // namespace kf::detail
