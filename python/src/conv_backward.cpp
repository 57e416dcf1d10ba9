// SPDX-License-Identifier: Apache-2.0
// Bindings of conv2d's gradients (kernelforge/conv_backward.hpp): conv2d_backward_data (dx
// from dy and the weight) and conv2d_backward_filter (dweight, and dbias when given, from x
// and dy), in the forward's layouts and types (conv.cpp), each array in its memory order:
// x and dx as the forward's x, weight and dweight as its weight, dy and relu_y as its out,
// dbias (K,). They take the extents from their outputs (dx gives H and W, dweight R and S)
// and check dy against the (P, Q) they make. relu=True with relu_y (the forward's output,
// where the forward fused the threshold ReLU) masks dy on the fly.
#include <optional>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "common.hpp"

#include "conv_checks.hpp"

namespace kfpy {
namespace {

using namespace conv_binding;

/// The gradients' options: the variant by name, math from tf32, and the ReLU mask,
/// whose relu_y is given exactly when relu is set.
kf::conv2d_backward_options backward_options(const char* what, const std::optional<in_array>& relu_y, bool tf32,
                                             bool relu, double relu_threshold, const std::string& variant,
                                             std::uintptr_t stream) {
  if (relu && !relu_y) {
    invalid(what, "relu=True masks dy by the forward's output, but 'relu_y' is None; pass the forward's output y");
  }
  if (!relu && relu_y) {
    invalid(what, "'relu_y' is given but relu is False; pass relu=True (the forward fused the ReLU) or no relu_y");
  }
  if (relu && !(relu_threshold >= 0.0)) {
    invalid(what, "relu=True with relu_threshold = " + std::to_string(relu_threshold) +
                      ": the forward's output tells a clipped value from a kept one only for a threshold >= 0 "
                      "(clipped values are 0); mask dy with relu_threshold_backward on the pre-activation and "
                      "pass relu=False");
  }
  kf::conv2d_backward_options o;
  o.stream = to_stream(stream);
  o.math = tf32 ? kf::math_mode::tf32 : kf::math_mode::exact;
  o.relu = relu;
  o.relu_threshold = static_cast<float>(relu_threshold);
  o.variant =
      enum_by_name(what, "variant", variant,
                   {kf::conv2d_backward_variant::best, kf::conv2d_backward_variant::naive,
                    kf::conv2d_backward_variant::implicit_gemm, kf::conv2d_backward_variant::implicit_gemm_wgmma});
  return o;
}

void conv2d_backward_data(const in_array& dy_given, const in_array& weight_given, std::optional<in_array> relu_y_given,
                          const out_array& dx_given, std::size_t stride_h, std::size_t stride_w, std::size_t pad_h,
                          std::size_t pad_w, std::size_t dilation_h, std::size_t dilation_w, const std::string& layout,
                          bool tf32, bool relu, double relu_threshold, const std::string& variant,
                          std::uintptr_t stream) {
  const char* what = "kernelforge.conv2d_backward_data";
  bool torch_order = false;
  const kf::conv2d_layout order = layout_by_name(what, layout, torch_order);
  const in_array dy = in_memory_order(torch_order, dy_given);
  const in_array weight = in_memory_order(torch_order, weight_given);
  const std::optional<in_array> relu_y = in_memory_order(torch_order, relu_y_given);
  const out_array dx = in_memory_order(torch_order, dx_given);
  const bool nhwc = order == kf::conv2d_layout::nhwc;
  const axes& l = nhwc ? nhwc_axes : nchw_axes;
  const dtype t = require_dtype(what, "dy", dy.dtype(), {dtype::f32, dtype::f16, dtype::bf16});
  require_same_dtype(what, "weight", weight.dtype(), dy.dtype(), "dy");
  require_same_dtype(what, "dx", dx.dtype(), dy.dtype(), "dy");
  if (relu_y) require_same_dtype(what, "relu_y", relu_y->dtype(), dy.dtype(), "dy");
  require_layout_for_dtype(what, "dy", dy.dtype(), t, nhwc);
  require_4d(what, "dy", dy, l.y_order);
  require_4d(what, "weight", weight, l.w_order);
  require_4d(what, "dx", dx, l.x_order);
  require_same_channels(what, "weight", weight, "dx", dx, l);
  const geometry g = geometry_of(dx, weight, l, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w);
  kf::conv2d_params p = params_of(g);
  p.layout = order;
  require_y_shape(what, "dy", dy, l, g, p);
  if (relu_y) require_y_shape(what, "relu_y", *relu_y, l, g, p);
  require_dense(what, "dy", dy, nhwc, l.y_order);
  require_dense(what, "weight", weight, nhwc, l.w_order);
  if (relu_y) require_dense(what, "relu_y", *relu_y, nhwc, l.y_order);
  require_dense(what, "dx", dx, nhwc, l.x_order);
  const kf::conv2d_backward_options o = backward_options(what, relu_y, tf32, relu, relu_threshold, variant, stream);
  const int device = relu_y ? require_one_cuda_device(
                                  what, {ref("dy", dy), ref("weight", weight), ref("relu_y", *relu_y), ref("dx", dx)})
                            : require_one_cuda_device(what, {ref("dy", dy), ref("weight", weight), ref("dx", dx)});
  const void* relu_y_data = relu_y ? relu_y->data() : nullptr;
  nb::gil_scoped_release nogil;
  device_guard guard(device);
  dispatch_conv2d_type(t, [&](auto tag) {
    using T = decltype(tag);
    kf::conv2d_backward_data<T>(p, static_cast<const T*>(dy.data()), static_cast<const T*>(weight.data()),
                                static_cast<T*>(dx.data()), o, static_cast<const T*>(relu_y_data));
  });
}

void conv2d_backward_filter(const in_array& x_given, const in_array& dy_given, std::optional<in_array> relu_y_given,
                            const out_array& dweight_given, std::optional<out_array> dbias, std::size_t stride_h,
                            std::size_t stride_w, std::size_t pad_h, std::size_t pad_w, std::size_t dilation_h,
                            std::size_t dilation_w, const std::string& layout, bool tf32, bool relu,
                            double relu_threshold, const std::string& variant, std::uintptr_t stream) {
  const char* what = "kernelforge.conv2d_backward_filter";
  bool torch_order = false;
  const kf::conv2d_layout order = layout_by_name(what, layout, torch_order);
  const in_array x = in_memory_order(torch_order, x_given);
  const in_array dy = in_memory_order(torch_order, dy_given);
  const std::optional<in_array> relu_y = in_memory_order(torch_order, relu_y_given);
  const out_array dweight = in_memory_order(torch_order, dweight_given);
  const bool nhwc = order == kf::conv2d_layout::nhwc;
  const axes& l = nhwc ? nhwc_axes : nchw_axes;
  const dtype t = require_dtype(what, "x", x.dtype(), {dtype::f32, dtype::f16, dtype::bf16});
  require_same_dtype(what, "dy", dy.dtype(), x.dtype(), "x");
  require_same_dtype(what, "dweight", dweight.dtype(), x.dtype(), "x");
  if (dbias) require_same_dtype(what, "dbias", dbias->dtype(), x.dtype(), "x");
  if (relu_y) require_same_dtype(what, "relu_y", relu_y->dtype(), x.dtype(), "x");
  require_layout_for_dtype(what, "x", x.dtype(), t, nhwc);
  require_4d(what, "x", x, l.x_order);
  require_4d(what, "dy", dy, l.y_order);
  require_4d(what, "dweight", dweight, l.w_order);
  require_same_channels(what, "dweight", dweight, "x", x, l);
  const geometry g = geometry_of(x, dweight, l, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w);
  kf::conv2d_params p = params_of(g);
  p.layout = order;
  require_y_shape(what, "dy", dy, l, g, p);
  if (relu_y) require_y_shape(what, "relu_y", *relu_y, l, g, p);
  if (dbias) require_bias_shape(what, "dbias", *dbias, g.k);
  require_dense(what, "x", x, nhwc, l.x_order);
  require_dense(what, "dy", dy, nhwc, l.y_order);
  if (relu_y) require_dense(what, "relu_y", *relu_y, nhwc, l.y_order);
  require_dense(what, "dweight", dweight, nhwc, l.w_order);
  const kf::conv2d_backward_options o = backward_options(what, relu_y, tf32, relu, relu_threshold, variant, stream);
  int device = 0;
  if (relu_y && dbias) {
    device = require_one_cuda_device(
        what, {ref("x", x), ref("dy", dy), ref("relu_y", *relu_y), ref("dweight", dweight), ref("dbias", *dbias)});
  } else if (relu_y) {
    device =
        require_one_cuda_device(what, {ref("x", x), ref("dy", dy), ref("relu_y", *relu_y), ref("dweight", dweight)});
  } else if (dbias) {
    device = require_one_cuda_device(what, {ref("x", x), ref("dy", dy), ref("dweight", dweight), ref("dbias", *dbias)});
  } else {
    device = require_one_cuda_device(what, {ref("x", x), ref("dy", dy), ref("dweight", dweight)});
  }
  const void* relu_y_data = relu_y ? relu_y->data() : nullptr;
  void* dbias_data = dbias ? dbias->data() : nullptr;
  nb::gil_scoped_release nogil;
  device_guard guard(device);
  dispatch_conv2d_type(t, [&](auto tag) {
    using T = decltype(tag);
    kf::conv2d_backward_filter<T>(p, static_cast<const T*>(x.data()), static_cast<const T*>(dy.data()),
                                  static_cast<T*>(dweight.data()), static_cast<T*>(dbias_data), o,
                                  static_cast<const T*>(relu_y_data));
  });
}

}  // namespace

void bind_conv_backward(nb::module_& m) {
  using nb::arg;
  m.def("conv2d_backward_data", &conv2d_backward_data, arg("dy"), arg("weight"), arg("relu_y").none(), arg("dx"),
        arg("stride_h"), arg("stride_w"), arg("pad_h"), arg("pad_w"), arg("dilation_h"), arg("dilation_w"),
        arg("layout"), arg("tf32"), arg("relu"), arg("relu_threshold"), arg("variant"), arg("stream"),
        "dx = the gradient of conv2d with respect to x, from dy (the output's gradient) and weight; shapes, layouts "
        "and dtypes as conv2d's (dy like its out, dx like its x). relu: dy is first masked where relu_y (the "
        "forward's output, given exactly when relu is set) was clipped; needs relu_threshold >= 0. tf32: TF32 "
        "products. Errors as conv2d's.");
  m.def("conv2d_backward_filter", &conv2d_backward_filter, arg("x"), arg("dy"), arg("relu_y").none(), arg("dweight"),
        arg("dbias").none(), arg("stride_h"), arg("stride_w"), arg("pad_h"), arg("pad_w"), arg("dilation_h"),
        arg("dilation_w"), arg("layout"), arg("tf32"), arg("relu"), arg("relu_threshold"), arg("variant"),
        arg("stream"),
        "dweight (and dbias, (K,), unless None) = the gradients of conv2d with respect to weight and bias, from x "
        "and dy; shapes, layouts and dtypes as conv2d's. relu, relu_y, relu_threshold and tf32 as "
        "conv2d_backward_data's; errors as conv2d's.");
}

}  // namespace kfpy
