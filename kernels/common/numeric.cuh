// SPDX-License-Identifier: Apache-2.0
// Storage type <-> compute type. Half-precision types are stored in 16 bits and
// computed in fp32; float and double compute in themselves.
#pragma once

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

}  // namespace kf::detail
