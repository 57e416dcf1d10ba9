// SPDX-License-Identifier: Apache-2.0
// Bindings of the elementwise family (kernelforge/elementwise.hpp): saxpy, vector_add,
// relu_threshold forward and backward, on contiguous arrays of one shape and dtype
// (float32, float64, float16, bfloat16). Outputs are allocated by the Python wrapper.
#include <utility>

#include <nanobind/stl/string.h>

#include "common.hpp"

namespace kfpy {
namespace {

constexpr std::initializer_list<dtype> shipped = {dtype::f32, dtype::f64, dtype::f16, dtype::bf16};

kf::elementwise_options options(const char* what, const std::string& variant, std::uintptr_t stream) {
  kf::elementwise_options o;
  o.stream = to_stream(stream);
  o.variant = enum_by_name(
      what, "variant", variant,
      {kf::elementwise_variant::best, kf::elementwise_variant::naive, kf::elementwise_variant::vectorized});
  return o;
}

// Calls f(T{}) with T the C++ type of `t` (one of the shipped dtypes).
template <class F>
void dispatch(dtype t, F&& f) {
  switch (t) {
    case dtype::f32: return f(float{});
    case dtype::f64: return f(double{});
    case dtype::f16: return f(__half{});
    case dtype::bf16: return f(__nv_bfloat16{});
    default: break;
  }
}

// Releases the GIL, makes `device` current and calls f(T{}) for the arrays' dtype.
template <class F>
void run_on(int device, dtype t, F&& f) {
  nb::gil_scoped_release nogil;
  device_guard guard(device);
  dispatch(t, std::forward<F>(f));
}

// The checks every elementwise call shares: dtypes, shapes, layout, one device.
template <class First, class... Rest>
dtype check(const char* what, const std::pair<const char*, const First*>& first,
            const std::pair<const char*, const Rest*>&... rest) {
  const dtype t = require_dtype(what, first.first, first.second->dtype(), shipped);
  auto same = [&](const char* name, const auto& a) {
    require_same_dtype(what, name, a.dtype(), first.second->dtype(), first.first);
    if (!same_shape(a, *first.second)) {
      invalid(what, std::string("'") + name + "' has shape " + shape_string(a) + " but '" + first.first +
                        "' has shape " + shape_string(*first.second) + "; shapes must match (no broadcasting)");
    }
  };
  (same(rest.first, *rest.second), ...);
  require_contiguous(what, first.first, *first.second);
  (require_contiguous(what, rest.first, *rest.second), ...);
  return t;
}

void saxpy(double a, const in_array& x, const out_array& y, const std::string& variant, std::uintptr_t stream) {
  const char* what = "kernelforge.saxpy";
  const dtype t = check(what, std::pair{"x", &x}, std::pair{"y", &y});
  const auto o = options(what, variant, stream);
  const int device = require_one_cuda_device(what, {ref("x", x), ref("y", y)});
  const std::size_t n = element_count(x);
  run_on(device, t, [&](auto tag) {
    using T = decltype(tag);
    kf::saxpy<T>(n, scalar<T>(a), static_cast<const T*>(x.data()), static_cast<T*>(y.data()), o);
  });
}

void vector_add(const in_array& a, const in_array& b, const out_array& out, const std::string& variant,
                std::uintptr_t stream) {
  const char* what = "kernelforge.vector_add";
  const dtype t = check(what, std::pair{"a", &a}, std::pair{"b", &b}, std::pair{"out", &out});
  const auto o = options(what, variant, stream);
  const int device = require_one_cuda_device(what, {ref("a", a), ref("b", b), ref("out", out)});
  const std::size_t n = element_count(a);
  run_on(device, t, [&](auto tag) {
    using T = decltype(tag);
    kf::vector_add<T>(n, static_cast<const T*>(a.data()), static_cast<const T*>(b.data()), static_cast<T*>(out.data()),
                      o);
  });
}

void relu_threshold(const in_array& x, const out_array& out, double threshold, const std::string& variant,
                    std::uintptr_t stream) {
  const char* what = "kernelforge.relu_threshold";
  const dtype t = check(what, std::pair{"x", &x}, std::pair{"out", &out});
  const auto o = options(what, variant, stream);
  const int device = require_one_cuda_device(what, {ref("x", x), ref("out", out)});
  const std::size_t n = element_count(x);
  run_on(device, t, [&](auto tag) {
    using T = decltype(tag);
    kf::relu_threshold_forward<T>(n, static_cast<const T*>(x.data()), static_cast<T*>(out.data()), scalar<T>(threshold),
                                  o);
  });
}

void relu_threshold_backward(const in_array& grad, const in_array& x, const out_array& out, double threshold,
                             const std::string& variant, std::uintptr_t stream) {
  const char* what = "kernelforge.relu_threshold_backward";
  const dtype t = check(what, std::pair{"grad", &grad}, std::pair{"x", &x}, std::pair{"out", &out});
  const auto o = options(what, variant, stream);
  const int device = require_one_cuda_device(what, {ref("grad", grad), ref("x", x), ref("out", out)});
  const std::size_t n = element_count(x);
  run_on(device, t, [&](auto tag) {
    using T = decltype(tag);
    kf::relu_threshold_backward<T>(n, static_cast<const T*>(grad.data()), static_cast<const T*>(x.data()),
                                   static_cast<T*>(out.data()), scalar<T>(threshold), o);
  });
}

}  // namespace

void bind_elementwise(nb::module_& m) {
  using nb::arg;
  m.def("saxpy", &saxpy, arg("a"), arg("x"), arg("y"), arg("variant"), arg("stream"));
  m.def("vector_add", &vector_add, arg("a"), arg("b"), arg("out"), arg("variant"), arg("stream"));
  m.def("relu_threshold", &relu_threshold, arg("x"), arg("out"), arg("threshold"), arg("variant"), arg("stream"));
  m.def("relu_threshold_backward", &relu_threshold_backward, arg("grad"), arg("x"), arg("out"), arg("threshold"),
        arg("variant"), arg("stream"));
}

}  // namespace kfpy
