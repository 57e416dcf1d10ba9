// SPDX-License-Identifier: Apache-2.0
// Bindings of the elementwise family (kernelforge/elementwise.hpp): saxpy, vector_add,
// relu_threshold forward and backward, on contiguous arrays of one shape and dtype
// (float32, float64, float16, bfloat16). Outputs are allocated by the Python wrapper.
//
// relu_threshold and its backward have two entries each: the DLPack one (any framework:
// kernelforge.relu_threshold) and a raw one (relu_threshold_raw: pointers as ints, element
// count, dtype code, device index) for kernelforge.torch's op bodies, which then need no
// DLPack export and import per call. Both end in the same kf:: call, which checks null
// and misaligned pointers itself.
#include <cstdint>
#include <optional>
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

// A call enqueues one kernel and returns: it blocks only while the launch queue is full,
// for about one queued kernel's duration (and once per device, on the first call, for
// the launcher's cached device queries). Below this size that wait is microseconds,
// while releasing and re-taking the GIL costs ~0.2-0.3 us per call (measured on the
// CPU with ctypes: CDLL vs PyDLL), a few percent of a small op's host time; so small
// calls keep the GIL.
constexpr std::size_t gil_release_min_elements = std::size_t(1) << 20;

// Makes `device` current and calls f(T{}) for the arrays' dtype; releases the GIL for
// calls of at least gil_release_min_elements elements.
template <class F>
void run_on(int device, dtype t, std::size_t n, F&& f) {
  std::optional<nb::gil_scoped_release> nogil;
  if (n >= gil_release_min_elements) nogil.emplace();
  device_guard guard(device);
  dispatch(t, std::forward<F>(f));
}

// A raw entry: its own checks (the pointers' are kf::'s: dtype code, element count,
// device), then f(T{}, n, options) on `device` as run_on does.
template <class F>
void run_raw(const char* what, int dtype_code, std::int64_t n, int device, std::uintptr_t stream, F&& f) {
  const dtype t = dtype_from_code(what, dtype_code);
  if (n < 0) invalid(what, "n = " + std::to_string(n) + " is negative; pass the element count (numel())");
  require_cuda_device_index(what, "x", device);
  kf::elementwise_options o;
  o.stream = to_stream(stream);
  const auto count = static_cast<std::size_t>(n);
  run_on(device, t, count, [&](auto tag) { f(tag, count, o); });
}

template <class T>
const T* in_ptr(std::uintptr_t p) {
  return reinterpret_cast<const T*>(p);
}
template <class T>
T* out_ptr(std::uintptr_t p) {
  return reinterpret_cast<T*>(p);
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
  run_on(device, t, n, [&](auto tag) {
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
  run_on(device, t, n, [&](auto tag) {
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
  run_on(device, t, n, [&](auto tag) {
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
  run_on(device, t, n, [&](auto tag) {
    using T = decltype(tag);
    kf::relu_threshold_backward<T>(n, static_cast<const T*>(grad.data()), static_cast<const T*>(x.data()),
                                   static_cast<T*>(out.data()), scalar<T>(threshold), o);
  });
}

void relu_threshold_raw(std::uintptr_t x, std::uintptr_t out, std::int64_t n, int dtype_code, int device,
                        double threshold, std::uintptr_t stream) {
  run_raw("kernelforge.relu_threshold_raw", dtype_code, n, device, stream, [&](auto tag, std::size_t count, auto& o) {
    using T = decltype(tag);
    kf::relu_threshold_forward<T>(count, in_ptr<T>(x), out_ptr<T>(out), scalar<T>(threshold), o);
  });
}

void relu_threshold_backward_raw(std::uintptr_t grad, std::uintptr_t x, std::uintptr_t out, std::int64_t n,
                                 int dtype_code, int device, double threshold, std::uintptr_t stream) {
  run_raw("kernelforge.relu_threshold_backward_raw", dtype_code, n, device, stream,
          [&](auto tag, std::size_t count, auto& o) {
            using T = decltype(tag);
            kf::relu_threshold_backward<T>(count, in_ptr<T>(grad), in_ptr<T>(x), out_ptr<T>(out), scalar<T>(threshold),
                                           o);
          });
}

}  // namespace

void bind_elementwise(nb::module_& m) {
  using nb::arg;
  // The docstrings below are copied into the type stub _C.pyi and the site's Python reference.
  m.def("saxpy", &saxpy, arg("a"), arg("x"), arg("y"), arg("variant"), arg("stream"),
        "y = a * x + y, in place. x, y: arrays of one shape and dtype (float32, float64, float16, bfloat16), "
        "C-contiguous, on one CUDA device. variant: 'best', 'naive' or 'vectorized'; stream: a cudaStream_t as an int "
        "(0: the default stream). TypeError for a dtype, InvalidArgumentError for shapes, layout, device or variant.");
  m.def("vector_add", &vector_add, arg("a"), arg("b"), arg("out"), arg("variant"), arg("stream"),
        "out = a + b. Arrays of one shape and dtype (float32, float64, float16, bfloat16), C-contiguous, on one CUDA "
        "device; variant and stream as saxpy's, errors too.");
  m.def("relu_threshold", &relu_threshold, arg("x"), arg("out"), arg("threshold"), arg("variant"), arg("stream"),
        "out = 0 where x <= threshold, else x (NaN propagates). x, out: one shape and dtype (float32, float64, "
        "float16, bfloat16), C-contiguous, on one CUDA device (out may be x); variant and stream as saxpy's, errors "
        "too.");
  m.def("relu_threshold_backward", &relu_threshold_backward, arg("grad"), arg("x"), arg("out"), arg("threshold"),
        arg("variant"), arg("stream"),
        "out = 0 where x <= threshold, else grad (x: the forward's input). Arrays of one shape and dtype, "
        "C-contiguous, on one CUDA device (out may be grad); variant and stream as saxpy's, errors too.");
  // Raw entries (kernelforge.torch): contiguous arrays of n elements of one dtype on one device.
  m.def("relu_threshold_raw", &relu_threshold_raw, arg("x"), arg("out"), arg("n"), arg("dtype"), arg("device"),
        arg("threshold"), arg("stream"),
        "relu_threshold on device addresses (ints): n contiguous elements of dtype code `dtype` (dtype_codes) on "
        "CUDA device `device`; no DLPack, for kernelforge.torch's operators. InvalidArgumentError for a dtype code, "
        "a negative n or a device index; NoDeviceError without a GPU.");
  m.def("relu_threshold_backward_raw", &relu_threshold_backward_raw, arg("grad"), arg("x"), arg("out"), arg("n"),
        arg("dtype"), arg("device"), arg("threshold"), arg("stream"),
        "relu_threshold_backward on device addresses (ints), as relu_threshold_raw.");
}

}  // namespace kfpy
