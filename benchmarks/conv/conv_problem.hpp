// SPDX-License-Identifier: Apache-2.0
// bench_conv's problems: the ResNet-50 layers (three 3x3 stages and the 7x7 stem), the
// channels_last layers and the 8192 x 8192 filter image, their
// tensors (random, never zero; float, __half or __nv_bfloat16; magnitudes in
// [0.5, 1), or randn for the fp32_emulated rows) created once per key, and
// the check of a result against cuDNN's (relative_difference).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "device_compare.cuh"
#include "gpu_benchmark.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/reference/elementwise.hpp"

namespace kf::bench::conv {

/// The peak a conv row's frac_peak is of: the FP32 peak for float on the CUDA
/// cores (exact math; also fp32_emulated, whose flops are fp32's), the tensor
/// cores' for 16-bit operands and for float on TF32.
template <class T>
double conv_peak_tflops(bool tf32) {
  return std::is_same_v<T, float> && !tf32 ? device().peak_fp32_tflops : tensor_peak_tflops(sizeof(T));
}

struct layer {
  std::string name;
  kf::conv2d_params p;
};

inline kf::conv2d_params params(std::size_t n, std::size_t c, std::size_t hw, std::size_t k, std::size_t rs,
                                std::size_t stride, std::size_t pad) {
  kf::conv2d_params p{n, c, hw, hw, k, rs, rs};
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  return p;
}

inline const std::vector<layer>& layers() {
  static const std::vector<layer> list = {
      {"n32_c64_56x56_k64_3x3_p1", params(32, 64, 56, 64, 3, 1, 1)},
      {"n32_c128_28x28_k128_3x3_p1", params(32, 128, 28, 128, 3, 1, 1)},
      {"n32_c256_14x14_k256_3x3_p1", params(32, 256, 14, 256, 3, 1, 1)},
      {"n16_c3_224x224_k64_7x7_s2_p3", params(16, 3, 224, 64, 7, 2, 3)},
  };
  return list;
}

/// The conv2d_bias_relu rows' layers: the ones above, plus ResNet-50's first 1x1
/// bottleneck convolution, where y's extra pass is a large share of the time.
inline const std::vector<layer>& bias_relu_layers() {
  static const std::vector<layer> list = [] {
    std::vector<layer> l = layers();
    l.push_back({"n32_c64_56x56_k64_1x1", params(32, 64, 56, 64, 1, 1, 0)});
    return l;
  }();
  return list;
}

/// The dtype field of the NHWC rows (conv2d_nhwc, conv2d_backward) and their
/// problem keys: float runs under math_mode::tf32 there.
template <class T>
const char* nhwc_type_name() {
  if constexpr (std::is_same_v<T, __half>) {
    return "fp16";
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return "bf16";
  } else {
    return "tf32";
  }
}

/// The conv2d_nhwc rows' layers, read in the NHWC layout: the first four of
/// layers() and ResNet-50's 1x1 reduction of a 256-channel stage (C256 56x56 K64).
inline const std::vector<layer>& nhwc_layers() {
  static const std::vector<layer> list = [] {
    std::vector<layer> l = layers();
    l.push_back({"n32_c256_56x56_k64_1x1", params(32, 256, 56, 64, 1, 1, 0)});
    for (layer& each : l) each.p.layout = kf::conv2d_layout::nhwc;
    return l;
  }();
  return list;
}

constexpr std::size_t image_extent = 8192;

/// Random values of magnitude in [0.5, 1) with random signs (never zero),
/// rounded to T; `magnitudes`: their absolute values.
template <class T = float>
std::vector<T> random_values(std::size_t n, std::uint64_t seed, bool magnitudes = false) {
  std::vector<T> v(n);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const float m = 0.5f + static_cast<float>((s >> 40) & 0xFFFFFF) / 33554432.0f;
    x = kf::reference::from_double<T>(((s >> 39) & 1) && !magnitudes ? -m : m);
  }
  return v;
}

/// n standard normal values (Box-Muller on random_values' generator), rounded
/// to T: the fp32_emulated rows' data, whose errors are read on values of
/// mixed magnitudes and signs, as activations and weights have.
template <class T = float>
std::vector<T> random_normal_values(std::size_t n, std::uint64_t seed) {
  std::vector<T> v(n);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  const auto uniform01 = [&s] {  // (0, 1)
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return (static_cast<double>(s >> 11) + 0.5) * 0x1.0p-53;
  };
  for (auto& x : v) {
    const double r = std::sqrt(-2.0 * std::log(uniform01())), angle = 6.283185307179586 * uniform01();
    x = kf::reference::from_double<T>(r * std::cos(angle));
  }
  return v;
}

/// Seeds of the tensors of every problem.
constexpr std::uint64_t x_seed = 1, w_seed = 2, bias_seed = 3;

/// The tensors of one problem in T, created once, and cuDNN's output kept for checks.
template <class T>
struct problem_data_t {
  kf::conv2d_params p{};
  std::size_t P = 0, Q = 0;
  kf::device_buffer<T> x, w, bias, y, y_cudnn, y_cudnn_fused;
  bool have_cudnn_result = false, have_cudnn_fused_result = false;
  double flops() const {
    return 2.0 * p.batch * p.out_channels * p.in_channels * p.filter_height * p.filter_width * P * Q;
  }
  std::size_t x_size() const { return p.batch * p.in_channels * p.in_height * p.in_width; }
  std::size_t w_size() const { return p.out_channels * p.in_channels * p.filter_height * p.filter_width; }
  std::size_t y_size() const { return p.batch * p.out_channels * P * Q; }
};
using problem_data = problem_data_t<float>;

/// The tensors of problem `key` (layer p), in T; created on the first call,
/// x, w and bias from random_values, or (randn) random_normal_values: a key
/// names one kind of values (the randn problems' keys start with "randn/").
template <class T = float>
problem_data_t<T>& data_for(const std::string& key, const kf::conv2d_params& p, bool randn = false) {
  static std::map<std::string, std::unique_ptr<problem_data_t<T>>> cache;
  auto& slot = cache[key];
  if (!slot) {
    slot = std::make_unique<problem_data_t<T>>();
    problem_data_t<T>& d = *slot;
    d.p = p;
    d.P = kf::conv2d_output_height(p);
    d.Q = kf::conv2d_output_width(p);
    const auto values = [randn](std::size_t n, std::uint64_t seed) {
      return randn ? random_normal_values<T>(n, seed) : random_values<T>(n, seed);
    };
    d.x = kf::to_device(values(d.x_size(), x_seed));
    d.w = kf::to_device(values(d.w_size(), w_seed));
    d.bias = kf::to_device(values(p.out_channels, bias_seed));
    d.y = kf::device_buffer<T>(d.y_size());
    d.y_cudnn = kf::device_buffer<T>(d.y_size());
    d.y_cudnn_fused = kf::device_buffer<T>(d.y_size());
  }
  return *slot;
}

/// n elements of T from the device.
template <class T>
std::vector<T> copy_to_host(const T* device, std::size_t n) {
  std::vector<T> host(n);
  check(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy");
  return host;
}

/// max |got - want| / max |want| over the output (0 when there is no cuDNN result yet; +inf
/// where a difference is NaN), computed on the GPU (device_compare.cuh); want: cuDNN's plain
/// output, or `want_device` when given.
template <class T>
double relative_difference(const problem_data_t<T>& d, const T* got_device, const T* want_device = nullptr) {
  if (!want_device && !d.have_cudnn_result) return 0;
  return compare_on_device(got_device, want_device ? want_device : d.y_cudnn.data(), d.y_size()).relative();
}

}  // namespace kf::bench::conv
