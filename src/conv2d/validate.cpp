// SPDX-License-Identifier: Apache-2.0
// conv2d_forward's argument checks and output geometry, host code only: the
// messages name the field, the numbers and the fix. Compiled by the host compiler.
#include "kernelforge/kernels/conv2d/validate.hpp"

#include <climits>
#include <cstdint>
#include <string>
#include <tuple>

#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/error.hpp"
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

/// 16-bit types read the NHWC layout only (forward and gradients alike).
void validate_conv2d_layout_type(const char* what, const conv2d_params& p, std::size_t element_bytes) {
  require_one_of(what, "params.layout", p.layout, {conv2d_layout::nchw, conv2d_layout::nhwc});
  if (p.layout == conv2d_layout::nchw && element_bytes != sizeof(float)) {
    throw_unsupported(what,
                      "__half and __nv_bfloat16 convolutions read the NHWC layout only (params.layout = "
                      "nchw); store x as NHWC and weight as KRSC and set params.layout = "
                      "kf::conv2d_layout::nhwc (PyTorch: channels_last tensors), or convert to float");
  }
}

/// The layout's rules: 16-bit types are NHWC only; NHWC runs naive,
/// implicit_gemm_wgmma and best only.
void validate_conv2d_layout(const char* what, const conv2d_params& p, std::size_t element_bytes,
                            const conv2d_options& options) {
  validate_conv2d_layout_type(what, p, element_bytes);
  if (p.layout == conv2d_layout::nchw) return;
  using v = conv2d_variant;
  if (options.variant != v::best && options.variant != v::naive && options.variant != v::implicit_gemm_wgmma) {
    throw_unsupported(what, std::string("conv2d_variant::") + to_string(options.variant) +
                                " reads NCHW only (params.layout = nhwc); the NHWC variants are best, naive and "
                                "implicit_gemm_wgmma");
  }
}

/// The extents every conv2d call shares: the output geometry (with the
/// numbers), in_channels, and the 32-bit indexing limits of x, weight, y and
/// the padded plane.
conv2d_sizes check_conv2d_extents(const char* what, const conv2d_params& p) {
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
  return conv2d_sizes{P, Q, x_n, w_n, y_n};
}

/// errc::invalid_argument when `out` (out_n elements) overlaps `in`.
void require_separate(const char* what, const char* out_name, const void* out, std::size_t out_bytes,
                      const char* in_name, const void* in, std::size_t in_bytes) {
  if (ranges_overlap(out, out_bytes, in, in_bytes)) {
    throw_invalid_argument(
        what, std::string("'") + out_name + "' and '" + in_name + "' overlap; the output must be a separate array");
  }
}

/// The gradients: exact or tf32; fp32_emulated (the forward's and matmul's) is errc::unsupported with the reason.
void require_conv2d_backward_math(const char* what, math_mode math) {
  if (math == math_mode::fp32_emulated) {
    throw error(errc::unsupported, std::string(what) +
                                       ": options.math = fp32_emulated covers conv2d_forward and kf::matmul, not the "
                                       "gradients yet; they compute exact fp32 (math_mode::exact) or TF32 "
                                       "(math_mode::tf32)");
  }
  require_one_of(what, "options.math", math, {math_mode::exact, math_mode::tf32});
}

/// The forward: exact, tf32, or fp32_emulated (float data, variant best: step 9
/// where the layer and device allow, the exact kernels elsewhere).
void require_conv2d_math(const char* what, const conv2d_options& options, std::size_t element_bytes) {
  require_one_of(what, "options.math", options.math, {math_mode::exact, math_mode::tf32, math_mode::fp32_emulated});
  if (options.math != math_mode::fp32_emulated) return;
  if (element_bytes != sizeof(float)) {
    throw_invalid_argument(what,
                           "options.math = fp32_emulated is for float data (it emulates fp32 on the TF32 tensor "
                           "cores); __half and __nv_bfloat16 already multiply on the tensor cores: leave "
                           "options.math at exact");
  }
  if (options.variant != conv2d_variant::best) {
    throw_invalid_argument(what, std::string("options.math = fp32_emulated runs its own kernel (step 9) under "
                                             "options.variant = best; options.variant = ") +
                                     to_string(options.variant) + " computes exact fp32 or TF32 only");
  }
}

}  // namespace

void validate_conv2d_options(const char* what, const conv2d_options& options, std::size_t element_bytes) {
  using v = conv2d_variant;
  require_one_of(what, "options.variant", options.variant,
                 {v::best, v::naive, v::smem_tiled, v::implicit_gemm, v::implicit_gemm_tf32, v::implicit_gemm_pipelined,
                  v::winograd, v::winograd_fused, v::implicit_gemm_wgmma});
  require_conv2d_math(what, options, element_bytes);
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
  validate_conv2d_layout(what, p, element_bytes, options);
  const conv2d_sizes sizes = check_conv2d_extents(what, p);
  const std::size_t P = sizes.p, Q = sizes.q, x_n = sizes.x_elements, w_n = sizes.w_elements, y_n = sizes.y_elements;
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
  require_separate(what, "y", y, bytes(y_n), "x", x, bytes(x_n));
  require_separate(what, "y", y, bytes(y_n), "weight", weight, bytes(w_n));
  require_separate(what, "y", y, bytes(y_n), "bias", bias, bytes(p.out_channels));
  return conv2d_geometry{P, Q, y_n};
}

namespace {

/// The checks both gradients share: options, layout and type, extents, and
/// the ReLU mask's rule and pointer.
conv2d_sizes validate_conv2d_backward_common(const char* what, const conv2d_params& p, const void* relu_y,
                                             std::size_t element_bytes, const conv2d_backward_options& options) {
  using v = conv2d_backward_variant;
  require_one_of(what, "options.variant", options.variant,
                 {v::best, v::naive, v::implicit_gemm, v::implicit_gemm_wgmma});
  require_conv2d_backward_math(what, options.math);
  validate_conv2d_layout_type(what, p, element_bytes);
  const conv2d_sizes sizes = check_conv2d_extents(what, p);
  if (options.relu) {
    if (!(options.relu_threshold >= 0.0f)) {
      throw_invalid_argument(what,
                             "options.relu with options.relu_threshold = " + std::to_string(options.relu_threshold) +
                                 ": the forward's output tells a clipped value from a kept one only for a "
                                 "threshold >= 0 (clipped values are 0); mask dy with "
                                 "kf::relu_threshold_backward on the pre-activation and leave options.relu off");
    }
    if (relu_y == nullptr) {
      throw_invalid_argument(what,
                             "options.relu is set but relu_y is null; pass the forward's output y (the "
                             "mask's source), or leave options.relu off");
    }
    require_pointer(what, "relu_y", relu_y, sizes.y_elements);
  }
  return sizes;
}

}  // namespace

conv2d_sizes validate_conv2d_backward_data(const char* what, const conv2d_params& p, const void* dy, const void* weight,
                                           const void* dx, const void* relu_y, std::size_t element_bytes,
                                           const conv2d_backward_options& options) {
  const conv2d_sizes s = validate_conv2d_backward_common(what, p, relu_y, element_bytes, options);
  require_pointer(what, "dy", dy, s.y_elements);
  require_pointer(what, "weight", weight, s.w_elements);
  require_pointer(what, "dx", dx, s.x_elements);
  const auto bytes = [element_bytes](std::size_t n) { return n * element_bytes; };
  require_separate(what, "dx", dx, bytes(s.x_elements), "dy", dy, bytes(s.y_elements));
  require_separate(what, "dx", dx, bytes(s.x_elements), "weight", weight, bytes(s.w_elements));
  if (options.relu) require_separate(what, "dx", dx, bytes(s.x_elements), "relu_y", relu_y, bytes(s.y_elements));
  return s;
}

conv2d_sizes validate_conv2d_backward_filter(const char* what, const conv2d_params& p, const void* x, const void* dy,
                                             const void* dweight, const void* dbias, const void* relu_y,
                                             std::size_t element_bytes, const conv2d_backward_options& options) {
  const conv2d_sizes s = validate_conv2d_backward_common(what, p, relu_y, element_bytes, options);
  require_pointer(what, "x", x, s.x_elements);
  require_pointer(what, "dy", dy, s.y_elements);
  require_pointer(what, "dweight", dweight, s.w_elements);
  const auto bytes = [element_bytes](std::size_t n) { return n * element_bytes; };
  const std::size_t k_bytes = bytes(p.out_channels);
  for (const auto& [name, out, out_bytes] :
       {std::tuple<const char*, const void*, std::size_t>{"dweight", dweight, bytes(s.w_elements)},
        std::tuple<const char*, const void*, std::size_t>{"dbias", dbias, k_bytes}}) {
    require_separate(what, name, out, out_bytes, "x", x, bytes(s.x_elements));
    require_separate(what, name, out, out_bytes, "dy", dy, bytes(s.y_elements));
    if (options.relu) require_separate(what, name, out, out_bytes, "relu_y", relu_y, bytes(s.y_elements));
  }
  require_separate(what, "dbias", dbias, k_bytes, "dweight", dweight, bytes(s.w_elements));
  return s;
}

}  // namespace detail

std::size_t conv2d_output_height(const conv2d_params& params) {
  return detail::output_height("kf::conv2d_output_height", params);
}

std::size_t conv2d_output_width(const conv2d_params& params) {
  return detail::output_width("kf::conv2d_output_width", params);
}

}  // namespace kf
