// SPDX-License-Identifier: Apache-2.0
// conv2d_forward's argument checks and output geometry, host code only: the
// messages name the field, the numbers and the fix. Compiled by the host compiler.
#include "kernelforge/kernels/conv2d/validate.hpp"

#include <climits>
#include <cstdint>
#include <string>

#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/kernels/runtime/validate.hpp"

namespace kf {
namespace detail {
namespace {

/// Every tensor is indexed with 32-bit ints.
constexpr std::size_t conv2d_max_elements = static_cast<std::size_t>(INT_MAX);
/// Padded input extents (h + 2 pad_h, w + 2 pad_w): the implicit GEMM marks
/// rows past M with an input row of -2^30, which no tap may bring back.
constexpr std::size_t conv2d_max_padded_extent = std::size_t{1} << 30;

std::string num(std::size_t v) { return std::to_string(v); }

/// Names of one spatial dimension's parameters, for messages.
struct dimension_names {
  const char* extent;    // "in_height"
  const char* pad;       // "pad_h"
  const char* filter;    // "filter_height"
  const char* stride;    // "stride_h"
  const char* dilation;  // "dilation_h"
  const char* output;    // "P (output height)"
};
constexpr dimension_names height_names{"in_height", "pad_h",      "filter_height",
                                       "stride_h",  "dilation_h", "P (the output height)"};
constexpr dimension_names width_names{"in_width", "pad_w",      "filter_width",
                                      "stride_w", "dilation_w", "Q (the output width)"};

std::size_t output_extent(const char* what, const dimension_names& d, std::size_t in, std::size_t pad,
                          std::size_t filter, std::size_t stride, std::size_t dilation) {
  const auto name = [](const char* field) { return std::string("params.") + field; };
  if (in == 0) throw_invalid_argument(what, name(d.extent) + " = 0: the input has no pixels along this dimension");
  if (filter == 0)
    throw_invalid_argument(what, name(d.filter) + " = 0: the filter needs at least one tap along this dimension");
  if (stride == 0) throw_invalid_argument(what, name(d.stride) + " = 0: strides start at 1");
  if (dilation == 0) throw_invalid_argument(what, name(d.dilation) + " = 0: dilations start at 1 (1 = no dilation)");
  if (pad > (SIZE_MAX - in) / 2)
    throw_invalid_argument(what, name(d.pad) + " = " + num(pad) + " overflows the padded extent");
  const std::size_t padded = in + 2 * pad;
  if (filter - 1 > (SIZE_MAX - 1) / dilation) {
    throw_invalid_argument(what, name(d.dilation) + " x (" + name(d.filter) + " - 1) overflows");
  }
  const std::size_t reach = dilation * (filter - 1) + 1;
  if (reach > padded) {
    throw_invalid_argument(what, "no output: the dilated filter spans " + name(d.dilation) + " x (" + name(d.filter) +
                                     " - 1) + 1 = " + num(dilation) + " x " + num(filter - 1) + " + 1 = " + num(reach) +
                                     " pixels, more than the padded input " + name(d.extent) + " + 2 x " + name(d.pad) +
                                     " = " + num(in) + " + 2 x " + num(pad) + " = " + num(padded) + ", so " + d.output +
                                     " would be < 1. Use a smaller filter or dilation, or more padding");
  }
  return (padded - reach) / stride + 1;
}

std::size_t output_height(const char* what, const conv2d_params& p) {
  return output_extent(what, height_names, p.in_height, p.pad_h, p.filter_height, p.stride_h, p.dilation_h);
}
std::size_t output_width(const char* what, const conv2d_params& p) {
  return output_extent(what, width_names, p.in_width, p.pad_w, p.filter_width, p.stride_w, p.dilation_w);
}

/// a * b * c * d, or SIZE_MAX when it overflows.
std::size_t product(std::size_t a, std::size_t b, std::size_t c, std::size_t d) {
  std::size_t r = 1;
  for (std::size_t v : {a, b, c, d}) {
    if (v != 0 && r > SIZE_MAX / v) return SIZE_MAX;
    r *= v;
  }
  return r;
}

/// conv2d_variant::winograd and winograd_fused: errc::unsupported for layers
/// F(2x2,3x3) does not compute, or whose transformed tensors int cannot index.
void validate_conv2d_winograd(const char* what, const conv2d_params& p, std::size_t P, std::size_t Q,
                              conv2d_variant variant) {
  const std::string name = std::string("conv2d_variant::") + to_string(variant);
  const char* reason = conv2d_winograd_unsupported_reason(p.filter_height, p.filter_width, p.stride_h, p.stride_w,
                                                          p.dilation_h, p.dilation_w);
  if (reason != nullptr) {
    throw_unsupported(what, name + " (F(2x2,3x3)) computes 3x3 filters at stride 1 and dilation 1 only, and " + reason +
                                " (filter " + num(p.filter_height) + " x " + num(p.filter_width) + ", stride " +
                                num(p.stride_h) + " x " + num(p.stride_w) + ", dilation " + num(p.dilation_h) + " x " +
                                num(p.dilation_w) + "); use implicit_gemm or best");
  }
  if (variant == conv2d_variant::winograd_fused) {
    const conv2d_winograd_fused_layout l =
        make_conv2d_winograd_fused_layout(p.batch, p.in_channels, p.out_channels, P, Q);
    if (!l.launchable()) {
      throw_unsupported(what, name + " needs transformed filters of " + num(l.u_floats) + " floats (limit 2^31) and " +
                                  num(l.grid_y) + " blocks of " + num(conv2d_winograd_fused_layout::filters) +
                                  " output channels (limit " + num(conv2d_winograd_fused_layout::max_grid_y) +
                                  "); use fewer output channels per call, or winograd or best");
    }
    return;
  }
  const conv2d_winograd_layout l = make_conv2d_winograd_layout(p.batch, p.in_channels, p.out_channels, P, Q);
  if (!l.indexable()) {
    throw_unsupported(what, name + " needs transformed tensors of " + num(l.u_floats) + ", " + num(l.v_floats) +
                                " and " + num(l.m_floats) +
                                " floats, at or above its 2^31-element indexing limit; split the batch or use "
                                "implicit_gemm or best");
  }
}

/// The layout's rules: 16-bit types are NHWC only; NHWC runs naive,
/// implicit_gemm_wgmma and best only.
void validate_conv2d_layout(const char* what, const conv2d_params& p, std::size_t element_bytes,
                            const conv2d_options& options) {
  if (p.layout == conv2d_layout::nchw) {
    if (element_bytes != sizeof(float)) {
      throw_unsupported(what,
                        "__half and __nv_bfloat16 convolutions read the NHWC layout only (params.layout = "
                        "nchw); store x as NHWC and weight as KRSC and set params.layout = "
                        "kf::conv2d_layout::nhwc (PyTorch: channels_last tensors), or convert to float");
    }
    return;
  }
  using v = conv2d_variant;
  if (options.variant != v::best && options.variant != v::naive && options.variant != v::implicit_gemm_wgmma) {
    throw_unsupported(what, std::string("conv2d_variant::") + to_string(options.variant) +
                                " reads NCHW only (params.layout = nhwc); the NHWC variants are best, naive and "
                                "implicit_gemm_wgmma");
  }
}

}  // namespace

void validate_conv2d_options(const char* what, const conv2d_options& options, std::size_t element_bytes) {
  using v = conv2d_variant;
  require_one_of(what, "options.variant", options.variant,
                 {v::best, v::naive, v::smem_tiled, v::implicit_gemm, v::implicit_gemm_tf32, v::implicit_gemm_pipelined,
                  v::winograd, v::winograd_fused, v::implicit_gemm_wgmma});
  require_one_of(what, "options.math", options.math, {math_mode::exact, math_mode::tf32});
  if (options.variant == conv2d_variant::implicit_gemm_tf32 && options.math != math_mode::tf32) {
    throw_invalid_argument(
        what,
        "conv2d_variant::implicit_gemm_tf32 rounds inputs to TF32 (about 1e-3 relative error), which "
        "options.math = exact forbids; set options.math = kf::math_mode::tf32, or use implicit_gemm");
  }
  // 16-bit inputs are what the tensor cores multiply: no rounding for math to forbid.
  if (options.variant == conv2d_variant::implicit_gemm_wgmma && options.math != math_mode::tf32 &&
      element_bytes == sizeof(float)) {
    throw_invalid_argument(
        what,
        "conv2d_variant::implicit_gemm_wgmma multiplies TF32 inputs (about 1e-3 relative error), which "
        "options.math = exact forbids; set options.math = kf::math_mode::tf32, or use implicit_gemm");
  }
}

conv2d_geometry validate_conv2d(const char* what, const conv2d_params& p, const void* x, const void* weight,
                                const void* bias, const void* y, std::size_t element_bytes,
                                const conv2d_options& options) {
  validate_conv2d_options(what, options, element_bytes);
  require_one_of(what, "params.layout", p.layout, {conv2d_layout::nchw, conv2d_layout::nhwc});
  validate_conv2d_layout(what, p, element_bytes, options);
  const std::size_t P = output_height(what, p);
  const std::size_t Q = output_width(what, p);
  if (p.in_channels == 0) throw_invalid_argument(what, "params.in_channels = 0: the input needs at least one channel");
  const std::size_t x_n = product(p.batch, p.in_channels, p.in_height, p.in_width);
  const std::size_t w_n = product(p.out_channels, p.in_channels, p.filter_height, p.filter_width);
  const std::size_t y_n = product(p.batch, p.out_channels, P, Q);
  const std::size_t padded_h = p.in_height + 2 * p.pad_h,
                    padded_w = p.in_width + 2 * p.pad_w;  // no overflow: checked above
  if (x_n > conv2d_max_elements || w_n > conv2d_max_elements || y_n > conv2d_max_elements ||
      padded_h >= conv2d_max_padded_extent || padded_w >= conv2d_max_padded_extent ||
      product(padded_h, padded_w, 1, 1) > conv2d_max_elements) {
    throw_unsupported(what, "tensors of 2^31 elements or more (x: " + num(x_n) + ", weight: " + num(w_n) +
                                ", y: " + num(y_n) + ", padded plane: " + num(padded_h) + " x " + num(padded_w) +
                                ") are beyond kernelforge's 32-bit indexing; split the batch");
  }
  if (options.variant == conv2d_variant::winograd || options.variant == conv2d_variant::winograd_fused) {
    validate_conv2d_winograd(what, p, P, Q, options.variant);
  }
  if (options.variant == conv2d_variant::implicit_gemm_wgmma && p.layout == conv2d_layout::nhwc) {
    const char* reason = conv2d_nhwc_wgmma_unsupported_reason(p.stride_h, p.stride_w);
    if (reason != nullptr) {
      throw_unsupported(what, std::string("conv2d_variant::implicit_gemm_wgmma in the NHWC layout needs strides of at "
                                          "most 8, and ") +
                                  reason + " (stride " + num(p.stride_h) + " x " + num(p.stride_w) +
                                  "); use best, which falls back to naive");
    }
  } else if (options.variant == conv2d_variant::implicit_gemm_wgmma) {
    const char* reason = conv2d_wgmma_unsupported_reason(p.stride_h, p.stride_w);
    if (reason != nullptr) {
      throw_unsupported(what, std::string("conv2d_variant::implicit_gemm_wgmma computes stride-1 layers only, and ") +
                                  reason + " (stride " + num(p.stride_h) + " x " + num(p.stride_w) +
                                  "); use implicit_gemm_tf32 or best");
    }
  }
  require_pointer(what, "x", x, x_n);
  require_pointer(what, "weight", weight, w_n);
  require_pointer(what, "y", y, y_n);
  const auto bytes = [element_bytes](std::size_t n) { return n * element_bytes; };
  if (ranges_overlap(y, bytes(y_n), x, bytes(x_n)))
    throw_invalid_argument(what, "'y' and 'x' overlap; the output must be a separate array");
  if (ranges_overlap(y, bytes(y_n), weight, bytes(w_n))) {
    throw_invalid_argument(what, "'y' and 'weight' overlap; the output must be a separate array");
  }
  if (ranges_overlap(y, bytes(y_n), bias, bytes(p.out_channels))) {
    throw_invalid_argument(what, "'y' and 'bias' overlap; the output must be a separate array");
  }
  return conv2d_geometry{P, Q, y_n};
}

}  // namespace detail

std::size_t conv2d_output_height(const conv2d_params& params) {
  return detail::output_height("kf::conv2d_output_height", params);
}

std::size_t conv2d_output_width(const conv2d_params& params) {
  return detail::output_width("kf::conv2d_output_width", params);
}

}  // namespace kf
