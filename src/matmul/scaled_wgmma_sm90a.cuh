// SPDX-License-Identifier: Apache-2.0
// FP8 step 3, the wgmma GEMM's definition for its translation units, one per
// output type (scaled_wgmma_sm90a_{bf16,f16,f32}.cu: each holds 15 of the 45
// kernels, so that they compile in parallel): compiled for sm_90a alone
// (src/matmul/sources.cmake), or as stubs where the library has no 90.
// Declarations and what they promise: scaled/wgmma_sm90a.hpp.
#pragma once

#include "kernelforge/kernels/matmul/scaled/wgmma_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include "kernelforge/kernels/matmul/scaled/wgmma_launch.cuh"

namespace kf::detail {

template <class TA, class TB, class TD>
bool scaled_wgmma_try_launch(const scaled_gemm_args<TA, TB, TD>& g, int device, cudaStream_t stream,
                             scaled_wgmma_tile tile) {
  return scaled_wgmma_host::try_launch(g, device, stream, "kf::scaled_matmul (wgmma)", tile);
}

}  // namespace kf::detail

#else  // no 90 in the library's architecture list: nothing runs here.

namespace kf::detail {

template <class TA, class TB, class TD>
bool scaled_wgmma_try_launch(const scaled_gemm_args<TA, TB, TD>&, int, cudaStream_t, scaled_wgmma_tile) {
  return false;
}

}  // namespace kf::detail

#endif

/// The explicit instantiations of one output type TD (its operand pairs:
/// KF_FOR_EACH_SCALED_MATMUL_OPERANDS), at namespace scope.
#define KF_INSTANTIATE_SCALED_WGMMA(TA, TB, TD)                                                                       \
  template bool kf::detail::scaled_wgmma_try_launch<TA, TB, TD>(const kf::detail::scaled_gemm_args<TA, TB, TD>&, int, \
                                                                cudaStream_t, kf::detail::scaled_wgmma_tile);
#define KF_INSTANTIATE_SCALED_WGMMA_FOR(TD) KF_FOR_EACH_SCALED_MATMUL_OPERANDS(KF_INSTANTIATE_SCALED_WGMMA, TD)
