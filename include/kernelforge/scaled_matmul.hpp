// SPDX-License-Identifier: Apache-2.0
// The FP8 matrix product with dequantization scales, as training and serving
// run it (torch._scaled_mm, cuBLASLt's FP8 matmul, DeepGEMM):
//   D (m x n) = act(alpha * sum_p sA(i, p) op(A)(i, p) * sB(p, j) op(B)(p, j) + beta * D + bias[j])
// with A and B in FP8 (__nv_fp8_e4m3 or __nv_fp8_e5m2), the products
// accumulated in fp32, and D in __nv_bfloat16, __half or float. The scales sA,
// sB are fp32 values in device memory that dequantize the operands (the real
// value of A(i, p) is sA(i, p) * A(i, p)); the scaling mode says which element
// uses which scale. Host-only C++17, like every public header.
#pragma once

#include <cstddef>

#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include "kernelforge/matmul.hpp"
#include "kernelforge/types.hpp"

namespace kf {

/// Which scale multiplies which element (kb = ceil(k / 128), nb = ceil(n / 128);
/// every scale array is dense, row-major, in device memory):
enum class fp8_scaling {
  per_tensor,  ///< one scale per operand: scales.a[0], scales.b[0]
  rowwise,     ///< A per row, B per column: scales.a[i] (m values), scales.b[j] (n values)
  blockwise,   ///< DeepSeek-V3's 1 x 128 blocks of A along k and 128 x 128 blocks of B:
               ///< scales.a[i * kb + p / 128] (m x kb), scales.b[(j / 128) * kb + p / 128] (nb x kb)
};

/// The dequantization scales of A and B (device pointers to fp32) and their mode.
struct fp8_scales {
  fp8_scaling mode = fp8_scaling::per_tensor;
  const float* a = nullptr;
  const float* b = nullptr;
};

/// The steps of the FP8 progression (include/kernelforge/kernels/matmul/scaled/).
enum class scaled_matmul_variant {
  best,
  naive,  ///< one thread per element of D, fp32 partial sums promoted and scaled every 128 of k
  /// mma.sync FP8 tensor cores (compute capability 8.9+), both operands k-major
  /// with 16-byte aligned rows (trans_a none, trans_b transpose); errc::unsupported otherwise
  mma_sync,
  /// Hopper (sm_90a) tensor cores: TMA, warp specialization, the partial sums
  /// promoted into fp32 registers every 128 of k; errc::unsupported elsewhere
  /// (and for k == 0, which only the naive step computes)
  wgmma,
};

struct scaled_matmul_options {
  cudaStream_t stream = nullptr;  ///< nullptr: the legacy default stream
  scaled_matmul_variant variant = scaled_matmul_variant::best;
  /// Epilogue, as kf::matmul's: bias (n values of D's element type, one per column;
  /// nullptr: none), then the threshold ReLU v <= relu_threshold ? 0 : v when relu is set.
  const void* bias = nullptr;
  bool relu = false;
  float relu_threshold = 0.0f;
  /// When set: the call writes max |D(i, j)| over the m x n values it stores (after
  /// rounding to D's type) to this device float, 0 when m or n is 0, NaN when any is
  /// NaN -- what a training step needs to pick the next FP8 scale.
  float* amax = nullptr;
};

namespace detail {
// Defined and instantiated for the shipped type combinations in src/matmul/scaled_matmul.cu.
template <class TA, class TB, class TD>
void scaled_matmul_impl(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const TA* A,
                        std::size_t lda, const TB* B, std::size_t ldb, const fp8_scales& scales, float beta, TD* D,
                        std::size_t ldd, const scaled_matmul_options& options);
}  // namespace detail

/// The FP8 operand pairs shipped (e5m2 x e5m2 is left out, as cuBLASLt leaves it out).
template <class TA, class TB>
inline constexpr bool is_fp8_operand_pair_v = (std::is_same_v<TA, __nv_fp8_e4m3> &&
                                               is_one_of_v<TB, __nv_fp8_e4m3, __nv_fp8_e5m2>) ||
                                              (std::is_same_v<TA, __nv_fp8_e5m2> && std::is_same_v<TB, __nv_fp8_e4m3>);

/// The output types shipped.
template <class TD>
inline constexpr bool is_scaled_matmul_output_v = is_one_of_v<TD, __nv_bfloat16, __half, float>;

/// Row-major, BLAS conventions as kf::matmul (beta == 0: D is not read; k == 0:
/// D = beta * D plus the epilogue, and the scales are not read; m == 0 or n == 0:
/// a no-op but for amax):
///   op(A)(i, p) = trans_a == op::none ? A[i * lda + p] : A[p * lda + i]
///   op(B)(p, j) = trans_b == op::none ? B[p * ldb + j] : B[j * ldb + p]
/// fp32 accumulation; partial sums over each 128 of k are promoted into an fp32
/// total (and, blockwise, scaled there), as FP8 tensor cores need.
/// Needs compute capability 8.9 or newer (FP8 tensor cores): errc::unsupported below.
template <class TA, class TB, class TD>
void scaled_matmul(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, nondeduced_t<float> alpha,
                   const TA* A, std::size_t lda, const TB* B, std::size_t ldb, const fp8_scales& scales,
                   nondeduced_t<float> beta, TD* D, std::size_t ldd, const scaled_matmul_options& options = {}) {
  static_assert(is_fp8_operand_pair_v<TA, TB>,
                "kf::scaled_matmul: A and B must be __nv_fp8_e4m3 x __nv_fp8_e4m3, __nv_fp8_e4m3 x __nv_fp8_e5m2 "
                "or __nv_fp8_e5m2 x __nv_fp8_e4m3");
  static_assert(is_scaled_matmul_output_v<TD>, "kf::scaled_matmul: D must be __nv_bfloat16, __half or float");
  detail::scaled_matmul_impl<TA, TB, TD>(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, scales, beta, D, ldd,
                                         options);
}

/// Names for messages and benchmark labels ("per_tensor", "naive", ...).
[[nodiscard]] const char* to_string(fp8_scaling mode) noexcept;
[[nodiscard]] const char* to_string(scaled_matmul_variant variant) noexcept;

}  // namespace kf
