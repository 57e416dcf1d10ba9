// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the kernelforge._C bindings: DLPack array checks (dtype, shape,
// device, layout) that raise clear Python errors before anything runs, the device
// guard that makes the array's device current for the duration of a call, and the
// name -> enum lookups for variants. Host-only C++17; calls the public API only.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "kernelforge/conv.hpp"
#include "kernelforge/conv_backward.hpp"
#include "kernelforge/elementwise.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/matmul.hpp"
#include "kernelforge/scaled_matmul.hpp"

namespace kfpy {

namespace nb = nanobind;
using in_array = nb::ndarray<nb::ro>;  // an input: any DLPack producer
using out_array = nb::ndarray<>;       // an output: written by the kernel

/// The element types; the values of the shipped ones are the raw entries' dtype codes
/// (exported as _C.dtype_codes, {"float32": 0, ...}), so they never change meaning.
enum class dtype { f32 = 0, f64 = 1, f16 = 2, bf16 = 3, other };
/// The dtypes the families ship (every one but `other`).
inline constexpr dtype shipped_dtypes[] = {dtype::f32, dtype::f64, dtype::f16, dtype::bf16};

/// The dtype of a raw entry's code; InvalidArgumentError naming the codes otherwise.
dtype dtype_from_code(const char* what, int code);

dtype dtype_of(const nb::dlpack::dtype& d);
std::string dtype_name(const nb::dlpack::dtype& d);  // "float32", "int64", ...
std::string shape_string(const nb::ndarray<nb::ro>& a);
std::string shape_string(const nb::ndarray<>& a);

/// TypeError unless `a`'s dtype is one of `allowed`; names what is supported.
dtype require_dtype(const char* what, const char* name, const nb::dlpack::dtype& d,
                    std::initializer_list<dtype> allowed);
/// TypeError unless b has dtype `expected` (the first operand's).
void require_same_dtype(const char* what, const char* name, const nb::dlpack::dtype& d,
                        const nb::dlpack::dtype& expected, const char* first);

/// kf::error(invalid_argument), which Python sees as kernelforge.InvalidArgumentError.
[[noreturn]] void invalid(const char* what, const std::string& message);
/// kf::error(unsupported), which Python sees as kernelforge.UnsupportedError.
[[noreturn]] void unsupported(const char* what, const std::string& message);

/// The CUDA device of the arrays (they must all be on one CUDA device). An array in
/// host memory on a machine with no GPU raises NoDeviceError (the C++ message);
/// with a GPU it is an InvalidArgumentError saying to move it to the GPU.
struct array_ref {
  const char* name;
  int device_type;
  int device_id;
};
int require_one_cuda_device(const char* what, std::initializer_list<array_ref> arrays);
/// The same device check for the raw entries, which get a device index in place of an
/// array (torch's Tensor.get_device(): -1 for host memory): NoDeviceError without a GPU,
/// InvalidArgumentError for a negative index or one past the devices visible.
void require_cuda_device_index(const char* what, const char* name, int device);

template <class A>
array_ref ref(const char* name, const A& a) {
  return {name, a.device_type(), a.device_id()};
}

/// True when the elements are dense in row-major (C) order; size-1 dims may have any stride.
template <class A>
bool is_c_contiguous(const A& a) {
  std::int64_t expected = 1;
  for (std::size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) == 0) return true;
    if (a.shape(i) != 1 && a.stride(i) != expected) return false;
    expected *= static_cast<std::int64_t>(a.shape(i));
  }
  return true;
}
template <class A>
void require_contiguous(const char* what, const char* name, const A& a) {
  if (!is_c_contiguous(a)) {
    invalid(what, std::string("'") + name +
                      "' is not contiguous (row-major); call .contiguous() "
                      "(torch) or cupy.ascontiguousarray() on it first");
  }
}
template <class A>
std::size_t element_count(const A& a) {
  std::size_t n = 1;
  for (std::size_t i = 0; i < a.ndim(); ++i) n *= a.shape(i);
  return n;
}
template <class A, class B>
bool same_shape(const A& a, const B& b) {
  if (a.ndim() != b.ndim()) return false;
  for (std::size_t i = 0; i < a.ndim(); ++i)
    if (a.shape(i) != b.shape(i)) return false;
  return true;
}

/// Makes `device` current for its lifetime (and restores the previous one), so a
/// call on an array of GPU 1 runs there whatever the caller's current device is.
class device_guard {
 public:
  explicit device_guard(int device);
  ~device_guard();
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int previous_ = -1;
};

inline cudaStream_t to_stream(std::uintptr_t handle) { return reinterpret_cast<cudaStream_t>(handle); }

/// An enum value by its kf::to_string name; InvalidArgumentError listing the names otherwise.
template <class E>
E enum_by_name(const char* what, const char* kind, const std::string& name, std::initializer_list<E> values) {
  std::string names;
  for (E v : values) {
    if (name == kf::to_string(v)) return v;
    names += (names.empty() ? "" : ", ") + std::string(kf::to_string(v));
  }
  invalid(what, std::string(kind) + " '" + name + "' is not one of: " + names);
}

/// options.math by its name: "exact", "tf32" or "fp32_emulated" (kf::to_string's);
/// InvalidArgumentError listing them otherwise. Which entry takes which mode is the library's check.
inline kf::math_mode math_by_name(const char* what, const std::string& name) {
  return enum_by_name(what, "math", name, {kf::math_mode::exact, kf::math_mode::tf32, kf::math_mode::fp32_emulated});
}

/// A Python float as the element type (the half types round once, to nearest).
template <class T>
T scalar(double v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

void bind_elementwise(nb::module_& m);
void bind_matmul(nb::module_& m);
void bind_conv(nb::module_& m);
void bind_conv_backward(nb::module_& m);

}  // namespace kfpy
