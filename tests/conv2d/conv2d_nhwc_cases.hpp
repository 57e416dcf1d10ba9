// SPDX-License-Identifier: Apache-2.0
// The channels_last conv2d cases (conv2d_nhwc_gpu_test.cpp runs them on the GPU,
// conv2d_nhwc_cases_test.cpp checks on the CPU that they cover what they claim),
// and each case's inputs and reference in a type (problem_for).
//
// Geometry (nhwc_cases below): odd and prime H and W; C = 1, 3, 5, 7, 12, 24,
// not multiples of 8 (C * sizeof(T) a multiple of 16 bytes, as the wgmma
// kernel needs to read x in place, for float at 12 and 24, for the 16-bit
// types at 24 only; the others go through its column fold), and 8, 16, 32,
// 48, 64, 72, 136, 256; K = 1 (y a single column), 3, 63, 65, 67, 130, 257
// (around 64- and 128-wide tiles); stride 2 and asymmetric strides (1 x 2, 1 x 3);
// dilation 2 (in place and folded); pad_h != pad_w; Q = 1 (W = 1, padded);
// 1x1, 3x3, 3x5, 5x5, 7x7 (the ResNet stem: C = 3, stride 2, pad 3); N = 1,
// 2, 3, 9; bias and none; the ReLU at thresholds -0.5, 0, 0.25 and 0.5, with
// the bias and without, on both of the wgmma kernel's schedules (checked
// against the plan by Conv2dNhwcCases.FusedBiasReluCases);
// two ResNet-50 layers at N = 2;
// pixel boxes of the wgmma kernel's 128-row tiles
// that span images and overhang the batch (7x7 at N = 3, 5x6 at N = 9: checked
// against the plan by Conv2dNhwcCases.BoxesSpanImages); x, weight and y each
// one element off alignment, and y so with the bias and the ReLU on both of
// the wgmma kernel's schedules (FusedBiasReluCases); the 16-bit filter-column
// tiles of the wgmma kernel (wgmma_plan.hpp: 3x3 and 6x3 stride-1 layers) in
// both forms (8 x 8 pixels of two images, 8 x 16 of one) and both widths, at 56x56 C64 and 28x28 C128, Q
// not a multiple of 8, N up to 3, padding 2 at the top and bottom, the ReLU,
// partial channel blocks, the column fold and misaligned y (checked against
// the plan by Conv2dNhwcCases.FilterColumnCases); step 10's cases (16-bit
// only; their list says what they cover, Conv2dNhwcCases.FewChannelCases
// checks it; step 11's, Conv2dNhwcCases.PersistentCases). The reference's cost
// is N P Q K C R S multiply-adds in double per case and type, cached across the
// variants: 1.5e9 for the three types and 0.6e9 for steps 10 and 11's cases in
// the two 16-bit ones (the stem at N = 2: 0.24e9 a
// type), about 10 s on 2 cores at -O2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_fp16.h>

#include "conv2d_bounds.hpp"
#include "conv2d_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/few_channels_plan.hpp"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"
#include "winograd_bound.hpp"

namespace {

using kf::test::conv2d::dtype;
using kf::test::conv2d::dtype_name;
using kf::test::conv2d::dtype_of;
using kf::test::conv2d::fp32_u;
using kf::test::conv2d::to_device_at;

struct nhwc_case {
  const char* name;
  kf::conv2d_params p;
  bool bias;
  bool relu = false;
  float threshold = 0.0f;
  std::size_t x_offset = 0, w_offset = 0, y_offset = 0;  // elements: a misaligned tensor
};

/// An NHWC layer: N C H W K R S, strides, paddings, dilation (both directions).
kf::conv2d_params nhwc(std::size_t n, std::size_t c, std::size_t h, std::size_t w, std::size_t k, std::size_t r,
                       std::size_t s, std::size_t stride_h, std::size_t stride_w, std::size_t pad_h, std::size_t pad_w,
                       std::size_t dilation = 1) {
  return kf::test::conv2d::make_layer(n, c, h, w, k, r, s, stride_h, stride_w, pad_h, pad_w, dilation,
                                      kf::conv2d_layout::nhwc);
}

nhwc_case with_relu(nhwc_case c, float threshold) {
  c.relu = true;
  c.threshold = threshold;
  return c;
}

nhwc_case misaligned(nhwc_case c, std::size_t x_offset, std::size_t w_offset, std::size_t y_offset) {
  c.x_offset = x_offset;
  c.w_offset = w_offset;
  c.y_offset = y_offset;
  return c;
}

const std::vector<nhwc_case>& nhwc_cases() {
  static const std::vector<nhwc_case> cases = {
      // Odd and prime extents, C off 16 bytes for every type, K off every tile.
      {"c3_13x29_k63_3x3_p1_n3", nhwc(3, 3, 13, 29, 63, 3, 3, 1, 1, 1, 1), true},
      {"c5_29x13_k65_5x5_p2_n1", nhwc(1, 5, 29, 13, 65, 5, 5, 1, 1, 2, 2), false},
      // 48 bytes per float pixel (the wgmma kernel's), 24 per 16-bit one (naive's).
      with_relu({"c12_13x13_k130_3x3_p1_relu", nhwc(2, 12, 13, 13, 130, 3, 3, 1, 1, 1, 1), true}, 0.5f),
      {"c24_11x13_k257_1x1_n3", nhwc(3, 24, 11, 13, 257, 1, 1, 1, 1, 0, 0), true},
      // K = 1: y is a single column of N*P*Q rows.
      {"c8_17x19_k1_3x3_p1", nhwc(2, 8, 17, 19, 1, 3, 3, 1, 1, 1, 1), true},
      {"c16_23x21_k3_3x3_d2_p2", nhwc(2, 16, 23, 21, 3, 3, 3, 1, 1, 2, 2, 2), false},
      {"c32_13x11_k40_3x5_p1x2", nhwc(2, 32, 13, 11, 40, 3, 5, 1, 1, 1, 2), true},
      {"c72_9x9_k130_3x3_p1_n1", nhwc(1, 72, 9, 9, 130, 3, 3, 1, 1, 1, 1), true},
      with_relu({"c136_9x11_k65_3x3_p1_n1_relu", nhwc(1, 136, 9, 11, 65, 3, 3, 1, 1, 1, 1), true}, -0.5f),
      {"c24_7x9_k64_7x7_p3_n1", nhwc(1, 24, 7, 9, 64, 7, 7, 1, 1, 3, 3), false},
      {"c128_8x8_k257_1x1_n1", nhwc(1, 128, 8, 8, 257, 1, 1, 1, 1, 0, 0), true},
      {"c64_1x1_k7_3x3_p1_one_pixel", nhwc(2, 64, 1, 1, 7, 3, 3, 1, 1, 1, 1), true},
      // Strides (the wgmma kernel's up to 8, float's NCHW route).
      {"stem_c3_29x29_k64_7x7_s2_p3_n3", nhwc(3, 3, 29, 29, 64, 7, 7, 2, 2, 3, 3), true},
      {"c16_17x15_k33_3x3_s2_p1", nhwc(3, 16, 17, 15, 33, 3, 3, 2, 2, 1, 1), true},
      {"c8_13x11_k20_3x5_s1x2_p1x2", nhwc(2, 8, 13, 11, 20, 3, 5, 1, 2, 1, 2), false},
      // The column fold (every type: C * sizeof(T) off 16 bytes) along w: one channel (a
      // pixel's 3 values in one vector), 7 channels at stride 3, dilation 2 and pad_w 2
      // (taps split across vectors), and Q = 1 with the taps left and right of the image.
      {"c1_9x11_k16_3x3_p1", nhwc(2, 1, 9, 11, 16, 3, 3, 1, 1, 1, 1), true},
      {"c7_15x17_k33_3x3_s1x3_d2_p1x2", nhwc(2, 7, 15, 17, 33, 3, 3, 1, 3, 1, 2, 2), false},
      {"c5_6x1_k9_3x3_p1_q1", nhwc(3, 5, 6, 1, 9, 3, 3, 1, 1, 1, 1), true},
      // ResNet-50 layers at N = 2.
      with_relu({"resnet_c64_28x28_k64_3x3_p1_n2_relu", nhwc(2, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1), true}, 0.0f),
      {"resnet_c256_14x14_k64_1x1_n2", nhwc(2, 256, 14, 14, 64, 1, 1, 1, 1, 0, 0), true},
      // The bias with the ReLU on the cooperative schedule (a 1x1 layer's few k-steps), K past a
      // 64-wide tile, a threshold that is not 0 (FusedBiasReluCases).
      with_relu({"bias_relu_c256_7x9_k72_1x1_n2", nhwc(2, 256, 7, 9, 72, 1, 1, 1, 1, 0, 0), true}, 0.25f),
      // Pixel boxes that span images and overhang the batch (BoxesSpanImages).
      with_relu({"boxes_c64_7x7_k130_3x3_p1_n3_relu", nhwc(3, 64, 7, 7, 130, 3, 3, 1, 1, 1, 1), false}, 0.0f),
      {"boxes_c16_5x6_k70_3x3_p1_n9", nhwc(9, 16, 5, 6, 70, 3, 3, 1, 1, 1, 1), true},
      // More tiles than two per CTA of a full H200 (196 pixel boxes x 2 channel tiles = 392 >
      // 2 x 132): each ping-pong warpgroup takes several tiles in turn, skipping the other's stages.
      {"many_tiles_c16_56x56_k130_3x3_p1_n8", nhwc(8, 16, 56, 56, 130, 3, 3, 1, 1, 1, 1), true},
      // One element off alignment: x, weight (the wgmma kernel reads their column
      // fold), y (every variant stores it).
      misaligned({"misaligned_x_c32_13x13_k65_n1", nhwc(1, 32, 13, 13, 65, 3, 3, 1, 1, 1, 1), true}, 1, 0, 0),
      misaligned({"misaligned_w_c32_13x13_k65_n1", nhwc(1, 32, 13, 13, 65, 3, 3, 1, 1, 1, 1), true}, 0, 1, 0),
      misaligned({"misaligned_y_c64_15x15_k63_n1", nhwc(1, 64, 15, 15, 63, 3, 3, 1, 1, 1, 1), true}, 0, 0, 1),
      misaligned(with_relu({"misaligned_y_c16_9x7_k130_relu", nhwc(1, 16, 9, 7, 130, 3, 3, 1, 1, 1, 1), false}, 0.5f),
                 0, 0, 1),
      // The bias and the ReLU (the wgmma kernel's bias staged in shared memory) with y one
      // element off alignment (element stores) and K off every tile: on the ping-pong schedule
      // (a 3x3 layer, K past a 128-wide tile), and on the cooperative one (1x1, K odd).
      misaligned(
          with_relu({"bias_relu_misaligned_y_c48_13x19_k130_n2", nhwc(2, 48, 13, 19, 130, 3, 3, 1, 1, 1, 1), true},
                    0.25f),
          0, 0, 1),
      misaligned(
          with_relu({"bias_relu_misaligned_y_c32_9x11_k67_1x1_n2", nhwc(2, 32, 9, 11, 67, 1, 1, 1, 1, 0, 0), true},
                    -0.5f),
          0, 0, 1),
      // 16-bit pointwise y through shared memory and TMA (params::staged_y: one row of pixels, K <= 64 a
      // multiple of 8, C <= 256): the bias and the ReLU, N H W off the 128-pixel tile, fewer pixels than one
      // warpgroup's 64, K = 8 and 40 (boxes clipped at K), 1 and 3 channel blocks, and 392 tiles (about 3 a
      // CTA: each warpgroup's two C buffers taken in turn).
      with_relu({"staged_y_c256_7x9_k64_1x1_n2_relu", nhwc(2, 256, 7, 9, 64, 1, 1, 1, 1, 0, 0), true}, 0.25f),
      {"staged_y_c64_5x7_k40_1x1_n1", nhwc(1, 64, 5, 7, 40, 1, 1, 1, 1, 0, 0), true},
      with_relu({"staged_y_c192_13x11_k8_1x1_n3_relu", nhwc(3, 192, 13, 11, 8, 1, 1, 1, 1, 0, 0), false}, -0.5f),
      {"staged_y_c64_56x56_k64_1x1_n16", nhwc(16, 64, 56, 56, 64, 1, 1, 1, 1, 0, 0), true},
      // Halo tiles (step 12): the ResNet C64 layer (8 x 8 x 2 tiles, one image a warpgroup),
      // the C128 one (8 x 16, BN = 128, two channel blocks), Q = 19 and P = 15 (padding 2
      // rows above and below).
      {"halo_c64_56x56_k64_3x3_p1_n2", nhwc(2, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1), true},
      with_relu({"halo_c128_28x28_k128_3x3_p1_n1_relu", nhwc(1, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1), true}, 0.0f),
      {"halo_c64_13x19_k72_3x3_p2x1_n3", nhwc(3, 64, 13, 19, 72, 3, 3, 1, 1, 2, 1), false},
      // Filter-column tiles (16-bit; filters halo tiles do not take): R = 6 (two row groups a
      // filter column), with y misaligned too, and 3 x 5 on two images a tile.
      {"columns_c32_11x13_k40_6x3_p2x1_n2", nhwc(2, 32, 11, 13, 40, 6, 3, 1, 1, 2, 1), true},
      misaligned({"columns_misaligned_y_c32_11x13_k40_6x3_p2x1_n2", nhwc(2, 32, 11, 13, 40, 6, 3, 1, 1, 2, 1), true}, 0,
                 0, 1),
      {"columns_c64_8x16_k48_3x5_p1x2_n4", nhwc(4, 64, 8, 16, 48, 3, 5, 1, 1, 1, 2), true},
  };
  return cases;
}

/// The layers of steps 10 and 11 (few_channels_mma, few_channels_persistent:
/// 16-bit, C <= 4, R x S <= 64), run on the 16-bit variants and each step forced
/// (Conv2dNhwcCases.FewChannelCases and PersistentCases check what they cover
/// against the plans; step 11 also on a grid of 5 CTAs, each then looping over
/// many bands: 22 or 23 of the stem's 112 at N = 2): the ResNet stem at N = 2 and an
/// odd-sized one at N = 1; C = 1, 2, 3, 4; 1x1, 3x3, 5x5, 7x7, 7x5 (dilation
/// 2) and 8x8 (64 taps, no padding tap); stride 1 and 2; padding 0 to 3; K =
/// 64, 32, 40, 16, 33 (odd: channels stored one by one) and 130 (three channel
/// blocks); bands that overhang the output (P = 149 in bands of 17 rows;
/// Q = 601 in three column tiles of 201) and warps past a band (7 x 31 pixels);
/// bias, none and the ReLU; x, weight and y one element off alignment; for
/// step 11 the cases listed with them below; and two layers both refuse (C = 8;
/// 81 taps).
const std::vector<nhwc_case>& few_channel_cases() {
  static const std::vector<nhwc_case> cases = {
      with_relu({"few_stem_c3_224x224_k64_7x7_s2_p3_n2_relu", nhwc(2, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3), true}, 0.0f),
      {"few_c3_97x61_k64_7x7_s2_p3_n1", nhwc(1, 3, 97, 61, 64, 7, 7, 2, 2, 3, 3), false},
      {"few_c1_97x61_k32_5x5_p2", nhwc(2, 1, 97, 61, 32, 5, 5, 1, 1, 2, 2), true},
      with_relu({"few_c2_45x67_k40_3x3_s2_p1_relu", nhwc(2, 2, 45, 67, 40, 3, 3, 2, 2, 1, 1), true}, 0.5f),
      {"few_c4_33x29_k64_3x3_p0_n3", nhwc(3, 4, 33, 29, 64, 3, 3, 1, 1, 0, 0), true},
      {"few_c3_41x37_k40_7x5_d2_p3x2", nhwc(2, 3, 41, 37, 40, 7, 5, 1, 1, 3, 2, 2), false},
      {"few_c3_300x31_k130_5x5_s2_p1_n1", nhwc(1, 3, 300, 31, 130, 5, 5, 2, 2, 1, 1), true},
      with_relu({"few_c4_19x23_k33_3x3_p1_relu", nhwc(2, 4, 19, 23, 33, 3, 3, 1, 1, 1, 1), true}, -0.5f),
      {"few_c3_9x601_k32_3x3_p1_n1", nhwc(1, 3, 9, 601, 32, 3, 3, 1, 1, 1, 1), false},
      {"few_c2_20x20_k16_8x8_s2_p3", nhwc(2, 2, 20, 20, 16, 8, 8, 2, 2, 3, 3), true},
      {"few_c3_17x15_k64_1x1", nhwc(2, 3, 17, 15, 64, 1, 1, 1, 1, 0, 0), true},
      misaligned({"few_misaligned_c3_31x29_k64_7x7_s2_p3", nhwc(2, 3, 31, 29, 64, 7, 7, 2, 2, 3, 3), true}, 1, 1, 1),
      // For step 11 (few_channels_persistent) above all: several bands an image (N = 5, 4, 3),
      // 16-byte stores of part of a channel block (K = 24, 8) and of a second block of one
      // chunk (K = 72), channel pairs (K = 20; y 4 bytes off 16), rows that start inside a
      // 16-byte chunk of x (C W odd), x 3 elements off 16 bytes (its first and last chunks).
      with_relu({"few_c3_37x41_k24_7x7_s2_p3_n5_relu", nhwc(5, 3, 37, 41, 24, 7, 7, 2, 2, 3, 3), true}, 0.25f),
      {"few_c1_61x45_k8_3x3_s2_p1_n4", nhwc(4, 1, 61, 45, 8, 3, 3, 2, 2, 1, 1), false},
      {"few_c2_23x29_k20_5x5_p2_n3", nhwc(3, 2, 23, 29, 20, 5, 5, 1, 1, 2, 2), true},
      {"few_c4_27x25_k72_3x3_s2_p1", nhwc(2, 4, 27, 25, 72, 3, 3, 2, 2, 1, 1), true},
      misaligned(with_relu({"few_misaligned_x3_y2_c3_29x33_k64_7x7_s2_p3_n3_relu",
                            nhwc(3, 3, 29, 33, 64, 7, 7, 2, 2, 3, 3), true},
                           0.0f),
                 3, 0, 2),
      {"few_refused_c8_9x9_k16_3x3_p1", nhwc(2, 8, 9, 9, 16, 3, 3, 1, 1, 1, 1), true},
      {"few_refused_c3_13x13_k16_9x9_p4", nhwc(1, 3, 13, 13, 16, 9, 9, 1, 1, 4, 4), false},
  };
  return cases;
}

/// Step 10's plan for the layer `p` in 16-bit elements.
kf::detail::conv2d_few_channels_plan few_channels_plan(const kf::conv2d_params& p) {
  return kf::detail::plan_conv2d_few_channels(
      p.batch, p.in_channels, kf::conv2d_output_height(p), kf::conv2d_output_width(p), p.out_channels, p.filter_height,
      p.filter_width, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, sizeof(__half));
}

/// Step 11's plan for the layer `p` in 16-bit elements, resident_ctas CTAs at once.
kf::detail::conv2d_few_channels_persistent_plan persistent_plan(const kf::conv2d_params& p, std::size_t resident_ctas) {
  return kf::detail::plan_conv2d_few_channels_persistent(
      p.batch, p.in_channels, p.in_width, kf::conv2d_output_height(p), kf::conv2d_output_width(p), p.out_channels,
      p.filter_height, p.filter_width, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, sizeof(__half),
      resident_ctas);
}

/// The grid the tests force step 11 onto besides the device's own: few CTAs, many bands each.
constexpr std::size_t persistent_small_grid = 5;

/// The inputs of one case in T, on the host and the device (each at its case's
/// offset), and the reference: built once per type and case.
template <class T>
struct problem {
  std::size_t y_n = 0, crs = 0;
  std::vector<double> expected, scale;  // conv + bias (before any ReLU), and its error scale
  std::vector<double> winograd;         // float on the layers best runs Winograd on: E (top of file), NPQK
  std::vector<T> x_host, w_host;        // NHWC, KRSC
  kf::device_buffer<T> x, w, bias;
  const nhwc_case* c = nullptr;
  [[nodiscard]] const T* x_at() const { return x.data() + c->x_offset; }
  [[nodiscard]] const T* w_at() const { return w.data() + c->w_offset; }
  [[nodiscard]] const T* bias_at() const { return c->bias ? bias.data() : nullptr; }
};

template <class T>
const problem<T>& problem_for(const nhwc_case& c) {
  static std::map<std::string, problem<T>> cache;
  problem<T>& pr = cache[c.name];
  if (pr.c != nullptr) return pr;
  const kf::conv2d_params& p = c.p;
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  pr.crs = p.in_channels * p.filter_height * p.filter_width;
  pr.y_n = p.batch * P * Q * p.out_channels;
  const std::uint64_t seed = 2700 + 10 * static_cast<std::uint64_t>(dtype_of<T>());
  const auto x = kf::test::random_vector<T>(p.batch * p.in_height * p.in_width * p.in_channels, seed + 1);
  const auto w = kf::test::random_vector<T>(p.out_channels * pr.crs, seed + 2);
  const auto bias = kf::test::random_vector<T>(p.out_channels, seed + 3);
  pr.expected.resize(pr.y_n);
  pr.scale.resize(pr.y_n);
  kf::reference::conv2d_forward_exact(p, x.data(), w.data(), c.bias ? bias.data() : nullptr, pr.expected.data(),
                                      pr.scale.data());
  if constexpr (std::is_same_v<T, float>) {
    if (kf::test::best_runs_winograd(p)) {
      pr.winograd = kf::test::winograd_scale_nhwc(p, x, w, c.bias ? bias.data() : nullptr);
    }
  }
  pr.x_host = x;
  pr.w_host = w;
  pr.x = to_device_at(x, c.x_offset);
  pr.w = to_device_at(w, c.w_offset);
  pr.bias = kf::to_device(bias);
  pr.c = &c;
  return pr;
}

}  // namespace
