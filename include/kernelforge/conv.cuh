// SPDX-License-Identifier: Apache-2.0
// kf::conv2d_forward with your own epilogue: the library's implicit-GEMM conv2d
// kernels (and their launcher: tiles, split-K, TF32) instantiated in your own .cu
// (compiled by nvcc) with a functor applied to every output in registers, just
// before the store -- no second pass over y.
//
//   #include <kernelforge/conv.cuh>
//   struct add_residual {   // y = conv(x, w) + bias + r, r shaped like y
//     const float* r; std::int64_t k, pq;
//     __device__ float operator()(float v, std::int64_t row, std::int64_t col) const {
//       return v + r[(row / pq * k + col) * pq + row % pq];
//     }
//   };
//   kf::conv2d_forward(params, x, w, bias, y, add_residual{r, K, P * Q}, options);
//   kf::conv2d_forward(params, x, w, nullptr, y,
//                      [] __device__(float v, std::int64_t, std::int64_t) { return fminf(v, 6.0f); });
//
// The functor's contract (value = sum + bias[k]; row = n*P*Q + p*Q + q; col = k)
// is <kernelforge/epilogue.cuh>'s, which also ships identity, bias_add, clamp,
// relu_threshold, compose and bias_relu_threshold. Split-K (small N*P*Q) applies
// it once, after the reduction, never to partial sums.
//  - Variants: implicit_gemm, implicit_gemm_tf32 (options.math = tf32, sm_80+) and
//    best (the TF32 kernel on sm_80+ when options.math is tf32, else implicit_gemm).
//    implicit_gemm_wgmma (sm_90a) is precompiled in the library for its own
//    epilogues only: with a functor it is errc::unsupported, and best takes the
//    mma.sync TF32 kernel instead.
//    naive and smem_tiled: errc::unsupported.
//  - NCHW float only: params.layout = nhwc is errc::unsupported (the plain
//    overload in <kernelforge/conv.hpp> computes NHWC with bias and ReLU).
//  - options.relu must be off (errc::invalid_argument): compose the ReLU into the
//    functor (epilogue::compose<yours, epilogue::relu_threshold>).
//  - The same validation and messages as the plain overload in <kernelforge/conv.hpp>;
//    a device this .cu was not compiled for: errc::no_kernel_image naming the
//    architectures compiled in and the CMake setting that fixes it.
//  - Precompiled nothing: every functor type instantiates the kernels (three tile
//    shapes, fp32 and TF32, and the split-K reduction) in your translation unit.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include "kernelforge/conv.hpp"
#include "kernelforge/detail/arch_list.hpp"
#include "kernelforge/epilogue.cuh"
#include "kernelforge/error.hpp"
#include "kernelforge/kernels/conv2d/gemm_launch.cuh"
#include "kernelforge/kernels/conv2d/validate.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"

namespace kf {

namespace detail {

template <class T, class Epilogue>
void conv2d_forward_epilogue(const conv2d_params& params, const T* x, const T* weight, const T* bias, T* y, Epilogue ep,
                             const conv2d_options& options) {
  static_assert(std::is_trivially_copyable_v<Epilogue>,
                "kf::conv2d_forward: the epilogue functor is copied to the device by value; make it trivially "
                "copyable (hold device pointers, not containers)");
  // Built once per instantiation: no allocation on the call path.
  static const std::string what_text =
      std::string("kf::conv2d_forward with an epilogue (this translation unit was compiled for ") +
      translation_unit_arch_list + ")";
  const char* what = what_text.c_str();
  const conv2d_geometry geometry = validate_conv2d(what, params, x, weight, bias, y, sizeof(T), options);
  if (params.layout == conv2d_layout::nhwc) {  // before the variant checks: none of them reads NHWC here
    throw_unsupported(what,
                      "params.layout = nhwc with an epilogue functor: the functor overload computes NCHW float only "
                      "so far; for NHWC use the plain overload (<kernelforge/conv.hpp>) with bias and options.relu");
  }
  if (options.math == math_mode::fp32_emulated) {
    throw_unsupported(what,
                      "options.math = fp32_emulated with an epilogue functor: the emulation's kernel (step 9) is "
                      "precompiled in the library for conv2d_options' bias and ReLU only; use the plain overload "
                      "(<kernelforge/conv.hpp>) with bias and options.relu, or math_mode::exact");
  }
  if (options.variant == conv2d_variant::naive || options.variant == conv2d_variant::smem_tiled) {
    throw_unsupported(what, std::string("conv2d_variant::") + to_string(options.variant) +
                                " takes no epilogue functor; the variants that do are implicit_gemm, "
                                "implicit_gemm_tf32, implicit_gemm_pipelined, winograd, winograd_fused and best");
  }
  if (options.relu) {
    throw_invalid_argument(what,
                           "options.relu = true together with an epilogue functor; set options.relu = false and "
                           "compose the ReLU into the functor (kf::epilogue::compose<YourEpilogue, "
                           "kf::epilogue::relu_threshold>)");
  }
  if (geometry.y_elements == 0) return;  // N = 0 or K = 0
  const int device = current_device(what);
  dispatch_conv2d_gemm(what, device, make_conv2d_args(params, geometry.p, geometry.q, x, weight, bias, y), options, ep);
}

}  // namespace detail

/// y = ep(conv(x, weight) + bias, row, k) for every output (see the top of this
/// header); bias may be nullptr. T comes from x, weight and y.
template <class T, class Epilogue, class = std::enable_if_t<!std::is_same_v<std::decay_t<Epilogue>, conv2d_options>>>
void conv2d_forward(const conv2d_params& params, const T* x, const T* weight, const nondeduced_t<T>* bias, T* y,
                    Epilogue ep, const conv2d_options& options = {}) {
  static_assert(std::is_same_v<T, float>,
                "kf::conv2d_forward with an epilogue functor: float only (the 16-bit types run NHWC, which the "
                "functor overload does not compute yet)");
  detail::conv2d_forward_epilogue<T>(params, x, weight, bias, y, ep, options);
}

}  // namespace kf
