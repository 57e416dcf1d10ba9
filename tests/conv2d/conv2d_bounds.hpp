// SPDX-License-Identifier: Apache-2.0
// What the conv2d GPU suites of several element types share
// (conv2d_nhwc_gpu_test.cpp, conv2d_backward_gpu_test.cpp; the bounds are
// derived at the top of each): the element types by name, and the error bound
// of an fp32 sum of products, for float (exact or TF32 products) and for
// __half and __nv_bfloat16 (exact products, fp32 sums rounded once to T).
#pragma once

#include <cstddef>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "test_support.hpp"

namespace kf::test::conv2d {

/// fp32's unit roundoff.
constexpr double fp32_u = 0x1p-24;
/// The tensor core's alignment of each k-group's products (8 TF32 or 16
/// f16 / bf16 products aligned to the largest, each truncated at 2^-23 of it).
constexpr double tensor_core_alignment = 0x1p-18;
/// Truncating both inputs of a product to TF32 (10 mantissa bits).
constexpr double tf32_product = 2 * 0x1p-10 + 0x1p-20;

enum class dtype { f32, f16, bf16 };

inline const char* dtype_name(dtype t) {
  switch (t) {
    case dtype::f32: return "f32";
    case dtype::f16: return "f16";
    case dtype::bf16: return "bf16";
  }
  return "unknown";
}

template <class T>
constexpr dtype dtype_of() {
  if constexpr (std::is_same_v<T, __half>) {
    return dtype::f16;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return dtype::bf16;
  } else {
    return dtype::f32;
  }
}

/// The bound of an output that sums `terms` non-zero products in fp32 (S its
/// error scale, ref the exact result, u = 2^-24):
///   float:  (2 terms u + [tensor_cores] (tf32_product + tensor_core_alignment)) S;
///   16-bit: u_T |ref| + (1 + u_T) (2 terms u + [tensor_cores] tensor_core_alignment) S + a_T,
/// u_T = 2^-11 (half) or 2^-8 (bf16), a_T = 2^-25 (half's underflow) or 0.
/// As kf::test::tolerance: rel multiplies S, rel_ref |ref|.
template <class T>
kf::test::tolerance sum_tolerance(std::size_t terms, bool tensor_cores) {
  const double sums = 2 * static_cast<double>(terms) * fp32_u;
  if constexpr (std::is_same_v<T, float>) {
    return {sums + (tensor_cores ? tf32_product + tensor_core_alignment : 0.0), 0, 0};
  } else {
    const double u_t = kf::test::unit_roundoff<T>();
    const double a_t = std::is_same_v<T, __half> ? 0x1p-25 : 0.0;
    return {(1 + u_t) * (sums + (tensor_cores ? tensor_core_alignment : 0.0)), a_t, u_t};
  }
}

}  // namespace kf::test::conv2d
