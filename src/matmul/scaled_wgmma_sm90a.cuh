// SPDX-License-Identifier: Apache-2.0
// FP8 step 3, the wgmma GEMM's definition for its translation units, one per
// operand pair and output type (scaled_wgmma_sm90a_<out>_<a>_<b>.cu: each holds 5
// of the 45 kernels, so that they compile in parallel; one per output type took
// 43 s, the longest unit of the sm_90 build): compiled for sm_90a alone
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

/// The explicit instantiation of one operand pair and output type, at namespace
/// scope (one per KF_FOR_EACH_SCALED_MATMUL_TYPES entry, each in its own unit).
#define KF_INSTANTIATE_SCALED_WGMMA(TA, TB, TD)                                                                       \
  template bool kf::detail::scaled_wgmma_try_launch<TA, TB, TD>(const kf::detail::scaled_gemm_args<TA, TB, TD>&, int, \
                                                                cudaStream_t, kf::detail::scaled_wgmma_tile);
