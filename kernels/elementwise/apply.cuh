// SPDX-License-Identifier: Apache-2.0
// Apply an elementwise op to one element of N input arrays (N = 1 or 2),
// converting storage -> compute -> storage type.
#pragma once

#include <cstddef>

#include "../common/numeric.cuh"

namespace kf::detail {

/// The input arrays of one elementwise call, passed to kernels by value.
template <class T, int N>
struct input_pointers {
  const T* p[N];
};

template <class T, class Op>
__device__ __forceinline__ T apply_op(const Op& op, T a) {
  return from_compute<T>(op(to_compute(a)));
}

template <class T, class Op>
__device__ __forceinline__ T apply_op(const Op& op, T a, T b) {
  return from_compute<T>(op(to_compute(a), to_compute(b)));
}

/// out = op(in[0][i], ..., in[N-1][i]).
template <class T, int N, class Op>
__device__ __forceinline__ T apply_at(const Op& op, const input_pointers<T, N>& in, std::size_t i) {
  static_assert(N == 1 || N == 2, "elementwise ops take one or two inputs");
  if constexpr (N == 1) {
    return apply_op(op, in.p[0][i]);
  } else {
    return apply_op(op, in.p[0][i], in.p[1][i]);
  }
}

}  // namespace kf::detail
