// SPDX-License-Identifier: Apache-2.0
// The gradient suite's cases cover the routes of dx that have kernels of their
// own (no GPU needed; part of test_conv2d_backward_gpu): gradient step 8's
// parity classes on mma.sync, and the forward's wgmma kernel reading the
// layer's filter unturned. The case list's own checks (bounds, paths, the
// filter gradient's kernels): conv2d_backward_cases_test.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <tuple>

#include "conv2d_backward_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/backward/dgrad_plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_k_steps.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"

namespace {

using namespace kf::test::conv2d_backward;

/// The cases whose NHWC dx best computes by gradient step 8
/// (08_dgrad_parity_mma.cuh; on a device that runs sm_80 code), in 16-bit and
/// in float under TF32: dy by cp.async (K * sizeof(T) % 16 == 0, aligned, no
/// mask) and through registers (otherwise, or misaligned, or masked), a
/// partial chunk of k, several chunks, more than one tile of 16 x 32 class
/// pixels along each dimension, more than one group of 8 channels, classes no
/// tap reaches (dx = 0 there), a misaligned dx.
TEST(Conv2dBackwardCases, DgradParityMmaCases) {
  for (const std::size_t bytes : {std::size_t{2}, std::size_t{4}}) {
    SCOPED_TRACE(bytes);
    const std::size_t chunk = 32 / bytes;  // k of one product
    int runs = 0, async = 0, registers = 0, masked = 0, partial_chunk = 0, chunks = 0, tiles_i = 0, tiles_j = 0,
        groups = 0, empty_class = 0, out_misaligned = 0;
    for (const grad_case& c : grad_cases()) {
      kf::conv2d_params p = c.p;
      p.layout = kf::conv2d_layout::nhwc;
      if (p.batch == 0 || p.out_channels == 0) continue;
      if (kf::detail::plan_conv2d_dgrad(p, bytes, c.relu) != kf::detail::conv2d_dgrad_path::gemm_col2im) continue;
      if (!kf::detail::conv2d_dgrad_parity_mma_fits(p, bytes, kf::math_mode::tf32)) continue;
      ++runs;
      const bool by_copies = p.out_channels * bytes % 16 == 0 && c.in_offset * bytes % 16 == 0 && !c.relu;
      async += by_copies ? 1 : 0;
      registers += by_copies ? 0 : 1;
      masked += c.relu ? 1 : 0;
      partial_chunk += p.out_channels % chunk != 0 ? 1 : 0;
      chunks += p.out_channels > chunk ? 1 : 0;
      tiles_i += (p.in_height + p.stride_h - 1) / p.stride_h > 16 ? 1 : 0;
      tiles_j += (p.in_width + p.stride_w - 1) / p.stride_w > 32 ? 1 : 0;
      groups += p.in_channels > 8 ? 1 : 0;
      bool some_empty = false;
      for (std::size_t a = 0; a < p.stride_h; ++a) {
        for (std::size_t b = 0; b < p.stride_w; ++b) {
          const auto dh =
              kf::detail::dgrad_parity_of(static_cast<int>(a), static_cast<int>(p.stride_h), static_cast<int>(p.pad_h),
                                          static_cast<int>(p.filter_height), static_cast<int>(p.in_height));
          const auto dw =
              kf::detail::dgrad_parity_of(static_cast<int>(b), static_cast<int>(p.stride_w), static_cast<int>(p.pad_w),
                                          static_cast<int>(p.filter_width), static_cast<int>(p.in_width));
          some_empty = some_empty || dh.taps == 0 || dw.taps == 0;
        }
      }
      empty_class += some_empty ? 1 : 0;
      out_misaligned += c.out_offset > 0 ? 1 : 0;
    }
    EXPECT_GE(runs, 8);
    EXPECT_GE(async, 3);
    EXPECT_GE(registers, 3);
    EXPECT_GE(masked, 2);
    EXPECT_GE(partial_chunk, 2);
    EXPECT_GE(chunks, 3);
    EXPECT_GE(tiles_i, 1);
    EXPECT_GE(tiles_j, 1);
    EXPECT_GE(groups, 2);
    EXPECT_GE(empty_class, 1);
    EXPECT_GE(out_misaligned, 2);
  }
}

/// dx of 16-bit NHWC layers on sm_90 runs the forward's wgmma kernel
/// (dx_forward) reading the layer's filter where it lies
/// (conv2d_wgmma_filter::dgrad_unturned, backward/dgrad_plan.hpp) wherever TMA
/// can: C and K multiples of 8, dy (unless spread) and the weight 16-byte
/// aligned. The cases that do cover the kernel's forms: one-tap and
/// filter-column k-steps (R = 3 and R = 6) under both schedules at both tile
/// widths (all eight instances of a type), C and K that are not multiples of 64, 1x1 at stride 2, 3x3, 5x5, 7x7, N = 1,
/// stride 2 over odd sizes, dilation, the mask, Q not a multiple of 8 under
/// filter columns and misaligned dx; and the turned copy remains where it must:
/// a misaligned weight, K or C not a multiple of 8.
TEST(Conv2dBackwardCases, DxUnturnedFilterCases) {
  alignas(16) static unsigned char buffer[64];
  std::set<std::tuple<std::size_t, bool, std::size_t>> instances;  // filter rows, ping-pong, bn
  int unturned = 0, columns = 0, columns_r6 = 0, columns_masked = 0, columns_q_overhang = 0, c_partial = 0,
      k_partial = 0, k_chunks = 0, one_by_one_strided = 0, three = 0, five = 0, seven = 0, single_image = 0,
      strided_odd = 0, dilated = 0, masked = 0, out_misaligned = 0;
  int turned_misaligned = 0, turned_channels = 0;
  for (const grad_case& c : grad_cases()) {
    kf::conv2d_params p = c.p;
    p.layout = kf::conv2d_layout::nhwc;
    if (p.batch == 0 || p.out_channels == 0) continue;
    if (kf::detail::plan_conv2d_dgrad(p, 2, c.relu) != kf::detail::conv2d_dgrad_path::forward) continue;
    // dy and the weight start in_offset 16-bit elements in; a spread dy is a workspace's start.
    const void* in = buffer + 2 * c.in_offset;
    const void* source = kf::detail::conv2d_dgrad_spreads(p, c.relu) ? static_cast<const void*>(buffer) : in;
    if (kf::detail::conv2d_dgrad_filter(p, 2, true, source, in) != kf::detail::conv2d_wgmma_filter::dgrad_unturned) {
      turned_misaligned += c.in_offset > 0 ? 1 : 0;
      turned_channels += p.in_channels % 8 != 0 || p.out_channels % 8 != 0 ? 1 : 0;
      continue;
    }
    SCOPED_TRACE(c.name);
    ++unturned;
    const kf::conv2d_params f = dx_forward(p);
    const std::size_t P = kf::conv2d_output_height(f), Q = kf::conv2d_output_width(f);
    EXPECT_EQ(P, p.in_height);
    EXPECT_EQ(Q, p.in_width);
    const kf::detail::conv2d_wgmma_tile t =
        kf::detail::plan_conv2d_nhwc_wgmma(f.batch, P, Q, f.out_channels, f.in_channels, f.filter_height,
                                           f.filter_width, f.stride_h, f.stride_w, f.dilation_h, 2);
    const std::size_t chunks = (f.in_channels + 63) / 64;  // 64-channel k-steps of one tap
    const bool pp = kf::detail::conv2d_wgmma_pingpong(f.filter_height * f.filter_width * chunks);
    instances.insert({t.filter_rows, pp, t.bn});
    columns += t.filter_rows > 1 ? 1 : 0;
    columns_r6 += t.filter_rows > 1 && p.filter_height == 6 ? 1 : 0;
    columns_masked += t.filter_rows > 1 && c.relu ? 1 : 0;
    columns_q_overhang += t.filter_rows > 1 && Q % 8 != 0 ? 1 : 0;
    c_partial += p.in_channels % 64 != 0 ? 1 : 0;   // dx's output channels: the last box past C
    k_partial += p.out_channels % 64 != 0 ? 1 : 0;  // the reduction: the last k-step's rows past K
    k_chunks += chunks > 1 ? 1 : 0;
    const std::size_t taps = p.filter_height * p.filter_width;
    one_by_one_strided += taps == 1 && p.stride_h > 1 ? 1 : 0;
    three += p.filter_height == 3 && p.filter_width == 3 ? 1 : 0;
    five += p.filter_height == 5 ? 1 : 0;
    seven += p.filter_height == 7 ? 1 : 0;
    single_image += p.batch == 1 ? 1 : 0;
    strided_odd += p.stride_h > 1 && (p.in_height % 2 == 1 || p.in_width % 2 == 1) ? 1 : 0;
    dilated += p.dilation_h > 1 ? 1 : 0;
    masked += c.relu ? 1 : 0;
    out_misaligned += c.out_offset > 0 ? 1 : 0;
  }
  EXPECT_GE(unturned, 15);
  EXPECT_EQ(instances.size(), 8u);  // {1, 3} x {ping-pong, cooperative} x {64, 128}
  EXPECT_GE(columns, 4);
  EXPECT_GE(columns_r6, 1);
  EXPECT_GE(columns_masked, 1);
  EXPECT_GE(columns_q_overhang, 1);
  EXPECT_GE(c_partial, 5);
  EXPECT_GE(k_partial, 5);
  EXPECT_GE(k_chunks, 3);
  EXPECT_GE(one_by_one_strided, 1);
  EXPECT_GE(three, 5);
  EXPECT_GE(five, 2);
  EXPECT_GE(seven, 1);
  EXPECT_GE(single_image, 3);
  EXPECT_GE(strided_odd, 2);
  EXPECT_GE(dilated, 2);
  EXPECT_GE(masked, 2);
  EXPECT_GE(out_misaligned, 1);
  EXPECT_GE(turned_misaligned, 2);
  EXPECT_GE(turned_channels, 3);
}

}  // namespace
