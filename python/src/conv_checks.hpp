// SPDX-License-Identifier: Apache-2.0
// What the convolution bindings share (conv.cpp: filter2d and conv2d; conv_backward.cpp:
// its gradients): the geometry of a call, the axes of each layout, and the checks of
// layout, dtype, shape and density that each entry applies to its arrays.
#pragma once

#include <optional>
#include <string>

#include "common.hpp"

namespace kfpy::conv_binding {

struct geometry {
  std::size_t n, c, h, w, k, r, s;
  std::size_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
};

inline kf::conv2d_params params_of(const geometry& g) {
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

/// The layout by name: "nchw" or "nhwc", or "channels_last", the Python wrappers' spelling of
/// "nhwc" for torch tensors: each 4-D array in torch's order, (N, C, H, W)-shaped with
/// channels_last strides, as a channels_last tensor comes through DLPack (then `torch_order`
/// is set, and the entry views the arrays in memory order with memory_order_view).
inline kf::conv2d_layout layout_by_name(const char* what, const std::string& layout, bool& torch_order) {
  torch_order = layout == "channels_last";
  if (torch_order) return kf::conv2d_layout::nhwc;
  return enum_by_name(what, "layout", layout, {kf::conv2d_layout::nchw, kf::conv2d_layout::nhwc});
}

/// The 4-D `a` given in torch's order ((N, C, H, W), (K, C, R, S) or (N, K, P, Q)) viewed
/// in NHWC memory order ((N, H, W, C), ...): the same memory, axes 1, 2, 3 taken as 2, 3, 1
/// (what the Python wrappers did with Tensor.permute(0, 2, 3, 1), a microsecond a tensor).
/// Every check after it sees what it saw from those views, messages included. Any other
/// `a` as it is. The view does not own the memory: `a` must outlive it.
template <class A>
A memory_order_view(const A& a) {
  if (a.ndim() != 4) return a;
  const std::size_t shape[4] = {a.shape(0), a.shape(2), a.shape(3), a.shape(1)};
  const std::int64_t strides[4] = {a.stride(0), a.stride(2), a.stride(3), a.stride(1)};
  return A(a.data(), 4, shape, nb::handle(), strides, a.dtype(), a.device_type(), a.device_id());
}

/// memory_order_view(a) where `torch_order` (layout_by_name's flag), else `a`; an absent
/// optional array stays absent.
template <class A>
A in_memory_order(bool torch_order, const A& a) {
  return torch_order ? memory_order_view(a) : a;
}
template <class A>
std::optional<A> in_memory_order(bool torch_order, const std::optional<A>& a) {
  return torch_order && a ? std::optional<A>(memory_order_view(*a)) : a;
}

/// UnsupportedError for the 16-bit types outside the NHWC layout (`name`: the call's first operand).
inline void require_layout_for_dtype(const char* what, const char* name, const nb::dlpack::dtype& d, dtype t,
                                     bool nhwc) {
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

}  // namespace kfpy::conv_binding
