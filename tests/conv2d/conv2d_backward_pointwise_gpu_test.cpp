// SPDX-License-Identifier: Apache-2.0
// Gradient step 9 (09_wgrad_mma_tf32_pointwise.cuh: the TF32 filter gradient of
// a pointwise NHWC float layer, best on sm_90) on reductions too long for the
// suite's bounds: conv2d_backward_gpu_test.cpp keeps n = N P Q <= 2048 so that a
// lost term fails, which caps its splits at 8 slices; here splits of 10 to 123
// slices (sum_tile_slabs' 8 lanes a quad, split not a multiple of 8) are
// checked EXACTLY. x and dy are small integers (|v| <= 3, never 0), which TF32
// holds exactly, so every product is exact and every partial sum is an integer
// below 2^24, exact in fp32 whatever the order: dw must equal the integer
// reference bit for bit, and a lost, repeated or misplaced slab, pixel or
// channel changes it. Under the ReLU mask, relu_y is random around the
// threshold (ties included) and the reference masks as the reader does (dy
// counts where relu_y > threshold). dw is NaN-poisoned with one element past it
// that must stay NaN; one case writes dw one float off 16 bytes. Cases: the
// pixels not a multiple of the 32-pixel step, K and C past their boxes and
// tiles (K = 72: a second K tile of 8; C = 264: a second C tile of 8). Skips
// without a GPU; on GPUs without step 9 the same calls run step 2 and must
// match too (their sums are exact as well).
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kernelforge/conv.hpp"
#include "kernelforge/conv_backward.hpp"
#include "kernelforge/device_buffer.hpp"
#include "test_support.hpp"

namespace {

struct pointwise_case {
  const char* name;
  std::size_t n, c, h, w, k;
  bool relu = false;
  float threshold = 0.0f;
  std::size_t dw_offset = 0;  // floats: dw starts this far into its buffer
};

std::ostream& operator<<(std::ostream& os, const pointwise_case& c) { return os << c.name; }

const pointwise_case cases[] = {
    // 3,069 pixels: 96 patches, 12 slices.
    {"c64_k64_33x31_n3", 3, 64, 33, 31, 64},
    // 35,335 pixels (1,105 patches, the last of 7 pixels): 123 slices; C three boxes.
    {"c96_k64_191x185_n1", 1, 96, 191, 185, 64},
    // Two C tiles (the second of 8 channels), 10 slices, dw off 16 bytes.
    {"c264_k16_29x23_n4_dw_misaligned", 4, 264, 29, 23, 16, false, 0.0f, 1},
    // The mask at 0 and at 1 (relu_y in -3..3: ties at the threshold masked); two K tiles
    // (the second of 8 channels), 30 slices.
    {"relu0_c32_k72_97x89_n1", 1, 32, 97, 89, 72, true, 0.0f},
    {"relu1_c128_k64_61x67_n2", 2, 128, 61, 67, 64, true, 1.0f},
};

/// Integers in [-3, 3] without 0, from a fixed hash of (seed, i).
std::vector<float> small_integers(std::size_t count, std::uint64_t seed, bool allow_zero = false) {
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t r = kf::test::mix64(seed * 0x9E3779B97F4A7C15ull + i);
    int value = static_cast<int>(r % 7) - 3;
    if (value == 0 && !allow_zero) value = (r >> 8) % 2 == 0 ? 1 : -1;
    v[i] = static_cast<float>(value);
  }
  return v;
}

class Conv2dBackwardPointwise : public ::testing::TestWithParam<pointwise_case> {};

TEST_P(Conv2dBackwardPointwise, LongSplitsSumExactly) {
  KF_SKIP_WITHOUT_GPU();
  const pointwise_case& c = GetParam();
  kf::conv2d_params p;
  p.batch = c.n;
  p.in_channels = c.c;
  p.in_height = c.h;
  p.in_width = c.w;
  p.out_channels = c.k;
  p.filter_height = p.filter_width = 1;
  p.layout = kf::conv2d_layout::nhwc;
  const std::size_t pixels = c.n * c.h * c.w, K = c.k, C = c.c;
  const std::vector<float> x = small_integers(pixels * C, 1), dy = small_integers(pixels * K, 2);
  const std::vector<float> relu_y = small_integers(pixels * K, 3, true);

  // The reference: dw(k, c) = sum over pixels of dy(pixel, k) x(pixel, c), masked dy, in integers.
  std::vector<std::int64_t> ref(K * C, 0);
  for (std::size_t i = 0; i < pixels; ++i) {
    for (std::size_t k = 0; k < K; ++k) {
      const std::size_t e = i * K + k;
      if (c.relu && relu_y[e] <= c.threshold) continue;
      const auto g = static_cast<std::int64_t>(dy[e]);
      const float* xi = &x[i * C];
      std::int64_t* row = &ref[k * C];
      for (std::size_t ch = 0; ch < C; ++ch) row[ch] += g * static_cast<std::int64_t>(xi[ch]);
    }
  }

  const kf::device_buffer<float> x_d = kf::to_device(x), dy_d = kf::to_device(dy), y_d = kf::to_device(relu_y);
  kf::device_buffer<float> dw(c.dw_offset + K * C + 1);
  kf::test::poison(dw.data(), dw.size_bytes());
  kf::conv2d_backward_options o;
  o.math = kf::math_mode::tf32;
  o.relu = c.relu;
  o.relu_threshold = c.threshold;
  kf::conv2d_backward_filter<float>(p, x_d.data(), dy_d.data(), dw.data() + c.dw_offset, nullptr, o,
                                    c.relu ? y_d.data() : nullptr);
  const std::vector<float> got = kf::to_host(dw);
  std::size_t wrong = 0;
  for (std::size_t e = 0; e < K * C; ++e) {
    const float want = static_cast<float>(ref[e]);  // |ref| < 2^24: exact
    if (!(got[c.dw_offset + e] == want) && ++wrong <= 5) {
      ADD_FAILURE() << "dw(" << e / C << ", " << e % C << ") = " << got[c.dw_offset + e] << ", want " << want;
    }
  }
  EXPECT_EQ(wrong, 0u) << "of " << K * C << " outputs";
  EXPECT_TRUE(std::isnan(got[c.dw_offset + K * C])) << "the element past dw was written";
}

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dBackwardPointwise, ::testing::ValuesIn(cases),
                         [](const ::testing::TestParamInfo<pointwise_case>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
