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

}  // namespace kf::detail
