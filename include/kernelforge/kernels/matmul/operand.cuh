// SPDX-License-Identifier: Apache-2.0
// Device helpers every matrix-product kernel shares: reading op(A) and op(B) by
// logical (row, column) whatever the transposes, the BLAS epilogue
// (beta == 0: C is not read), and tile loads into shared memory. The
// launchers' host helpers are in launch_util.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "../common/numeric.cuh"
#include "../common/vector_access.cuh"
#include "gemm_args.cuh"
#include "kernelforge/epilogue.cuh"
#include "launch_util.hpp"  // for split_k.cuh, which takes grid_2d from here

namespace kf::detail {

/// op(A)(i, p): A is m x k as stored (TransA false) or k x m stored (TransA true).
template <bool TransA, class T>
__device__ __forceinline__ T load_op_a(const gemm_args<T>& g, std::size_t i, std::size_t p) {
  return TransA ? g.A[p * g.lda + i] : g.A[i * g.lda + p];
}

/// op(B)(p, j): B is k x n as stored (TransB false) or n x k stored (TransB true).
template <bool TransB, class T>
__device__ __forceinline__ T load_op_b(const gemm_args<T>& g, std::size_t p, std::size_t j) {
  return TransB ? g.B[j * g.ldb + p] : g.B[p * g.ldb + j];
}

/// op(A)(i, p) and op(B)(p, j) in the compute type (fp32 for the 16-bit types).
template <bool TransA, class T>
__device__ __forceinline__ compute_t<T> load_op_a_compute(const gemm_args<T>& g, std::size_t i, std::size_t p) {
  return to_compute(load_op_a<TransA>(g, i, p));
}
template <bool TransB, class T>
__device__ __forceinline__ compute_t<T> load_op_b_compute(const gemm_args<T>& g, std::size_t p, std::size_t j) {
  return to_compute(load_op_b<TransB>(g, p, j));
}

/// C(i, j) = ep(alpha * acc + beta * C(i, j), i, j), computed in compute_t<T>
/// (fp32 for the 16-bit types) and rounded once to T; C is not read when
/// beta == 0 (BLAS), so a NaN left in C never leaks into the result. The
/// epilogue functor (kernelforge/epilogue.cuh) runs once, on the finished
/// value, before the store.
template <class T, class Epilogue = epilogue::identity>
__device__ __forceinline__ void store_c(const gemm_args<T>& g, std::size_t i, std::size_t j, compute_t<T> acc,
                                        const Epilogue& ep = {}) {
  using C = compute_t<T>;
  T* c = g.C + i * g.ldc + j;
  const C v = g.beta == C(0) ? g.alpha * acc : g.alpha * acc + g.beta * to_compute(*c);
  *c = from_compute<T>(ep(v, static_cast<std::int64_t>(i), static_cast<std::int64_t>(j)));
}

/// Stores the results v[0..3] of row r, columns c .. c+3 (c a multiple of 4) of
/// an fp32 tile kernel: raw sums into the split-k workspace `partial` (dense
/// m x n) when it is non-null, else C = ep(alpha * v + beta * C) with one
/// 16-byte access where C's rows are 16-byte aligned (c_aligned) and all four
/// columns exist, element by element (store_c) at the right edge or misaligned.
template <class Epilogue>
__device__ __forceinline__ void store_c_quad(const gemm_args<float>& g, float* partial, bool c_aligned, std::size_t r,
                                             std::size_t c, const float* v, const Epilogue& ep) {
  if (partial != nullptr) {
    float* dst = partial + r * g.n + c;
    if (g.n % 4 == 0 && c + 4 <= g.n) {
      *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (c + q < g.n) dst[q] = v[q];
    }
  } else if (c_aligned && c + 4 <= g.n) {
    float4* dst = reinterpret_cast<float4*>(g.C + r * g.ldc + c);
    float4 out = make_float4(g.alpha * v[0], g.alpha * v[1], g.alpha * v[2], g.alpha * v[3]);
    if (g.beta != 0.f) {
      const float4 old = *dst;
      out.x = fmaf(g.beta, old.x, out.x), out.y = fmaf(g.beta, old.y, out.y);
      out.z = fmaf(g.beta, old.z, out.z), out.w = fmaf(g.beta, old.w, out.w);
    }
    const auto ri = static_cast<std::int64_t>(r), ci = static_cast<std::int64_t>(c);
    out.x = ep(out.x, ri, ci), out.y = ep(out.y, ri, ci + 1);
    out.z = ep(out.z, ri, ci + 2), out.w = ep(out.w, ri, ci + 3);
    *dst = out;
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (c + q < g.n) store_c(g, r, c + q, v[q], ep);
  }
}

/// Loads the ROWS x COLS tile of a logical matrix X (rows x cols, element
/// (r, c) at Trans ? P[c * ld + r] : P[r * ld + c]) whose top-left corner is
/// (r0, c0) into shared memory at s[r * RowStride + c * ColStride], with zeros
/// outside the matrix. Consecutive threads take consecutive elements in MEMORY
/// order (along c when !Trans, along r when Trans), so the global loads are
/// coalesced whichever way the operand is stored. op(A) is (m x k, TransA),
/// op(B) is (k x n, TransB).
template <bool Trans, int ROWS, int COLS, int THREADS, int RowStride, int ColStride, class T>
__device__ __forceinline__ void load_tile(const T* P, std::size_t ld, std::size_t rows, std::size_t cols,
                                          std::size_t r0, std::size_t c0, T* s, int tid) {
  static_assert(ROWS * COLS % THREADS == 0, "every thread loads the same number of elements");
#pragma unroll
  for (int it = 0; it < ROWS * COLS / THREADS; ++it) {
    const int e = tid + it * THREADS;
    const int r = Trans ? e % ROWS : e / COLS;
    const int c = Trans ? e / ROWS : e % COLS;
    const std::size_t gr = r0 + r, gc = c0 + c;
    T v = T(0);
    if (gr < rows && gc < cols) v = Trans ? P[gc * ld + gr] : P[gr * ld + gc];
    s[r * RowStride + c * ColStride] = v;
  }
}

}  // namespace kf::detail
