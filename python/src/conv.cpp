// SPDX-License-Identifier: Apache-2.0
// Bindings of the convolution family's forward (kernelforge/conv.hpp): filter2d on (H, W)
// or (C, H, W) images (float32, float16); conv2d_forward in either layout, each array
// given in its memory order, dense: layout "nchw" takes x (N, C, H, W), weight (K, C, R, S),
// out (N, K, P, Q) (float32); layout "nhwc" takes x (N, H, W, C), weight (K, R, S, C), out
// (N, P, Q, K) (float32, float16, bfloat16: the channels_last memory of torch tensors, which
// the Python wrappers pass as they are, in torch's (N, C, H, W) order, with layout
// "channels_last": conv_checks.hpp's memory_order_view); bias (K,); math by name ("exact",
// "tf32", "fp32_emulated": conv2d_options::math, the library's rules for each). Plus
// conv2d_output_shape, which the Python wrappers use to allocate the output (pure host
// arithmetic: it works without a GPU). The gradients: conv_backward.cpp; the checks both
// share: conv_checks.hpp.
#include <optional>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include "common.hpp"

#include "conv_checks.hpp"

namespace kfpy {
namespace {

using namespace conv_binding;

void filter2d(const in_array& image, const in_array& filter, const out_array& out, const std::string& border,
              const std::string& variant, std::uintptr_t stream) {
  const char* what = "kernelforge.filter2d";
  const dtype t = require_dtype(what, "image", image.dtype(), {dtype::f32, dtype::f16});
  require_same_dtype(what, "filter", filter.dtype(), image.dtype(), "image");
  require_same_dtype(what, "out", out.dtype(), image.dtype(), "image");
  if (image.ndim() != 2 && image.ndim() != 3) {
    invalid(what, "'image' must be (H, W) or (C, H, W); got shape " + shape_string(image));
  }
  if (filter.ndim() != 2) invalid(what, "'filter' must be 2-D (R, S); got shape " + shape_string(filter));
  if (!same_shape(out, image)) {
    invalid(what, "'out' has shape " + shape_string(out) + " but 'image' has shape " + shape_string(image));
  }
  require_contiguous(what, "image", image);
  require_contiguous(what, "filter", filter);
  require_contiguous(what, "out", out);
  kf::filter2d_options o;
  o.stream = to_stream(stream);
  o.mode = enum_by_name(what, "border", border, {kf::border::zero, kf::border::clamp, kf::border::reflect});
  o.variant =
      enum_by_name(what, "variant", variant,
                   {kf::filter2d_variant::best, kf::filter2d_variant::naive, kf::filter2d_variant::constant_memory,
                    kf::filter2d_variant::smem_tiled, kf::filter2d_variant::register_window,
                    kf::filter2d_variant::rolling_window, kf::filter2d_variant::tma_pipeline});
  const int device = require_one_cuda_device(what, {ref("image", image), ref("filter", filter), ref("out", out)});
  const bool planar = image.ndim() == 2;
  const std::size_t c = planar ? 1 : image.shape(0);
  const std::size_t h = image.shape(planar ? 0 : 1), w = image.shape(planar ? 1 : 2);
  const std::size_t r = filter.shape(0), s = filter.shape(1);
  nb::gil_scoped_release nogil;
  device_guard guard(device);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    kf::filter2d<T>(c, h, w, static_cast<const T*>(image.data()), w, static_cast<const T*>(filter.data()), r, s,
                    static_cast<T*>(out.data()), w, o);
  };
  if (t == dtype::f32) {
    run(float{});
  } else {
    run(__half{});
  }
}

// (P, Q) for this geometry; InvalidArgumentError (the library's message) when there is none.
std::pair<std::size_t, std::size_t> conv2d_output_shape(std::size_t n, std::size_t c, std::size_t h, std::size_t w,
                                                        std::size_t k, std::size_t r, std::size_t s,
                                                        std::size_t stride_h, std::size_t stride_w, std::size_t pad_h,
                                                        std::size_t pad_w, std::size_t dilation_h,
                                                        std::size_t dilation_w) {
  const kf::conv2d_params p =
      params_of({n, c, h, w, k, r, s, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w});
  return {kf::conv2d_output_height(p), kf::conv2d_output_width(p)};
}

void conv2d(const in_array& x_given, const in_array& weight_given, std::optional<in_array> bias,
            const out_array& out_given, std::size_t stride_h, std::size_t stride_w, std::size_t pad_h,
            std::size_t pad_w, std::size_t dilation_h, std::size_t dilation_w, const std::string& layout,
            const std::string& math, bool relu, double relu_threshold, const std::string& variant,
            std::uintptr_t stream) {
  const char* what = "kernelforge.conv2d";
  bool torch_order = false;
  const kf::conv2d_layout order = layout_by_name(what, layout, torch_order);
  const in_array x = in_memory_order(torch_order, x_given);
  const in_array weight = in_memory_order(torch_order, weight_given);
  const out_array out = in_memory_order(torch_order, out_given);
  const bool nhwc = order == kf::conv2d_layout::nhwc;
  const axes& l = nhwc ? nhwc_axes : nchw_axes;
  const dtype t = require_dtype(what, "x", x.dtype(), {dtype::f32, dtype::f16, dtype::bf16});
  require_same_dtype(what, "weight", weight.dtype(), x.dtype(), "x");
  require_same_dtype(what, "out", out.dtype(), x.dtype(), "x");
  if (bias) require_same_dtype(what, "bias", bias->dtype(), x.dtype(), "x");
  require_layout_for_dtype(what, "x", x.dtype(), t, nhwc);
  require_4d(what, "x", x, l.x_order);
  require_4d(what, "weight", weight, l.w_order);
  require_same_channels(what, "weight", weight, "x", x, l);
  const geometry g = geometry_of(x, weight, l, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w);
  if (bias && (bias->ndim() != 1 || bias->shape(0) != g.k)) {
    invalid(what, "'bias' must have shape (" + std::to_string(g.k) + ",); got " + shape_string(*bias));
  }
  kf::conv2d_params p = params_of(g);
  p.layout = order;
  require_y_shape(what, "out", out, l, g, p);
  require_dense(what, "x", x, nhwc, l.x_order);
  require_dense(what, "weight", weight, nhwc, l.w_order);
  if (bias) require_contiguous(what, "bias", *bias);
  require_dense(what, "out", out, nhwc, l.y_order);
  kf::conv2d_options o;
  o.stream = to_stream(stream);
  o.math = math_by_name(what, math);
  o.relu = relu;
  o.relu_threshold = static_cast<float>(relu_threshold);
  o.variant = enum_by_name(what, "variant", variant,
                           {kf::conv2d_variant::best, kf::conv2d_variant::naive, kf::conv2d_variant::smem_tiled,
                            kf::conv2d_variant::implicit_gemm, kf::conv2d_variant::implicit_gemm_tf32,
                            kf::conv2d_variant::implicit_gemm_pipelined, kf::conv2d_variant::winograd,
                            kf::conv2d_variant::winograd_fused, kf::conv2d_variant::implicit_gemm_wgmma});
  const int device =
      bias ? require_one_cuda_device(what, {ref("x", x), ref("weight", weight), ref("bias", *bias), ref("out", out)})
           : require_one_cuda_device(what, {ref("x", x), ref("weight", weight), ref("out", out)});
  const void* bias_data = bias ? bias->data() : nullptr;
  nb::gil_scoped_release nogil;
  device_guard guard(device);
  dispatch_conv2d_type(t, [&](auto tag) {
    using T = decltype(tag);
    kf::conv2d_forward<T>(p, static_cast<const T*>(x.data()), static_cast<const T*>(weight.data()),
                          static_cast<const T*>(bias_data), static_cast<T*>(out.data()), o);
  });
}

}  // namespace

void bind_conv(nb::module_& m) {
  using nb::arg;
  m.def("filter2d", &filter2d, arg("image"), arg("filter"), arg("out"), arg("border"), arg("variant"), arg("stream"),
        "out = image cross-correlated with filter (same size as image). image, out: (H, W) or (C, H, W); "
        "filter: (R, S), applied to each channel; one dtype (float32, float16), C-contiguous, on one CUDA device. "
        "border: 'zero', 'clamp' or 'reflect'; variant: 'best' or a step's name; stream: a cudaStream_t as an int. "
        "TypeError for a dtype, InvalidArgumentError for shapes, layout, device or names.");
  m.def("conv2d_output_shape", &conv2d_output_shape, arg("n"), arg("c"), arg("h"), arg("w"), arg("k"), arg("r"),
        arg("s"), arg("stride_h"), arg("stride_w"), arg("pad_h"), arg("pad_w"), arg("dilation_h"), arg("dilation_w"),
        "(P, Q), the output height and width of this convolution geometry; InvalidArgumentError where there is "
        "none (a zero size, stride or dilation, a dilated filter larger than the padded input).");
  m.def("conv2d", &conv2d, arg("x"), arg("weight"), arg("bias").none(), arg("out"), arg("stride_h"), arg("stride_w"),
        arg("pad_h"), arg("pad_w"), arg("dilation_h"), arg("dilation_w"), arg("layout"), arg("math"), arg("relu"),
        arg("relu_threshold"), arg("variant"), arg("stream"),
        "out = conv2d(x, weight) + bias, then the ReLU (threshold relu_threshold) if relu. layout 'nchw': x (N, C, H, "
        "W), weight (K, C, R, S), out (N, K, P, Q); 'nhwc': (N, H, W, C), (K, R, S, C), (N, P, Q, K); "
        "'channels_last': torch's NCHW-shaped channels_last tensors. bias: (K,) or None. One dtype (float32; "
        "float16 and bfloat16 in NHWC only), dense, on one CUDA device. math: 'exact', 'tf32' or 'fp32_emulated'; "
        "variant: 'best' or a step's name. TypeError for a dtype, InvalidArgumentError for shapes, layout or "
        "names, UnsupportedError for a 16-bit NCHW call or a variant this GPU or geometry lacks.");
}

}  // namespace kfpy
