// SPDX-License-Identifier: Apache-2.0
// conv2d_forward in the channels_last layout (params.layout = nhwc: x NHWC,
// weight KRSC, y NPQK) on the GPU, for float, __half and __nv_bfloat16, against
// the double reference (kernelforge/reference/conv.hpp), every output poisoned
// with NaN first (an element no kernel writes can never pass), plus one element
// past y that must stay NaN. Inputs: random_vector (magnitudes uniform in
// [1/8, 2], random signs, never zero, fixed seeds), rounded once to T.
//
// Variants: naive, best and implicit_gemm_wgmma for every type; float runs best
// twice, under math_mode::exact (the NCHW kernels through transposed copies:
// nhwc_launch.cuh) and tf32 (the wgmma kernel where it applies, else the same
// NCHW route, whose best takes mma.sync on sm_80+), and implicit_gemm_wgmma
// under tf32 (it refuses exact float math).
// implicit_gemm_wgmma by name:
//  - on a layer it does not compute (a stride above 8: none of the cases)
//    raises errc::unsupported naming the unmet condition, on every device, and
//    writes nothing;
//  - on a device other than sm_90, or from a library without sm_90a code
//    (conv2d_wgmma_available), raises errc::unsupported naming the variant and
//    writes nothing; the numeric check is then skipped with that reason;
//  - elsewhere runs and is checked like the others.
// Step 10 (few_channels_mma: 16-bit, C <= 4, R x S <= 64; few_channel_cases
// below) by force (conv2d_nhwc_few_channels_try_launch, its own variant row
// "few_channels"), on its cases only:
//  - on a layer its plan refuses (the few_refused_* cases) returns false and
//    writes nothing, on every device;
//  - on a device below sm_80 or a library without sm_80+ code returns false
//    and writes nothing; the numeric check is then skipped with that reason;
//  - elsewhere runs and is checked like the others (the tensor-core bound).
// best takes step 10 on the 16-bit layers its plan takes, on sm_80+.
// best takes the wgmma kernel wherever it applies (strides up to 8; misaligned
// x or weight and channel counts off 16 bytes through its column fold) and
// falls back elsewhere (float: the NCHW kernels; 16-bit: naive), so it must give
// the right result on every case. A y one element off alignment
// must work on every variant (the wgmma kernel's stores included).
// Float's best under exact math runs the NCHW kernels of `best` on transposed
// copies (Conv2dNhwcFloatBest checks it bit for bit against the NCHW call on
// the same data, and fp32_emulated's stem, which step 9 leaves to it): the
// implicit GEMM (fp32 FMA sums, the bound below), or Winograd F(2x2,3x3) on
// 3x3 stride-1 layers with C, K >= 64 (plan.hpp; 7 of the cases), held to its
// own worst case: every term of the algorithm (magnitudes summed: E, from
// winograd_bound.hpp, >= S) passes at most C + 12 roundings
// (conv2d_gpu_test.cpp counts them), so |y - ref| <= 2 (C + 12) u E. With E
// 5-16x S on these inputs (conv2d_gpu_test.cpp), that stays below half of one
// term's size S / (9 C) up to the cases' C = 136 (2.8e-4 S against 4.1e-4 S).
//
// Tolerance, per output, with S = sum |w| |x| + |bias| (the reference's error
// scale), n = C*R*S + 1 rounding steps (one per product-sum, one for the bias)
// and u = 2^-24 (fp32's unit roundoff):
//   fp32 sums (float under exact math: naive, the implicit GEMM):
//     |y - ref| <= 2 n u S.
//     Recursive summation in fp32 is within gamma_n S ~ n u S of the exact sum
//     whatever the order (Higham, Accuracy and Stability, 4.2); 2x covers
//     round-toward-zero accumulation (a tensor core's, up to 1 ulp an add).
//   TF32 (float under math_mode::tf32 where the wgmma kernel may run):
//     |y - ref| <= (2 * 2^-10 + 2^-20 + 2^-18 + 2 n u) S.
//     The kernel keeps the top 10 mantissa bits of each input (TF32), a
//     relative error below 2^-10 per input, so below 2 * 2^-10 + 2^-20 per
//     product; the products of TF32 values are exact in fp32 and summed as
//     above. 2^-18 S: the tensor core aligns the products of each k-group
//     (8 TF32, 16 f16/bf16) to the largest before adding, truncating each at
//     2^-23 of it: at most 16 * 2^-23 of the group's largest term.
//   __half and __nv_bfloat16 (fp32 accumulation, one rounding at the end):
//     |y - ref| <= u_T |ref| + (1 + u_T) (2 n u + tc) S + a_T,
//     u_T = 2^-11 (half) or 2^-8 (bf16), tc = 2^-18 where tensor cores may run
//     (as above) and 0 on naive, a_T = 2^-25 (half's underflow: half its
//     smallest subnormal) or 0 (bf16 has float's range). The inputs are T
//     exactly, their products exact in fp32 (11 x 11 or 8 x 8 significant bits),
//     the fp32 sum within (2 n u + tc) S, and the one rounding to T within
//     u_T of the fp32 sum.
// These bounds are proven worst cases, not random-sign estimates, so they
// cannot flake; they still catch wrong indexing: a wrong, lost or repeated
// tap, channel or filter moves an output by about |w| |x| ~ S / (n - 1), and
// every case keeps the fp32 bound below half that (2 n^2 u <= 1/2 for n <= 2048;
// Conv2dNhwcCases.BoundsCanFail checks it). Under TF32 the 2^-9 S term exceeds
// one term once C*R*S > 512 (seven cases): there a single wrong tap may pass, but
// not a wrong filter, pixel or image, which moves every term.
//
// The fused threshold ReLU (options.relu; y = v <= threshold ? 0 : v after the
// bias): an output whose reference lies within the tolerance of the threshold
// may be 0 or the value; every other one below it must be exactly 0, above it
// within the tolerance; at most half the outputs may lie in that band.
//
// Geometry (nhwc_cases below): odd and prime H and W; C = 1, 3, 5, 7, 12, 24,
// not multiples of 8 (C * sizeof(T) a multiple of 16 bytes, as the wgmma
// kernel needs to read x in place, for float at 12 and 24, for the 16-bit
// types at 24 only; the others go through its column fold), and 8, 16, 32,
// 64, 72, 136, 256; K = 1 (y a single column), 3, 63, 65, 130, 257 (around
// 64- and 128-wide tiles); stride 2 and asymmetric strides (1 x 2, 1 x 3);
// dilation 2 (in place and folded); pad_h != pad_w; Q = 1 (W = 1, padded);
// 1x1, 3x3, 3x5, 5x5, 7x7 (the ResNet stem: C = 3, stride 2, pad 3); N = 1,
// 2, 3, 9; bias and none; the ReLU at thresholds -0.5, 0, 0.25 and 0.5, with
// the bias and without, on both of the wgmma kernel's schedules (checked
// against the plan by Conv2dNhwcCases.FusedBiasReluCases: the sums start at
// the bias there, 07_implicit_gemm_wgmma.cuh); two ResNet-50 layers at N = 2;
// pixel boxes of the wgmma kernel's 128-row tiles
// that span images and overhang the batch (7x7 at N = 3, 5x6 at N = 9: checked
// against the plan by Conv2dNhwcCases.BoxesSpanImages); x, weight and y each
// one element off alignment; the 16-bit filter-column tiles of the wgmma kernel
// (wgmma_plan.hpp: 3x3 and 6x3 stride-1 layers) in both forms (8 x 8 pixels of
// two images, 8 x 16 of one) and both widths, at 56x56 C64 and 28x28 C128, Q
// not a multiple of 8, N up to 3, padding 2 at the top and bottom, the ReLU,
// partial channel blocks, the column fold and misaligned y (checked against
// the plan by Conv2dNhwcCases.FilterColumnCases); step 10's cases (16-bit
// only; their list says what they cover, Conv2dNhwcCases.FewChannelCases
// checks it). The reference's cost is N P Q K C R S multiply-adds in double per
// case and type, cached across the variants: 1.5e9 for the three types and
// 0.6e9 for step 10's cases in the two 16-bit ones (the stem at N = 2: 0.24e9 a
// type), about 10 s on 2 cores at -O2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conv2d_bounds.hpp"
#include "conv2d_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/epilogue.cuh"
#include "kernelforge/kernels/conv2d/few_channels.hpp"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"
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
      // Filter-column tiles (16-bit): the ResNet C64 layer (8 x 8 x 2 tiles, one image a
      // warpgroup), the C128 one (8 x 16, BN = 128, three stages), Q = 19 and P = 15
      // (padding 2 rows above and below), and R = 6 (two row groups a filter column).
      {"columns_c64_56x56_k64_3x3_p1_n2", nhwc(2, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1), true},
      with_relu({"columns_c128_28x28_k128_3x3_p1_n1_relu", nhwc(1, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1), true}, 0.0f),
      {"columns_c64_13x19_k72_3x3_p2x1_n3", nhwc(3, 64, 13, 19, 72, 3, 3, 1, 1, 2, 1), false},
      {"columns_c32_11x13_k40_6x3_p2x1_n2", nhwc(2, 32, 11, 13, 40, 6, 3, 1, 1, 2, 1), true},
  };
  return cases;
}

/// The layers of step 10 (few_channels_mma: 16-bit, C <= 4, R x S <= 64), run
/// on the 16-bit variants and step 10 forced (Conv2dNhwcCases.FewChannelCases
/// checks what they cover against its plan): the ResNet stem at N = 2 and an
/// odd-sized one at N = 1; C = 1, 2, 3, 4; 1x1, 3x3, 5x5, 7x7, 7x5 (dilation
/// 2) and 8x8 (64 taps, no padding tap); stride 1 and 2; padding 0 to 3; K =
/// 64, 32, 40, 16, 33 (odd: channels stored one by one) and 130 (three channel
/// blocks); bands that overhang the output (P = 149 in bands of 17 rows;
/// Q = 601 in three column tiles of 201) and warps past a band (7 x 31 pixels);
/// bias, none and the ReLU; x, weight and y one element off alignment; and two
/// layers it refuses (C = 8; 81 taps).
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
      {"few_refused_c8_9x9_k16_3x3_p1", nhwc(2, 8, 9, 9, 16, 3, 3, 1, 1, 1, 1), true},
      {"few_refused_c3_13x13_k16_9x9_p4", nhwc(1, 3, 13, 13, 16, 9, 9, 1, 1, 4, 4), false},
  };
  return cases;
}

struct nhwc_variant {
  const char* name;
  kf::conv2d_variant variant;
  kf::math_mode math;
  /// Step 10 forced: conv2d_nhwc_few_channels_try_launch on the validated call
  /// (16-bit types and few_channel_cases() only).
  bool few_channels = false;
};

const nhwc_variant float_variants[] = {
    {"naive", kf::conv2d_variant::naive, kf::math_mode::exact},
    {"best_exact", kf::conv2d_variant::best, kf::math_mode::exact},
    {"best_tf32", kf::conv2d_variant::best, kf::math_mode::tf32},
    {"implicit_gemm_wgmma", kf::conv2d_variant::implicit_gemm_wgmma, kf::math_mode::tf32},
};
// 16-bit inputs are what the tensor cores multiply: the math mode does not matter.
const nhwc_variant half_variants[] = {
    {"naive", kf::conv2d_variant::naive, kf::math_mode::exact},
    {"best", kf::conv2d_variant::best, kf::math_mode::exact},
    {"implicit_gemm_wgmma", kf::conv2d_variant::implicit_gemm_wgmma, kf::math_mode::exact},
};
const nhwc_variant few_channels_forced = {"few_channels", kf::conv2d_variant::best, kf::math_mode::exact, true};

/// Whether the wgmma kernel is in this library and this device runs it.
bool wgmma_available() { return kf::detail::conv2d_wgmma_available(kf::get_device_info().device); }

/// Whether step 10 is in this library and this device runs it (sm_80+).
bool few_channels_available() { return kf::detail::conv2d_few_channels_available(kf::get_device_info().device); }

/// Step 10's plan for the layer `p` in 16-bit elements.
kf::detail::conv2d_few_channels_plan few_channels_plan(const kf::conv2d_params& p) {
  return kf::detail::plan_conv2d_few_channels(
      p.batch, p.in_channels, kf::conv2d_output_height(p), kf::conv2d_output_width(p), p.out_channels, p.filter_height,
      p.filter_width, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, sizeof(__half));
}

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

/// |y - ref| <= rel_ref |ref| + rel_scale S + abs (top of file); S from
/// `scale` (Winograd's E) where set, else the problem's sum |w| |x| + |bias|.
struct bound {
  double rel_ref = 0, rel_scale = 0, abs = 0;
  const std::vector<double>* scale = nullptr;
};

/// Whether tensor cores may compute the call (then the TF32 and alignment
/// terms apply): the wgmma kernel by name where it runs, or best where the
/// layer, the pointers, the math mode and the device allow it.
template <class T>
bool tensor_cores_may_run(const nhwc_variant& v, const problem<T>& pr) {
  if (v.variant == kf::conv2d_variant::implicit_gemm_wgmma || v.few_channels) return true;
  if (v.variant != kf::conv2d_variant::best) return false;
  if (std::is_same_v<T, float>) return v.math == kf::math_mode::tf32;  // wgmma, else the NCHW route's mma.sync
  const kf::conv2d_params& p = pr.c->p;
  if (!std::is_same_v<T, float> && kf::detail::conv2d_best_takes_few_channels(few_channels_plan(p)) &&
      few_channels_available()) {
    return true;
  }
  return kf::detail::conv2d_nhwc_wgmma_unsupported_reason(p.stride_h, p.stride_w) == nullptr && wgmma_available();
}

template <class T>
bound bound_for(const nhwc_variant& v, const problem<T>& pr) {
  if (std::is_same_v<T, float> && v.variant == kf::conv2d_variant::best && v.math == kf::math_mode::exact &&
      !pr.winograd.empty()) {  // Winograd: 2 (C + 12) u E (top of file)
    return {0, 2 * (static_cast<double>(pr.c->p.in_channels) + 12) * fp32_u, 0, &pr.winograd};
  }
  // n = C*R*S products and the bias.
  const kf::test::tolerance t = kf::test::conv2d::sum_tolerance<T>(pr.crs + 1, tensor_cores_may_run(v, pr));
  return {t.rel_ref, t.rel, t.abs};
}

/// Every output of `got` (y starting at `offset`) against the reference, with
/// the case's ReLU (top of file).
template <class T>
::testing::AssertionResult check(const std::vector<T>& got, std::size_t offset, const problem<T>& pr, bound b) {
  const nhwc_case& c = *pr.c;
  const std::vector<double>& scale = b.scale != nullptr ? *b.scale : pr.scale;
  std::size_t bad = 0, near_threshold = 0;
  std::ostringstream report;
  for (std::size_t i = 0; i < pr.y_n; ++i) {
    const double g = kf::reference::to_double(got[offset + i]);
    const double pre = pr.expected[i];
    const double tol = b.rel_ref * std::fabs(pre) + b.rel_scale * scale[i] + b.abs;
    bool ok;
    if (std::isnan(g)) {
      ok = false;  // the reference is never NaN: a NaN is an unwritten or broken output
    } else if (!c.relu) {
      ok = std::fabs(g - pre) <= tol;
    } else if (std::fabs(pre - c.threshold) <= tol) {
      ok = g == 0 || std::fabs(g - pre) <= tol;  // either side of the jump
      ++near_threshold;
    } else if (pre <= c.threshold) {
      ok = g == 0;  // the ReLU stores an exact 0
    } else {
      ok = std::fabs(g - pre) <= tol;
    }
    if (!ok && bad++ < 8) {
      report << "\n  [" << i << "] got " << g << ", expected " << (c.relu && pre <= c.threshold ? 0.0 : pre)
             << " (tolerance " << tol << ")";
    }
  }
  if (bad == 0 && near_threshold * 2 <= pr.y_n) return ::testing::AssertionSuccess();
  if (bad == 0) {
    return ::testing::AssertionFailure() << near_threshold << " of " << pr.y_n
                                         << " outputs lie within the tolerance of the threshold: the test is too loose";
  }
  return ::testing::AssertionFailure() << bad << " of " << pr.y_n << " outputs differ (|ref| x " << b.rel_ref
                                       << " + scale x " << b.rel_scale << " + " << b.abs << "):" << report.str();
}

/// Elements of `y` that are not NaN (written by someone).
template <class T>
std::size_t written(const kf::device_buffer<T>& y) {
  std::size_t n = 0;
  for (const T& v : kf::to_host(y)) n += std::isnan(kf::reference::to_double(v)) ? 0 : 1;
  return n;
}

/// What forcing step 10 on a case did.
enum class few_channels_outcome { launched, refused, unavailable };

/// Step 10 forced on case `c` (its y: d_y at the case's offset). Where its plan
/// refuses the layer the launcher must return false on every device, and where
/// it returns false otherwise the device or the build must lack the kernel;
/// either way nothing may be written.
template <class T>
few_channels_outcome run_few_channels(const nhwc_case& c, const problem<T>& pr, kf::device_buffer<T>& d_y) {
  const kf::conv2d_params& p = c.p;
  const kf::detail::conv2d_args<T> a =
      kf::detail::make_conv2d_args<T>(p, kf::conv2d_output_height(p), kf::conv2d_output_width(p), pr.x_at(), pr.w_at(),
                                      pr.bias_at(), d_y.data() + c.y_offset);
  const int device = kf::get_device_info().device;
  const bool launched =
      c.relu ? kf::detail::conv2d_nhwc_few_channels_try_launch(
                   device, a, kf::epilogue::bias_relu_threshold<float>{nullptr, true, c.threshold}, nullptr)
             : kf::detail::conv2d_nhwc_few_channels_try_launch(device, a, kf::epilogue::identity{}, nullptr);
  const char* refused = few_channels_plan(p).unsupported;
  if (launched && refused == nullptr) return few_channels_outcome::launched;
  EXPECT_FALSE(launched) << "launched a layer its plan refuses: " << refused;
  EXPECT_EQ(written(d_y), 0u) << "y was written";
  if (refused != nullptr) return few_channels_outcome::refused;
  EXPECT_FALSE(few_channels_available()) << "the launcher refused a layer its plan takes on a device that runs it";
  return few_channels_outcome::unavailable;
}

template <class T>
void run_case(const nhwc_variant& v, const nhwc_case& c) {
  const problem<T>& pr = problem_for<T>(c);
  const kf::conv2d_params& p = c.p;
  kf::device_buffer<T> d_y(c.y_offset + pr.y_n + 1);  // one element past y: must stay NaN
  kf::test::poison(d_y.data(), d_y.size_bytes());
  kf::conv2d_options options;
  options.variant = v.variant;
  options.math = v.math;
  options.relu = c.relu;
  options.relu_threshold = c.threshold;
  const auto call = [&] {
    kf::conv2d_forward<T>(p, pr.x_at(), pr.w_at(), pr.bias_at(), d_y.data() + c.y_offset, options);
  };
  if constexpr (!std::is_same_v<T, float>) {
    const few_channels_outcome forced = v.few_channels ? run_few_channels(c, pr, d_y) : few_channels_outcome::launched;
    if (forced == few_channels_outcome::refused) return;
    if (forced == few_channels_outcome::unavailable) {
      const kf::device_info dev = kf::get_device_info();
      GTEST_SKIP() << "few_channels_mma needs compute capability 8.0 and the library's sm_80+ code (this device: sm_"
                   << dev.cc_major << dev.cc_minor << "); checked that it refuses and writes nothing";
    }
  }
  if (v.variant == kf::conv2d_variant::implicit_gemm_wgmma) {
    const char* reason = kf::detail::conv2d_nhwc_wgmma_unsupported_reason(p.stride_h, p.stride_w);
    if (reason != nullptr) {  // the layer: refused on every device
      kf::test::expect_error(kf::errc::unsupported, reason, call);
      EXPECT_EQ(written(d_y), 0u) << "y was written";
      return;
    }
    if (!wgmma_available()) {
      kf::test::expect_error(kf::errc::unsupported, "implicit_gemm_wgmma", call);
      EXPECT_EQ(written(d_y), 0u) << "y was written";
      const kf::device_info dev = kf::get_device_info();
      GTEST_SKIP() << "implicit_gemm_wgmma needs compute capability 9.0 and a library built with 90 in "
                      "CMAKE_CUDA_ARCHITECTURES (this device: sm_"
                   << dev.cc_major << dev.cc_minor << "); checked that it refuses with errc::unsupported";
    }
  }
  if (!v.few_channels) call();
  const auto got = kf::to_host(d_y);
  if (c.y_offset) {
    ASSERT_TRUE(std::isnan(kf::reference::to_double(got[0]))) << "the element before y was written";
  }
  ASSERT_TRUE(std::isnan(kf::reference::to_double(got[c.y_offset + pr.y_n]))) << "the element after y was written";
  EXPECT_TRUE(check(got, c.y_offset, pr, bound_for<T>(v, pr)));
}

struct nhwc_param {
  dtype type;
  nhwc_variant variant;
  const nhwc_case* c;
};

void PrintTo(const nhwc_param& p, std::ostream* os) {
  *os << dtype_name(p.type) << "/" << p.variant.name << "/" << p.c->name;
}

/// Every type x its variants x every case: each case is a geometry or pointer
/// condition the variants' dispatch or indexing branches on. The 16-bit types
/// also run step 10's cases on their variants and on step 10 forced.
std::vector<nhwc_param> nhwc_params() {
  std::vector<nhwc_param> params;
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
    const nhwc_variant* begin = t == dtype::f32 ? std::begin(float_variants) : std::begin(half_variants);
    const nhwc_variant* end = t == dtype::f32 ? std::end(float_variants) : std::end(half_variants);
    for (const nhwc_variant* v = begin; v != end; ++v) {
      for (const nhwc_case& c : nhwc_cases()) params.push_back({t, *v, &c});
    }
    if (t == dtype::f32) continue;
    for (const nhwc_case& c : few_channel_cases()) {
      for (const nhwc_variant* v = begin; v != end; ++v) params.push_back({t, *v, &c});
      params.push_back({t, few_channels_forced, &c});
    }
  }
  return params;
}

class Conv2dNhwc : public ::testing::TestWithParam<nhwc_param> {};

TEST_P(Conv2dNhwc, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  const nhwc_param& param = GetParam();
  const nhwc_case& c = *param.c;
  switch (param.type) {
    case dtype::f32: return run_case<float>(param.variant, c);
    case dtype::f16: return run_case<__half>(param.variant, c);
    case dtype::bf16: return run_case<__nv_bfloat16>(param.variant, c);
  }
}

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dNhwc, ::testing::ValuesIn(nhwc_params()),
                         [](const ::testing::TestParamInfo<nhwc_param>& info) {
                           return std::string(dtype_name(info.param.type)) + "_" + info.param.variant.name + "_" +
                                  info.param.c->name;
                         });

// N = 0 and K = 0 are no-ops on every variant and type (before any device
// check: implicit_gemm_wgmma by name too): nothing thrown, nothing written.
template <class T>
void expect_empty_calls_are_no_ops(const nhwc_variant* begin, const nhwc_variant* end) {
  const kf::conv2d_params full = nhwc(2, 16, 9, 9, 8, 3, 3, 1, 1, 1, 1);
  kf::device_buffer<T> x(2 * 9 * 9 * 16), w(8 * 9 * 16), y(2 * 9 * 9 * 8);
  kf::test::poison(y.data(), y.size_bytes());
  for (const nhwc_variant* v = begin; v != end; ++v) {
    for (bool empty_batch : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(dtype_of<T>())) + " " + v->name + (empty_batch ? ", N = 0" : ", K = 0"));
      kf::conv2d_params p = full;
      (empty_batch ? p.batch : p.out_channels) = 0;
      kf::conv2d_options options;
      options.variant = v->variant;
      options.math = v->math;
      EXPECT_NO_THROW(kf::conv2d_forward<T>(p, x.data(), w.data(), nullptr, y.data(), options));
    }
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(written(y), 0u) << "an empty call wrote y";
}

TEST(Conv2dNhwcEmpty, BatchOrOutputChannelsZeroIsANoOp) {
  KF_SKIP_WITHOUT_GPU();
  expect_empty_calls_are_no_ops<float>(std::begin(float_variants), std::end(float_variants));
  expect_empty_calls_are_no_ops<__half>(std::begin(half_variants), std::end(half_variants));
  expect_empty_calls_are_no_ops<__nv_bfloat16>(std::begin(half_variants), std::end(half_variants));
}

// ---- float's best runs the NCHW kernels (nhwc_launch.cuh) -----------------------------

/// Float's best in NHWC under `math` against the same call in NCHW on the same
/// data (x, the filter and y transposed on the host): bit for bit, since the
/// NHWC call runs the very NCHW kernels on transposed copies (the same plan:
/// it depends on the extents and the device only). The naive kernel, which
/// the NHWC call ran before, sums in another order and differs in the last
/// bits on most outputs of these cases.
void expect_nhwc_equals_nchw(const nhwc_case& c, kf::math_mode math) {
  const problem<float>& pr = problem_for<float>(c);
  const kf::conv2d_params& p = c.p;
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  const std::size_t hw = p.in_height * p.in_width, rs = p.filter_height * p.filter_width;
  kf::conv2d_options options;
  options.math = math;
  options.relu = c.relu;
  options.relu_threshold = c.threshold;
  kf::device_buffer<float> y(c.y_offset + pr.y_n + 1);
  kf::test::poison(y.data(), y.size_bytes());
  kf::conv2d_forward<float>(p, pr.x_at(), pr.w_at(), pr.bias_at(), y.data() + c.y_offset, options);
  kf::conv2d_params nchw = p;
  nchw.layout = kf::conv2d_layout::nchw;
  const kf::device_buffer<float> x_nchw =
      kf::to_device(kf::test::transpose_inner(pr.x_host, p.batch, hw, p.in_channels));
  const kf::device_buffer<float> w_kcrs =
      kf::to_device(kf::test::transpose_inner(pr.w_host, p.out_channels, rs, p.in_channels));
  kf::device_buffer<float> y_nchw(pr.y_n);
  kf::test::poison(y_nchw.data(), y_nchw.size_bytes());
  kf::conv2d_forward<float>(nchw, x_nchw.data(), w_kcrs.data(), pr.bias_at(), y_nchw.data(), options);
  const std::vector<float> got = kf::to_host(y);
  const std::vector<float> want = kf::test::transpose_inner(kf::to_host(y_nchw), p.batch, p.out_channels, P * Q);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < pr.y_n; ++i) {
    if (std::memcmp(&got[c.y_offset + i], &want[i], sizeof(float)) != 0 && differ++ < 8) {
      ADD_FAILURE() << "y[" << i << "] = " << got[c.y_offset + i] << " in NHWC, " << want[i] << " in NCHW";
    }
  }
  EXPECT_EQ(differ, 0u) << "outputs differ from the NCHW call's";
  EXPECT_TRUE(std::isnan(got[c.y_offset + pr.y_n])) << "the element after y was written";
}

/// The cases of each condition the route branches on: all three copies (the
/// stem, C = 3, stride 2; Winograd with the ReLU; a split over C*R*S), the
/// filter used where it lies (1x1), x and the filter where they lie (C = 1), y
/// written where it lies (K = 1), a misaligned y the last transpose writes.
const char* const nchw_route_cases[] = {
    "stem_c3_29x29_k64_7x7_s2_p3_n3",
    "resnet_c64_28x28_k64_3x3_p1_n2_relu",
    "c72_9x9_k130_3x3_p1_n1",
    "c24_11x13_k257_1x1_n3",
    "c1_9x11_k16_3x3_p1",
    "c8_17x19_k1_3x3_p1",
    "misaligned_y_c16_9x7_k130_relu",
    "c16_23x21_k3_3x3_d2_p2",
};

const nhwc_case& case_named(const std::string& name) {
  for (const nhwc_case& c : nhwc_cases()) {
    if (name == c.name) return c;
  }
  ADD_FAILURE() << "no case " << name;
  return nhwc_cases().front();
}

TEST(Conv2dNhwcFloatBest, ExactRunsTheNchwKernels) {
  KF_SKIP_WITHOUT_GPU();
  for (const char* name : nchw_route_cases) {
    SCOPED_TRACE(name);
    expect_nhwc_equals_nchw(case_named(name), kf::math_mode::exact);
  }
}

// fp32_emulated hands the layers step 9 leaves (the stem: C < 32) to the exact
// kernels: in NHWC now the NCHW ones through the copies, as in NCHW.
TEST(Conv2dNhwcFloatBest, Fp32EmulatedStemRunsTheNchwKernels) {
  KF_SKIP_WITHOUT_GPU();
  if (!wgmma_available()) GTEST_SKIP() << "fp32_emulated runs on compute capability 9.0 with sm_90a code only";
  const nhwc_case& stem = case_named("stem_c3_29x29_k64_7x7_s2_p3_n3");
  ASSERT_NE(kf::detail::conv2d_fp32_emulated_unsupported_reason(
                stem.p.in_channels, stem.p.filter_height * stem.p.filter_width, stem.p.stride_h, stem.p.stride_w),
            nullptr)
      << "step 9 takes the stem: this test no longer tests the fallback";
  expect_nhwc_equals_nchw(stem, kf::math_mode::fp32_emulated);
}

// ---- the cases cover what they claim (no GPU needed) ----------------------------------

/// The boxes_* cases: the wgmma kernel's pixel box (wgmma_plan.hpp's
/// choose_conv2d_wgmma_tile) spans more than one image, and the last box
/// overhangs the batch (rows past N*P*Q that the kernel must neither read as
/// real pixels nor store).
TEST(Conv2dNhwcCases, BoxesSpanImages) {
  int boxes = 0;
  for (const nhwc_case& c : nhwc_cases()) {
    if (std::string(c.name).rfind("boxes_", 0) != 0) continue;
    const std::size_t P = kf::conv2d_output_height(c.p), Q = kf::conv2d_output_width(c.p);
    const kf::detail::conv2d_wgmma_tile t = kf::detail::choose_conv2d_wgmma_tile(c.p.batch, P, Q, c.p.out_channels);
    EXPECT_GT(t.nt, 1u) << c.name << ": the box holds one image";
    EXPECT_GT(t.nt * t.tiles_n, c.p.batch) << c.name << ": the last box does not overhang the batch";
    ++boxes;
  }
  EXPECT_EQ(boxes, 2);
}

/// The plan the wgmma kernel runs case `c` with in 16-bit (conv2d_nhwc_wgmma_try_launch's:
/// the layer where TMA reads it in place, else its column fold).
kf::detail::conv2d_wgmma_tile half_plan_of(const nhwc_case& c) {
  alignas(16) static const __half base[64] = {};
  const __half* x = base + c.x_offset;
  const __half* w = base + c.w_offset;
  const std::size_t P = kf::conv2d_output_height(c.p), Q = kf::conv2d_output_width(c.p);
  kf::detail::conv2d_args<__half> a = kf::detail::make_conv2d_args<__half>(c.p, P, Q, x, w, nullptr, nullptr);
  if (!kf::detail::conv2d_nhwc_wgmma_reads_in_place(c.p.in_channels, sizeof(__half), x, w)) {
    const std::size_t folded =
        kf::detail::conv2d_nhwc_folded_channels(c.p.filter_width, c.p.in_channels, sizeof(__half));
    a = kf::detail::conv2d_nhwc_column_fold_of(a, static_cast<int>(folded), x);
  }
  return kf::detail::plan_conv2d_nhwc_wgmma_of(a);
}

/// The layer the wgmma kernel computes for case `c` in 16-bit: read in place,
/// or its column fold (the filter's S columns folded into channels).
struct half_layer {
  bool in_place;
  std::size_t channels, taps, c_chunks;  ///< c_chunks: 64-channel blocks
  /// Its schedule (plan_nhwc_launch's: by taps x channel blocks).
  [[nodiscard]] bool pingpong() const { return kf::detail::conv2d_wgmma_pingpong(taps * c_chunks); }
};

half_layer half_layer_of(const nhwc_case& c) {
  const kf::conv2d_params& p = c.p;
  half_layer l{};
  l.in_place = c.x_offset == 0 && c.w_offset == 0 && p.in_channels * sizeof(__half) % 16 == 0;
  l.channels = l.in_place ? p.in_channels : kf::detail::conv2d_nhwc_folded_channels(p.filter_width, p.in_channels, 2);
  l.taps = p.filter_height * (l.in_place ? p.filter_width : 1);
  l.c_chunks = (l.channels + 63) / 64;
  return l;
}

/// The 16-bit filter-column tiles (07_implicit_gemm_wgmma.cuh, Rows = 3): the
/// ResNet C64 3x3 layer takes them (at N = 2 here and at bench_conv's N = 32:
/// this fails if the launch's plan falls back to one-tap k-steps), and the
/// cases that take them cover both tile forms and widths, both schedules,
/// Q past a multiple of 8, several images, R = 6, the ReLU, bias and none,
/// several and partial channel blocks, the column fold and misaligned y.
TEST(Conv2dNhwcCases, FilterColumnCases) {
  int columns = 0, two_images = 0, one_image = 0, wide = 0, q_overhang = 0, batch = 0, two_groups = 0, relu = 0;
  int bias = 0, no_bias = 0, chunks = 0, partial_chunk = 0, pingpong = 0, cooperative = 0, folded = 0, y_off = 0;
  for (const nhwc_case& c : nhwc_cases()) {
    const kf::conv2d_params& p = c.p;
    if (kf::detail::conv2d_nhwc_wgmma_unsupported_reason(p.stride_h, p.stride_w) != nullptr) continue;
    const kf::detail::conv2d_wgmma_tile t = half_plan_of(c);
    if (std::string(c.name) == "columns_c64_56x56_k64_3x3_p1_n2") {
      EXPECT_EQ(t.filter_rows, 3u) << c.name << " must take the filter-column tiles";
      EXPECT_EQ(t.nt, 2u) << c.name;
    }
    if (t.filter_rows == 1) continue;
    ++columns;
    const half_layer l = half_layer_of(c);
    two_images += t.nt == 2 ? 1 : 0;
    one_image += t.nt == 1 ? 1 : 0;
    wide += t.bn == 128 ? 1 : 0;
    q_overhang += kf::conv2d_output_width(p) % 8 != 0 ? 1 : 0;
    batch += p.batch > 1 ? 1 : 0;
    two_groups += p.filter_height == 6 ? 1 : 0;
    relu += c.relu ? 1 : 0;
    bias += c.bias ? 1 : 0;
    no_bias += c.bias ? 0 : 1;
    chunks += l.c_chunks > 1 ? 1 : 0;
    partial_chunk += l.channels % 64 != 0 ? 1 : 0;
    pingpong += l.pingpong() ? 1 : 0;
    cooperative += l.pingpong() ? 0 : 1;
    folded += l.in_place ? 0 : 1;
    y_off += c.y_offset > 0 ? 1 : 0;
  }
  // The bench layer (bench_conv's conv2d_nhwc rows): N = 32.
  kf::conv2d_params bench = nhwc(32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1);
  EXPECT_EQ(half_plan_of({"bench_c64_56x56_n32", bench, true}).filter_rows, 3u);
  EXPECT_GE(columns, 8);
  EXPECT_GE(two_images, 1);
  EXPECT_GE(one_image, 1);
  EXPECT_GE(wide, 1);
  EXPECT_GE(q_overhang, 1);
  EXPECT_GE(batch, 1);
  EXPECT_GE(two_groups, 1);
  EXPECT_GE(relu, 1);
  EXPECT_GE(bias, 1);
  EXPECT_GE(no_bias, 1);
  EXPECT_GE(chunks, 1);
  EXPECT_GE(partial_chunk, 1);
  EXPECT_GE(pingpong, 1);
  EXPECT_GE(cooperative, 1);
  EXPECT_GE(folded, 1);
  EXPECT_GE(y_off, 1);
}

/// Float's best under exact math runs Winograd on 7 of the cases (through the
/// NCHW route), which the Winograd bound then covers (top of file).
TEST(Conv2dNhwcCases, WinogradCases) {
  int winograd = 0, relu = 0;
  for (const nhwc_case& c : nhwc_cases()) {
    if (!kf::test::best_runs_winograd(c.p)) continue;
    ++winograd;
    relu += c.relu ? 1 : 0;
  }
  EXPECT_EQ(winograd, 7);
  EXPECT_GE(relu, 2);
}

/// The fused bias + ReLU (07_implicit_gemm_wgmma.cuh's epilogue) runs in the cases on both
/// schedules -- ping-pong (a consumer warpgroup's two m64 blocks share the
/// tile's columns) and cooperative -- with K past a tile's width and a
/// threshold that is not 0, and the ReLU runs without a bias too.
TEST(Conv2dNhwcCases, FusedBiasReluCases) {
  int pingpong = 0, cooperative = 0, k_partial = 0, threshold = 0, relu_only = 0;
  for (const nhwc_case& c : nhwc_cases()) {
    const kf::conv2d_params& p = c.p;
    if (!c.relu || kf::detail::conv2d_nhwc_wgmma_unsupported_reason(p.stride_h, p.stride_w) != nullptr) continue;
    relu_only += c.bias ? 0 : 1;
    if (!c.bias) continue;
    const bool pp = half_layer_of(c).pingpong();
    pingpong += pp ? 1 : 0;
    cooperative += pp ? 0 : 1;
    k_partial += p.out_channels % half_plan_of(c).bn != 0 ? 1 : 0;
    threshold += c.threshold != 0.0f ? 1 : 0;
  }
  EXPECT_GE(pingpong, 1);
  EXPECT_GE(cooperative, 1);
  EXPECT_GE(k_partial, 1);
  EXPECT_GE(threshold, 1);
  EXPECT_GE(relu_only, 1);
}

/// Every case's fp32 bound stays below half of one term's typical size
/// |w| |x| ~ S / (C*R*S), so a wrong tap, channel or filter fails (top of file).
TEST(Conv2dNhwcCases, BoundsCanFail) {
  for (const auto* cases : {&nhwc_cases(), &few_channel_cases()}) {
    for (const nhwc_case& c : *cases) {
      const double crs = static_cast<double>(c.p.in_channels * c.p.filter_height * c.p.filter_width);
      EXPECT_LE(2 * (crs + 1) * fp32_u, 0.5 / crs) << c.name;
    }
  }
}

/// few_channel_cases() cover what their comment claims, against step 10's own
/// plan (plan.hpp): the few_refused_* cases are refused and no other; the stem
/// runs 7 full warps on bands of 2 x 112 pixels (at bench_conv's N = 16 too);
/// bands overhang the output in rows and columns; warps run past a band;
/// several channel blocks; odd K and K off 64; padding taps and none; every C
/// up to 4, both strides, paddings 0 to 3, dilation 2, N = 1, the ReLU, bias
/// and none, misaligned x and y.
TEST(Conv2dNhwcCases, FewChannelCases) {
  using plan_t = kf::detail::conv2d_few_channels_plan;
  int row_overhang = 0, column_tiles = 0, warp_overhang = 0, blocks = 0, odd_k = 0, partial_block = 0;
  int padding_taps = 0, whole_steps = 0, stride1 = 0, stride2 = 0, dilated = 0, single = 0, relu = 0, bias = 0;
  int no_bias = 0, x_off = 0, y_off = 0;
  int channels[plan_t::channels + 1] = {}, pads[4] = {};
  for (const nhwc_case& c : few_channel_cases()) {
    const kf::conv2d_params& p = c.p;
    const plan_t l = few_channels_plan(p);
    const bool refused = std::string(c.name).rfind("few_refused_", 0) == 0;
    EXPECT_EQ(l.unsupported != nullptr, refused) << c.name << ": " << (l.unsupported ? l.unsupported : "taken");
    if (refused) continue;
    const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
    row_overhang += l.tile_p * l.tiles_p > P ? 1 : 0;
    column_tiles += l.tiles_q > 1 && l.tile_q * l.tiles_q > Q ? 1 : 0;
    warp_overhang += l.warps * plan_t::warp_pixels > l.tile_p * l.tile_q ? 1 : 0;
    blocks += l.k_blocks > 1 ? 1 : 0;
    odd_k += p.out_channels % 2 != 0 ? 1 : 0;
    partial_block += p.out_channels % plan_t::block_n != 0 ? 1 : 0;
    const std::size_t taps = p.filter_height * p.filter_width;
    padding_taps += taps % plan_t::taps_per_step != 0 ? 1 : 0;
    whole_steps += taps % plan_t::taps_per_step == 0 && taps > 1 ? 1 : 0;
    stride1 += p.stride_h == 1 ? 1 : 0;
    stride2 += p.stride_h == 2 ? 1 : 0;
    dilated += p.dilation_h == 2 ? 1 : 0;
    single += p.batch == 1 ? 1 : 0;
    relu += c.relu ? 1 : 0;
    bias += c.bias ? 1 : 0;
    no_bias += c.bias ? 0 : 1;
    x_off += c.x_offset > 0 ? 1 : 0;
    y_off += c.y_offset > 0 ? 1 : 0;
    ++channels[p.in_channels];
    if (p.pad_h < 4) ++pads[p.pad_h];
  }
  for (std::size_t n : {std::size_t{2}, std::size_t{16}}) {
    const plan_t stem = few_channels_plan(nhwc(n, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3));
    EXPECT_EQ(stem.unsupported, nullptr);
    EXPECT_EQ(stem.tile_p * 100 + stem.tile_q, 2u * 100 + 112u);
    EXPECT_EQ(stem.warps, 7u);
    EXPECT_TRUE(kf::detail::conv2d_best_takes_few_channels(stem));
  }
  const std::pair<const char*, int> covered[] = {{"row overhang", row_overhang},
                                                 {"column tiles", column_tiles},
                                                 {"warp overhang", warp_overhang},
                                                 {"channel blocks", blocks},
                                                 {"odd K", odd_k},
                                                 {"K off 64", partial_block},
                                                 {"padding taps", padding_taps},
                                                 {"whole k-steps", whole_steps},
                                                 {"stride 1", stride1},
                                                 {"stride 2", stride2},
                                                 {"dilation 2", dilated},
                                                 {"N = 1", single},
                                                 {"ReLU", relu},
                                                 {"bias", bias},
                                                 {"no bias", no_bias},
                                                 {"misaligned x", x_off},
                                                 {"misaligned y", y_off}};
  for (const auto& [what, count] : covered) EXPECT_GE(count, 1) << what;
  for (std::size_t c = 1; c <= plan_t::channels; ++c) EXPECT_GE(channels[c], 1) << "C = " << c;
  for (int pad = 0; pad < 4; ++pad) EXPECT_GE(pads[pad], 1) << "padding " << pad;
}

/// The misaligned_* cases and the layers whose pixels are not a whole number
/// of 16 bytes are the ones the wgmma kernel does not read in place (it reads
/// their column fold); the others it reads in place, whatever the type.
TEST(Conv2dNhwcCases, FoldedCasesAreTheMisalignedAndOddChannelOnes) {
  alignas(16) static const unsigned char base[64] = {};
  int misaligned = 0, odd = 0;
  for (const nhwc_case& c : nhwc_cases()) {
    for (std::size_t bytes : {sizeof(float), sizeof(__half)}) {
      const bool in_place = kf::detail::conv2d_nhwc_wgmma_reads_in_place(
          c.p.in_channels, bytes, base + c.x_offset * bytes, base + c.w_offset * bytes);
      const bool aligned = c.x_offset == 0 && c.w_offset == 0;
      const bool whole = c.p.in_channels * bytes % 16 == 0;
      EXPECT_EQ(in_place, aligned && whole) << c.name << " (" << bytes << "-byte elements)";
      misaligned += aligned ? 0 : 1;
      odd += whole ? 0 : 1;
    }
  }
  EXPECT_EQ(misaligned, 4);  // two cases, two element sizes
  EXPECT_GT(odd, 4);         // the stem (C = 3) among them
}

}  // namespace
