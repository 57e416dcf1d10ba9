// SPDX-License-Identifier: Apache-2.0
// Bindings of the convolution family (kernelforge/conv.hpp, kernelforge/conv_backward.hpp):
// filter2d on (H, W) or (C, H, W) images (float32, float16); conv2d_forward and its two
// gradients, conv2d_backward_data (dx from dy and the weight) and conv2d_backward_filter
// (dweight, and dbias when given, from x and dy), in either layout, each array given in
// its memory order, dense: layout "nchw" takes x and dx (N, C, H, W), weight and dweight
// (K, C, R, S), out, dy and relu_y (N, K, P, Q) (float32); layout "nhwc" takes x and dx
// (N, H, W, C), weight and dweight (K, R, S, C), out, dy and relu_y (N, P, Q, K) (float32,
// float16, bfloat16: the channels_last memory of torch tensors, which the Python
// wrappers pass as .permute(0, 2, 3, 1) views); bias and dbias are (K,). The gradients
// take the extents from their outputs (dx gives H and W, dweight R and S) and check dy
// against the (P, Q) they make. relu=True with relu_y (the forward's output, where the
// forward fused the threshold ReLU) masks dy on the fly. Plus conv2d_output_shape, which
// the Python wrappers use to allocate the output (pure host arithmetic: it works
// without a GPU).
#include <optional>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include "common.hpp"

namespace kfpy {
namespace {

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

struct geometry {
  std::size_t n, c, h, w, k, r, s;
  std::size_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
};

kf::conv2d_params params_of(const geometry& g) {
  kf::conv2d_params p;
  p.batch = g.n;
  p.in_channels = g.c;
  p.in_height = g.h;
  p.in_width = g.w;
  p.out_channels = g.k;
  p.filter_height = g.r;
  p.filter_width = g.s;
  p.stride_h = g.stride_h;
  p.stride_w = g.stride_w;
  p.pad_h = g.pad_h;
  p.pad_w = g.pad_w;
  p.dilation_h = g.dilation_h;
  p.dilation_w = g.dilation_w;
  return p;
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

/// The axes of a conv2d operand in its layout's memory order: NCHW / KCRS / NKPQ, or
/// NHWC / KRSC / NPQK. `batch` is N or K; `channels` is C or K; `rows`, `cols` are
/// (H, W), (R, S) or (P, Q).
struct axes {
  std::size_t batch, channels, rows, cols;
  const char* x_order;  // "(N, C, H, W)"
  const char* w_order;  // "(K, C, R, S)"
  const char* y_order;  // "(N, K, P, Q)"
};
constexpr axes nchw_axes{0, 1, 2, 3, "(N, C, H, W)", "(K, C, R, S)", "(N, K, P, Q)"};
constexpr axes nhwc_axes{0, 3, 1, 2, "(N, H, W, C)", "(K, R, S, C)", "(N, P, Q, K)"};

/// InvalidArgumentError unless `a` is dense in the order its shape lists (in NHWC:
/// channels_last memory, which torch tensors pass as x.permute(0, 2, 3, 1)).
template <class A>
void require_dense(const char* what, const char* name, const A& a, bool nhwc, const char* order) {
  if (!nhwc) require_contiguous(what, name, a);
  if (is_c_contiguous(a)) return;
  invalid(what, std::string("'") + name + "' is not dense in " + order +
                    " order; torch tensors: .contiguous(memory_format=torch.channels_last); CuPy: "
                    "cupy.ascontiguousarray() of the " +
                    order + " array");
}

/// The layout by name: "nchw" or "nhwc".
kf::conv2d_layout layout_by_name(const char* what, const std::string& layout) {
  return enum_by_name(what, "layout", layout, {kf::conv2d_layout::nchw, kf::conv2d_layout::nhwc});
}

/// UnsupportedError for the 16-bit types outside the NHWC layout (`name`: the call's first operand).
void require_layout_for_dtype(const char* what, const char* name, const nb::dlpack::dtype& d, dtype t, bool nhwc) {
  if (t != dtype::f32 && !nhwc) {
    unsupported(what, std::string("'") + name + "' has dtype " + dtype_name(d) +
                          ", which convolves in the channels_last layout only (layout 'nhwc'): pass "
                          "channels_last torch tensors (x.contiguous(memory_format=torch.channels_last)) or "
                          "(N, H, W, C) arrays with layout='nhwc', or convert to float32");
  }
}

template <class A>
void require_4d(const char* what, const char* name, const A& a, const char* order) {
  if (a.ndim() != 4)
    invalid(what, std::string("'") + name + "' must be 4-D " + order + "; got shape " + shape_string(a));
}

/// InvalidArgumentError unless the weight-shaped `w` has the input channels of the
/// x-shaped `x` (no groups).
template <class W, class X>
void require_same_channels(const char* what, const char* w_name, const W& w, const char* x_name, const X& x,
                           const axes& l) {
  if (w.shape(l.channels) != x.shape(l.channels)) {
    invalid(what, std::string("'") + w_name + "' " + shape_string(w) + " has " + std::to_string(w.shape(l.channels)) +
                      " input channels but '" + x_name + "' " + shape_string(x) + " has " +
                      std::to_string(x.shape(l.channels)) + " (groups are not supported)");
  }
}

/// The geometry of x (or dx) and weight (or dweight) given in the layout's order.
template <class X, class W>
geometry geometry_of(const X& x, const W& weight, const axes& l, std::size_t stride_h, std::size_t stride_w,
                     std::size_t pad_h, std::size_t pad_w, std::size_t dilation_h, std::size_t dilation_w) {
  return geometry{x.shape(l.batch),
                  x.shape(l.channels),
                  x.shape(l.rows),
                  x.shape(l.cols),
                  weight.shape(l.batch),
                  weight.shape(l.rows),
                  weight.shape(l.cols),
                  stride_h,
                  stride_w,
                  pad_h,
                  pad_w,
                  dilation_h,
                  dilation_w};
}

/// InvalidArgumentError unless the y-shaped `a` (out, dy, relu_y) is (N, K, P, Q) in the layout's order.
template <class A>
void require_y_shape(const char* what, const char* name, const A& a, const axes& l, const geometry& g,
                     const kf::conv2d_params& p) {
  const std::size_t out_h = kf::conv2d_output_height(p), out_w = kf::conv2d_output_width(p);
  if (a.ndim() == 4 && a.shape(l.batch) == g.n && a.shape(l.channels) == g.k && a.shape(l.rows) == out_h &&
      a.shape(l.cols) == out_w) {
    return;
  }
  std::size_t expected[4];
  expected[l.batch] = g.n;
  expected[l.channels] = g.k;
  expected[l.rows] = out_h;
  expected[l.cols] = out_w;
  invalid(what, std::string("'") + name + "' has shape " + shape_string(a) + "; this convolution gives " + l.y_order +
                    " = (" + std::to_string(expected[0]) + ", " + std::to_string(expected[1]) + ", " +
                    std::to_string(expected[2]) + ", " + std::to_string(expected[3]) + ")");
}

/// InvalidArgumentError unless the (K,)-shaped `a` (bias, dbias) is 1-D of K elements, contiguous.
template <class A>
void require_bias_shape(const char* what, const char* name, const A& a, std::size_t k) {
  if (a.ndim() != 1 || a.shape(0) != k) {
    invalid(what, std::string("'") + name + "' must have shape (" + std::to_string(k) + ",); got " + shape_string(a));
  }
  require_contiguous(what, name, a);
}

/// Runs f(T{}) for the element type t (float32, float16, bfloat16).
template <class F>
void dispatch_conv2d_type(dtype t, F&& f) {
  if (t == dtype::f32) {
    f(float{});
  } else if (t == dtype::f16) {
    f(__half{});
  } else {
    f(__nv_bfloat16{});
  }
}

void conv2d(const in_array& x, const in_array& weight, std::optional<in_array> bias, const out_array& out,
            std::size_t stride_h, std::size_t stride_w, std::size_t pad_h, std::size_t pad_w, std::size_t dilation_h,
            std::size_t dilation_w, const std::string& layout, bool tf32, bool relu, double relu_threshold,
            const std::string& variant, std::uintptr_t stream) {
  const char* what = "kernelforge.conv2d";
  const kf::conv2d_layout order = layout_by_name(what, layout);
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
  o.math = tf32 ? kf::math_mode::tf32 : kf::math_mode::exact;
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

void conv2d_backward_data(const in_array& dy, const in_array& weight, std::optional<in_array> relu_y,
                          const out_array& dx, std::size_t stride_h, std::size_t stride_w, std::size_t pad_h,
                          std::size_t pad_w, std::size_t dilation_h, std::size_t dilation_w, const std::string& layout,
                          bool tf32, bool relu, double relu_threshold, const std::string& variant,
                          std::uintptr_t stream) {
  const char* what = "kernelforge.conv2d_backward_data";
  const kf::conv2d_layout order = layout_by_name(what, layout);
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

void conv2d_backward_filter(const in_array& x, const in_array& dy, std::optional<in_array> relu_y,
                            const out_array& dweight, std::optional<out_array> dbias, std::size_t stride_h,
                            std::size_t stride_w, std::size_t pad_h, std::size_t pad_w, std::size_t dilation_h,
                            std::size_t dilation_w, const std::string& layout, bool tf32, bool relu,
                            double relu_threshold, const std::string& variant, std::uintptr_t stream) {
  const char* what = "kernelforge.conv2d_backward_filter";
  const kf::conv2d_layout order = layout_by_name(what, layout);
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

void bind_conv(nb::module_& m) {
  using nb::arg;
  m.def("filter2d", &filter2d, arg("image"), arg("filter"), arg("out"), arg("border"), arg("variant"), arg("stream"));
  m.def("conv2d_output_shape", &conv2d_output_shape, arg("n"), arg("c"), arg("h"), arg("w"), arg("k"), arg("r"),
        arg("s"), arg("stride_h"), arg("stride_w"), arg("pad_h"), arg("pad_w"), arg("dilation_h"), arg("dilation_w"));
  m.def("conv2d", &conv2d, arg("x"), arg("weight"), arg("bias").none(), arg("out"), arg("stride_h"), arg("stride_w"),
        arg("pad_h"), arg("pad_w"), arg("dilation_h"), arg("dilation_w"), arg("layout"), arg("tf32"), arg("relu"),
        arg("relu_threshold"), arg("variant"), arg("stream"));
  m.def("conv2d_backward_data", &conv2d_backward_data, arg("dy"), arg("weight"), arg("relu_y").none(), arg("dx"),
        arg("stride_h"), arg("stride_w"), arg("pad_h"), arg("pad_w"), arg("dilation_h"), arg("dilation_w"),
        arg("layout"), arg("tf32"), arg("relu"), arg("relu_threshold"), arg("variant"), arg("stream"));
  m.def("conv2d_backward_filter", &conv2d_backward_filter, arg("x"), arg("dy"), arg("relu_y").none(), arg("dweight"),
        arg("dbias").none(), arg("stride_h"), arg("stride_w"), arg("pad_h"), arg("pad_w"), arg("dilation_h"),
        arg("dilation_w"), arg("layout"), arg("tf32"), arg("relu"), arg("relu_threshold"), arg("variant"),
        arg("stream"));
}

}  // namespace kfpy
