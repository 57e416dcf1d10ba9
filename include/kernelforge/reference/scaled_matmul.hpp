// SPDX-License-Identifier: Apache-2.0
// CPU reference for kf::scaled_matmul: the product of the dequantized operands
// (scale times FP8 value, exact in double) accumulated in double, then the
// epilogue, rounded once to D's type. With it the error scale every GPU result
// is judged against (as reference/matmul.hpp):
//   scale(i, j) = |alpha| * sum_p |sA a| |sB b| + |beta * D(i, j)| + |bias[j]|
// and the amax of the rounded output.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "kernelforge/reference/elementwise.hpp"
#include "kernelforge/reference/parallel.hpp"
#include "kernelforge/scaled_matmul.hpp"

namespace kf::reference {

/// The scale of op(A)(i, p) or op(B)(p, j) under `mode` (host copies of the
/// scale arrays; kb = ceil(k / 128)).
inline double scale_of_a(const fp8_scales& s, const float* a, std::size_t i, std::size_t p, std::size_t kb) {
  if (s.mode == fp8_scaling::per_tensor) return a[0];
  if (s.mode == fp8_scaling::rowwise) return a[i];
  return a[i * kb + p / 128];
}
inline double scale_of_b(const fp8_scales& s, const float* b, std::size_t p, std::size_t j, std::size_t kb) {
  if (s.mode == fp8_scaling::per_tensor) return b[0];
  if (s.mode == fp8_scaling::rowwise) return b[j];
  return b[(j / 128) * kb + p / 128];
}

/// D = act(alpha * (sA op(A)) (sB op(B)) + beta * D + bias) in double, rounded
/// once to TD. scale_a / scale_b: host copies of the scales (scales.mode says
/// how many); bias: host copy or nullptr. Returns the amax of the rounded D;
/// `scale` (when given) receives the m x n error scales, and `pre_activation`
/// the m x n values before the threshold ReLU (a GPU sum within its error bound
/// of the threshold may land on either side of the jump).
template <class TA, class TB, class TD>
double scaled_matmul(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const TA* A,
                     std::size_t lda, const TB* B, std::size_t ldb, const fp8_scales& scales, const float* scale_a,
                     const float* scale_b, float beta, TD* D, std::size_t ldd, const TD* bias, bool relu,
                     float relu_threshold, std::vector<double>* scale = nullptr,
                     std::vector<double>* pre_activation = nullptr) {
  if (scale) scale->assign(m * n, 0.0);
  if (pre_activation) pre_activation->assign(m * n, 0.0);
  if (m == 0 || n == 0) return 0.0;
  const std::size_t kb = (k + 127) / 128;
  std::vector<double> a(m * k), bt(n * k);  // dequantized: a[i*k + p] = sA op(A)(i,p); bt[j*k + p] = sB op(B)(p,j)
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t p = 0; p < k; ++p)
      a[i * k + p] =
          scale_of_a(scales, scale_a, i, p, kb) * to_double(trans_a == op::none ? A[i * lda + p] : A[p * lda + i]);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t p = 0; p < k; ++p)
      bt[j * k + p] =
          scale_of_b(scales, scale_b, p, j, kb) * to_double(trans_b == op::none ? B[p * ldb + j] : B[j * ldb + p]);
  const double da = alpha, db = beta;
  std::vector<double> row_amax(m, 0.0);
  parallel_rows(m, static_cast<double>(m) * n * (k + 1), [&](std::size_t row_begin, std::size_t row_end) {
    for (std::size_t i = row_begin; i < row_end; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        double sum = 0, magnitude = 0;
        for (std::size_t p = 0; p < k; ++p) {
          const double prod = a[i * k + p] * bt[j * k + p];
          sum += prod;
          magnitude += std::fabs(prod);
        }
        double value = da * sum, s = std::fabs(da) * magnitude;
        if (db != 0) {  // BLAS: beta == 0 does not read D
          const double c = db * to_double(D[i * ldd + j]);
          value += c;
          s += std::fabs(c);
        }
        if (bias != nullptr) {
          value += to_double(bias[j]);
          s += std::fabs(to_double(bias[j]));
        }
        if (pre_activation) (*pre_activation)[i * n + j] = value;
        if (relu && value <= relu_threshold) value = 0.0;
        D[i * ldd + j] = from_double<TD>(value);
        const double stored = std::fabs(to_double(D[i * ldd + j]));
        row_amax[i] = std::isnan(stored) || std::isnan(row_amax[i]) ? NAN : std::max(row_amax[i], stored);
        if (scale) (*scale)[i * n + j] = s;
      }
    }
  });
  double amax = 0.0;
  for (double r : row_amax) amax = std::isnan(r) || std::isnan(amax) ? NAN : std::max(amax, r);
  return amax;
}

}  // namespace kf::reference
