// SPDX-License-Identifier: Apache-2.0
// Epilogue functors: what a GEMM-shaped tile kernel (kf::matmul's tile kernels,
// conv2d's implicit GEMM) applies to each output value in registers, just before
// the store. The contract, for the library's kernels and for your own functors:
//
//   value = epilogue(value, row, col)
//
//   value  the finished output in the compute type (float for float, TF32, half and
//          bfloat16 GEMMs; double for double): for matmul alpha*op(A)op(B) + beta*C,
//          for conv2d the sum plus bias[k] when a bias is given.
//   row    matmul: the row i of C. conv2d: the output pixel n*P*Q + p*Q + q.
//   col    matmul: the column j of C. conv2d: the output channel k.
//
// So a per-column bias is a per-output-channel bias in both. The functor is copied
// to the device by value (keep it small and trivially copyable; pointers it holds
// must be device pointers), must be callable as `__device__` (a functor with a
// __host__ __device__ or __device__ operator(), or an extended lambda), and is
// called exactly once per output element that the kernel stores.
//
// The library's own options (matmul_options / conv2d_options: a bias, a threshold
// ReLU) are instances of bias_relu_threshold below; your own go through the
// templated overloads in <kernelforge/matmul.cuh> and <kernelforge/conv.cuh>.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define KF_EPILOGUE_HD __host__ __device__ __forceinline__
#else
#define KF_EPILOGUE_HD inline
#endif

namespace kf::epilogue {

/// The value as computed: the kernels' default.
struct identity {
  template <class V>
  KF_EPILOGUE_HD V operator()(V value, std::int64_t /*row*/, std::int64_t /*col*/) const {
    return value;
  }
};

/// value + bias[col] (a bias per column of C, per output channel of conv2d).
template <class B = float>
struct bias_add {
  const B* bias;
  template <class V>
  KF_EPILOGUE_HD V operator()(V value, std::int64_t /*row*/, std::int64_t col) const {
    return value + static_cast<V>(bias[col]);
  }
};

/// The library's threshold ReLU (kf::relu_threshold_forward): value <= t ? 0 : value.
/// NaN <= t is false, so NaN propagates.
struct relu_threshold {
  float threshold = 0.0f;
  template <class V>
  KF_EPILOGUE_HD V operator()(V value, std::int64_t /*row*/, std::int64_t /*col*/) const {
    return value <= static_cast<V>(threshold) ? V(0) : value;
  }
};

/// min(max(value, lo), hi); NaN propagates.
struct clamp {
  float lo, hi;
  template <class V>
  KF_EPILOGUE_HD V operator()(V value, std::int64_t /*row*/, std::int64_t /*col*/) const {
    if (value < static_cast<V>(lo)) return static_cast<V>(lo);
    if (value > static_cast<V>(hi)) return static_cast<V>(hi);
    return value;
  }
};

/// then(first(value)): e.g. compose<bias_add<>, relu_threshold>{{bias}, {0.0f}}.
template <class First, class Then>
struct compose {
  First first;
  Then then;
  template <class V>
  KF_EPILOGUE_HD V operator()(V value, std::int64_t row, std::int64_t col) const {
    return then(first(value, row, col), row, col);
  }
};

/// The run-time form behind matmul_options / conv2d_options: an optional bias per
/// column (nullptr: none), then an optional threshold ReLU.
template <class B = float>
struct bias_relu_threshold {
  const B* bias = nullptr;
  bool relu = false;
  float threshold = 0.0f;
  template <class V>
  KF_EPILOGUE_HD V operator()(V value, std::int64_t /*row*/, std::int64_t col) const {
    if (bias != nullptr) value += static_cast<V>(bias[col]);
    if (relu && value <= static_cast<V>(threshold)) value = V(0);
    return value;
  }
};

}  // namespace kf::epilogue
