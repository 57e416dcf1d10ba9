// SPDX-License-Identifier: Apache-2.0
// The NHWC (channels_last) launcher of conv2d: which kernel runs a validated
// NHWC call (validate.cpp has checked the variant, types and geometry), for the
// library's own epilogues (src/conv2d/conv2d.cu; <kernelforge/conv.cuh> refuses
// NHWC). The route (nhwc_plan.hpp's route_conv2d_nhwc, CPU-tested), in order:
//  * best: few_channels_persistent (step 11, few_channels.hpp) for the 16-bit
//    layers its plan takes (C <= 4, R x S <= 64: the RGB stem) on sm_80+, and
//    few_channels_mma (step 10) for those step 11's shared-memory budget leaves;
//  * implicit_gemm_wgmma (step 7 in the NHWC layout, sm_90a object:
//    wgmma_sm90a.hpp) where the device, the build and the layer allow it and the
//    epilogue is one the object was compiled for: the 16-bit types, and float
//    under math_mode::tf32;
//  * float under `best` (math_mode::exact -- the default, and the layers
//    fp32_emulated's step 9 leaves -- or tf32 where wgmma did not run): the
//    NCHW kernels of gemm_launch.cuh (exact: Winograd on 3x3 layers, else the
//    implicit GEMM; tf32: mma.sync) on transposed copies of x and the filter in
//    a pooled workspace, y written NCHW there and transposed into the caller's
//    NHWC y (launch_conv2d_nhwc_as_nchw; why this route: nhwc_plan.hpp). The
//    bias and the epilogue are applied by the NCHW kernels (the epilogue's row
//    and column are the same in both layouts); without the workspace nothing
//    has been enqueued and the call falls to
//  * the naive kernel (step 1's conv2d_naive_nhwc), which runs anywhere: the
//    variant naive, and whatever the routes above did not run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "../common/grid.hpp"
#include "../runtime/device_facts.hpp"
#include "../runtime/launcher.hpp"
#include "../common/transpose.cuh"
#include "01_naive.cuh"
#include "args.cuh"
#include "few_channels.hpp"
#include "gemm_launch.cuh"
#include "kernelforge/conv.hpp"
#include "kernelforge/error.hpp"
#include "nhwc_plan.hpp"
#include "wgmma_sm90a.hpp"

namespace kf::detail {

template <class T, class Epilogue>
void launch_conv2d_naive_nhwc(const char* what, const conv2d_args<T>& a, Epilogue ep, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(a.m) * static_cast<std::size_t>(a.k);
  const auto grid = static_cast<std::uint32_t>(ceil_div(total, static_cast<std::size_t>(conv2d_naive_block)));
  conv2d_naive_nhwc<T><<<grid, conv2d_naive_block, 0, stream>>>(a, ep);
  check_launch(what);
}

/// Float's route through the NCHW kernels (see the top of this file and
/// nhwc_plan.hpp): x and the filter transposed into a pooled workspace, `best`'s
/// NCHW dispatch under options.math, y transposed back. true once enqueued;
/// false, having enqueued nothing, where the workspace cannot be had.
template <class Epilogue>
bool launch_conv2d_nhwc_as_nchw(const char* what, int device, const conv2d_args<float>& a,
                                const conv2d_options& options, Epilogue ep) {
  using z = std::size_t;
  const z n = static_cast<z>(a.n), c = static_cast<z>(a.c), k = static_cast<z>(a.k);
  const z hw = static_cast<z>(a.hw), rs = static_cast<z>(a.rs), pq = static_cast<z>(a.pq);
  const conv2d_nhwc_as_nchw_plan plan = plan_conv2d_nhwc_as_nchw(
      n, c, static_cast<z>(a.h), static_cast<z>(a.w), k, static_cast<z>(a.r), static_cast<z>(a.s), static_cast<z>(a.p),
      static_cast<z>(a.q), sizeof(float), workspace_alignment);
  // Returned to the pool on the stream when this function returns or throws
  // (after everything that reads it has been enqueued).
  const pooled_workspace workspace(device, plan.bytes(), options.stream);
  if (plan.bytes() > 0 && workspace.data() == nullptr) return false;  // nothing enqueued: the naive kernel
  char* const base = workspace.data<char>();
  conv2d_args<float> nchw = a;  // the same extents; x, the filter and y in the NCHW orders
  if (plan.x) {                 // x[n]: H W x C -> C x H W
    float* const x = reinterpret_cast<float*>(base);
    launch_batched_transpose(device, a.x, x, n, hw, c, options.stream, what);
    nchw.x = x;
  }
  if (plan.w) {  // w[k]: R S x C -> C x R S
    float* const w = reinterpret_cast<float*>(base + plan.x_bytes);
    launch_batched_transpose(device, a.wt, w, k, rs, c, options.stream, what);
    nchw.wt = w;
  }
  if (plan.y) nchw.y = reinterpret_cast<float*>(base + plan.x_bytes + plan.w_bytes);
  conv2d_options run = options;
  run.variant = conv2d_variant::best;
  dispatch_conv2d_gemm(what, device, nchw, run, ep);
  if (plan.y) launch_batched_transpose<float>(device, nchw.y, a.y, n, k, pq, options.stream, what);
  return true;
}

/// Runs the validated NHWC call `a` with epilogue `ep` (see the top of this file).
template <class T, class Epilogue>
void dispatch_conv2d_nhwc(const char* what, int device, const conv2d_args<T>& a, const conv2d_options& options,
                          Epilogue ep) {
  const bool named = options.variant == conv2d_variant::implicit_gemm_wgmma;
  const conv2d_nhwc_route route = route_conv2d_nhwc(options.variant, options.math, std::is_same_v<T, float>);
  if constexpr (!std::is_same_v<T, float> && conv2d_wgmma_epilogue_v<Epilogue>) {
    // Each plans the layer and declines (false, nothing enqueued) the ones it does not take.
    if (route.few_channels_persistent &&
        conv2d_nhwc_few_channels_persistent_try_launch(device, a, ep, options.stream)) {
      return;
    }
    if (route.few_channels && conv2d_nhwc_few_channels_try_launch(device, a, ep, options.stream)) return;
  }
  if (route.wgmma) {
    if constexpr (conv2d_wgmma_epilogue_v<Epilogue>) {
      // conv2d_nhwc_wgmma_try_launch checks the device and the stride itself.
      if (conv2d_nhwc_wgmma_try_launch(device, a, ep, options.stream)) return;
      if (named) {  // validate.cpp has refused layers that do not fit: the device or the build lacks it
        const int cc = compute_capability(device);
        throw_unsupported(what, cc != 90 ? "conv2d_variant::implicit_gemm_wgmma needs Hopper's wgmma instructions "
                                           "(compute capability 9.0); this device is sm_" +
                                               std::to_string(cc) + ". Use best"
                                         : std::string("conv2d_variant::implicit_gemm_wgmma could not run: this "
                                                       "build of kernelforge holds no sm_90a code (add 90 to "
                                                       "CMAKE_CUDA_ARCHITECTURES), more than 2^31 tiles, no "
                                                       "workspace for the column fold, or no "
                                                       "cuTensorMapEncodeTiled in the driver; use best"));
      }
    } else if (named) {
      throw_unsupported(what,
                        "conv2d_variant::implicit_gemm_wgmma is precompiled in the library (sm_90a) for "
                        "conv2d_options' bias and ReLU only, not for your own epilogue functor; use best or naive");
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    if (route.nchw_kernels && launch_conv2d_nhwc_as_nchw(what, device, a, options, ep)) return;
  }
  launch_conv2d_naive_nhwc(what, a, ep, options.stream);
}

}  // namespace kf::detail
