// SPDX-License-Identifier: Apache-2.0
// The channels_last conv2d cases (conv2d_nhwc_cases.hpp) cover what
// conv2d_nhwc_gpu_test.cpp's header says they cover, checked against the
// kernels' plans on the CPU (no GPU needed): boxes spanning images, pointwise
// layers as one row, Winograd on float's NCHW route, the fused bias + ReLU on both
// wgmma schedules, the folded inputs, and bounds that can fail. What the wgmma
// kernels' k-step forms and launch options take (filter-column and halo tiles, the
// resident filter, staged y): conv2d_nhwc_wgmma_forms_test.cpp; steps 10 and 11's
// cases: conv2d_nhwc_few_channel_cases_test.cpp.
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
#include "conv2d_nhwc_cases.hpp"
#include "conv2d_nhwc_wgmma_launches.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/epilogue.cuh"
#include "kernelforge/kernels/conv2d/few_channels.hpp"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_k_steps.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"
#include "winograd_bound.hpp"

namespace {

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

/// The pointwise cases (1 x 1, stride 1, no padding) run as one row of N P Q pixels
/// (conv2d_one_row_if_pointwise, whose arguments wgmma_cpu_test.cpp checks): tiles of 128
/// consecutive pixels, never more than the boxes of rows and images would be. The cases hold
/// several such layers, ragged and whole, with several images.
TEST(Conv2dNhwcCases, PointwiseLayersRunAsOneRow) {
  int pointwise = 0, ragged = 0, images = 0;
  for (const nhwc_case& c : nhwc_cases()) {
    const std::size_t P = kf::conv2d_output_height(c.p), Q = kf::conv2d_output_width(c.p);
    const auto a = kf::detail::make_conv2d_args<__half>(c.p, P, Q, nullptr, nullptr, nullptr, nullptr);
    const bool expected = c.p.filter_height == 1 && c.p.filter_width == 1 && c.p.stride_h == 1 && c.p.stride_w == 1 &&
                          c.p.pad_h == 0 && c.p.pad_w == 0;
    EXPECT_EQ(kf::detail::conv2d_is_pointwise(a), expected) << c.name;
    if (!expected) continue;
    ++pointwise;
    const std::size_t m = c.p.batch * P * Q;
    const kf::detail::conv2d_wgmma_tile row = half_plan_of(c);
    const kf::detail::conv2d_wgmma_tile boxes = kf::detail::choose_conv2d_wgmma_tile(c.p.batch, P, Q, c.p.out_channels);
    EXPECT_EQ(std::vector<std::size_t>({row.wt, row.ht, row.nt}), (std::vector<std::size_t>{m < 128 ? m : 128, 1, 1}))
        << c.name;
    EXPECT_LE(row.tiles(), boxes.tiles()) << c.name;
    ragged += m % 128 != 0 ? 1 : 0;
    images += c.p.batch > 1 ? 1 : 0;
  }
  EXPECT_GE(pointwise, 4);
  EXPECT_GE(ragged, 2);
  EXPECT_GE(images, 2);
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

/// The fused bias + ReLU (07_implicit_gemm_wgmma.cuh's epilogue: the tile's
/// bias staged in shared memory, wgmma_store.cuh) runs in the cases on both
/// schedules -- ping-pong (a consumer warpgroup's two m64 blocks share the
/// tile's columns and its staged bias) and cooperative (each warpgroup stages
/// its own) -- with K past a tile's width and a threshold that is not 0, each
/// schedule with y misaligned (element stores) and K off the tile at once; and
/// the ReLU runs without a bias too (nothing staged).
TEST(Conv2dNhwcCases, FusedBiasReluCases) {
  int pingpong = 0, cooperative = 0, k_partial = 0, threshold = 0, relu_only = 0;
  int misaligned_pingpong = 0, misaligned_cooperative = 0;
  for (const nhwc_case& c : nhwc_cases()) {
    const kf::conv2d_params& p = c.p;
    if (!c.relu || kf::detail::conv2d_nhwc_wgmma_unsupported_reason(p.stride_h, p.stride_w) != nullptr) continue;
    relu_only += c.bias ? 0 : 1;
    if (!c.bias) continue;
    const bool pp = half_layer_of(c).pingpong();
    const bool partial = p.out_channels % half_plan_of(c).bn != 0;
    pingpong += pp ? 1 : 0;
    cooperative += pp ? 0 : 1;
    k_partial += partial ? 1 : 0;
    threshold += c.threshold != 0.0f ? 1 : 0;
    if (c.y_offset > 0 && partial) {
      misaligned_pingpong += pp ? 1 : 0;
      misaligned_cooperative += pp ? 0 : 1;
    }
  }
  EXPECT_GE(pingpong, 1);
  EXPECT_GE(cooperative, 1);
  EXPECT_GE(k_partial, 1);
  EXPECT_GE(threshold, 1);
  EXPECT_GE(relu_only, 1);
  EXPECT_GE(misaligned_pingpong, 1);
  EXPECT_GE(misaligned_cooperative, 1);
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
