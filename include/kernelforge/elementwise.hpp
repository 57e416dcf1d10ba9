// SPDX-License-Identifier: Apache-2.0
// The elementwise family: SAXPY, vector add, threshold ReLU forward and backward.
// Each call validates its arguments, enqueues one kernel on options.stream and
// returns without synchronizing. Precompiled for float, double, __half and
// __nv_bfloat16 (the half types compute in fp32).
#pragma once

#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "kernelforge/types.hpp"

namespace kf {

/// The element types the elementwise family is precompiled for.
template <class T>
inline constexpr bool is_elementwise_type_v = is_one_of_v<T, float, double, __half, __nv_bfloat16>;

/// The steps of the progression; `best` picks the fastest one this device runs.
enum class elementwise_variant {
  best,
  naive,       ///< one element per thread: the classic tutorial kernel
  vectorized,  ///< 16-byte loads/stores, grid-stride, several loads in flight
};

struct elementwise_options {
  cudaStream_t stream = nullptr;  ///< nullptr: the legacy default stream
  elementwise_variant variant = elementwise_variant::best;
  int block_size = 0;  ///< 0: the launcher decides; else a multiple of 32 in [32, 1024]
};

namespace detail {
// Defined and instantiated for the shipped types in src/elementwise/elementwise.cu.
template <class T>
void saxpy_impl(std::size_t n, compute_t<T> a, const T* x, T* y, const elementwise_options& options);
template <class T>
void vector_add_impl(std::size_t n, const T* a, const T* b, T* c, const elementwise_options& options);
template <class T>
void relu_threshold_forward_impl(std::size_t n, const T* x, T* y, compute_t<T> threshold,
                                 const elementwise_options& options);
template <class T>
void relu_threshold_backward_impl(std::size_t n, const T* dy, const T* x, T* dx, compute_t<T> threshold,
                                  const elementwise_options& options);
}  // namespace detail

#define KF_ELEMENTWISE_REQUIRE_TYPE(name)                      \
  static_assert(is_elementwise_type_v<T>, name                 \
                ": unsupported element type; the elementwise " \
                "family ships float, double, __half and __nv_bfloat16")

// T comes from the pointers; the scalars are compute_t<T> (float for the 16-bit
// types), so saxpy(n, 2.0, x, y) on float arrays and threshold 0 just work.

/// y = a*x + y. y == x is allowed.
template <class T>
void saxpy(std::size_t n, compute_t<T> a, const T* x, T* y, const elementwise_options& options = {}) {
  KF_ELEMENTWISE_REQUIRE_TYPE("kf::saxpy");
  detail::saxpy_impl<T>(n, a, x, y, options);
}

/// c = a + b. c may alias a or b.
template <class T>
void vector_add(std::size_t n, const T* a, const T* b, T* c, const elementwise_options& options = {}) {
  KF_ELEMENTWISE_REQUIRE_TYPE("kf::vector_add");
  detail::vector_add_impl<T>(n, a, b, c, options);
}

/// y = x <= threshold ? 0 : x (NaN in x propagates). y == x is allowed.
template <class T>
void relu_threshold_forward(std::size_t n, const T* x, T* y, compute_t<T> threshold,
                            const elementwise_options& options = {}) {
  KF_ELEMENTWISE_REQUIRE_TYPE("kf::relu_threshold_forward");
  detail::relu_threshold_forward_impl<T>(n, x, y, threshold, options);
}

/// dx = x <= threshold ? 0 : dy. dx == dy is allowed.
template <class T>
void relu_threshold_backward(std::size_t n, const T* dy, const T* x, T* dx, compute_t<T> threshold,
                             const elementwise_options& options = {}) {
  KF_ELEMENTWISE_REQUIRE_TYPE("kf::relu_threshold_backward");
  detail::relu_threshold_backward_impl<T>(n, dy, x, dx, threshold, options);
}

#undef KF_ELEMENTWISE_REQUIRE_TYPE

/// Name of a variant ("naive", ...), for messages and benchmark labels.
[[nodiscard]] const char* to_string(elementwise_variant variant) noexcept;

}  // namespace kf
