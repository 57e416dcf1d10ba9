// SPDX-License-Identifier: Apache-2.0
// Steps 10 and 11 -- few_channels_mma and few_channels_persistent, host
// interface: what the NHWC launcher (nhwc_launch.cuh) calls. The kernels
// (10_few_channels_mma.cuh, 11_few_channels_persistent.cuh) and their launches
// (src/conv2d/few_channels.cu) are compiled into the library for every
// architecture it ships, the kernels' bodies for sm_80 and newer (a trap
// below), for __half and __nv_bfloat16 and the library's own epilogues:
// identity and the options' bias / threshold ReLU. The layers they compute:
// plan_conv2d_few_channels and plan_conv2d_few_channels_persistent (few_channels_plan.hpp).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "args.cuh"
#include "kernelforge/epilogue.cuh"
#include "few_channels_plan.hpp"

namespace kf::detail {

/// Step 10's plan for the 16-bit NHWC layer `a` (few_channels_plan.hpp).
template <class T>
conv2d_few_channels_plan plan_conv2d_few_channels_of(const conv2d_args<T>& a) {
  using z = std::size_t;
  return plan_conv2d_few_channels(static_cast<z>(a.n), static_cast<z>(a.c), static_cast<z>(a.p), static_cast<z>(a.q),
                                  static_cast<z>(a.k), static_cast<z>(a.r), static_cast<z>(a.s),
                                  static_cast<z>(a.stride_h), static_cast<z>(a.stride_w), static_cast<z>(a.dilation_h),
                                  static_cast<z>(a.dilation_w), sizeof(T));
}

/// Step 11's plan for the 16-bit NHWC layer `a` on a GPU that holds
/// resident_ctas of its CTAs at once (few_channels_plan.hpp).
template <class T>
conv2d_few_channels_persistent_plan plan_conv2d_few_channels_persistent_of(const conv2d_args<T>& a,
                                                                           std::size_t resident_ctas) {
  using z = std::size_t;
  return plan_conv2d_few_channels_persistent(
      static_cast<z>(a.n), static_cast<z>(a.c), static_cast<z>(a.w), static_cast<z>(a.p), static_cast<z>(a.q),
      static_cast<z>(a.k), static_cast<z>(a.r), static_cast<z>(a.s), static_cast<z>(a.stride_h),
      static_cast<z>(a.stride_w), static_cast<z>(a.dilation_h), static_cast<z>(a.dilation_w), sizeof(T), resident_ctas);
}

/// True when the library holds the code of steps 10 and 11 for `device` (the
/// current device): compute capability 8.0 or newer, and an image of the
/// kernels built for sm_80 or newer (not one JIT-compiled from older PTX).
bool conv2d_few_channels_available(int device);

/// Enqueues the NHWC layer `a` (x NHWC, weight KRSC, y NPQK; T __half or
/// __nv_bfloat16, validated) with step 10 on `device` and returns true; returns
/// false, having enqueued nothing, where its plan rules the layer out
/// (plan_conv2d_few_channels_of(a).unsupported) or the kernel is not available
/// on `device`. Defined for epilogue::identity and
/// epilogue::bias_relu_threshold<float>.
template <class T, class Epilogue>
bool conv2d_nhwc_few_channels_try_launch(int device, const conv2d_args<T>& a, const Epilogue& ep, cudaStream_t stream);

/// As conv2d_nhwc_few_channels_try_launch, with step 11 and its plan
/// (plan_conv2d_few_channels_persistent_of(a, resident CTAs).unsupported).
/// max_ctas: the most CTAs its grid may hold (0: the CTAs the device runs at
/// once); fewer make each CTA loop over more bands (the tests' small grids).
template <class T, class Epilogue>
bool conv2d_nhwc_few_channels_persistent_try_launch(int device, const conv2d_args<T>& a, const Epilogue& ep,
                                                    cudaStream_t stream, std::size_t max_ctas = 0);

}  // namespace kf::detail
