// SPDX-License-Identifier: Apache-2.0
// bench_conv's problems: the ResNet-50 layers (shared/perf/ANCHORS.md) and the
// 8192 x 8192 filter image, their tensors (random, never zero) created once per
// key, and the check of a result against cuDNN's (relative_difference).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "gpu_benchmark.hpp"
#include "kernelforge/conv.hpp"

namespace kf::bench::conv {

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

constexpr std::size_t image_extent = 8192;

/// Random values of magnitude in [0.5, 1) with random signs: never zero.
inline std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const float m = 0.5f + static_cast<float>((s >> 40) & 0xFFFFFF) / 33554432.0f;
    x = (s >> 39) & 1 ? -m : m;
  }
  return v;
}

/// The tensors of one problem, created once, and cuDNN's output kept for checks.
struct problem_data {
  kf::conv2d_params p{};
  std::size_t P = 0, Q = 0;
  kf::device_buffer<float> x, w, bias, y, y_cudnn, y_cudnn_fused;
  bool have_cudnn_result = false, have_cudnn_fused_result = false;
  double flops() const {
    return 2.0 * p.batch * p.out_channels * p.in_channels * p.filter_height * p.filter_width * P * Q;
  }
  std::size_t y_size() const { return p.batch * p.out_channels * P * Q; }
};

inline problem_data& data_for(const std::string& key, const kf::conv2d_params& p) {
  static std::map<std::string, std::unique_ptr<problem_data>> cache;
  auto& slot = cache[key];
  if (!slot) {
    slot = std::make_unique<problem_data>();
    problem_data& d = *slot;
    d.p = p;
    d.P = kf::conv2d_output_height(p);
    d.Q = kf::conv2d_output_width(p);
    d.x = kf::to_device(random_values(p.batch * p.in_channels * p.in_height * p.in_width, 1));
    d.w = kf::to_device(random_values(p.out_channels * p.in_channels * p.filter_height * p.filter_width, 2));
    d.bias = kf::to_device(random_values(p.out_channels, 3));
    d.y = kf::device_buffer<float>(d.y_size());
    d.y_cudnn = kf::device_buffer<float>(d.y_size());
    d.y_cudnn_fused = kf::device_buffer<float>(d.y_size());
  }
  return *slot;
}

/// max |got - want| / max |want| over the output (0 when there is no cuDNN result yet);
/// want: cuDNN's plain output, or `want_device` when given.
inline double relative_difference(const problem_data& d, const float* got_device, const float* want_device = nullptr) {
  if (!want_device && !d.have_cudnn_result) return 0;
  std::vector<float> got(d.y_size()), want(d.y_size());
  check(cudaMemcpy(got.data(), got_device, got.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaMemcpy(want.data(), want_device ? want_device : d.y_cudnn.data(), want.size() * sizeof(float),
                   cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  double max_diff = 0, max_ref = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    max_diff = std::isnan(diff) ? INFINITY : std::max(max_diff, diff);
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(want[i])));
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

}  // namespace kf::bench::conv
