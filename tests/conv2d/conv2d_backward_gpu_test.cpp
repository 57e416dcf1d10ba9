// SPDX-License-Identifier: Apache-2.0
// conv2d's gradients on the GPU (<kernelforge/conv_backward.hpp>):
// conv2d_backward_data (dx) and conv2d_backward_filter (dw, dbias) for every
// layout, type and math mode x every variant (naive, implicit_gemm,
// implicit_gemm_wgmma, best) x the
// cases below, against the double references of
// kernelforge/reference/conv_backward.hpp. Every output buffer is poisoned with
// NaN first (an element no kernel writes can never pass, and NaN never passes),
// with one element past the output that must stay NaN (and one before it where
// the output is misaligned). Inputs: random_vector (magnitudes uniform in
// [1/8, 2], random signs, never zero, fixed seeds), rounded once to T. The
// ReLU mask's relu_y is the forward's own output: kf::conv2d_forward on the
// GPU with options.relu, the same x and weight, no bias, so about half the
// outputs are clipped (checked: 20-80%).
//
// Configurations: float NCHW and NHWC, each under math_mode::exact and tf32;
// __half and __nv_bfloat16 NHWC.
//
// Tolerance, per output, with S the reference's error scale (the sum of |term|
// over its terms: |w| |dy| for dx, |dy| |x| for dw, |dy| for dbias), n the most
// terms any output of the call sums that are not zero (dx: K x the taps of one
// filter that reach one input pixel, at most K R S; dw: N x the output pixels
// whose tap lies inside the image, at most N P Q; dbias: N P Q) and u = 2^-24:
//   fp32 sums (float: naive, and implicit_gemm / implicit_gemm_wgmma / best
//   under exact math, which
//   run dx on the forward's exact kernels and dw on the fp32 SGEMM; dbias always):
//     |got - ref| <= 2 n u S.
//     Recursive summation in fp32 is within gamma_n S ~ n u S of the exact sum
//     whatever the order or tree (Higham, Accuracy and Stability, 4.2: split-k
//     and tiled reductions included), 2x covers round-toward-zero accumulation
//     (a tensor core's). Adding an exact zero is exact: the zeros of the spread
//     dy (stride > 1 or the ReLU mask on the implicit path) and of im2col's
//     padding cost no rounding, so n counts the non-zero terms only.
//   TF32 (float under math_mode::tf32 on implicit_gemm / best: dx on the
//   forward's TF32 kernels, dw on the TF32 tensor-core matmul):
//     |got - ref| <= (2 * 2^-10 + 2^-20 + 2^-18 + 2 n u) S,
//     as conv2d_nhwc_gpu_test.cpp: below 2^-10 per TF32 input, 2^-18 S for the
//     tensor core's alignment of each k-group's products.
//   __half and __nv_bfloat16 (fp32 sums rounded once to T):
//     |got - ref| <= u_T |ref| + (1 + u_T) (2 n u + tc) S + a_T,
//     u_T = 2^-11 or 2^-8, tc = 2^-18 where tensor cores may run (implicit_gemm,
//     implicit_gemm_wgmma and best: dx's forward and dw's matmul or wgmma
//     implicit GEMM) else 0, a_T = 2^-25 (half's underflow) or 0. dw's sums are
//     rounded to T once per chunk of images (a chunk keeps im2col under 1 GiB;
//     the wgmma wgrad rounds once after its fp32 split-k reduction): every case
//     here is one chunk (Conv2dBackwardCases.OneImageChunk), so once.
//   Winograd (float NCHW under exact math, implicit_gemm / best, dx of a 3x3
//   stride-1 dilation-1 layer with C, K >= 64, where the forward that computes
//   dx takes Winograd F(2x2,3x3)): conv2d_gpu_test.cpp's bound
//   4 sqrt(K + 12) 2^-24 E, E the Winograd error scale (winograd_bound.hpp) of
//   that forward: dy (masked, spread) convolved with the filter turned by 180
//   degrees, K and C swapped.
// The fp32 bounds are proven worst cases and catch a wrong, lost or repeated
// term, which moves an output by about S / n: every case keeps 2 n^2 u <= 1/2
// (Conv2dBackwardCases.BoundsCanFail). Under TF32 the 2^-9 S term exceeds one
// term once n > 512 (dx of the four K = 64 layers): there a single wrong tap
// may pass, not a wrong filter, channel, pixel or image.
//
// Cases: C and K of 1, 3, 5, 8, 17, 64; prime and odd H, W; N = 0, 1, 2, 3, 5;
// 1x1 (the NHWC x that is its own im2col matrix), 3x3, 5x5, 7x7 stride 2
// pad 3 with C = 3; stride 2 and 3 with input rows and columns no tap reads;
// dilation 2 (with and without stride); pad 0, and pads past the filter's
// reach (dx falls back to naive); the ReLU mask at thresholds 0 and 0.5; dbias
// and none; N = 0 (dw, dbias zeroed) and K = 0 (dx zeroed); inputs (dy, x,
// weight, relu_y) and outputs (dx, dw, dbias) one element off alignment; two
// N = 2, C = K = 64, 14x14 layers (with and without the mask) for the tensor
// cores' real tiles and Winograd; for the wgmma filter gradient (NHWC 16-bit,
// C and K multiples of 8, aligned x and dy: Conv2dBackwardCases.WgmmaWgradCases),
// K = 72 and C = 128 (a 128 x 128 tile, rows past K), K = C = 136 (two tiles
// each way, the second's boxes partly past K and C), C = 24 (a 64-wide tile
// mostly past C), stride 2 and 3 with overhanging patches, a 40 x 40 image (a
// split reduction), dw one element off alignment (element stores). The
// references' cost: 1e8 multiply-adds in double per type and layout (4e8 in
// all, over the hardware threads).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conv2d_bounds.hpp"
#include "conv2d_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/conv_backward.hpp"
#include "kernelforge/kernels/conv2d/backward/wgrad_wgmma_plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/reference/conv.hpp"
#include "kernelforge/reference/conv_backward.hpp"
#include "test_support.hpp"
#include "winograd_bound.hpp"

namespace {

using kf::test::conv2d::dtype;
using kf::test::conv2d::dtype_of;
using kf::test::conv2d::fp32_u;
using kf::test::conv2d::make;
using kf::test::conv2d::sum_tolerance;
using kf::test::conv2d::to_device_at;

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

grad_case with_relu(grad_case c, float threshold) {
  c.relu = true;
  c.threshold = threshold;
  return c;
}

grad_case without_dbias(grad_case c) {
  c.dbias = false;
  return c;
}

grad_case misaligned(grad_case c, std::size_t in_offset, std::size_t out_offset) {
  c.in_offset = in_offset;
  c.out_offset = out_offset;
  return c;
}

const std::vector<grad_case>& grad_cases() {
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

dimension_taps count_taps(std::size_t in, std::size_t out, std::size_t filter, std::size_t stride, std::size_t pad,
                          std::size_t dilation) {
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

term_counts terms_of(const kf::conv2d_params& p) {
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  const dimension_taps h = count_taps(p.in_height, P, p.filter_height, p.stride_h, p.pad_h, p.dilation_h);
  const dimension_taps w = count_taps(p.in_width, Q, p.filter_width, p.stride_w, p.pad_w, p.dilation_w);
  return {p.out_channels * h.per_input * w.per_input, p.batch * h.per_tap * w.per_tap, p.batch * P * Q, h.untouched,
          w.untouched};
}

/// Whether the implicit_gemm path computes dx (not the naive fallback): the
/// padding within the dilated filter's reach (conv_backward.hpp).
bool dx_runs_as_forward(const kf::conv2d_params& p) {
  return p.pad_h <= p.dilation_h * (p.filter_height - 1) && p.pad_w <= p.dilation_w * (p.filter_width - 1);
}

/// The forward convolution whose output is dx (conv_backward.hpp): dy spread
/// over the zero grid of the padded input's reach, K and C swapped, stride 1,
/// padding dh (R-1) - ph. Only for dx_runs_as_forward layers.
kf::conv2d_params dx_forward(const kf::conv2d_params& p) {
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
bool dx_may_run_winograd(const kf::conv2d_params& p) {
  return p.batch > 0 && p.out_channels > 0 && dx_runs_as_forward(p) && kf::test::best_runs_winograd(dx_forward(p));
}

// ---- configurations and variants ----------------------------------------------------

struct config {
  const char* name;
  dtype type;
  kf::conv2d_layout layout;
  kf::math_mode math;
};

const config configs[] = {
    {"f32_nchw_exact", dtype::f32, kf::conv2d_layout::nchw, kf::math_mode::exact},
    {"f32_nchw_tf32", dtype::f32, kf::conv2d_layout::nchw, kf::math_mode::tf32},
    {"f32_nhwc_exact", dtype::f32, kf::conv2d_layout::nhwc, kf::math_mode::exact},
    {"f32_nhwc_tf32", dtype::f32, kf::conv2d_layout::nhwc, kf::math_mode::tf32},
    // 16-bit inputs are what the tensor cores multiply: the math mode does not matter.
    {"f16_nhwc", dtype::f16, kf::conv2d_layout::nhwc, kf::math_mode::exact},
    {"bf16_nhwc", dtype::bf16, kf::conv2d_layout::nhwc, kf::math_mode::exact},
};

struct variant {
  const char* name;
  kf::conv2d_backward_variant value;
};

const variant variants[] = {
    {"naive", kf::conv2d_backward_variant::naive},
    {"implicit_gemm", kf::conv2d_backward_variant::implicit_gemm},
    {"implicit_gemm_wgmma", kf::conv2d_backward_variant::implicit_gemm_wgmma},
    {"best", kf::conv2d_backward_variant::best},
};

// ---- one case's inputs and references, per type and layout ------------------------

template <class T>
struct problem {
  const grad_case* c = nullptr;
  kf::conv2d_params p;  // in the layout
  std::size_t x_n = 0, w_n = 0, y_n = 0;
  term_counts terms;
  std::vector<double> dx, dx_scale, dw, dw_scale, db, db_scale;
  std::vector<double> dx_winograd_scale;  // float NCHW where dx_may_run_winograd
  kf::device_buffer<T> x, w, dy, relu_y;
  [[nodiscard]] const T* x_at() const { return x.data() + c->in_offset; }
  [[nodiscard]] const T* w_at() const { return w.data() + c->in_offset; }
  [[nodiscard]] const T* dy_at() const { return dy.data() + c->in_offset; }
  [[nodiscard]] const T* relu_y_at() const { return c->relu ? relu_y.data() + c->in_offset : nullptr; }
};

/// dx's forward's inputs (dx_forward) in float NCHW: dy masked (relu_y empty:
/// no mask) and spread over the zero grid, and the filter turned by 180
/// degrees with K and C swapped.
struct forward_inputs {
  std::vector<float> spread, turned;
};

forward_inputs dx_forward_inputs(const kf::conv2d_params& p, const std::vector<float>& dy, const std::vector<float>& w,
                                 const std::vector<float>& relu_y, float threshold) {
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

/// Fraction of relu_y's values the mask clips (<= threshold).
template <class T>
double clipped_fraction(const std::vector<T>& relu_y, float threshold) {
  std::size_t clipped = 0;
  for (const T& v : relu_y) clipped += kf::reference::to_double(v) <= threshold ? 1 : 0;
  return relu_y.empty() ? 0.0 : static_cast<double>(clipped) / static_cast<double>(relu_y.size());
}

/// The inputs on the host and the device (each at the case's in_offset), the
/// forward's relu_y (on the GPU) and the references: built once per type,
/// layout and case.
template <class T>
const problem<T>& problem_for(kf::conv2d_layout layout, const grad_case& c) {
  static std::map<std::string, problem<T>> cache;
  problem<T>& pr = cache[std::string(c.name) + "/" + kf::to_string(layout)];
  if (pr.c != nullptr) return pr;
  kf::conv2d_params p = c.p;
  p.layout = layout;
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  pr.p = p;
  pr.x_n = p.batch * p.in_channels * p.in_height * p.in_width;
  pr.w_n = p.out_channels * p.in_channels * p.filter_height * p.filter_width;
  pr.y_n = p.batch * p.out_channels * P * Q;
  pr.terms = terms_of(p);
  const std::uint64_t seed =
      4100 + 10 * static_cast<std::uint64_t>(dtype_of<T>()) + (layout == kf::conv2d_layout::nhwc ? 5 : 0);
  const auto x = kf::test::random_vector<T>(pr.x_n, seed + 1);
  const auto w = kf::test::random_vector<T>(pr.w_n, seed + 2);
  const auto dy = kf::test::random_vector<T>(pr.y_n, seed + 3);
  pr.x = to_device_at(x, c.in_offset);
  pr.w = to_device_at(w, c.in_offset);
  pr.dy = to_device_at(dy, c.in_offset);
  std::vector<T> relu_y;
  if (c.relu) {
    pr.relu_y = kf::device_buffer<T>(c.in_offset + pr.y_n);
    kf::test::poison(pr.relu_y.data(), pr.relu_y.size_bytes());
    kf::conv2d_options forward;
    forward.relu = true;
    forward.relu_threshold = c.threshold;
    kf::conv2d_forward<T>(p, pr.x.data() + c.in_offset, pr.w.data() + c.in_offset, nullptr,
                          pr.relu_y.data() + c.in_offset, forward);
    const auto all = kf::to_host(pr.relu_y);
    relu_y.assign(all.begin() + static_cast<std::ptrdiff_t>(c.in_offset), all.end());
    const double clipped = clipped_fraction(relu_y, c.threshold);
    EXPECT_TRUE(clipped >= 0.2 && clipped <= 0.8)
        << c.name << ": the forward clips " << clipped << " of its outputs; the mask needs both kinds";
  }
  const kf::reference::conv2d_relu_mask<T> mask{c.relu ? relu_y.data() : nullptr, c.threshold};
  pr.dx.resize(pr.x_n);
  pr.dx_scale.resize(pr.x_n);
  kf::reference::conv2d_backward_data_exact(p, dy.data(), w.data(), pr.dx.data(), pr.dx_scale.data(), mask);
  pr.dw.resize(pr.w_n);
  pr.dw_scale.resize(pr.w_n);
  pr.db.resize(p.out_channels);
  pr.db_scale.resize(p.out_channels);
  kf::reference::conv2d_backward_filter_exact(p, x.data(), dy.data(), pr.dw.data(), pr.db.data(), pr.dw_scale.data(),
                                              pr.db_scale.data(), mask);
  if constexpr (std::is_same_v<T, float>) {
    if (layout == kf::conv2d_layout::nchw && dx_may_run_winograd(p)) {
      const forward_inputs in = dx_forward_inputs(p, dy, w, relu_y, c.threshold);
      pr.dx_winograd_scale = kf::test::winograd_scale(dx_forward(p), in.spread, in.turned, nullptr);
    }
  }
  pr.c = &c;
  return pr;
}

// ---- tolerances (top of file) ----------------------------------------------------------

/// Whether tensor cores may compute this call's products (float: only under
/// math_mode::tf32) on a path other than naive.
template <class T>
bool tensor_cores_may_run(const config& cfg, bool implicit_path) {
  return implicit_path && (!std::is_same_v<T, float> || cfg.math == kf::math_mode::tf32);
}

// ---- the runs ---------------------------------------------------------------------

struct grad_param {
  config cfg;
  variant v;
  std::size_t case_index;
};

void PrintTo(const grad_param& g, std::ostream* os) {
  *os << g.cfg.name << "/" << g.v.name << "/" << grad_cases()[g.case_index].name;
}

kf::conv2d_backward_options options_for(const grad_param& g, const grad_case& c) {
  kf::conv2d_backward_options o;
  o.variant = g.v.value;
  o.math = g.cfg.math;
  o.relu = c.relu;
  o.relu_threshold = c.threshold;
  return o;
}

/// A poisoned device buffer for an output of n elements at `offset`, with one
/// element past it (and `offset` before it) that must stay NaN.
template <class T>
kf::device_buffer<T> poisoned_output(std::size_t offset, std::size_t n) {
  kf::device_buffer<T> buffer(offset + n + 1);
  kf::test::poison(buffer.data(), buffer.size_bytes());
  return buffer;
}

/// `got` (an output at `offset` of n elements, from poisoned_output) has its
/// guard elements untouched.
template <class T>
::testing::AssertionResult guards_untouched(const std::vector<T>& got, std::size_t offset, std::size_t n) {
  for (std::size_t i = 0; i < offset; ++i) {
    if (!std::isnan(kf::reference::to_double(got[i]))) {
      return ::testing::AssertionFailure() << "element " << i << " before the output was written";
    }
  }
  if (!std::isnan(kf::reference::to_double(got[offset + n]))) {
    return ::testing::AssertionFailure() << "the element after the output was written";
  }
  return ::testing::AssertionSuccess();
}

template <class T>
void run_data(const grad_param& g) {
  const grad_case& c = grad_cases()[g.case_index];
  const problem<T>& pr = problem_for<T>(g.cfg.layout, c);
  kf::device_buffer<T> d_dx = poisoned_output<T>(c.out_offset, pr.x_n);
  kf::conv2d_backward_data<T>(pr.p, pr.dy_at(), pr.w_at(), d_dx.data() + c.out_offset, options_for(g, c),
                              pr.relu_y_at());
  const auto got = kf::to_host(d_dx);
  ASSERT_TRUE(guards_untouched(got, c.out_offset, pr.x_n));
  const bool implicit = g.v.value != kf::conv2d_backward_variant::naive && dx_runs_as_forward(pr.p);
  if (implicit && !pr.dx_winograd_scale.empty() && g.cfg.math == kf::math_mode::exact) {
    const double tol = kf::test::winograd_tolerance(dx_forward(pr.p));
    EXPECT_TRUE(kf::test::all_close(got, pr.dx, {tol, 0}, &pr.dx_winograd_scale, c.out_offset)) << "Winograd bound";
    return;
  }
  const kf::test::tolerance tol = sum_tolerance<T>(pr.terms.dx, tensor_cores_may_run<T>(g.cfg, implicit));
  EXPECT_TRUE(kf::test::all_close(got, pr.dx, tol, &pr.dx_scale, c.out_offset));
}

template <class T>
void run_filter(const grad_param& g) {
  const grad_case& c = grad_cases()[g.case_index];
  const problem<T>& pr = problem_for<T>(g.cfg.layout, c);
  const std::size_t k = pr.p.out_channels;
  kf::device_buffer<T> d_dw = poisoned_output<T>(c.out_offset, pr.w_n);
  kf::device_buffer<T> d_db = poisoned_output<T>(c.out_offset, k);
  kf::conv2d_backward_filter<T>(pr.p, pr.x_at(), pr.dy_at(), d_dw.data() + c.out_offset,
                                c.dbias ? d_db.data() + c.out_offset : nullptr, options_for(g, c), pr.relu_y_at());
  const auto got_dw = kf::to_host(d_dw);
  const auto got_db = kf::to_host(d_db);
  ASSERT_TRUE(guards_untouched(got_dw, c.out_offset, pr.w_n));
  const bool implicit = g.v.value != kf::conv2d_backward_variant::naive;
  const kf::test::tolerance tol = sum_tolerance<T>(pr.terms.dw, tensor_cores_may_run<T>(g.cfg, implicit));
  EXPECT_TRUE(kf::test::all_close(got_dw, pr.dw, tol, &pr.dw_scale, c.out_offset)) << "dweight";
  if (!c.dbias) {
    for (const T& v : got_db) ASSERT_TRUE(std::isnan(kf::reference::to_double(v))) << "dbias = nullptr was written";
    return;
  }
  ASSERT_TRUE(guards_untouched(got_db, c.out_offset, k)) << "dbias";
  EXPECT_TRUE(kf::test::all_close(got_db, pr.db, sum_tolerance<T>(pr.terms.dbias, false), &pr.db_scale, c.out_offset))
      << "dbias";
}

std::vector<grad_param> grad_params() {
  std::vector<grad_param> params;
  for (const config& cfg : configs) {
    for (const variant& v : variants) {
      for (std::size_t i = 0; i < grad_cases().size(); ++i) params.push_back({cfg, v, i});
    }
  }
  return params;
}

std::string param_name(const ::testing::TestParamInfo<grad_param>& info) {
  return std::string(info.param.cfg.name) + "_" + info.param.v.name + "_" + grad_cases()[info.param.case_index].name;
}

class Conv2dBackwardData : public ::testing::TestWithParam<grad_param> {};
class Conv2dBackwardFilter : public ::testing::TestWithParam<grad_param> {};

TEST_P(Conv2dBackwardData, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  switch (GetParam().cfg.type) {
    case dtype::f32: return run_data<float>(GetParam());
    case dtype::f16: return run_data<__half>(GetParam());
    case dtype::bf16: return run_data<__nv_bfloat16>(GetParam());
  }
}

TEST_P(Conv2dBackwardFilter, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  switch (GetParam().cfg.type) {
    case dtype::f32: return run_filter<float>(GetParam());
    case dtype::f16: return run_filter<__half>(GetParam());
    case dtype::bf16: return run_filter<__nv_bfloat16>(GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dBackwardData, ::testing::ValuesIn(grad_params()), param_name);
INSTANTIATE_TEST_SUITE_P(Conv, Conv2dBackwardFilter, ::testing::ValuesIn(grad_params()), param_name);

// ---- the cases cover what they claim (no GPU needed) ----------------------------------

/// Every case's fp32 bound stays below half of one term's typical size S / n,
/// so a wrong, lost or repeated term fails (top of file).
TEST(Conv2dBackwardCases, BoundsCanFail) {
  for (const grad_case& c : grad_cases()) {
    const term_counts t = terms_of(c.p);
    for (std::size_t n : {t.dx, t.dw, t.dbias}) {
      const double terms = static_cast<double>(n);
      EXPECT_LE(2 * terms * terms * fp32_u, 0.5) << c.name << ": " << n << " terms";
    }
  }
}

/// 16-bit dw is rounded once per chunk of images (~1 GiB of im2col,
/// src/conv2d/backward_filter.cu): every case must be one chunk for the bound above.
TEST(Conv2dBackwardCases, OneImageChunk) {
  for (const grad_case& c : grad_cases()) {
    const std::size_t pq = kf::conv2d_output_height(c.p) * kf::conv2d_output_width(c.p);
    const std::size_t crs = c.p.in_channels * c.p.filter_height * c.p.filter_width;
    EXPECT_LE(c.p.batch * pq * crs * sizeof(__half), std::size_t{1} << 30) << c.name;
  }
}

/// dx_forward and dx_forward_inputs, which the Winograd bound builds on, are
/// what conv_backward.hpp says: the forward reference of the spread, masked dy
/// and the turned filter is the gradient reference (the same products, summed in
/// double: within 1e-12 of the error scale) on every case it applies to.
TEST(Conv2dBackwardCases, DxIsTheForwardOfTheTurnedFilter) {
  std::uint64_t seed = 4200;
  int checked = 0;
  for (const grad_case& c : grad_cases()) {
    const kf::conv2d_params& p = c.p;  // NCHW
    if (p.batch == 0 || p.out_channels == 0 || !dx_runs_as_forward(p)) continue;
    SCOPED_TRACE(c.name);
    const std::size_t y_n = p.batch * p.out_channels * kf::conv2d_output_height(p) * kf::conv2d_output_width(p);
    const std::size_t x_n = p.batch * p.in_channels * p.in_height * p.in_width;
    const auto dy = kf::test::random_vector<float>(y_n, ++seed);
    const auto w =
        kf::test::random_vector<float>(p.out_channels * p.in_channels * p.filter_height * p.filter_width, ++seed);
    const auto relu_y = c.relu ? kf::test::random_vector<float>(y_n, ++seed) : std::vector<float>();
    const forward_inputs in = dx_forward_inputs(p, dy, w, relu_y, c.threshold);
    std::vector<double> as_forward(x_n), dx(x_n), scale(x_n);
    kf::reference::conv2d_forward_exact(dx_forward(p), in.spread.data(), in.turned.data(), nullptr, as_forward.data());
    kf::reference::conv2d_backward_data_exact(p, dy.data(), w.data(), dx.data(), scale.data(),
                                              {c.relu ? relu_y.data() : nullptr, c.threshold});
    EXPECT_TRUE(kf::test::all_close(as_forward, dx, {1e-12, 0}, &scale));
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(grad_cases().size()) - 4);  // not the two empty and two pad_past_reach cases
}

/// The cases take the paths the top of file lists.
TEST(Conv2dBackwardCases, CoverTheirPaths) {
  int pad_past_reach = 0, untouched_rows = 0, untouched_cols = 0, winograd = 0, relu_zero = 0, relu_positive = 0,
      no_dbias = 0, empty_batch = 0, no_filters = 0, in_misaligned = 0, out_misaligned = 0, strided_relu = 0;
  for (const grad_case& c : grad_cases()) {
    const term_counts t = terms_of(c.p);
    pad_past_reach += dx_runs_as_forward(c.p) ? 0 : 1;
    untouched_rows += t.untouched_rows > 0 && dx_runs_as_forward(c.p) ? 1 : 0;
    untouched_cols += t.untouched_cols > 0 && dx_runs_as_forward(c.p) ? 1 : 0;
    winograd += dx_may_run_winograd(c.p) ? 1 : 0;
    relu_zero += c.relu && c.threshold == 0.0f ? 1 : 0;
    relu_positive += c.relu && c.threshold > 0.0f ? 1 : 0;
    strided_relu += c.relu && c.p.stride_h > 1 ? 1 : 0;
    no_dbias += c.dbias ? 0 : 1;
    empty_batch += c.p.batch == 0 ? 1 : 0;
    no_filters += c.p.out_channels == 0 ? 1 : 0;
    in_misaligned += c.in_offset > 0 ? 1 : 0;
    out_misaligned += c.out_offset > 0 ? 1 : 0;
  }
  EXPECT_EQ(pad_past_reach, 2);
  EXPECT_GE(untouched_rows, 3);  // stride 2 pad 0, stride 3, 1x1 stride 2
  EXPECT_GE(untouched_cols, 2);
  // the two 14x14 layers, the misaligned 7x7 one, C128 K72, C136 K136 and the filter-column 19x21
  EXPECT_EQ(winograd, 6);
  EXPECT_GE(relu_zero, 2);
  EXPECT_GE(relu_positive, 2);
  EXPECT_GE(strided_relu, 2);
  EXPECT_GE(no_dbias, 2);
  EXPECT_EQ(empty_batch, 1);
  EXPECT_EQ(no_filters, 1);
  EXPECT_EQ(in_misaligned, 3);
  EXPECT_EQ(out_misaligned, 4);
}

/// The cases the wgmma filter gradient computes on sm_90 in __half and
/// __nv_bfloat16 NHWC (implicit_gemm_wgmma and best; elsewhere they run as
/// implicit_gemm): C and K multiples of 8, strides up to 8, x and dy 16-byte
/// aligned (no in_offset), something to sum. Among them the shapes the top of
/// file lists: a 128-row tile, two tiles along K and C, a 1x1 layer, strides,
/// the mask, a split (more than 16 patches: 64 pixels each) and misaligned dw;
/// and both tilings of 3 x 3 stride-1 layers (wgrad_wgmma_plan.hpp): one-tap
/// tiles, and filter-column tiles -- with two K tiles, C tiles past C, the mask,
/// a split and misaligned dw. And layers it computes as their column fold (x
/// not readable in place: C * 2 bytes not a multiple of 16, as the stem's, or
/// x misaligned): the stem, and a misaligned 3 x 3 one.
TEST(Conv2dBackwardCases, WgmmaWgradCases) {
  int runs = 0, wide_k = 0, two_tiles = 0, one_by_one = 0, strided = 0, masked = 0, split = 0, out_misaligned = 0;
  int folded_stem = 0, folded_misaligned = 0;
  for (const grad_case& c : grad_cases()) {
    const kf::conv2d_params& p = c.p;
    const bool narrow = p.in_channels * 2 % 16 != 0;
    if (!narrow && c.in_offset == 0) continue;  // read in place (above)
    const std::size_t folded = kf::detail::conv2d_nhwc_folded_channels(p.filter_width, p.in_channels, 2);
    if (kf::detail::conv2d_wgrad_wgmma_unsupported_reason(folded, p.out_channels, 2, p.stride_h, 1) != nullptr ||
        p.batch == 0) {
      continue;
    }
    folded_stem += narrow && p.filter_width == 7 && p.stride_w == 2 ? 1 : 0;
    folded_misaligned += c.in_offset > 0 ? 1 : 0;
  }
  EXPECT_GE(folded_stem, 1);
  EXPECT_GE(folded_misaligned, 1);
  int one_tap_3x3 = 0, columns = 0, columns_wide_k = 0, columns_partial_c = 0, columns_masked = 0, columns_split = 0,
      columns_out_misaligned = 0;
  for (const grad_case& c : grad_cases()) {
    const kf::conv2d_params& p = c.p;
    const bool applies = kf::detail::conv2d_wgrad_wgmma_unsupported_reason(p.in_channels, p.out_channels, 2, p.stride_h,
                                                                           p.stride_w) == nullptr &&
                         c.in_offset == 0 && p.batch > 0 && p.out_channels > 0;
    if (!applies) continue;
    ++runs;
    wide_k += p.out_channels > 64 ? 1 : 0;
    two_tiles += p.out_channels > 128 && p.in_channels > 128 ? 1 : 0;
    one_by_one += p.filter_height * p.filter_width == 1 ? 1 : 0;
    strided += p.stride_h > 1 ? 1 : 0;
    masked += c.relu ? 1 : 0;
    split += p.batch * kf::conv2d_output_height(p) * kf::conv2d_output_width(p) > 16 * 64 ? 1 : 0;
    out_misaligned += c.out_offset > 0 ? 1 : 0;
    const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
    const kf::detail::conv2d_wgrad_wgmma_plan plan =
        kf::detail::plan_conv2d_wgrad_wgmma(p.batch, P, Q, p.out_channels, p.in_channels, p.filter_height,
                                            p.filter_width, p.stride_h, p.stride_w, p.dilation_h, 132);
    const bool three_by_three = p.filter_height == 3 && p.filter_width == 3 && p.stride_h == 1;
    one_tap_3x3 += three_by_three && plan.filter_rows == 1 ? 1 : 0;
    if (plan.filter_rows > 1) {
      ++columns;
      columns_wide_k += plan.tiles_k > 1 ? 1 : 0;
      columns_partial_c += plan.tiles_c > 1 && p.in_channels % 64 != 0 ? 1 : 0;
      columns_masked += c.relu ? 1 : 0;
      columns_split += plan.split > 1 ? 1 : 0;
      columns_out_misaligned += c.out_offset > 0 ? 1 : 0;
    }
  }
  EXPECT_GE(one_tap_3x3, 1);
  EXPECT_GE(columns, 4);
  EXPECT_GE(columns_wide_k, 1);
  EXPECT_GE(columns_partial_c, 1);
  EXPECT_GE(columns_masked, 1);
  EXPECT_GE(columns_split, 1);
  EXPECT_GE(columns_out_misaligned, 1);
  EXPECT_GE(runs, 10);
  EXPECT_GE(wide_k, 2);
  EXPECT_GE(two_tiles, 1);
  EXPECT_GE(one_by_one, 1);
  EXPECT_GE(strided, 3);
  EXPECT_GE(masked, 1);
  EXPECT_GE(split, 1);
  EXPECT_GE(out_misaligned, 1);
}

/// dx of 16-bit NHWC layers runs the forward's wgmma kernel on the turned
/// filter (dx_forward): the stride-1 3x3 cases whose dy it reads in place take
/// its filter-column tiles (wgmma_plan.hpp) -- the 14x14 ResNet layer with and
/// without the mask, and the 19x21 one (Q not a multiple of 8, C = 64 output
/// channels of K = 128 input ones).
TEST(Conv2dBackwardCases, DxFilterColumnCases) {
  int columns = 0, masked = 0, q_overhang = 0;
  for (const grad_case& c : grad_cases()) {
    const kf::conv2d_params& p = c.p;
    if (p.batch == 0 || p.out_channels == 0 || !dx_runs_as_forward(p) || p.stride_h != 1 || p.stride_w != 1) continue;
    if (p.out_channels * 2 % 16 != 0 || c.out_offset != 0) continue;  // dy read in place (as dx's x)
    const kf::conv2d_params f = dx_forward(p);
    const std::size_t P = kf::conv2d_output_height(f), Q = kf::conv2d_output_width(f);
    const kf::detail::conv2d_wgmma_tile t =
        kf::detail::plan_conv2d_nhwc_wgmma(f.batch, P, Q, f.out_channels, f.in_channels, f.filter_height,
                                           f.filter_width, f.stride_h, f.stride_w, f.dilation_h, 2);
    if (t.filter_rows == 1) continue;
    ++columns;
    masked += c.relu ? 1 : 0;
    q_overhang += Q % 8 != 0 ? 1 : 0;
  }
  EXPECT_GE(columns, 3);
  EXPECT_GE(masked, 1);
  EXPECT_GE(q_overhang, 1);
}

}  // namespace
