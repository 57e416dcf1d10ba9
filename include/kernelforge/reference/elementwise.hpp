// SPDX-License-Identifier: Apache-2.0
// CPU references for the elementwise family, computed in double and rounded
// once to T. Scalars are compute_t<T>, as in the GPU API. Tests, examples and benchmarks check the GPU against these.
#pragma once

#include <cstddef>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernelforge/types.hpp"

namespace kf::reference {

/// T -> double, exactly (every float, half and bfloat16 is a double).
template <class T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return static_cast<double>(__half2float(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return static_cast<double>(__bfloat162float(v));
  } else {
    return static_cast<double>(v);
  }
}

/// double -> T, rounded to nearest even once.
template <class T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __double2half(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __double2bfloat16(v);
  } else {
    return static_cast<T>(v);
  }
}

template <class T>
void saxpy(std::size_t n, compute_t<T> a, const T* x, T* y) {
  const double da = static_cast<double>(a);
  for (std::size_t i = 0; i < n; ++i) y[i] = from_double<T>(da * to_double(x[i]) + to_double(y[i]));
}

template <class T>
void vector_add(std::size_t n, const T* a, const T* b, T* c) {
  for (std::size_t i = 0; i < n; ++i) c[i] = from_double<T>(to_double(a[i]) + to_double(b[i]));
}

// `!(x > t)` would zero NaN; `x <= t` is false for NaN, so NaN passes through
// (PyTorch's semantics), both here and in the kernels.
template <class T>
void relu_threshold_forward(std::size_t n, const T* x, T* y, compute_t<T> threshold) {
  const double t = static_cast<double>(threshold);
  for (std::size_t i = 0; i < n; ++i) y[i] = to_double(x[i]) <= t ? from_double<T>(0.0) : x[i];
}

template <class T>
void relu_threshold_backward(std::size_t n, const T* dy, const T* x, T* dx, compute_t<T> threshold) {
  const double t = static_cast<double>(threshold);
  for (std::size_t i = 0; i < n; ++i) dx[i] = to_double(x[i]) <= t ? from_double<T>(0.0) : dy[i];
}

}  // namespace kf::reference
