// SPDX-License-Identifier: Apache-2.0
// The matrix-product family: row-major GEMM with BLAS semantics,
//   C (m x n) = alpha * op(A) (m x k) * op(B) (k x n) + beta * C,
// from the naive kernel of every tutorial to a warp-tiled, cp.async-pipelined
// SGEMM, TF32 tensor cores, and fp16 / bf16 tensor cores (fp32 accumulation).
// Each call validates its arguments, enqueues its work on options.stream and
// returns without synchronizing. Precompiled for float (every fp32 variant),
// double (naive, smem_tiled, blocktile_2d), __half and __nv_bfloat16 (naive,
// tensor_core_f16, wgmma_f16).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "kernelforge/math_mode.hpp"
#include "kernelforge/types.hpp"

namespace kf {

/// How an operand is read: as stored (none) or transposed.
enum class op { none, transpose };

/// The steps of the progression (include/kernelforge/kernels/matmul/, one file each, in this order);
/// `best` picks the fastest one this device runs for these arguments.
enum class matmul_variant {
  best,
  naive,             ///< one thread per output element, consecutive threads on consecutive rows
  coalesced,         ///< consecutive threads on consecutive columns: coalesced B and C accesses
  smem_tiled,        ///< TILE x TILE tiles of A and B staged in shared memory
  blocktile_1d,      ///< each thread computes a column of outputs in registers
  blocktile_2d,      ///< each thread computes a 2D tile of outputs in registers
  vectorized,        ///< 16-byte global loads, A's tile stored transposed in shared memory
  warp_tiled,        ///< warp-level tiles, multi-stage cp.async pipeline (sm_80+)
  large_tile,        ///< 128 x 256 block tiles, 16 x 8 outputs per thread, register double-buffered fragments
  tensor_core_tf32,  ///< TF32 tensor cores (sm_80+); needs math_mode::tf32
  tensor_core_f16,   ///< __half / __nv_bfloat16: mma.sync m16n8k16, ldmatrix, 4-stage cp.async (sm_80+)
  wgmma_f16,         ///< __half / __nv_bfloat16: wgmma + TMA, warp-specialized (sm_90a; else tensor_core_f16)
};

struct matmul_options {
  cudaStream_t stream = nullptr;  ///< nullptr: the legacy default stream
  matmul_variant variant = matmul_variant::best;
  math_mode math = math_mode::exact;  ///< exact never uses reduced precision

  // Fused epilogue, applied to each finished value in registers before it is
  // stored (kf::epilogue::bias_relu_threshold, include/kernelforge/epilogue.cuh):
  //   C(i, j) = relu(alpha * op(A) op(B)(i, j) + beta * C(i, j) + bias[j])
  // with relu(v) = v <= relu_threshold ? 0 : v (kf::relu_threshold_forward's rule: NaN propagates)
  // when relu is set. float only, on warp_tiled and tensor_core_tf32 (and best,
  // which picks one of them); other variants and types raise errc::unsupported.
  const void* bias = nullptr;  ///< n values of C's element type, one per column of C; nullptr: none
  bool relu = false;           ///< apply the threshold ReLU after the bias
  float relu_threshold = 0.0f;
};

namespace detail {
// Defined and instantiated for the shipped types in src/matmul/matmul.cu (the kernels of
// steps 07-10 in the translation units beside it: src/matmul/instances.cuh).
template <class T>
void matmul_impl(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, compute_t<T> alpha, const T* A,
                 std::size_t lda, const T* B, std::size_t ldb, compute_t<T> beta, T* C, std::size_t ldc,
                 const matmul_options& options);
}  // namespace detail

/// The element types the matrix-product family is precompiled for.
template <class T>
inline constexpr bool is_matmul_type_v = is_one_of_v<T, float, double, __half, __nv_bfloat16>;

/// Row-major: C (m x n) = alpha * op(A) (m x k) * op(B) (k x n) + beta * C.
///   op(A)(i, p) = trans_a == op::none ? A[i * lda + p] : A[p * lda + i]
///   op(B)(p, j) = trans_b == op::none ? B[p * ldb + j] : B[j * ldb + p]
/// BLAS conventions: beta == 0 means C is not read (NaN in C does not leak
/// through); k == 0 scales C by beta; m == 0 or n == 0 is a no-op. Leading
/// dimensions smaller than the rows they describe (lda < (trans_a ? m : k),
/// ldb < (trans_b ? k : n), ldc < n) are errc::invalid_argument.
/// variant tensor_core_tf32 needs math_mode::tf32 (errc::invalid_argument
/// otherwise) and compute capability 8.0+ (errc::unsupported otherwise).
/// __half and __nv_bfloat16: inputs and C in T, products accumulated in fp32,
/// alpha * acc + beta * C computed in fp32 and rounded once to T. Variants:
/// naive (any GPU), tensor_core_f16 (8.0+), wgmma_f16 (wgmma on 9.0 with an
/// sm_90a image, else tensor_core_f16), best (= wgmma_f16 on 8.0+, naive below);
/// any other variant is errc::unsupported. math_mode does not apply (fp16 and
/// bf16 products are exact in fp32).
/// options.bias / options.relu: see matmul_options; the bias must not overlap C.
/// Your own epilogue functor: the overload in <kernelforge/matmul.cuh> (nvcc).
/// T comes from A, B and C; alpha and beta are compute_t<T> (float for the
/// 16-bit types), so 1.0 and 0.0 work for every type.
template <class T>
void matmul(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, compute_t<T> alpha, const T* A,
            std::size_t lda, const T* B, std::size_t ldb, compute_t<T> beta, T* C, std::size_t ldc,
            const matmul_options& options = {}) {
  static_assert(is_matmul_type_v<T>,
                "kf::matmul: unsupported element type; the matrix-product family ships float, "
                "double, __half and __nv_bfloat16");
  detail::matmul_impl<T>(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, options);
}

/// Name of a variant ("naive", ...), for messages and benchmark labels.
[[nodiscard]] const char* to_string(matmul_variant variant) noexcept;

}  // namespace kf
