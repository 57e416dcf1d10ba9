// SPDX-License-Identifier: Apache-2.0
// FP8 step 3, the wgmma GEMM's instances (KF_FOR_EACH_SCALED_MATMUL_TYPES):
// compiled for sm_90a alone (src/matmul/sources.cmake), or as stubs where the
// library has no 90. Declarations and what they promise: scaled/wgmma_sm90a.hpp.
#include "kernelforge/kernels/matmul/scaled/wgmma_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include "kernelforge/kernels/matmul/scaled/wgmma_launch.cuh"

namespace kf::detail {

template <class TA, class TB, class TD>
bool scaled_wgmma_try_launch(const scaled_gemm_args<TA, TB, TD>& g, int device, cudaStream_t stream) {
  return scaled_wgmma_host::try_launch(g, device, stream, "kf::scaled_matmul (wgmma)");
}

}  // namespace kf::detail

#else  // no 90 in the library's architecture list: nothing runs here.

namespace kf::detail {

template <class TA, class TB, class TD>
bool scaled_wgmma_try_launch(const scaled_gemm_args<TA, TB, TD>&, int, cudaStream_t) {
  return false;
}

}  // namespace kf::detail

#endif

namespace kf::detail {

#define KF_INSTANTIATE_SCALED_WGMMA(TA, TB, TD) \
  template bool scaled_wgmma_try_launch<TA, TB, TD>(const scaled_gemm_args<TA, TB, TD>&, int, cudaStream_t);
KF_FOR_EACH_SCALED_MATMUL_TYPES(KF_INSTANTIATE_SCALED_WGMMA)
#undef KF_INSTANTIATE_SCALED_WGMMA

}  // namespace kf::detail
