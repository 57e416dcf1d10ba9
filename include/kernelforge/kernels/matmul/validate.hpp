// SPDX-License-Identifier: Apache-2.0
// kf::matmul's argument checks (validate.cpp): the named first step of the
// launcher (validate -> plan -> dispatch), shared with <kernelforge/matmul.cuh>
// (a user's epilogue functor, instantiated in the user's .cu) so that both paths
// check arguments with the same code and the same kf::error messages. Host-only.
#pragma once

#include <cstddef>
#include <type_traits>

#include "../arch/compute_capability.hpp"
#include "kernelforge/matmul.hpp"

namespace kf::detail {

/// The name every kf::matmul error starts with.
inline constexpr const char* matmul_what = "kf::matmul";

/// The 16-bit element types (fp32 accumulation, compute_t<T> = float).
template <class T>
inline constexpr bool is_16bit = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// The element type's name in messages.
template <class T>
constexpr const char* matmul_type_name() {
  if constexpr (std::is_same_v<T, float>) return "float";
  if constexpr (std::is_same_v<T, double>) return "double";
  if constexpr (std::is_same_v<T, __half>) return "__half";
  return "__nv_bfloat16";
}

/// The variants that run an epilogue, for messages: custom, a functor of the
/// caller's (kernelforge/matmul.cuh instantiates warp_tiled and tensor_core_tf32
/// only); else the precompiled fused options, which large_tile runs too.
constexpr const char* epilogue_variants(bool custom) {
  return custom ? "warp_tiled, tensor_core_tf32 (with math_mode::tf32) or best"
                : "warp_tiled, tensor_core_tf32 (with math_mode::tf32), large_tile or best";
}

/// Does the call ask for the precompiled fused epilogue (options.bias / options.relu)?
inline bool has_fused_epilogue(const matmul_options& o) { return o.bias != nullptr || o.relu; }

/// How a GEMM entry point names its output in messages: the matrix ("C"), its
/// leading dimension ("ldc") and how it is stored.
struct gemm_output_names {
  const char* matrix;
  const char* leading_dimension;
  const char* layout;
};
inline constexpr gemm_output_names matmul_output{"C", "ldc", "C is stored m x n"};

/// The layout checks every GEMM entry point shares (kf::matmul, kf::scaled_matmul),
/// each error starting with `what`: trans_a / trans_b are ops; A, B (unless m or
/// n is 0) and the output are not null while holding elements; every leading
/// dimension covers its row.
void require_gemm_layout(const char* what, op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k,
                         const void* A, std::size_t lda, const void* B, std::size_t ldb, const void* C, std::size_t ldc,
                         const gemm_output_names& output);

/// Every check of a kf::matmul<T> call, before anything is enqueued: ops,
/// options, null pointers, leading dimensions (with the numbers), the variants
/// compiled for T, and the epilogue requests (the fused options, or with
/// custom_epilogue the caller's functor). Defined for float, double, __half and
/// __nv_bfloat16.
template <class T>
void validate_matmul(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, const T* A, std::size_t lda,
                     const T* B, std::size_t ldb, const T* C, std::size_t ldc, const matmul_options& options,
                     bool custom_epilogue = false);

/// errc::unsupported unless `device` has TF32 tensor cores (compute capability 8.0+).
void require_tensor_cores(int device);

/// kf::matmul<float>'s checks for a call with the caller's own epilogue functor:
/// the arguments and options as for kf::matmul, plus errc::unsupported for a
/// variant without epilogue support (naming those with it) and
/// errc::invalid_argument when options.bias / options.relu are set (the functor
/// replaces them; compose kf::epilogue::bias_relu_threshold into it instead).
void matmul_validate_custom_epilogue(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k,
                                     const float* A, std::size_t lda, const float* B, std::size_t ldb, const float* C,
                                     std::size_t ldc, const matmul_options& options);

/// The variant that runs for a validated call with an epilogue on `device`:
/// warp_tiled or tensor_core_tf32 (`best` resolved as kf::matmul resolves it:
/// defined beside that resolution, in src/matmul/matmul.cu); errc::unsupported,
/// with the numbers, when tensor_core_tf32 needs a newer device.
matmul_variant matmul_epilogue_variant(const matmul_options& options, int device);

}  // namespace kf::detail
