// SPDX-License-Identifier: Apache-2.0
// kf::matmul with your own epilogue: the library's tile kernels (warp_tiled for
// fp32, the mma.sync TF32 kernel when options.math is math_mode::tf32)
// instantiated in your own .cu (compiled by nvcc), applying your functor to each
// output value in registers just before it is stored:
//
//   #include <kernelforge/matmul.cuh>
//   struct residual_add {   // C = A B + R, elementwise, in the GEMM's epilogue
//     const float* r; std::size_t ldr;
//     __device__ float operator()(float v, std::int64_t i, std::int64_t j) const { return v + r[i * ldr + j]; }
//   };
//   kf::matmul<float>(kf::op::none, kf::op::none, m, n, k, 1.0f, A, k, B, n, 0.0f, C, n, residual_add{R, n});
//   kf::matmul<float>(..., C, n, [] __device__(float v, std::int64_t, std::int64_t) { return fminf(v, 6.0f); });
//
// C(i, j) = ep(alpha * op(A) op(B)(i, j) + beta * C(i, j), i, j), with the rest
// exactly as kf::matmul (kernelforge/matmul.hpp): BLAS semantics (beta == 0 does
// not read C; k == 0 gives ep(beta * C)), any shape, transposes, leading
// dimensions and alignment, split-k for thin products (the functor then runs in
// the reduction, once per element, never on a partial sum). The functor contract
// (once per stored element, by value, device-callable): kernelforge/epilogue.cuh.
// Same checks and kf::error messages as kf::matmul, plus:
//  - options.variant: best, warp_tiled or tensor_core_tf32; another variant is
//    errc::unsupported (those kernels have no epilogue);
//  - options.bias / options.relu must be unset (errc::invalid_argument): they are
//    the precompiled form of kf::epilogue::bias_relu_threshold; compose it into
//    your functor instead;
//  - a device this .cu was not compiled for: errc::no_kernel_image, naming this
//    translation unit's architecture list and the CMake setting that fixes it.
// On an H100/H200 the precompiled fused options reach the Hopper wgmma kernel;
// functors of your own run on the mma.sync TF32 kernel (the wgmma kernel is built
// only into the library's sm_90a object).
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "kernelforge/detail/arch_list.hpp"
#include "kernelforge/epilogue.cuh"
#include "kernelforge/error.hpp"
#include "kernelforge/matmul.hpp"
#include "kernelforge/kernels/matmul/validate.hpp"
#include "kernelforge/kernels/matmul/gemm_args.cuh"
#include "kernelforge/kernels/matmul/scale.cuh"
#include "kernelforge/kernels/matmul/tensor_core_tf32_launch.cuh"
#include "kernelforge/kernels/matmul/warp_tiled_launch.cuh"
#include "kernelforge/kernels/runtime/launcher.hpp"

namespace kf {

namespace detail {

/// The architectures this translation unit was compiled for (nvcc's list, e.g. "750,900").
inline constexpr const char* matmul_epilogue_arch_list = translation_unit_arch_list;

template <class Epilogue>
void matmul_with_epilogue(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
                          const float* A, std::size_t lda, const float* B, std::size_t ldb, float beta, float* C,
                          std::size_t ldc, const Epilogue& ep, const matmul_options& options) {
  static_assert(std::is_trivially_copyable_v<Epilogue>,
                "kf::matmul: the epilogue functor is copied to the device by value; make it trivially copyable");
  // Built once per instantiation: no allocation on the call path.
  static const std::string what_text =
      std::string("kf::matmul with an epilogue (this translation unit was compiled for ") + matmul_epilogue_arch_list +
      ")";
  const char* what = what_text.c_str();
  matmul_validate_custom_epilogue(trans_a, trans_b, m, n, k, A, lda, B, ldb, C, ldc, options);
  if (m == 0 || n == 0) return;
  const int device = current_device(what);
  const matmul_variant variant = matmul_epilogue_variant(options, device);
  if (k == 0) {  // empty product: C = ep(beta * C), without reading C when beta == 0
    profile_of<&matmul_scale_c<float, Epilogue>>(device, what);  // no_kernel_image names this .cu
    launch_scale_c(C, m, n, ldc, beta, options.stream, ep);
    return;
  }
  const gemm_args<float> g = make_gemm_args<float>(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  if (variant == matmul_variant::tensor_core_tf32) {
    launch_tensor_core_tf32(g, options.stream, ep, what);
  } else {
    launch_warp_tiled(g, options.stream, ep, what);
  }
}

}  // namespace detail

/// Row-major C (m x n) = ep(alpha * op(A) (m x k) * op(B) (k x n) + beta * C, i, j)
/// with your epilogue functor `ep` (see the top of this file and
/// kernelforge/epilogue.cuh). float only (the tile kernels are written for float
/// and TF32); T comes from A, B and C, alpha and beta are compute_t<T>.
template <class T, class Epilogue, class = std::enable_if_t<!std::is_same_v<std::decay_t<Epilogue>, matmul_options>>>
void matmul(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, compute_t<T> alpha, const T* A,
            std::size_t lda, const T* B, std::size_t ldb, compute_t<T> beta, T* C, std::size_t ldc, Epilogue ep,
            const matmul_options& options = {}) {
  static_assert(std::is_same_v<T, float>,
                "kf::matmul with an epilogue functor: the tile kernels are compiled for float (fp32 and TF32); "
                "for double use kf::matmul without a functor and a kf::transform pass");
  detail::matmul_with_epilogue(trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, ep, options);
}

}  // namespace kf
