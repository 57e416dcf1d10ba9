// SPDX-License-Identifier: Apache-2.0
// The NHWC (channels_last) launcher of conv2d: which kernel runs a validated
// NHWC call (validate.cpp has checked the variant, types and geometry), for the
// library's own epilogues (src/conv2d/conv2d.cu) and your functor
// (<kernelforge/conv.cuh>).
//  * best: few_channels_mma (step 10, few_channels.hpp) for the 16-bit layers
//    its plan takes (C <= 4, R x S <= 64: the RGB stem) on sm_80+;
//  * implicit_gemm_wgmma (step 7 in the NHWC layout, sm_90a object:
//    wgmma_sm90a.hpp) where the device, the build and the layer allow it and the
//    epilogue is one the object was compiled for;
//  * else the naive kernel (step 1's conv2d_naive_nhwc), which runs anywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "../common/grid.hpp"
#include "../runtime/device_facts.hpp"
#include "../runtime/launcher.hpp"
#include "01_naive.cuh"
#include "args.cuh"
#include "few_channels.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/error.hpp"
#include "wgmma_sm90a.hpp"

namespace kf::detail {

template <class T, class Epilogue>
void launch_conv2d_naive_nhwc(const char* what, const conv2d_args<T>& a, Epilogue ep, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(a.m) * static_cast<std::size_t>(a.k);
  const auto grid = static_cast<std::uint32_t>(ceil_div(total, static_cast<std::size_t>(conv2d_naive_block)));
  conv2d_naive_nhwc<T><<<grid, conv2d_naive_block, 0, stream>>>(a, ep);
  check_launch(what);
}

/// Whether the call may take the tensor-core kernel: float only under
/// math_mode::tf32 (the products read TF32), the 16-bit types always.
template <class T>
bool conv2d_nhwc_tensor_cores_allowed(const conv2d_options& options) {
  return !std::is_same_v<T, float> || options.math == math_mode::tf32;
}

/// Runs the validated NHWC call `a` with epilogue `ep` (see the top of this file).
template <class T, class Epilogue>
void dispatch_conv2d_nhwc(const char* what, int device, const conv2d_args<T>& a, const conv2d_options& options,
                          Epilogue ep) {
  const bool named = options.variant == conv2d_variant::implicit_gemm_wgmma;
  if constexpr (!std::is_same_v<T, float> && conv2d_wgmma_epilogue_v<Epilogue>) {
    if (options.variant == conv2d_variant::best && conv2d_best_takes_few_channels(plan_conv2d_few_channels_of(a)) &&
        conv2d_nhwc_few_channels_try_launch(device, a, ep, options.stream)) {
      return;
    }
  }
  if (named || (options.variant == conv2d_variant::best && conv2d_nhwc_tensor_cores_allowed<T>(options))) {
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
  launch_conv2d_naive_nhwc(what, a, ep, options.stream);
}

}  // namespace kf::detail
