// SPDX-License-Identifier: Apache-2.0
// The arguments every conv2d kernel takes, already validated by the launcher
// (kernels/conv2d/conv2d.cu): every size >= 1, P and Q >= 1, and every tensor
// (x: N*C*H*W, w: K*C*R*S, y: N*K*P*Q) below 2^31 elements, so int indexing
// is exact. bias may be null.
//
// The GEMM view used by the implicit-GEMM kernels:
//   M = N*P*Q rows (m = (n*P + p)*Q + q), N_gemm = K columns, K_gemm = C*R*S
//   (kk = (c*R + r)*S + s); A[m][kk] = x[n][c][p*stride_h - pad_h + r*dilation_h]
//   [q*stride_w - pad_w + s*dilation_w] (0 outside), B[kk][k] = w[k*CRS + kk],
//   y[n][k][p][q] = C[m][k] (+ bias[k]).
#pragma once

#include "../common/fast_divmod.cuh"

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

}  // namespace kf::detail
