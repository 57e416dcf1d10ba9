// SPDX-License-Identifier: Apache-2.0
// The three transforms of Winograd F(2x2,3x3) (step 6, 06_winograd.cuh), as
// host-and-device functions so the CPU tests check them against direct
// convolution (tests/conv2d/conv2d_cpu_test.cpp) and the kernels run the same code.
//
//   filter: U = G g G^T,  G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]   (4 x 3)
//   input:  V = B^T d B,  B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   (4 x 4)
//   output: Y = A^T M A,  A^T = [1 1 1 0; 0 1 -1 -1]                       (2 x 4)
// For a 4 x 4 input tile d and a 3 x 3 filter g, A^T (U (.) V) A is the 2 x 2
// cross-correlation y[i][j] = sum over (r, s) of g[r][s] d[i + r][j + s]; over
// channels the products sum before the output transform. Index b = 4 xi + nu.
// Multiplying by 1/2 is exact, so every transform is only additions' rounding.
// Below them, the two more that the filter gradient takes (the forward transposed).
#pragma once

#include "../common/host_device.hpp"

namespace kf::detail {

/// u[4 xi + nu] = (G g G^T)[xi][nu]; g[3 r + s].
template <class T>
KF_HOST_DEVICE inline void winograd_filter_transform(const T (&g)[9], T (&u)[16]) {
  const T half = T(0.5);
  T gg[4][3];  // G g
  for (int j = 0; j < 3; ++j) {
    const T g0 = g[j], g1 = g[3 + j], g2 = g[6 + j];
    gg[0][j] = g0;
    gg[1][j] = half * (g0 + g1 + g2);
    gg[2][j] = half * (g0 - g1 + g2);
    gg[3][j] = g2;
  }
  for (int xi = 0; xi < 4; ++xi) {  // (G g) G^T, row by row
    const T h0 = gg[xi][0], h1 = gg[xi][1], h2 = gg[xi][2];
    u[xi * 4 + 0] = h0;
    u[xi * 4 + 1] = half * (h0 + h1 + h2);
    u[xi * 4 + 2] = half * (h0 - h1 + h2);
    u[xi * 4 + 3] = h2;
  }
}

/// v[4 xi + nu] = (B^T d B)[xi][nu]; d[i][j] the 4 x 4 input tile.
template <class T>
KF_HOST_DEVICE inline void winograd_input_transform(const T (&d)[4][4], T (&v)[16]) {
  T e[4][4];  // B^T d
  for (int j = 0; j < 4; ++j) {
    e[0][j] = d[0][j] - d[2][j];
    e[1][j] = d[1][j] + d[2][j];
    e[2][j] = d[2][j] - d[1][j];
    e[3][j] = d[1][j] - d[3][j];
  }
  for (int xi = 0; xi < 4; ++xi) {  // (B^T d) B, row by row
    v[xi * 4 + 0] = e[xi][0] - e[xi][2];
    v[xi * 4 + 1] = e[xi][1] + e[xi][2];
    v[xi * 4 + 2] = e[xi][2] - e[xi][1];
    v[xi * 4 + 3] = e[xi][1] - e[xi][3];
  }
}

/// y[i][j] = (A^T m A)[i][j]; m[4 xi + nu] the summed products.
template <class T>
KF_HOST_DEVICE inline void winograd_output_transform(const T (&m)[16], T (&y)[2][2]) {
  T f[2][4];  // A^T m
  for (int j = 0; j < 4; ++j) {
    f[0][j] = m[j] + m[4 + j] + m[8 + j];
    f[1][j] = m[4 + j] - m[8 + j] - m[12 + j];
  }
  for (int i = 0; i < 2; ++i) {
    y[i][0] = f[i][0] + f[i][1] + f[i][2];
    y[i][1] = f[i][1] - f[i][2] - f[i][3];
  }
}

// ---- the filter gradient (dw), by transposing the forward ---------------------------
// y = A^T [(G g G^T) (.) V] A is linear in g; its transpose takes an output
// gradient block dy (2 x 2) back to g's 3 x 3:
//   dw = G^T [ sum over tiles of (A dy A^T) (.) (B^T d B) ] G,
// d the same 4 x 4 input tile the forward reads for that output block (so V is
// the forward's input transform), over every tile and image of a channel pair.

/// u[4 xi + nu] = (A dy A^T)[xi][nu]; dy[i][j] the 2 x 2 block of output gradients
/// (0 where the block passes P x Q). A = (A^T)^T = [1 0; 1 1; 1 -1; 0 -1] (4 x 2).
template <class T>
KF_HOST_DEVICE inline void winograd_dy_transform(const T (&dy)[2][2], T (&u)[16]) {
  T e[4][2];  // A dy
  for (int j = 0; j < 2; ++j) {
    e[0][j] = dy[0][j];
    e[1][j] = dy[0][j] + dy[1][j];
    e[2][j] = dy[0][j] - dy[1][j];
    e[3][j] = -dy[1][j];
  }
  for (int xi = 0; xi < 4; ++xi) {  // (A dy) A^T, row by row
    u[xi * 4 + 0] = e[xi][0];
    u[xi * 4 + 1] = e[xi][0] + e[xi][1];
    u[xi * 4 + 2] = e[xi][0] - e[xi][1];
    u[xi * 4 + 3] = -e[xi][1];
  }
}

/// dw[r][s] = (G^T m G)[r][s]; m[4 xi + nu] the summed products (U (.) V over
/// the tiles). G^T = [1 1/2 1/2 0; 0 1/2 -1/2 0; 0 1/2 1/2 1] (3 x 4).
template <class T>
KF_HOST_DEVICE inline void winograd_filter_gradient_transform(const T (&m)[16], T (&dw)[3][3]) {
  const T half = T(0.5);
  T f[3][4];  // G^T m
  for (int j = 0; j < 4; ++j) {
    const T m0 = m[j], m1 = m[4 + j], m2 = m[8 + j], m3 = m[12 + j];
    f[0][j] = m0 + half * (m1 + m2);
    f[1][j] = half * (m1 - m2);
    f[2][j] = half * (m1 + m2) + m3;
  }
  for (int r = 0; r < 3; ++r) {  // (G^T m) G, row by row
    dw[r][0] = f[r][0] + half * (f[r][1] + f[r][2]);
    dw[r][1] = half * (f[r][1] - f[r][2]);
    dw[r][2] = half * (f[r][1] + f[r][2]) + f[r][3];
  }
}

// ---- F(4x4, 3x3) for the filter gradient: 6 x 6 tiles, 36 positions ------------------
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
// dw = G^T [sum over 4 x 4 output blocks of (A dy A^T) (.) (B^T d B)] G: 4x fewer
// products than the direct sum (F(2x2): 2.25x) for about 3x its rounding error on
// random data (benchmarks/tuning/winograd_dw/accuracy.cpp). Each helper applies one
// matrix along one dimension: in[i * stride] -> out[i * stride].

/// out = B^T in (6 values, `stride` apart).
template <class T>
KF_HOST_DEVICE inline void winograd4_bt(const T* in, T* out, int stride) {
  const T d0 = in[0], d1 = in[stride], d2 = in[2 * stride], d3 = in[3 * stride], d4 = in[4 * stride],
          d5 = in[5 * stride];
  out[0] = T(4) * d0 - T(5) * d2 + d4;
  out[stride] = d3 + d4 - T(4) * (d1 + d2);
  out[2 * stride] = d4 - d3 + T(4) * (d1 - d2);
  out[3 * stride] = d4 - d2 + T(2) * (d3 - d1);
  out[4 * stride] = d4 - d2 + T(2) * (d1 - d3);
  out[5 * stride] = T(4) * d1 - T(5) * d3 + d5;
}

/// out (6 values) = A in (4 values), A = (A^T)^T.
template <class T>
KF_HOST_DEVICE inline void winograd4_a(const T* in, T* out, int in_stride, int out_stride) {
  const T g0 = in[0], g1 = in[in_stride], g2 = in[2 * in_stride], g3 = in[3 * in_stride];
  out[0] = g0;
  out[out_stride] = g0 + g1 + g2 + g3;
  out[2 * out_stride] = g0 - g1 + g2 - g3;
  out[3 * out_stride] = g0 + T(2) * g1 + T(4) * g2 + T(8) * g3;
  out[4 * out_stride] = g0 - T(2) * g1 + T(4) * g2 - T(8) * g3;
  out[5 * out_stride] = g3;
}

/// out (3 values) = G^T in (6 values).
template <class T>
KF_HOST_DEVICE inline void winograd4_gt(const T* in, T* out, int in_stride, int out_stride) {
  const T m0 = in[0], m1 = in[in_stride], m2 = in[2 * in_stride], m3 = in[3 * in_stride], m4 = in[4 * in_stride],
          m5 = in[5 * in_stride];
  const T sixth = T(1) / T(6), twelfth = T(1) / T(12), twentyfourth = T(1) / T(24);
  out[0] = T(0.25) * m0 - sixth * (m1 + m2) + twentyfourth * (m3 + m4);
  out[out_stride] = sixth * (m2 - m1) + twelfth * (m3 - m4);
  out[2 * out_stride] = sixth * (m3 + m4 - m1 - m2) + m5;
}

/// v[6 xi + nu] = (B^T d B)[xi][nu]; d the 6 x 6 input tile.
template <class T>
KF_HOST_DEVICE inline void winograd4_input_transform(const T (&d)[6][6], T (&v)[36]) {
  T e[36];
  for (int j = 0; j < 6; ++j) winograd4_bt(&d[0][j], &e[j], 6);            // B^T d, column by column
  for (int xi = 0; xi < 6; ++xi) winograd4_bt(&e[6 * xi], &v[6 * xi], 1);  // (B^T d) B, row by row
}

/// u[6 xi + nu] = (A dy A^T)[xi][nu]; dy the 4 x 4 block of output gradients.
template <class T>
KF_HOST_DEVICE inline void winograd4_dy_transform(const T (&dy)[4][4], T (&u)[36]) {
  T e[24];  // A dy: 6 x 4
  for (int j = 0; j < 4; ++j) winograd4_a(&dy[0][j], &e[j], 4, 4);
  for (int xi = 0; xi < 6; ++xi) winograd4_a(&e[4 * xi], &u[6 * xi], 1, 1);  // (A dy) A^T, row by row
}

/// dw[r][s] = (G^T m G)[r][s]; m[6 xi + nu] the summed products.
template <class T>
KF_HOST_DEVICE inline void winograd4_filter_gradient_transform(const T (&m)[36], T (&dw)[3][3]) {
  T f[18];  // G^T m: 3 x 6
  for (int j = 0; j < 6; ++j) winograd4_gt(&m[j], &f[j], 6, 6);
  for (int r = 0; r < 3; ++r) winograd4_gt(&f[6 * r], &dw[r][0], 1, 1);  // (G^T m) G, row by row
}

/// The filter gradient's three transforms by block size: F(M x M, 3 x 3) with
/// M x M output blocks, n x n = (M + 2)^2 input tiles and positions. Gradient
/// step 6 (06_wgrad_winograd.cuh) and its CPU tests read them from here.
template <int M>
struct winograd_dw_transforms;
template <>
struct winograd_dw_transforms<2> {
  static constexpr int m = 2, n = 4, positions = 16;
  template <class T>
  KF_HOST_DEVICE static void input(const T (&d)[4][4], T (&v)[16]) {
    winograd_input_transform(d, v);
  }
  template <class T>
  KF_HOST_DEVICE static void dy(const T (&g)[2][2], T (&u)[16]) {
    winograd_dy_transform(g, u);
  }
  template <class T>
  KF_HOST_DEVICE static void output(const T (&mm)[16], T (&w)[3][3]) {
    winograd_filter_gradient_transform(mm, w);
  }
};
template <>
struct winograd_dw_transforms<4> {
  static constexpr int m = 4, n = 6, positions = 36;
  template <class T>
  KF_HOST_DEVICE static void input(const T (&d)[6][6], T (&v)[36]) {
    winograd4_input_transform(d, v);
  }
  template <class T>
  KF_HOST_DEVICE static void dy(const T (&g)[4][4], T (&u)[36]) {
    winograd4_dy_transform(g, u);
  }
  template <class T>
  KF_HOST_DEVICE static void output(const T (&mm)[36], T (&w)[3][3]) {
    winograd4_filter_gradient_transform(mm, w);
  }
};

}  // namespace kf::detail
