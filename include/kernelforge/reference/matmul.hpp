// SPDX-License-Identifier: Apache-2.0
// CPU reference for the matrix product, accumulated in double and rounded once
// to T. Besides the value it computes the error scale every GPU result is
// judged against:
//   scale(i, j) = |alpha| * sum_p |op(A)(i, p)| * |op(B)(p, j)| + |beta * C(i, j)|
// (the magnitude the rounding errors of any summation order are proportional
// to; |C| itself can be tiny through cancellation). Large products are split
// over std::thread workers; matmul_element() computes single entries, for
// checking huge products on a sample of rows and columns.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "kernelforge/matmul.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "kernelforge/reference/parallel.hpp"

namespace kf::reference {

/// One entry of the reference product: the value (in double) and its error scale.
struct matmul_entry {
  double value = 0;
  double scale = 0;
};

/// Entry (i, j) of alpha * op(A) * op(B) + beta * c_in, where c_in is C(i, j)
/// before the call (not read when beta == 0).
template <class T>
matmul_entry matmul_element(op trans_a, op trans_b, std::size_t k, compute_t<T> alpha, const T* A, std::size_t lda,
                            const T* B, std::size_t ldb, compute_t<T> beta, nondeduced_t<T> c_in, std::size_t i,
                            std::size_t j) {
  double sum = 0, magnitude = 0;
  for (std::size_t p = 0; p < k; ++p) {
    const double a = to_double(trans_a == op::none ? A[i * lda + p] : A[p * lda + i]);
    const double b = to_double(trans_b == op::none ? B[p * ldb + j] : B[j * ldb + p]);
    sum += a * b;
    magnitude += std::fabs(a * b);
  }
  const double da = static_cast<double>(alpha), db = static_cast<double>(beta);
  matmul_entry e;
  e.value = da * sum;
  e.scale = std::fabs(da) * magnitude;
  if (db != 0) {  // BLAS: beta == 0 means C is not read
    const double c = db * to_double(c_in);
    e.value += c;
    e.scale += std::fabs(c);
  }
  return e;
}

/// C = alpha * op(A) * op(B) + beta * C in double, rounded once to T. When
/// `scale` is not null it receives the m x n error scales (row-major, dense:
/// scale[i * n + j]). op(A) and op(B) are first copied to contiguous double
/// rows, so every entry is one unit-stride dot product whatever the transposes.
template <class T>
void matmul(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, compute_t<T> alpha, const T* A,
            std::size_t lda, const T* B, std::size_t ldb, compute_t<T> beta, T* C, std::size_t ldc,
            std::vector<double>* scale = nullptr) {
  if (scale) scale->assign(m * n, 0.0);
  if (m == 0 || n == 0) return;
  std::vector<double> a(m * k), bt(n * k);  // a[i*k + p] = op(A)(i,p); bt[j*k + p] = op(B)(p,j)
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t p = 0; p < k; ++p) a[i * k + p] = to_double(trans_a == op::none ? A[i * lda + p] : A[p * lda + i]);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t p = 0; p < k; ++p)
      bt[j * k + p] = to_double(trans_b == op::none ? B[p * ldb + j] : B[j * ldb + p]);
  const double da = static_cast<double>(alpha), db = static_cast<double>(beta);
  parallel_rows(m, static_cast<double>(m) * n * (k + 1), [&](std::size_t row_begin, std::size_t row_end) {
    for (std::size_t i = row_begin; i < row_end; ++i) {
      const double* ai = a.data() + i * k;
      for (std::size_t j = 0; j < n; ++j) {
        const double* bj = bt.data() + j * k;
        double sum = 0, magnitude = 0;
        for (std::size_t p = 0; p < k; ++p) {
          const double prod = ai[p] * bj[p];
          sum += prod;
          magnitude += std::fabs(prod);
        }
        double value = da * sum, s = std::fabs(da) * magnitude;
        if (db != 0) {
          const double c = db * to_double(C[i * ldc + j]);
          value += c;
          s += std::fabs(c);
        }
        C[i * ldc + j] = from_double<T>(value);
        if (scale) (*scale)[i * n + j] = s;
      }
    }
  });
}

}  // namespace kf::reference
