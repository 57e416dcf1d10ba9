// SPDX-License-Identifier: Apache-2.0
// What the two files of test_conv2d_fp32_emulated_gpu share
// (conv2d_fp32_emulated_gpu_test.cpp: the contract, the reference and the fused
// epilogue; conv2d_fp32_emulated_accuracy_gpu_test.cpp: infinities and NaNs,
// and the accuracy against the exact mode): the skip condition, the options,
// the layer rule and tolerance, sizes and inputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "conv2d_bounds.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"
#include "test_support.hpp"

namespace kf::test::conv2d_fp32_emulated {

using kf::test::conv2d::fp32_u;

/// Whether this device and library run the emulation: compute capability 9.0
/// and the library's sm_90a image (the wgmma conv2d kernels' condition).
inline bool runs_emulation() {
  static const bool yes = kf::detail::conv2d_wgmma_available(kf::get_device_info().device);
  return yes;
}

#define KF_SKIP_WITHOUT_EMULATION()                                                                         \
  do {                                                                                                      \
    KF_SKIP_WITHOUT_GPU();                                                                                  \
    if (!runs_emulation()) {                                                                                \
      GTEST_SKIP() << "fp32 emulation runs on compute capability 9.0 with the library's sm_90a image only"; \
    }                                                                                                       \
  } while (0)

inline kf::conv2d_options emulated() {
  kf::conv2d_options o;
  o.math = kf::math_mode::fp32_emulated;
  return o;
}

inline kf::conv2d_params in_layout(kf::conv2d_params p, kf::conv2d_layout layout) {
  p.layout = layout;
  return p;
}

inline const char* layout_name(kf::conv2d_layout layout) { return layout == kf::conv2d_layout::nhwc ? "nhwc" : "nchw"; }

/// Whether step 9 takes p (the library's own rule, wgmma_plan.hpp: C >= 32,
/// strides <= 8, C*R*S >= 128); the library runs the exact kernels on the others.
inline bool emulation_takes(const kf::conv2d_params& p) {
  return kf::detail::conv2d_fp32_emulated_unsupported_reason(p.in_channels, p.filter_height * p.filter_width,
                                                             p.stride_h, p.stride_w) == nullptr;
}

/// The exact fp32 tolerance of conv2d_gpu_test.cpp (direct summation),
/// relative to S = sum |x| |w| + |bias|: 4 sqrt(C*R*S) 2^-24 -- the random-sign
/// growth of C*R*S fp32 roundings with a margin of 4. Tighter than Winograd's
/// (relative to its own scale E, 5-16x S), which is what the exact mode runs on
/// 3x3 stride-1 layers with C, K >= 64: so this is "exact's accuracy or better".
inline double exact_tolerance(const kf::conv2d_params& p) {
  return 4 * std::sqrt(static_cast<double>(p.in_channels * p.filter_height * p.filter_width)) * fp32_u;
}

inline std::size_t x_size(const kf::conv2d_params& p) { return p.batch * p.in_channels * p.in_height * p.in_width; }
inline std::size_t w_size(const kf::conv2d_params& p) {
  return p.out_channels * p.in_channels * p.filter_height * p.filter_width;
}
inline std::size_t y_size(const kf::conv2d_params& p) {
  return p.batch * p.out_channels * kf::conv2d_output_height(p) * kf::conv2d_output_width(p);
}

/// n values uniform in [-1, 1], never zero (magnitudes in (0, 1], random
/// signs), from seed.
inline std::vector<float> uniform_inputs(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + 3;
  for (float& x : v) {
    z = kf::test::mix64(z);
    const double magnitude = (static_cast<double>(z >> 12) + 1.0) * 0x1.0p-52;  // (0, 1]
    x = static_cast<float>((z & 1) ? -magnitude : magnitude);
  }
  return v;
}

/// Elements of y that are not NaN (written by someone).
inline std::size_t written(const kf::device_buffer<float>& y) {
  std::size_t n = 0;
  for (float v : kf::to_host(y)) n += std::isnan(v) ? 0 : 1;
  return n;
}

}  // namespace kf::test::conv2d_fp32_emulated
