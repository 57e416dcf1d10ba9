// SPDX-License-Identifier: Apache-2.0
// CPU experiment behind benchmarks/tuning/conv2d.md ("Plan for C128 / C256: Winograd dw"):
// how accurate is the filter gradient by Winograd F(m x m, 3 x 3) in float, against the
// direct sum in float, both against a double reference?
//
//   dw = G^T [ sum over the m x m output blocks t of (A dy_t A^T) (.) (B^T x_t B) ] G
//
// (the forward's transforms transposed), for m = 2 (4 x 4 tiles, 16 positions: what
// gradient step 6 would run) and m = 4 (6 x 6 tiles, 36 positions), on randn x and dy of
// one (k, c) pair of the N32 C128 28x28 3x3 pad-1 layer, 64 pairs. Errors are relative
// to the sum of the magnitudes of the direct terms (the GPU tests' scale S).
//   g++ -O2 -std=c++17 benchmarks/tuning/winograd_dw/accuracy.cpp -o /tmp/wdw && /tmp/wdw
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

struct transforms {
  int m;                   // outputs per block side
  std::vector<double> bt;  // B^T, (m + 2) x (m + 2)
  std::vector<double> g;   // G, (m + 2) x 3
  std::vector<double> at;  // A^T, m x (m + 2)
  [[nodiscard]] int n() const { return m + 2; }
};

const transforms f2 = {2,
                       {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1},
                       {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1},
                       {1, 1, 1, 0, 0, 1, -1, -1}};
const transforms f4 = {4,
                       {4, 0,  -5, 0, 1, 0, 0, -4, -4, 1,  1, 0, 0, 4, -4, -1, 1, 0,
                        0, -2, -1, 2, 1, 0, 0, 2,  -1, -2, 1, 0, 0, 4, 0,  -5, 0, 1},
                       {0.25, 0, 0, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6, 1.0 / 24, 1.0 / 12,
                        1.0 / 6, 1.0 / 24, -1.0 / 12, 1.0 / 6, 0, 0, 1},
                       {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1}};

/// out (rows x cols) = L (rows x k) * X (k x cols), all in T, L given in double.
template <class T>
void mul_left(const double* L, const T* X, T* out, int rows, int k, int cols) {
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      T s = 0;
      for (int e = 0; e < k; ++e) s += static_cast<T>(L[i * k + e]) * X[e * cols + j];
      out[i * cols + j] = s;
    }
  }
}
/// out (rows x cols) = X (rows x k) * R^T, R given (cols x k) in double.
template <class T>
void mul_right_t(const T* X, const double* R, T* out, int rows, int k, int cols) {
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      T s = 0;
      for (int e = 0; e < k; ++e) s += X[i * k + e] * static_cast<T>(R[j * k + e]);
      out[i * cols + j] = s;
    }
  }
}
std::vector<double> transposed(const std::vector<double>& a, int rows, int cols) {
  std::vector<double> t(a.size());
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
  }
  return t;
}

/// dw (3 x 3) of one channel pair by F(m x m, 3 x 3) in T.
template <class T, class X, class D>
void winograd_dw(const transforms& f, int N, int P, int Q, int pad, X x_at, D dy_at, T (&dw)[9]) {
  const int n = f.n(), m = f.m;
  const std::vector<double> a = transposed(f.at, m, n);  // A, n x m
  const std::vector<double> gt = transposed(f.g, n, 3);  // G^T, 3 x n
  std::vector<T> acc(n * n, T(0)), d(n * n), g(m * m), e(n * n), u(n * n), v(n * n), t(n * n);
  for (int img = 0; img < N; ++img) {
    for (int tp = 0; tp < P; tp += m) {
      for (int tq = 0; tq < Q; tq += m) {
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < n; ++j) d[i * n + j] = x_at(img, tp - pad + i, tq - pad + j);
        }
        for (int i = 0; i < m; ++i) {
          for (int j = 0; j < m; ++j) g[i * m + j] = dy_at(img, tp + i, tq + j);
        }
        mul_left(f.bt.data(), d.data(), e.data(), n, n, n);     // B^T d
        mul_right_t(e.data(), f.bt.data(), v.data(), n, n, n);  // (B^T d) B
        mul_left(a.data(), g.data(), t.data(), n, m, m);        // A g
        mul_right_t(t.data(), a.data(), u.data(), n, m, n);     // (A g) A^T
        for (int b = 0; b < n * n; ++b) acc[b] = std::fma(u[b], v[b], acc[b]);
      }
    }
  }
  std::vector<T> h(3 * n), out(9);
  mul_left(gt.data(), acc.data(), h.data(), 3, n, n);     // G^T M
  mul_right_t(h.data(), gt.data(), out.data(), 3, n, 3);  // (G^T M) G
  for (int i = 0; i < 9; ++i) dw[i] = out[i];
}

}  // namespace

int main() {
  const int N = 32, H = 28, W = 28, P = 28, Q = 28, pad = 1, pairs = 64;
  std::mt19937 rng(7);
  std::normal_distribution<float> randn(0.f, 1.f);
  double mean[3] = {}, worst[3] = {}, check[2] = {};
  for (int pair = 0; pair < pairs; ++pair) {
    std::vector<float> x(N * H * W), dy(N * P * Q);
    for (float& v : x) v = randn(rng);
    for (float& v : dy) v = randn(rng);
    const auto x_at = [&](int n, int i, int j) {
      return i < 0 || j < 0 || i >= H || j >= W ? 0.f : x[(n * H + i) * W + j];
    };
    const auto dy_at = [&](int n, int p, int q) { return p >= P || q >= Q ? 0.f : dy[(n * P + p) * Q + q]; };
    double ref[9] = {}, scale[9] = {};
    float direct[9] = {};
    for (int tap = 0; tap < 9; ++tap) {
      for (int n = 0; n < N; ++n) {
        for (int p = 0; p < P; ++p) {
          for (int q = 0; q < Q; ++q) {
            const float a = dy_at(n, p, q), b = x_at(n, p + tap / 3 - pad, q + tap % 3 - pad);
            ref[tap] += static_cast<double>(a) * b;
            scale[tap] += std::fabs(static_cast<double>(a) * b);
            direct[tap] = std::fma(a, b, direct[tap]);
          }
        }
      }
    }
    float w2[9], w4[9];
    double d2[9], d4[9];
    winograd_dw<float>(f2, N, P, Q, pad, x_at, dy_at, w2);
    winograd_dw<float>(f4, N, P, Q, pad, x_at, dy_at, w4);
    winograd_dw<double>(f2, N, P, Q, pad, x_at, dy_at, d2);
    winograd_dw<double>(f4, N, P, Q, pad, x_at, dy_at, d4);
    for (int tap = 0; tap < 9; ++tap) {
      const double e[3] = {std::fabs(direct[tap] - ref[tap]) / scale[tap], std::fabs(w2[tap] - ref[tap]) / scale[tap],
                           std::fabs(w4[tap] - ref[tap]) / scale[tap]};
      for (int i = 0; i < 3; ++i) {
        mean[i] += e[i] / (9.0 * pairs);
        worst[i] = std::max(worst[i], e[i]);
      }
      check[0] = std::max(check[0], std::fabs(d2[tap] - ref[tap]) / scale[tap]);
      check[1] = std::max(check[1], std::fabs(d4[tap] - ref[tap]) / scale[tap]);
    }
  }
  std::printf("the algorithms in double against the reference (roundoff only): F(2x2) %.2g, F(4x4) %.2g\n", check[0],
              check[1]);
  std::printf("error / S in float (u = 2^-24 = %.3g), mean and worst over %d x 9 outputs:\n", std::ldexp(1.0, -24),
              pairs);
  const char* names[3] = {"direct, one serial sum", "Winograd F(2x2, 3x3)", "Winograd F(4x4, 3x3)"};
  for (int i = 0; i < 3; ++i) std::printf("  %-24s mean %.3g  worst %.3g\n", names[i], mean[i], worst[i]);
}
