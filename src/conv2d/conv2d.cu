// SPDX-License-Identifier: Apache-2.0
// The conv2d launcher: validate -> plan -> dispatch by variant, math mode and
// device architecture, and the explicit instantiations shipped in the fatbin:
// float (NCHW and NHWC), __half and __nv_bfloat16 (NHWC), every variant without
// an epilogue and with conv2d_options' fused threshold ReLU
// (epilogue::bias_relu_threshold). The implicit-GEMM host side is gemm_launch.cuh
// (shared with <kernelforge/conv.cuh>), the NHWC one nhwc_launch.cuh (float's
// exact NHWC calls run gemm_launch.cuh's kernels through transposed copies).
#include <cstdint>
#include <string>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/kernels/common/vector_access.cuh"
#include "kernelforge/kernels/conv2d/args.cuh"
#include "kernelforge/kernels/conv2d/01_naive.cuh"
#include "kernelforge/kernels/conv2d/02_smem_tiled.cuh"
#include "kernelforge/kernels/conv2d/gemm_launch.cuh"
#include "kernelforge/kernels/conv2d/nhwc_launch.cuh"
#include "kernelforge/kernels/conv2d/validate.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/epilogue.cuh"

namespace kf {

const char* to_string(conv2d_variant variant) noexcept {
  switch (variant) {
    case conv2d_variant::best: return "best";
    case conv2d_variant::naive: return "naive";
    case conv2d_variant::smem_tiled: return "smem_tiled";
    case conv2d_variant::implicit_gemm: return "implicit_gemm";
    case conv2d_variant::implicit_gemm_tf32: return "implicit_gemm_tf32";
    case conv2d_variant::implicit_gemm_pipelined: return "implicit_gemm_pipelined";
    case conv2d_variant::winograd: return "winograd";
    case conv2d_variant::winograd_fused: return "winograd_fused";
    case conv2d_variant::implicit_gemm_wgmma: return "implicit_gemm_wgmma";
  }
  return "unknown";
}

const char* to_string(conv2d_layout layout) noexcept {
  switch (layout) {
    case conv2d_layout::nchw: return "nchw";
    case conv2d_layout::nhwc: return "nhwc";
  }
  return "unknown";
}

namespace detail {
namespace {

std::string num(std::size_t v) { return std::to_string(v); }

/// Shared memory every device grants a block without an opt-in.
constexpr std::size_t default_smem_limit = 48 * 1024;
// ---- launches ---------------------------------------------------------------
template <class Epilogue>
void launch_naive(const char* what, const conv2d_args<float>& a, Epilogue ep, cudaStream_t stream) {
  const std::size_t total = static_cast<std::size_t>(a.m) * a.k;
  const auto grid = static_cast<std::uint32_t>(ceil_div(total, conv2d_naive_block));
  conv2d_naive<float><<<grid, conv2d_naive_block, 0, stream>>>(a, ep);
  check_launch(what);
}

template <class Epilogue>
void launch_smem_tiled(const char* what, const conv2d_args<float>& a, Epilogue ep, cudaStream_t stream) {
  const conv2d_direct_patch shape =
      conv2d_direct_patch_shape(a.r, a.s, a.stride_h, a.stride_w, a.dilation_h, a.dilation_w);
  int channels = a.c < conv2d_direct_max_channels_per_stage ? a.c : conv2d_direct_max_channels_per_stage;
  auto bytes = [&](int cc) {
    return static_cast<std::size_t>(conv2d_direct_smem_floats(shape, cc, a.rs)) * sizeof(float);
  };
  while (channels > 1 && bytes(channels) > default_smem_limit) --channels;
  if (bytes(channels) > default_smem_limit) {
    throw_unsupported(what, "conv2d_variant::smem_tiled needs " + num(bytes(channels)) +
                                " bytes of shared memory for this filter, stride and dilation (an input patch of " +
                                num(static_cast<std::size_t>(shape.rows)) + " x " +
                                num(static_cast<std::size_t>(shape.cols)) + "), more than the " +
                                num(default_smem_limit) + " available; use implicit_gemm or best");
  }
  const std::size_t tiles_p = ceil_div(static_cast<std::size_t>(a.p), conv2d_direct_tile_p);
  const std::size_t tiles_q = ceil_div(static_cast<std::size_t>(a.q), conv2d_direct_tile_q);
  const std::size_t tiles_k = ceil_div(static_cast<std::size_t>(a.k), conv2d_direct_tile_k);
  if (tiles_k > max_grid_yz) {
    throw_unsupported(what, "conv2d_variant::smem_tiled handles at most " + num(max_grid_yz * conv2d_direct_tile_k) +
                                " output channels; use implicit_gemm or best");
  }
  const dim3 grid(static_cast<std::uint32_t>(tiles_p * tiles_q), static_cast<std::uint32_t>(tiles_k),
                  capped_grid_dim(static_cast<std::size_t>(a.n)));
  conv2d_smem_tiled<float>
      <<<grid, conv2d_direct_threads, bytes(channels), stream>>>(a, channels, static_cast<int>(tiles_q), ep);
  check_launch(what);
}

/// Every variant with epilogue `ep` (identity, or the options' bias_relu_threshold).
template <class Epilogue>
void dispatch(const char* what, int device, const conv2d_args<float>& a, const conv2d_options& options, Epilogue ep) {
  switch (options.variant) {
    case conv2d_variant::naive: return launch_naive(what, a, ep, options.stream);
    case conv2d_variant::smem_tiled: return launch_smem_tiled(what, a, ep, options.stream);
    case conv2d_variant::implicit_gemm:
    case conv2d_variant::implicit_gemm_tf32:
    case conv2d_variant::implicit_gemm_pipelined:
    case conv2d_variant::winograd:
    case conv2d_variant::winograd_fused:
    case conv2d_variant::implicit_gemm_wgmma:
    case conv2d_variant::best: break;
  }
  dispatch_conv2d_gemm(what, device, a, options, ep);
}

/// math_mode::fp32_emulated: errc::unsupported where step 9 cannot run (it
/// needs wgmma), naming the requirement.
void require_conv2d_fp32_emulation(const char* what, int device) {
  if (conv2d_wgmma_available(device)) return;
  const int cc = compute_capability(device);
  throw error(errc::unsupported, std::string(what) +
                                     ": options.math = fp32_emulated runs on wgmma, which needs compute capability "
                                     "9.0 and a library built with 90 in CMAKE_CUDA_ARCHITECTURES; device " +
                                     std::to_string(device) + " is " + std::to_string(cc / 10) + "." +
                                     std::to_string(cc % 10) +
                                     " (no sm_80 path yet). Use math_mode::exact for fp32 accuracy on this GPU");
}

/// Step 9 for the layers it takes (true once enqueued); false for the others,
/// which the exact kernels compute (conv2d_fp32_emulated_unsupported_reason).
template <class Epilogue>
bool launch_fp32_emulated(const char* what, int device, const conv2d_args<float>& a, conv2d_layout layout, Epilogue ep,
                          cudaStream_t stream) {
  if (conv2d_fp32_emulated_unsupported_reason(static_cast<std::size_t>(a.c), static_cast<std::size_t>(a.rs),
                                              static_cast<std::size_t>(a.stride_h),
                                              static_cast<std::size_t>(a.stride_w)) != nullptr) {
    return false;
  }
  if (conv2d_fp32_emulated_try_launch(device, a, layout, ep, stream)) return true;
  const std::size_t c32 = ceil_div(static_cast<std::size_t>(a.c), std::size_t{32}) * 32;
  const std::size_t bytes =
      8 * c32 * (static_cast<std::size_t>(a.n) * a.h * a.w + static_cast<std::size_t>(a.k) * a.rs);
  throw error(errc::out_of_memory,
              std::string(what) +
                  ": options.math = fp32_emulated splits x and the filter into a workspace of 8 x (N H W + K R S) x "
                  "round_up(C, 32) bytes (" +
                  num(bytes) +
                  " here), which could not be allocated (or a count reached 2^31); free memory, or use "
                  "math_mode::exact");
}

}  // namespace

template <class T>
void conv2d_forward_impl(const conv2d_params& p, const T* x, const T* w, const T* bias, T* y,
                         const conv2d_options& options) {
  const char* what = "kf::conv2d_forward";
  const conv2d_geometry geometry = validate_conv2d(what, p, x, w, bias, y, sizeof(T), options);
  if (geometry.y_elements == 0) return;  // N = 0 or K = 0
  const int device = current_device(what);
  require_kernel_image_cached(device, what);
  const conv2d_args<T> args = make_conv2d_args(p, geometry.p, geometry.q, x, w, bias, y);
  // The bias stays with the kernels (a.bias): the epilogue only thresholds.
  const epilogue::bias_relu_threshold<float> relu{nullptr, true, options.relu_threshold};
  // The options the kernels below run under: the caller's, or, for fp32_emulated
  // on a layer step 9 does not take, exact math (never less accurate).
  conv2d_options exact = options;
  exact.math = math_mode::exact;
  const conv2d_options* run = &options;
  if constexpr (std::is_same_v<T, float>) {  // validate_conv2d: fp32_emulated is float only
    if (options.math == math_mode::fp32_emulated) {
      require_conv2d_fp32_emulation(what, device);
      const bool done = options.relu
                            ? launch_fp32_emulated(what, device, args, p.layout, relu, options.stream)
                            : launch_fp32_emulated(what, device, args, p.layout, epilogue::identity{}, options.stream);
      if (done) return;
      run = &exact;
    }
  }
  if (p.layout == conv2d_layout::nhwc) {
    if (options.relu) {
      dispatch_conv2d_nhwc(what, device, args, *run, relu);
    } else {
      dispatch_conv2d_nhwc(what, device, args, *run, epilogue::identity{});
    }
  } else if constexpr (std::is_same_v<T, float>) {  // validate_conv2d: NCHW is float only
    if (options.relu) {
      dispatch(what, device, args, *run, relu);
    } else {
      dispatch(what, device, args, *run, epilogue::identity{});
    }
  }
}

template void conv2d_forward_impl<float>(const conv2d_params&, const float*, const float*, const float*, float*,
                                         const conv2d_options&);
template void conv2d_forward_impl<__half>(const conv2d_params&, const __half*, const __half*, const __half*, __half*,
                                          const conv2d_options&);
template void conv2d_forward_impl<__nv_bfloat16>(const conv2d_params&, const __nv_bfloat16*, const __nv_bfloat16*,
                                                 const __nv_bfloat16*, __nv_bfloat16*, const conv2d_options&);

}  // namespace detail

}  // namespace kf
