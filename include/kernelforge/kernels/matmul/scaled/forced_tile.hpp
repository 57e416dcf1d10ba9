// SPDX-License-Identifier: Apache-2.0
// kf::scaled_matmul with the FP8 wgmma GEMM's tile forced (wgmma/policy.hpp:
// scaled_wgmma_tile), for the tests and bench_scaled_matmul's paired rows; the
// library itself picks the tile by shape. Host-only C++17; defined and
// instantiated in src/matmul/scaled_matmul.cu.
#pragma once

#include <cstddef>

#include "../wgmma/policy.hpp"
#include "kernelforge/scaled_matmul.hpp"

namespace kf::detail {

/// kf::scaled_matmul with variant wgmma (options.variant is not read) on the
/// tile `tile`: errc::unsupported where the wgmma step does not run. Blockwise
/// scales keep the tile by shape when `tile` is two_partials.
template <class TA, class TB, class TD>
void scaled_matmul_forced_tile(op trans_a, op trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha,
                               const TA* A, std::size_t lda, const TB* B, std::size_t ldb, const fp8_scales& scales,
                               float beta, TD* D, std::size_t ldd, const scaled_matmul_options& options,
                               scaled_wgmma_tile tile);

}  // namespace kf::detail
