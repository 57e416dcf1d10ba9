// SPDX-License-Identifier: Apache-2.0
// The elementwise launcher: validate -> plan -> dispatch by variant, and the
// explicit instantiations shipped in the fatbin (float, double, __half, __nv_bfloat16).
// Each operation is the one elementwise kernel (02_vectorized.cuh) with a functor
// of ops.cuh, planned and launched by launch.cuh as kf::transform is.
#include <string>

#include "kernelforge/kernels/elementwise/launch.cuh"
#include "kernelforge/kernels/elementwise/ops.cuh"
#include "kernelforge/elementwise.hpp"

namespace kf {

const char* to_string(elementwise_variant variant) noexcept {
  switch (variant) {
    case elementwise_variant::best: return "best";
    case elementwise_variant::naive: return "naive";
    case elementwise_variant::vectorized: return "vectorized";
  }
  return "unknown";
}

namespace detail {
namespace {

/// The runtime's same-or-disjoint check for arrays of n elements of T.
template <class T>
void require_same_or_disjoint_arrays(const char* what, const char* out_name, const T* out, const char* in_name,
                                     const T* in, std::size_t n) {
  require_same_or_disjoint(what, out_name, out, n * sizeof(T), in_name, in, n * sizeof(T));
}

/// Each pointer: non-null when n > 0, and aligned to its element type.
template <class T>
void require_array(const char* what, const char* name, const T* p, std::size_t n) {
  require_pointer(what, name, p, n);
  require_aligned(what, name, p, alignof(T));
}

void validate_options(const char* what, const elementwise_options& options) {
  require_block_size(what, options.block_size);
  require_one_of(what, "options.variant", options.variant,
                 {elementwise_variant::best, elementwise_variant::naive, elementwise_variant::vectorized});
}

/// Enqueues `out[i] = op(in0[i], ...)` on elements of T with the variant options asks for. n > 0.
template <class T, class Op, class... In>
void launch_elementwise(const char* what, std::size_t n, const elementwise_options& options, Op op, T* out,
                        const In*... in) {
  const on_storage<T, Op> element_op{op};
  if (options.variant == elementwise_variant::naive) {
    launch_elementwise_naive(what, n, options.block_size, options.stream, element_op, out, in...);
  } else {  // vectorized, and best: the fastest step on every architecture we ship
    launch_elementwise_vectorized(what, n, options.block_size, options.stream, element_op, out, in...);
  }
}

}  // namespace

template <class T>
void saxpy_impl(std::size_t n, compute_t<T> a, const T* x, T* y, const elementwise_options& options) {
  const char* what = "kf::saxpy";
  require_array(what, "x", x, n);
  require_array(what, "y", y, n);
  require_same_or_disjoint_arrays(what, "y", y, "x", x, n);
  validate_options(what, options);
  if (n == 0) return;
  launch_elementwise(what, n, options, saxpy_op<compute_t<T>>{a}, y, x, y);
}

template <class T>
void vector_add_impl(std::size_t n, const T* a, const T* b, T* c, const elementwise_options& options) {
  const char* what = "kf::vector_add";
  require_array(what, "a", a, n);
  require_array(what, "b", b, n);
  require_array(what, "c", c, n);
  require_same_or_disjoint_arrays(what, "c", c, "a", a, n);
  require_same_or_disjoint_arrays(what, "c", c, "b", b, n);
  validate_options(what, options);
  if (n == 0) return;
  launch_elementwise(what, n, options, add_op<compute_t<T>>{}, c, a, b);
}

template <class T>
void relu_threshold_forward_impl(std::size_t n, const T* x, T* y, compute_t<T> threshold,
                                 const elementwise_options& options) {
  const char* what = "kf::relu_threshold_forward";
  require_array(what, "x", x, n);
  require_array(what, "y", y, n);
  require_same_or_disjoint_arrays(what, "y", y, "x", x, n);
  validate_options(what, options);
  if (n == 0) return;
  launch_elementwise(what, n, options, relu_forward_op<compute_t<T>>{threshold}, y, x);
}

template <class T>
void relu_threshold_backward_impl(std::size_t n, const T* dy, const T* x, T* dx, compute_t<T> threshold,
                                  const elementwise_options& options) {
  const char* what = "kf::relu_threshold_backward";
  require_array(what, "dy", dy, n);
  require_array(what, "x", x, n);
  require_array(what, "dx", dx, n);
  require_same_or_disjoint_arrays(what, "dx", dx, "dy", dy, n);
  require_same_or_disjoint_arrays(what, "dx", dx, "x", x, n);
  validate_options(what, options);
  if (n == 0) return;
  launch_elementwise(what, n, options, relu_backward_op<compute_t<T>>{threshold}, dx, dy, x);
}

#define KF_INSTANTIATE_ELEMENTWISE(T)                                                                                \
  template void saxpy_impl<T>(std::size_t, compute_t<T>, const T*, T*, const elementwise_options&);                  \
  template void vector_add_impl<T>(std::size_t, const T*, const T*, T*, const elementwise_options&);                 \
  template void relu_threshold_forward_impl<T>(std::size_t, const T*, T*, compute_t<T>, const elementwise_options&); \
  template void relu_threshold_backward_impl<T>(std::size_t, const T*, const T*, T*, compute_t<T>,                   \
                                                const elementwise_options&);

KF_INSTANTIATE_ELEMENTWISE(float)
KF_INSTANTIATE_ELEMENTWISE(double)
KF_INSTANTIATE_ELEMENTWISE(__half)
KF_INSTANTIATE_ELEMENTWISE(__nv_bfloat16)

}  // namespace detail
}  // namespace kf
