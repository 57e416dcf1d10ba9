// SPDX-License-Identifier: Apache-2.0
// Gradient step 9 -- the TF32 filter gradient of a pointwise NHWC float layer on
// mma.sync, host interface: what the gradients' launcher
// (src/conv2d/backward_filter.cu) calls. The kernel (09_wgrad_mma_tf32_pointwise.cuh)
// and its launch (src/conv2d/backward_pointwise_sm90a.cu) are compiled for
// sm_90a only; without 90 in CMAKE_CUDA_ARCHITECTURES the launch compiles to a
// stub that returns wgrad_launched::nothing.
#pragma once

#include <cuda_runtime_api.h>

#include "../args.cuh"
#include "wgrad_pointwise_plan.hpp"
#include "wgrad_wgmma_sm90a.hpp"  // wgrad_launched, conv2d_wgrad_wgmma_available

namespace kf::detail {

/// Enqueues dw (K x C) of the pointwise float NHWC layer `a` in its one-row
/// view (conv2d_one_row_if_pointwise) in TF32 from dy (N P Q x K) -- masked,
/// where relu_y is given, to 0 where relu_y <= threshold -- with the plan
/// `plan` (plan_conv2d_wgrad_pointwise): unsplit it writes dw; split it writes
/// plan.split slabs of K x C fp32 sums to `partial` and, given `arrivals`
/// (plan.tiles() counters after the slabs: plan.workspace_bytes), sums them
/// into dw itself in a cooperative launch; where that launch is refused (fewer
/// resident CTAs than the grid) or `arrivals` is null, the caller sums them.
/// Returns wgrad_launched::dw or ::slabs; or ::nothing, having enqueued
/// nothing, when the kernel is not available on `device`, the layer is outside
/// it (conv2d_wgrad_pointwise_unsupported_reason), x, dy or relu_y is not
/// 16-byte aligned, a count overflows its ints, a split plan has no `partial`,
/// or the driver has no cuTensorMapEncodeTiled or rejects a map.
wgrad_launched conv2d_wgrad_pointwise_try_launch(int device, const conv2d_args<float>& a, const float* dy,
                                                 const float* relu_y, float threshold, float* dw, float* partial,
                                                 unsigned* arrivals, const conv2d_wgrad_wgmma_plan& plan,
                                                 cudaStream_t stream);

}  // namespace kf::detail
