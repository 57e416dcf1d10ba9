// SPDX-License-Identifier: Apache-2.0
// Which kernels an NHWC (channels_last) conv2d call tries (nhwc_launch.cuh runs
// them), and the workspace of float's route through the NCHW kernels, as pure
// functions the CPU tests cover (tests/conv2d/conv2d_nhwc_cpu_test.cpp). No
// CUDA calls.
//
// Float's route through the NCHW kernels (conv2d_nhwc_route::nchw_kernels):
// x and the filter are transposed into a pooled workspace (NHWC -> NCHW, KRSC
// -> KCRS), `best`'s NCHW machinery runs on them (gemm_launch.cuh: the exact
// implicit GEMM and Winograd, or under math_mode::tf32 the mma.sync kernel),
// writing y NCHW into the workspace, and a last transpose writes the caller's
// NHWC y. Why this rather than an NHWC form of the implicit GEMM: it keeps
// Winograd (the exact path's fastest kernel on 3x3 layers) and every tuned
// plan with no new GEMM kernel, at the cost of moving x and y twice more
// through memory (a few percent of an exact fp32 convolution's time on the
// ResNet layers: the transposes run at memory speed, the exact kernels far
// below the GPU's FLOP rate). A tensor whose layouts coincide is not copied:
// x with C = 1 or H W = 1, the filter with C = 1 or R S = 1 (1x1 layers), y
// with K = 1 or P Q = 1.
#pragma once

#include <cstddef>

#include "../common/grid.hpp"
#include "kernelforge/conv.hpp"
#include "tuning.hpp"

namespace kf::detail {

/// The kernels an NHWC call tries, in this order, before the naive kernel
/// (which runs anywhere: conv2d_naive_nhwc).
struct conv2d_nhwc_route {
  /// Step 11, the few-channel kernel on persistent CTAs (16-bit `best` only,
  /// where tuning.hpp's conv2d_best_uses_few_channels_persistent says so;
  /// conv2d_nhwc_few_channels_persistent_try_launch plans the layer and
  /// declines the ones it does not take), ahead of step 10.
  bool few_channels_persistent = false;
  /// Step 10, the few-channel kernel (16-bit `best` only, where tuning.hpp's
  /// conv2d_best_uses_few_channels says so; conv2d_nhwc_few_channels_try_launch
  /// plans the layer and declines the ones it does not take).
  bool few_channels = false;
  /// implicit_gemm_wgmma in the NHWC layout (sm_90a; the 16-bit types always,
  /// float under math_mode::tf32 only: its products read TF32).
  bool wgmma = false;
  /// float only: the NCHW kernels of `best` through transposed copies (top of file).
  bool nchw_kernels = false;
};

/// The route of a validated NHWC call: `variant` and `math` from the options
/// (math_mode::fp32_emulated arrives as exact: conv2d.cu runs step 9 itself and
/// hands the layers it leaves to the exact kernels), is_float: the element type.
inline conv2d_nhwc_route route_conv2d_nhwc(conv2d_variant variant, math_mode math, bool is_float) {
  conv2d_nhwc_route r;
  const bool best = variant == conv2d_variant::best;
  r.wgmma = variant == conv2d_variant::implicit_gemm_wgmma || (best && (!is_float || math == math_mode::tf32));
  r.nchw_kernels = best && is_float;
  r.few_channels = best && !is_float && conv2d_best_uses_few_channels;
  r.few_channels_persistent = best && !is_float && conv2d_best_uses_few_channels_persistent;
  return r;
}

/// The workspace of the route through the NCHW kernels: which of x, the filter
/// and y are copied (a tensor whose NHWC and NCHW orders coincide is used
/// where it lies), and their bytes, each part rounded up to `alignment` (the
/// pool's 256 bytes) so that every copy starts aligned.
struct conv2d_nhwc_as_nchw_plan {
  bool x = false, w = false, y = false;
  std::size_t x_bytes = 0, w_bytes = 0, y_bytes = 0;  // 0 where not copied
  [[nodiscard]] std::size_t bytes() const { return x_bytes + w_bytes + y_bytes; }
};

/// n, c, h, w: x's extents; k, r, s: the filter's; p, q: y's height and width.
inline conv2d_nhwc_as_nchw_plan plan_conv2d_nhwc_as_nchw(std::size_t n, std::size_t c, std::size_t h, std::size_t w,
                                                         std::size_t k, std::size_t r, std::size_t s, std::size_t p,
                                                         std::size_t q, std::size_t element_bytes,
                                                         std::size_t alignment) {
  conv2d_nhwc_as_nchw_plan plan;
  const auto bytes = [&](std::size_t elements) { return round_up(elements * element_bytes, alignment); };
  plan.x = c > 1 && h * w > 1;  // x[n] is H W x C, to be C x H W
  plan.w = c > 1 && r * s > 1;  // w[k] is R S x C, to be C x R S
  plan.y = k > 1 && p * q > 1;  // y[n] is written K x P Q, to be P Q x K
  plan.x_bytes = plan.x ? bytes(n * c * h * w) : 0;
  plan.w_bytes = plan.w ? bytes(k * c * r * s) : 0;
  plan.y_bytes = plan.y ? bytes(n * k * p * q) : 0;
  return plan;
}

}  // namespace kf::detail
