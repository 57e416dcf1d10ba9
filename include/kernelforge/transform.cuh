// SPDX-License-Identifier: Apache-2.0
// kf::transform: your own elementwise operation on the library's vectorized
// kernel and launcher (the ones behind kf::saxpy and the other elementwise
// operations), instantiated in your own .cu (compiled by nvcc).
//
//   #include <kernelforge/transform.cuh>
//   kf::transform(n, [] __device__(float x) { return x > 0 ? x : 0.01f * x; }, y, x);   // y = leaky_relu(x)
//   kf::transform(n, fused{a, b, lo, hi}, y, x, z, options);                             // up to 4 inputs
//
// out[i] = op(in0[i], in1[i], ...) for i < n, with 1 to 4 input arrays of any
// trivially copyable types (they may differ from each other and from the
// output: int8_t in, float out), and `op` any device-callable functor or
// extended lambda (nvcc --extended-lambda) whose result converts to Out.
// What the launcher decides for you, as for kf::saxpy:
//  - the block size from this very instantiation's occupancy on the device and
//    the grid from the device's SM count (cached per device and instantiation);
//  - 16-byte accesses when every pointer sits at the same element offset from
//    its alignment (a scalar head is peeled), one-element accesses otherwise;
//  - the checks: a null array with n > 0, a pointer not aligned to its type, an
//    output that partially overlaps an input (in place, out == in with types of
//    the same size, is allowed), a bad block size: kf::error(invalid_argument),
//    naming the argument; a device this .cu was not compiled for:
//    kf::error(no_kernel_image) with the CMake setting that fixes it.
// It enqueues on options.stream and returns without synchronizing; n = 0 is a no-op.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "kernelforge/detail/arch_list.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/kernels/elementwise/launch.cuh"
#include "kernelforge/kernels/runtime/launcher.hpp"

namespace kf {

struct transform_options {
  cudaStream_t stream = nullptr;  ///< nullptr: the legacy default stream
  int block_size = 0;             ///< 0: the launcher decides; else a multiple of 32 in [32, 1024]
};

namespace detail {

/// The architectures this translation unit was compiled for (nvcc's list, e.g. "750,900").
inline constexpr const char* transform_arch_list = translation_unit_arch_list;

/// One input array: non-null when n > 0, aligned to its type, and either the
/// very output (same address, same element size: in place) or disjoint from it.
template <class Out, class In>
void transform_check_input(const char* what, const char* name, const In* in, const Out* out, std::size_t n) {
  require_pointer(what, name, in, n);
  require_aligned(what, name, in, alignof(In));
  require_same_or_disjoint(what, "out", out, n * sizeof(Out), name, in, n * sizeof(In));
}

template <class Out, class Op, class... In>
void transform_launch(std::size_t n, Op op, Out* out, const transform_options& options, const In*... in) {
  static_assert(sizeof...(In) >= 1 && sizeof...(In) <= 4, "kf::transform takes 1 to 4 input arrays");
  static_assert(std::is_trivially_copyable_v<Out> && (std::is_trivially_copyable_v<In> && ...),
                "kf::transform: element types must be trivially copyable");
  // Built once per instantiation: no allocation on the call path.
  static const std::string what_text =
      std::string("kf::transform (this translation unit was compiled for ") + transform_arch_list + ")";
  const char* what = what_text.c_str();
  require_pointer(what, "out", out, n);
  require_aligned(what, "out", out, alignof(Out));
  {
    const char* names[] = {"in0", "in1", "in2", "in3"};
    int k = 0;
    (transform_check_input(what, names[k++], in, out, n), ...);
  }
  require_block_size(what, options.block_size);
  if (n == 0) return;

  launch_elementwise_vectorized(what, n, options.block_size, options.stream, op, out, in...);
}

}  // namespace detail

/// out[i] = op(in0[i]) for i < n.
template <class Out, class Op, class In0>
void transform(std::size_t n, Op op, Out* out, const In0* in0, const transform_options& options = {}) {
  detail::transform_launch(n, op, out, options, in0);
}

/// out[i] = op(in0[i], in1[i]) for i < n.
template <class Out, class Op, class In0, class In1>
void transform(std::size_t n, Op op, Out* out, const In0* in0, const In1* in1, const transform_options& options = {}) {
  detail::transform_launch(n, op, out, options, in0, in1);
}

/// out[i] = op(in0[i], in1[i], in2[i]) for i < n.
template <class Out, class Op, class In0, class In1, class In2>
void transform(std::size_t n, Op op, Out* out, const In0* in0, const In1* in1, const In2* in2,
               const transform_options& options = {}) {
  detail::transform_launch(n, op, out, options, in0, in1, in2);
}

/// out[i] = op(in0[i], in1[i], in2[i], in3[i]) for i < n.
template <class Out, class Op, class In0, class In1, class In2, class In3>
void transform(std::size_t n, Op op, Out* out, const In0* in0, const In1* in1, const In2* in2, const In3* in3,
               const transform_options& options = {}) {
  detail::transform_launch(n, op, out, options, in0, in1, in2, in3);
}

}  // namespace kf
