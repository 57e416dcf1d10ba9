// SPDX-License-Identifier: Apache-2.0
// kernelforge._C: the nanobind extension module behind the kernelforge Python package.
// This file: the module itself, kf::error -> Python exception translation, device
// queries, and the shared array checks of common.hpp. The families' bindings are in
// elementwise.cpp, matmul.cpp, conv.cpp and conv_backward.cpp. The Python wrappers
// (python/kernelforge/) resolve streams and allocate outputs; everything here takes
// explicit arguments.
#include <array>
#include <cstdint>
#include <string>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "common.hpp"
#include "kernelforge/device.hpp"
#include "kernelforge/version.hpp"

namespace kfpy {
namespace {

// Python exception classes by kf::errc, set once from Python (kernelforge/_errors.py).
std::array<PyObject*, 6> error_classes{};

void set_error_classes(nb::dict classes) {
  const std::pair<const char*, kf::errc> codes[] = {
      {"invalid_argument", kf::errc::invalid_argument}, {"no_device", kf::errc::no_device},
      {"no_kernel_image", kf::errc::no_kernel_image},   {"out_of_memory", kf::errc::out_of_memory},
      {"unsupported", kf::errc::unsupported},           {"cuda_runtime", kf::errc::cuda_runtime}};
  for (const auto& [name, code] : codes) {
    nb::object cls = classes[name];
    Py_XDECREF(error_classes[static_cast<int>(code)]);
    error_classes[static_cast<int>(code)] = cls.release().ptr();  // kept for the process's lifetime
  }
}

nb::dict device_info(int device) {
  kf::device_info info;
  {
    nb::gil_scoped_release nogil;
    info = kf::get_device_info(device);
  }
  nb::dict d;
  d["name"] = info.name;
  d["device"] = info.device;
  d["compute_capability"] = nb::make_tuple(info.cc_major, info.cc_minor);
  d["sm_count"] = info.sm_count;
  d["global_memory_bytes"] = info.global_memory_bytes;
  d["peak_bandwidth_gbs"] = info.peak_bandwidth_gbs;
  d["peak_fp32_tflops"] = info.peak_fp32_tflops;
  return d;
}

// 0 where there is no GPU or no driver (never raises): for tests that skip.
int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace

dtype dtype_of(const nb::dlpack::dtype& d) {
  if (d.lanes != 1) return dtype::other;
  if (d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float)) {
    if (d.bits == 32) return dtype::f32;
    if (d.bits == 64) return dtype::f64;
    if (d.bits == 16) return dtype::f16;
  }
  if (d.code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Bfloat) && d.bits == 16) return dtype::bf16;
  return dtype::other;
}

std::string dtype_name(const nb::dlpack::dtype& d) {
  using code = nb::dlpack::dtype_code;
  std::string base;
  switch (static_cast<code>(d.code)) {
    case code::Int: base = "int"; break;
    case code::UInt: base = "uint"; break;
    case code::Float: base = "float"; break;
    case code::Bfloat: base = "bfloat"; break;
    case code::Complex: base = "complex"; break;
    case code::Bool: return "bool";
    default: base = "dtype" + std::to_string(d.code) + "_"; break;
  }
  std::string name = base + std::to_string(d.bits);
  if (d.lanes != 1) name += "x" + std::to_string(d.lanes);
  return name;
}

namespace {
const char* name_of(dtype t) {
  switch (t) {
    case dtype::f32: return "float32";
    case dtype::f64: return "float64";
    case dtype::f16: return "float16";
    case dtype::bf16: return "bfloat16";
    default: return "?";
  }
}
// "float32=0, float64=1, ...": the raw entries' dtype codes, for messages.
std::string dtype_code_list() {
  std::string list;
  for (dtype t : shipped_dtypes) {
    list += (list.empty() ? "" : ", ") + std::string(name_of(t)) + "=" + std::to_string(static_cast<int>(t));
  }
  return list;
}
template <class A>
std::string shape_of(const A& a) {
  std::string s = "(";
  for (std::size_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}
}  // namespace

std::string shape_string(const nb::ndarray<nb::ro>& a) { return shape_of(a); }
std::string shape_string(const nb::ndarray<>& a) { return shape_of(a); }

dtype require_dtype(const char* what, const char* name, const nb::dlpack::dtype& d,
                    std::initializer_list<dtype> allowed) {
  const dtype t = dtype_of(d);
  std::string names;
  for (dtype a : allowed) {
    if (a == t) return t;
    names += (names.empty() ? "" : ", ") + std::string(name_of(a));
  }
  throw nb::type_error(
      (std::string(what) + ": '" + name + "' has dtype " + dtype_name(d) + "; supported dtypes: " + names).c_str());
}

void require_same_dtype(const char* what, const char* name, const nb::dlpack::dtype& d,
                        const nb::dlpack::dtype& expected, const char* first) {
  if (d != expected) {
    throw nb::type_error((std::string(what) + ": '" + name + "' has dtype " + dtype_name(d) + " but '" + first +
                          "' has " + dtype_name(expected) + "; pass arrays of one dtype")
                             .c_str());
  }
}

void invalid(const char* what, const std::string& message) {
  throw kf::error(kf::errc::invalid_argument, std::string(what) + ": " + message);
}

void unsupported(const char* what, const std::string& message) {
  throw kf::error(kf::errc::unsupported, std::string(what) + ": " + message);
}

namespace {
// 0 without a GPU or driver; counted once (the devices a process sees do not change).
int visible_devices() {
  static const int count = device_count();
  return count;
}

// NoDeviceError with the C++ library's message (the CUDA error text), prefixed by `what`.
[[noreturn]] void no_device(const char* what) {
  try {
    (void)kf::get_device_info(-1);  // throws kf::error(no_device) where there is no usable device
  } catch (const kf::error& e) {
    throw kf::error(e.code(), std::string(what) + ": " + e.what());
  }
  throw kf::error(kf::errc::no_device, std::string(what) + ": no usable CUDA device");
}

// An argument that is not in GPU memory: NoDeviceError on a machine with no GPU, where
// that is the real problem; InvalidArgumentError saying to move it otherwise.
[[noreturn]] void not_in_gpu_memory(const char* what, const std::string& message) {
  if (visible_devices() == 0) no_device(what);
  invalid(what, message + "; kernelforge runs on CUDA devices: move it there first (e.g. x.cuda(), cupy.asarray(x))");
}
}  // namespace

int require_one_cuda_device(const char* what, std::initializer_list<array_ref> arrays) {
  constexpr int dl_cuda = static_cast<int>(nb::device::cuda::value);
  constexpr int dl_cuda_managed = 13;  // kDLCUDAManaged: device_id is the owning GPU
  int device = -1;
  const char* first = nullptr;
  for (const array_ref& a : arrays) {
    if (a.device_type != dl_cuda && a.device_type != dl_cuda_managed) {
      not_in_gpu_memory(what, std::string("'") + a.name + "' is not in GPU memory (DLPack device type " +
                                  std::to_string(a.device_type) + ")");
    }
    if (device < 0) {
      device = a.device_id;
      first = a.name;
    } else if (a.device_id != device) {
      invalid(what, std::string("'") + a.name + "' is on cuda:" + std::to_string(a.device_id) + " but '" + first +
                        "' is on cuda:" + std::to_string(device) + "; pass arrays of one device");
    }
  }
  return device;
}

void require_cuda_device_index(const char* what, const char* name, int device) {
  if (visible_devices() == 0) no_device(what);
  if (device < 0) {
    not_in_gpu_memory(what,
                      std::string("'") + name + "' is not in GPU memory (device index " + std::to_string(device) + ")");
  }
  if (device >= visible_devices()) {
    invalid(what, std::string("'") + name + "' device index " + std::to_string(device) +
                      " is out of range: " + std::to_string(visible_devices()) + " CUDA device(s) visible");
  }
}

dtype dtype_from_code(const char* what, int code) {
  for (dtype t : shipped_dtypes) {
    if (code == static_cast<int>(t)) return t;
  }
  invalid(what, "dtype code " + std::to_string(code) + " is not one of _C.dtype_codes (" + dtype_code_list() + ")");
}

device_guard::device_guard(int device) {
  if (cudaGetDevice(&previous_) != cudaSuccess) {
    cudaGetLastError();
    previous_ = -1;
  }
  if (previous_ != device) {
    const cudaError_t status = cudaSetDevice(device);
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw kf::error(kf::errc::cuda_runtime, "kernelforge: cudaSetDevice(" + std::to_string(device) + ") failed: " +
                                                  cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
    }
  } else {
    previous_ = -1;  // nothing to restore
  }
}

device_guard::~device_guard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

}  // namespace kfpy

NB_MODULE(_C, m) {
  namespace nb = nanobind;
  m.doc() = "kernelforge C++ bindings (use the kernelforge package, not this module)";
  m.attr("__version__") = KERNELFORGE_VERSION_STRING;

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const kf::error& e) {
      PyObject* cls = kfpy::error_classes[static_cast<int>(e.code())];
      PyErr_SetString(cls ? cls : PyExc_RuntimeError, e.what());
    }
  });

  m.def("_set_error_classes", &kfpy::set_error_classes);
  m.def("compiled_architectures", &kf::compiled_architectures,
        "Compute capabilities (major*10+minor) the library's fatbin holds code for.");
  m.def("device_info", &kfpy::device_info, nb::arg("device") = -1,
        "A dict: name, device, compute_capability (major, minor), sm_count, global_memory_bytes, "
        "peak_bandwidth_gbs, peak_fp32_tflops, of CUDA device `device` (-1: the current one). NoDeviceError without "
        "a GPU or driver, InvalidArgumentError for a bad ordinal.");
  m.def("device_count", &kfpy::device_count, "CUDA devices visible (0 without a GPU or driver).");
  m.def(
      "require_cuda_device",
      [](const std::string& what, const std::string& name, int device) {
        kfpy::require_cuda_device_index(what.c_str(), name.c_str(), device);
      },
      nb::arg("what"), nb::arg("name"), nb::arg("device"),
      "Raises what the raw entries raise for a device index (torch's Tensor.get_device()): NoDeviceError "
      "without a GPU, InvalidArgumentError for host memory (-1) or an index past the devices visible.");
  {
    nb::dict codes;  // the raw entries' dtype codes, by dtype name
    for (auto t : kfpy::shipped_dtypes) {
      codes[kfpy::name_of(t)] = static_cast<int>(t);
    }
    m.attr("dtype_codes") = codes;
  }

  kfpy::bind_elementwise(m);
  kfpy::bind_matmul(m);
  kfpy::bind_conv(m);
  kfpy::bind_conv_backward(m);
}
