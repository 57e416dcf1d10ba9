// SPDX-License-Identifier: Apache-2.0
// The arguments every matrix-product kernel takes, already validated by the
// launcher (src/matmul/validate.cpp, called by src/matmul/matmul.cu). Row-major:
//   C (m x n) = alpha * op(A) (m x k) * op(B) (k x n) + beta * C
// op(A)(i, p) = trans_a ? A[p * lda + i] : A[i * lda + p]
// op(B)(p, j) = trans_b ? B[j * ldb + p] : B[p * ldb + j]
// beta == 0: C is not read (NaN in C must not leak through).
// k == 0: C = beta * C (the launcher handles it; kernels may assume k >= 1).
// m, n >= 1 (the launcher returns early on m == 0 or n == 0).
// alpha and beta are compute_t<T>: float for the 16-bit types.
#pragma once

#include <cstddef>

#include "kernelforge/matmul.hpp"
#include "kernelforge/types.hpp"

namespace kf::detail {

template <class T>
struct gemm_args {
  bool trans_a = false;
  bool trans_b = false;
  std::size_t m = 0, n = 0, k = 0;
  compute_t<T> alpha{};  ///< float for __half / __nv_bfloat16
  const T* A = nullptr;
  std::size_t lda = 0;
  const T* B = nullptr;
  std::size_t ldb = 0;
  compute_t<T> beta{};
  T* C = nullptr;
  std::size_t ldc = 0;
};

/// The kernels' arguments from the public call's (the library's launcher and
/// <kernelforge/matmul.cuh> both build them here).
template <class T>
gemm_args<T> make_gemm_args(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, compute_t<T> alpha,
                            const T* A, std::size_t lda, const T* B, std::size_t ldb, compute_t<T> beta, T* C,
                            std::size_t ldc) {
  gemm_args<T> g;
  g.trans_a = trans_a == op::transpose;
  g.trans_b = trans_b == op::transpose;
  g.m = m, g.n = n, g.k = k;
  g.alpha = alpha, g.beta = beta;
  g.A = A, g.lda = lda;
  g.B = B, g.ldb = ldb;
  g.C = C, g.ldc = ldc;
  return g;
}

/// Copies a product's arguments into the parameter block of a kernel that
/// takes them by value (fields m, n, k, alpha, beta, A, lda, B, ldb, C, ldc;
/// the extents and leading dimensions converted to the block's index type).
/// The launch decisions (tiles, stages) stay the launcher's.
template <class Params, class T>
void copy_gemm_args(Params& p, const gemm_args<T>& g) {
  using index = decltype(p.m);
  p.m = static_cast<index>(g.m);
  p.n = static_cast<index>(g.n);
  p.k = static_cast<index>(g.k);
  p.alpha = g.alpha;
  p.beta = g.beta;
  p.A = g.A;
  p.lda = static_cast<index>(g.lda);
  p.B = g.B;
  p.ldb = static_cast<index>(g.ldb);
  p.C = g.C;
  p.ldc = static_cast<index>(g.ldc);
}

}  // namespace kf::detail
