// SPDX-License-Identifier: Apache-2.0
// The cases of the conv2d gradient suite (conv2d_backward_gpu_test.cpp: what
// they cover and the bounds they are checked against are described there) and
// what the suite and its coverage checks (conv2d_backward_cases_test.cpp,
// conv2d_backward_dx_cases_test.cpp)
// derive from a case: the terms an output sums, whether dx runs as a forward
// convolution and that forward's inputs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "conv2d_cases.hpp"
#include "kernelforge/conv.hpp"
#include "winograd_bound.hpp"

namespace kf::test::conv2d_backward {

using kf::test::conv2d::make;
using kf::test::conv2d::make_layer;

// ---- cases --------------------------------------------------------------------------

struct grad_case {
  const char* name;
  kf::conv2d_params p;  // NCHW here; each configuration sets its layout
  bool dbias = true;
  bool relu = false;
  float threshold = 0.0f;
  std::size_t in_offset = 0;   // elements: dy, x, weight and relu_y start this far into their buffers
  std::size_t out_offset = 0;  // elements: dx, dweight and dbias likewise
};

inline grad_case with_relu(grad_case c, float threshold) {
  c.relu = true;
  c.threshold = threshold;
  return c;
}

inline grad_case without_dbias(grad_case c) {
  c.dbias = false;
  return c;
}

inline grad_case misaligned(grad_case c, std::size_t in_offset, std::size_t out_offset) {
  c.in_offset = in_offset;
  c.out_offset = out_offset;
  return c;
}

inline const std::vector<grad_case>& grad_cases() {
  // make(N, C, H, W, K, R, S, stride, pad, dilation)
  static const std::vector<grad_case> cases = {
      {"c1_k1_7x5_3x3_p1_n1", make(1, 1, 7, 5, 1, 3, 3, 1, 1, 1)},
      {"c3_k8_13x11_1x1_n3", make(3, 3, 13, 11, 8, 1, 1, 1, 0, 1)},
      {"c8_k17_11x13_3x3_p1_n2", make(2, 8, 11, 13, 17, 3, 3, 1, 1, 1)},
      without_dbias({"c17_k3_9x7_5x5_p2_n1_no_dbias", make(1, 17, 9, 7, 3, 5, 5, 1, 2, 1)}),
      {"c64_k1_9x9_3x3_p1_n1", make(1, 64, 9, 9, 1, 3, 3, 1, 1, 1)},
      {"c1_k64_9x9_3x3_p0_n5", make(5, 1, 9, 9, 64, 3, 3, 1, 0, 1)},
      // The ResNet stem's geometry: 7x7, stride 2, pad 3, C = 3.
      {"stem_c3_k64_23x19_7x7_s2_p3_n2", make(2, 3, 23, 19, 64, 7, 7, 2, 3, 1)},
      // Strides whose windows stop short of the last input rows (and columns).
      {"c3_k17_16x15_3x3_s2_p0_n2", make(2, 3, 16, 15, 17, 3, 3, 2, 0, 1)},
      {"c5_k8_17x14_5x5_s3_p1_n3", make(3, 5, 17, 14, 8, 5, 5, 3, 1, 1)},
      {"c17_k8_13x11_1x1_s2_n3", make(3, 17, 13, 11, 8, 1, 1, 2, 0, 1)},
      {"c8_k17_15x13_3x3_d2_p2_n2", make(2, 8, 15, 13, 17, 3, 3, 1, 2, 2)},
      without_dbias({"c8_k8_13x11_3x3_s2_d2_p1_no_dbias", make(2, 8, 13, 11, 8, 3, 3, 2, 1, 2)}),
      // Padding past the filter's reach: dx runs naive on every variant.
      {"c3_k8_9x11_3x3_p3_n2_pad_past_reach", make(2, 3, 9, 11, 8, 3, 3, 1, 3, 1)},
      {"c8_k3_7x9_1x1_p1_n2_pad_past_reach", make(2, 8, 7, 9, 3, 1, 1, 1, 1, 1)},
      // The forward's ReLU mask.
      with_relu({"relu0_c8_k17_11x13_3x3_p1_n2", make(2, 8, 11, 13, 17, 3, 3, 1, 1, 1)}, 0.0f),
      with_relu({"relu05_c5_k8_17x14_5x5_s3_p1_n3", make(3, 5, 17, 14, 8, 5, 5, 3, 1, 1)}, 0.5f),
      with_relu(without_dbias({"relu05_c3_k17_16x15_3x3_s2_p0_no_dbias", make(2, 3, 16, 15, 17, 3, 3, 2, 0, 1)}), 0.5f),
      // Real tensor-core tiles; Winograd for the NCHW exact dx.
      {"resnet_c64_k64_14x14_3x3_p1_n2", make(2, 64, 14, 14, 64, 3, 3, 1, 1, 1)},
      with_relu({"resnet_c64_k64_14x14_3x3_p1_n2_relu0", make(2, 64, 14, 14, 64, 3, 3, 1, 1, 1)}, 0.0f),
      // Nothing to sum: dw and dbias (N = 0) or dx (K = 0) are zeros.
      {"empty_batch_n0", make(0, 8, 9, 7, 17, 3, 3, 1, 1, 1)},
      {"no_filters_k0", make(2, 8, 9, 7, 0, 3, 3, 1, 1, 1)},
      // One element off alignment: the inputs (dy read in place by stride-1
      // unmasked layers, x by the 1x1 one), the outputs, or both.
      misaligned(with_relu({"misaligned_in_relu0_c8_k17_11x9_3x3_p1_n2", make(2, 8, 11, 9, 17, 3, 3, 1, 1, 1)}, 0.0f),
                 1, 0),
      misaligned({"misaligned_out_c17_k8_9x11_3x3_s2_p1_n2", make(2, 17, 9, 11, 8, 3, 3, 2, 1, 1)}, 0, 1),
      misaligned({"misaligned_in_out_c8_k8_7x9_1x1_n3", make(3, 8, 7, 9, 8, 1, 1, 1, 0, 1)}, 1, 1),
      misaligned({"misaligned_in_out_c64_k64_7x7_3x3_p1_n1", make(1, 64, 7, 7, 64, 3, 3, 1, 1, 1)}, 1, 1),
      // The wgmma filter gradient's tiles, boxes and split (top of file).
      {"c16_k24_12x10_3x3_s2_p1_n3", make(3, 16, 12, 10, 24, 3, 3, 2, 1, 1)},
      {"c16_k16_17x14_5x5_s3_p1_n3", make(3, 16, 17, 14, 16, 5, 5, 3, 1, 1)},
      {"c128_k72_7x7_3x3_p1_n2", make(2, 128, 7, 7, 72, 3, 3, 1, 1, 1)},
      without_dbias({"c136_k136_6x6_3x3_p1_n1_no_dbias", make(1, 136, 6, 6, 136, 3, 3, 1, 1, 1)}),
      {"c24_k64_11x9_1x1_n2", make(2, 24, 11, 9, 64, 1, 1, 1, 0, 1)},
      {"c8_k8_40x40_3x3_p1_n1_split", make(1, 8, 40, 40, 8, 3, 3, 1, 1, 1)},
      // Filter-column tiles: two K tiles, 8 x 8 patches overhanging 19 x 21, a split.
      {"columns_c64_k128_19x21_3x3_p1_n2", make(2, 64, 19, 21, 128, 3, 3, 1, 1, 1)},
      misaligned({"misaligned_out_c16_k16_9x7_3x3_p1_n2", make(2, 16, 9, 7, 16, 3, 3, 1, 1, 1)}, 0, 1),
      // The 128 x 256 tile split by rows: K one box past 128 (consumer 1's rows past K), C
      // past its last box, stride 2, the mask, a split; a 1x1 layer with C past 256.
      with_relu({"split_c200_k136_29x25_3x3_s2_p1_n4_relu0", make(4, 200, 29, 25, 136, 3, 3, 2, 1, 1)}, 0.0f),
      {"split_c264_k200_9x11_1x1_n5", make(5, 264, 9, 11, 200, 1, 1, 1, 0, 1)},
      // Gradient step 9 (float NHWC pointwise under TF32, best): the mask with a split of 7
      // slices; dw one element off 16 bytes (unsplit: element stores).
      with_relu({"relu05_pointwise_c40_k24_31x29_n2", make(2, 40, 31, 29, 24, 1, 1, 1, 0, 1)}, 0.5f),
      misaligned({"misaligned_out_pointwise_c16_k24_9x7_n2", make(2, 16, 9, 7, 24, 1, 1, 1, 0, 1)}, 0, 1),
      // dx's forward reading the filter unturned (16-bit NHWC, C and K multiples of 8):
      // 1x1 at stride 2 and masked, 5x5, 7x7, R = 6 (two filter-column groups), 3 x 1
      // columns (cooperative), dilation at stride 1, stride 2 over odd sizes with the mask.
      {"c72_k16_13x11_1x1_s2_n1", make(1, 72, 13, 11, 16, 1, 1, 2, 0, 1)},
      with_relu({"relu0_c16_k16_9x7_1x1_n2", make(2, 16, 9, 7, 16, 1, 1, 1, 0, 1)}, 0.0f),
      {"c72_k40_9x11_5x5_p2_n1", make(1, 72, 9, 11, 40, 5, 5, 1, 2, 1)},
      without_dbias({"c16_k24_15x13_7x7_p3_n2_no_dbias", make(2, 16, 15, 13, 24, 7, 7, 1, 3, 1)}),
      {"columns_r6_c72_k24_13x12_6x3_p2_n2", make(2, 72, 13, 12, 24, 6, 3, 1, 2, 1)},
      {"columns_c72_k80_16x8_3x1_p1_n2", make_layer(2, 72, 16, 8, 80, 3, 1, 1, 1, 1, 0)},
      {"columns_c16_k16_16x8_3x1_p1_n1", make_layer(1, 16, 16, 8, 16, 3, 1, 1, 1, 1, 0)},
      {"c16_k16_15x13_3x3_d2_p2_n2", make(2, 16, 15, 13, 16, 3, 3, 1, 2, 2)},
      with_relu({"relu05_c24_k16_13x11_3x3_s2_p1_n1", make(1, 24, 13, 11, 16, 3, 3, 2, 1, 1)}, 0.5f),
      // Gradient step 8 (16-bit NHWC dx by parity classes on mma.sync): the stem over 2 x 3
      // tiles of 16 x 32 class pixels; 2 x 2 taps a class and K = 24 (a partial second chunk
      // of 16); dy and dx one element off 16 bytes (dy through registers).
      {"stem_c3_k64_45x133_7x7_s2_p3_n1", make(1, 3, 45, 133, 64, 7, 7, 2, 3, 1)},
      {"c3_k24_19x17_4x4_s2_p1_n2", make(2, 3, 19, 17, 24, 4, 4, 2, 1, 1)},
      misaligned({"misaligned_in_out_c3_k16_15x13_7x7_s2_p3_n2", make(2, 3, 15, 13, 16, 7, 7, 2, 3, 1)}, 1, 1),
      // Winograd dw (gradient step 6, float NCHW under best: 3x3 stride 1, K and C >= 128):
      // odd P and Q (blocks past the output), the mask, K past the 64-row tiles, C past 128.
      with_relu({"winograd_dw_c130_k129_9x7_3x3_p1_n2_relu0", make(2, 130, 9, 7, 129, 3, 3, 1, 1, 1)}, 0.0f),
  };
  return cases;
}

/// The most non-zero terms any output of the case sums (top of file).
struct term_counts {
  std::size_t dx = 0, dw = 0, dbias = 0;
  std::size_t untouched_rows = 0, untouched_cols = 0;  // input rows / columns no tap reads
};

/// Taps along one dimension: for each input coordinate, how many filter taps
/// read it (most), and for each filter tap how many outputs read inside (most).
struct dimension_taps {
  std::size_t per_input = 0, per_tap = 0, untouched = 0;
};

inline dimension_taps count_taps(std::size_t in, std::size_t out, std::size_t filter, std::size_t stride,
                                 std::size_t pad, std::size_t dilation) {
  dimension_taps t;
  std::vector<std::size_t> per_input(in, 0);
  for (std::size_t r = 0; r < filter; ++r) {
    std::size_t inside = 0;
    for (std::size_t o = 0; o < out; ++o) {
      const long long i = static_cast<long long>(o * stride + r * dilation) - static_cast<long long>(pad);
      if (i < 0 || i >= static_cast<long long>(in)) continue;
      ++per_input[static_cast<std::size_t>(i)];
      ++inside;
    }
    t.per_tap = std::max(t.per_tap, inside);
  }
  for (std::size_t v : per_input) {
    t.per_input = std::max(t.per_input, v);
    t.untouched += v == 0 ? 1 : 0;
  }
  return t;
}

inline term_counts terms_of(const kf::conv2d_params& p) {
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  const dimension_taps h = count_taps(p.in_height, P, p.filter_height, p.stride_h, p.pad_h, p.dilation_h);
  const dimension_taps w = count_taps(p.in_width, Q, p.filter_width, p.stride_w, p.pad_w, p.dilation_w);
  return {p.out_channels * h.per_input * w.per_input, p.batch * h.per_tap * w.per_tap, p.batch * P * Q, h.untouched,
          w.untouched};
}

/// Whether the implicit_gemm path computes dx (not the naive fallback): the
/// padding within the dilated filter's reach (conv_backward.hpp).
inline bool dx_runs_as_forward(const kf::conv2d_params& p) {
  return p.pad_h <= p.dilation_h * (p.filter_height - 1) && p.pad_w <= p.dilation_w * (p.filter_width - 1);
}

/// The forward convolution whose output is dx (conv_backward.hpp): dy spread
/// over the zero grid of the padded input's reach, K and C swapped, stride 1,
/// padding dh (R-1) - ph. Only for dx_runs_as_forward layers.
inline kf::conv2d_params dx_forward(const kf::conv2d_params& p) {
  kf::conv2d_params f = p;
  f.in_channels = p.out_channels;
  f.out_channels = p.in_channels;
  f.in_height = p.in_height + 2 * p.pad_h - p.dilation_h * (p.filter_height - 1);
  f.in_width = p.in_width + 2 * p.pad_w - p.dilation_w * (p.filter_width - 1);
  f.stride_h = f.stride_w = 1;
  f.pad_h = p.dilation_h * (p.filter_height - 1) - p.pad_h;
  f.pad_w = p.dilation_w * (p.filter_width - 1) - p.pad_w;
  return f;
}

/// Whether float NCHW dx under exact math may run Winograd (the top of file).
inline bool dx_may_run_winograd(const kf::conv2d_params& p) {
  return p.batch > 0 && p.out_channels > 0 && dx_runs_as_forward(p) && kf::test::best_runs_winograd(dx_forward(p));
}

/// dx's forward's inputs (dx_forward) in float NCHW: dy masked (relu_y empty:
/// no mask) and spread over the zero grid, and the filter turned by 180
/// degrees with K and C swapped.
struct forward_inputs {
  std::vector<float> spread, turned;
};

inline forward_inputs dx_forward_inputs(const kf::conv2d_params& p, const std::vector<float>& dy,
                                        const std::vector<float>& w, const std::vector<float>& relu_y,
                                        float threshold) {
  const kf::conv2d_params f = dx_forward(p);
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  const std::size_t N = p.batch, K = p.out_channels, C = p.in_channels, R = p.filter_height, S = p.filter_width;
  forward_inputs in{std::vector<float>(N * K * f.in_height * f.in_width, 0.0f), std::vector<float>(C * K * R * S)};
  for (std::size_t nk = 0; nk < N * K; ++nk) {
    for (std::size_t i = 0; i < P; ++i) {
      for (std::size_t j = 0; j < Q; ++j) {
        const std::size_t from = (nk * P + i) * Q + j;
        const bool clipped = !relu_y.empty() && relu_y[from] <= threshold;
        in.spread[(nk * f.in_height + i * p.stride_h) * f.in_width + j * p.stride_w] = clipped ? 0.0f : dy[from];
      }
    }
  }
  for (std::size_t k = 0; k < K; ++k) {
    for (std::size_t c = 0; c < C; ++c) {
      for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t s = 0; s < S; ++s) {
          in.turned[((c * K + k) * R + (R - 1 - r)) * S + (S - 1 - s)] = w[((k * C + c) * R + r) * S + s];
        }
      }
    }
  }
  return in;
}

}  // namespace kf::test::conv2d_backward
