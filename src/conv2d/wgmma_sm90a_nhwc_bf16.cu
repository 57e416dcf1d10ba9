// SPDX-License-Identifier: Apache-2.0
// Step 7, host side: the NHWC launchers' __nv_bfloat16 instances (wgmma_sm90a_nhwc.cuh), in a
// translation unit of their own so that the element types compile in parallel;
// built for sm_90a only (src/conv2d/sources.cmake).
#include "wgmma_sm90a_nhwc.cuh"

namespace kf::detail {

KF_CONV2D_NHWC_WGMMA_INSTANCE(__nv_bfloat16)
template bool conv2d_nhwc_wgmma_dgrad_try_launch(int, const conv2d_args<__nv_bfloat16>&, cudaStream_t);

}  // namespace kf::detail
