// SPDX-License-Identifier: Apache-2.0
// kf::scaled_matmul's argument checks (src/matmul/scaled_validate.cpp): the
// layout checks of every GEMM (kernels/matmul/validate.hpp), then the scales,
// the options and the device. Host-only.
#pragma once

#include <cstddef>

#include "kernelforge/scaled_matmul.hpp"

namespace kf::detail {

/// The name every kf::scaled_matmul error starts with.
inline constexpr const char* scaled_matmul_what = "kf::scaled_matmul";

/// FP8 tensor cores exist from compute capability 8.9 (Ada; Hopper's wgmma reads FP8 too).
inline constexpr int fp8_min_cc = 89;

/// Every check of a call before anything is enqueued: ops, pointers and leading
/// dimensions; the scaling mode and its scale pointers (unless k, m or n is 0);
/// the variant; the bias (aligned, disjoint from D); amax (aligned, disjoint from
/// D). d_bytes: sizeof(TD).
void validate_scaled_matmul(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, const void* A,
                            std::size_t lda, const void* B, std::size_t ldb, const fp8_scales& scales, const void* D,
                            std::size_t ldd, std::size_t d_bytes, const scaled_matmul_options& options);

/// errc::unsupported unless `device` has FP8 tensor cores (compute capability 8.9+).
void require_fp8_device(int device);

}  // namespace kf::detail
