// SPDX-License-Identifier: Apache-2.0
// What <kernelforge/matmul.cuh> (a user's epilogue functor, instantiated in the
// user's .cu) takes from the precompiled launcher in matmul.cu, so that both
// paths check arguments with the same code and the same kf::error messages.
// Host-only declarations; defined in src/matmul/matmul.cu.
#pragma once

#include <cstddef>

#include "kernelforge/matmul.hpp"

namespace kf::detail {

/// kf::matmul<float>'s checks for a call with the caller's own epilogue functor:
/// the arguments and options as for kf::matmul, plus errc::unsupported for a
/// variant without epilogue support (naming those with it) and
/// errc::invalid_argument when options.bias / options.relu are set (the functor
/// replaces them; compose kf::epilogue::bias_relu_threshold into it instead).
void matmul_validate_custom_epilogue(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k,
                                     const float* A, std::size_t lda, const float* B, std::size_t ldb, const float* C,
                                     std::size_t ldc, const matmul_options& options);

/// The variant that runs for a validated call with an epilogue on `device`:
/// warp_tiled or tensor_core_tf32 (`best` resolved as kf::matmul resolves it);
/// errc::unsupported, with the numbers, when tensor_core_tf32 needs a newer device.
matmul_variant matmul_epilogue_variant(const matmul_options& options, int device);

}  // namespace kf::detail
