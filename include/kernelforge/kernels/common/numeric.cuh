// SPDX-License-Identifier: Apache-2.0
// Storage type <-> compute type. Half-precision types are stored in 16 bits and
// computed in fp32; float and double compute in themselves.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernelforge/types.hpp"

namespace kf::detail {

// The mapping itself is public (kernelforge/types.hpp): the API takes scalars as compute_t<T>.
using kf::compute_t;

template <class T>
__host__ __device__ __forceinline__ compute_t<T> to_compute(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return v;
  }
}

template <class T>
__host__ __device__ __forceinline__ T from_compute(compute_t<T> v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return v;
  }
}

/// Two compute values rounded to a 16-bit T, packed in 32 bits (lo in the low
/// half, the element order in memory): one cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32,
/// the same round-to-nearest-even as from_compute on each.
template <class T>
__host__ __device__ __forceinline__ std::uint32_t from_compute_pair(float lo, float hi) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "pairs of 16-bit elements");
  std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162> pair;
  if constexpr (std::is_same_v<T, __half>) {
    pair = __floats2half2_rn(lo, hi);
  } else {
    pair = __floats2bfloat162_rn(lo, hi);
  }
  std::uint32_t bits;
  static_assert(sizeof(pair) == sizeof(bits), "two 16-bit elements");
  memcpy(&bits, &pair, sizeof(bits));
  return bits;
}

}  // namespace kf::detail
