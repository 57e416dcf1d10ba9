// SPDX-License-Identifier: Apache-2.0
// Step 7, host side: the NHWC launchers' float instances (wgmma_sm90a_nhwc.cuh), in a
// translation unit of their own so that the element types compile in parallel;
// built for sm_90a only (src/conv2d/sources.cmake).
#include "wgmma_sm90a_nhwc.cuh"

namespace kf::detail {

KF_CONV2D_NHWC_WGMMA_INSTANCE(float)

}  // namespace kf::detail
