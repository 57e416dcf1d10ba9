// SPDX-License-Identifier: Apache-2.0
// What every FP8 step receives, and the one home of the scaling rules: which
// scale multiplies a 128-long partial sum (blockwise) and which multiplies the
// finished fp32 sum (per-tensor, rowwise), and the epilogue that stores D and
// folds its amax. Host and device code read it.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_fp8.h>

#include "../../common/host_device.hpp"
#include "../../common/numeric.cuh"
#include "kernelforge/scaled_matmul.hpp"

namespace kf::detail {

/// The operand pairs x output types kf::scaled_matmul ships (is_fp8_operand_pair_v,
/// is_scaled_matmul_output_v): X(TA, TB, TD) for each, for the explicit
/// instantiations of every translation unit that compiles a step.
/// KF_FOR_EACH_SCALED_MATMUL_OPERANDS(X, TD): the operand pairs for one output
/// type (the wgmma step compiles one output type per translation unit, so that
/// they compile in parallel: src/matmul/scaled_wgmma_sm90a_*.cu).
// clang-format off
#define KF_FOR_EACH_SCALED_MATMUL_OPERANDS(X, TD)                                   \
  X(__nv_fp8_e4m3, __nv_fp8_e4m3, TD)                                               \
  X(__nv_fp8_e4m3, __nv_fp8_e5m2, TD)                                               \
  X(__nv_fp8_e5m2, __nv_fp8_e4m3, TD)
#define KF_FOR_EACH_SCALED_MATMUL_TYPES(X)                                          \
  KF_FOR_EACH_SCALED_MATMUL_OPERANDS(X, __nv_bfloat16)                              \
  KF_FOR_EACH_SCALED_MATMUL_OPERANDS(X, __half)                                     \
  KF_FOR_EACH_SCALED_MATMUL_OPERANDS(X, float)
// clang-format on

/// FP8 tensor cores promote partial sums into fp32 at this k granularity (the
/// blockwise scales' block, and 4 k-groups of wgmma.m64nNk32).
inline constexpr std::size_t fp8_promotion_k = 128;

template <class TA, class TB, class TD>
struct scaled_gemm_args {
  std::size_t m = 0, n = 0, k = 0;
  const TA* A = nullptr;
  const TB* B = nullptr;
  TD* D = nullptr;
  // op(A)(i, p) = A[i * a_row + p * a_col]; op(B)(p, j) = B[p * b_row + j * b_col].
  std::size_t a_row = 0, a_col = 0, b_row = 0, b_col = 0, ldd = 0;
  fp8_scaling mode = fp8_scaling::per_tensor;
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  std::size_t k_blocks = 0;  ///< ceil(k / 128): a row of blockwise scales
  float alpha = 1, beta = 0;
  const TD* bias = nullptr;
  bool relu = false;
  float relu_threshold = 0;
  unsigned* amax_bits = nullptr;  ///< the caller's float, as bits: |v| of non-negative floats order as integers
};

/// The scale of the partial sum over k block `kb` of D(i, j): sA * sB blockwise, else 1.
template <class TA, class TB, class TD>
KF_HOST_DEVICE inline float block_scale(const scaled_gemm_args<TA, TB, TD>& g, std::size_t i, std::size_t j,
                                        std::size_t kb) {
  if (g.mode != fp8_scaling::blockwise) return 1.0f;
  return g.scale_a[i * g.k_blocks + kb] * g.scale_b[(j / fp8_promotion_k) * g.k_blocks + kb];
}

/// Blockwise scales on a tile of D's columns [col_base, col_base + width), in
/// wgmma's accumulator column groups of 8: the first group whose columns lie in
/// the 128-column block of B's scales after col_base's, or width / 8 (none)
/// where the tile ends inside col_base's block or the next block starts at or
/// past n (its scales do not exist). The wgmma step's tiles start at multiples
/// of 64 and are at most 192 wide, so a tile spans at most two blocks and the
/// boundary, where there is one, falls on a 64-column chunk (group 8 or 16).
KF_HOST_DEVICE constexpr int next_b_scale_block_group(long long col_base, int width, long long n) {
  const long long block = static_cast<long long>(fp8_promotion_k);
  const long long next = (col_base / block + 1) * block;
  return next >= col_base + width || next >= n ? width / 8 : static_cast<int>((next - col_base) / 8);
}

/// The scale of the finished sum of D(i, j): sA * sB per tensor or per row / column, else 1.
template <class TA, class TB, class TD>
KF_HOST_DEVICE inline float outer_scale(const scaled_gemm_args<TA, TB, TD>& g, std::size_t i, std::size_t j) {
  if (g.mode == fp8_scaling::per_tensor) return g.scale_a[0] * g.scale_b[0];
  if (g.mode == fp8_scaling::rowwise) return g.scale_a[i] * g.scale_b[j];
  return 1.0f;
}

/// |v| as stored in TD (rounded once), as bits: non-negative floats order as
/// their bits, and NaN's bits exceed every number's, so an unsigned max of
/// these is the amax, NaN when any value is NaN.
template <class TD>
__device__ __forceinline__ unsigned stored_abs_bits(float v) {
  return __float_as_uint(fabsf(to_compute(from_compute<TD>(v))));
}

/// D(i, j) from its scaled fp32 sum: alpha * acc + beta * D + bias[j], the
/// threshold ReLU (NaN propagates), rounded once to TD and stored. Returns
/// |stored value|'s bits for the amax (NaN's bits exceed every number's).
template <class TA, class TB, class TD>
__device__ __forceinline__ unsigned store_scaled(const scaled_gemm_args<TA, TB, TD>& g, std::size_t i, std::size_t j,
                                                 float acc) {
  TD* d = g.D + i * g.ldd + j;
  float v = g.alpha * acc;
  if (g.beta != 0.0f) v += g.beta * to_compute(*d);  // BLAS: beta == 0 does not read D
  if (g.bias != nullptr) v += to_compute(g.bias[j]);
  if (g.relu && v <= g.relu_threshold) v = 0.0f;
  *d = from_compute<TD>(v);
  return stored_abs_bits<TD>(v);
}

}  // namespace kf::detail
