// SPDX-License-Identifier: Apache-2.0
// The few-channel channels_last cases (conv2d_nhwc_cases.hpp's few_channel_cases)
// cover what conv2d_nhwc_gpu_test.cpp's header says they cover, checked against
// steps 10 and 11's own plans on the CPU (no GPU needed). The other cases:
// conv2d_nhwc_cases_test.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conv2d_nhwc_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/few_channels.hpp"
#include "kernelforge/kernels/conv2d/few_channels_plan.hpp"

namespace {

/// few_channel_cases() cover what their comment claims, against step 10's own
/// plan (few_channels_plan.hpp): the few_refused_* cases are refused and no other; the stem
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

/// few_channel_cases() cover step 11's own paths, against its plan (few_channels_plan.hpp:
/// plan_conv2d_few_channels_persistent): it takes every case step 10 takes (its
/// budget holds them all), and among them: the 16-byte stores through shared
/// memory (K % 8 == 0, y 16-byte aligned) with K below 64 and with a second
/// channel block; channel pairs (K even, and K % 8 != 0 or y 4 bytes off 16);
/// single channels (K odd or y 2 bytes off); rows of x that start inside a
/// 16-byte chunk (C W odd); x off 16 bytes (its first and last chunks copied 2
/// bytes at a time); on the tests' small grid, CTAs of 8 bands and more, and of
/// more than one channel block; N = 1 and N > 2; the ReLU with a bias.
TEST(Conv2dNhwcCases, PersistentCases) {
  int vectors_below_64 = 0, vectors_blocks = 0, pairs = 0, singles = 0, mid_chunk_rows = 0, x_off = 0;
  int many_bands = 0, small_grid_blocks = 0, single = 0, batches = 0, relu_bias = 0;
  for (const nhwc_case& c : few_channel_cases()) {
    const kf::conv2d_params& p = c.p;
    const auto l = persistent_plan(p, 264);
    const bool refused = std::string(c.name).rfind("few_refused_", 0) == 0;
    EXPECT_EQ(l.unsupported != nullptr, refused) << c.name << ": " << (l.unsupported ? l.unsupported : "taken");
    if (refused) continue;
    const std::size_t k = p.out_channels;
    const bool y16 = c.y_offset % 8 == 0;  // 2-byte elements: y 16-byte aligned
    const bool vectors = k % 8 == 0 && y16;
    vectors_below_64 += vectors && k < 64 ? 1 : 0;
    vectors_blocks += vectors && l.band.k_blocks > 1 ? 1 : 0;
    pairs += !vectors && k % 2 == 0 && c.y_offset % 2 == 0 ? 1 : 0;
    singles += k % 2 != 0 || c.y_offset % 2 != 0 ? 1 : 0;
    mid_chunk_rows += p.in_channels * p.in_width * 2 % 16 != 0 ? 1 : 0;
    x_off += c.x_offset % 8 != 0 ? 1 : 0;
    const auto small = persistent_plan(p, persistent_small_grid);
    many_bands += small.band.bands >= 8 * small.grid_x ? 1 : 0;
    small_grid_blocks += small.band.k_blocks > 1 && small.band.bands > small.grid_x ? 1 : 0;
    single += p.batch == 1 ? 1 : 0;
    batches += p.batch > 2 ? 1 : 0;
    relu_bias += c.relu && c.bias ? 1 : 0;
  }
  const std::pair<const char*, int> covered[] = {{"16-byte stores, K < 64", vectors_below_64},
                                                 {"16-byte stores, two channel blocks", vectors_blocks},
                                                 {"channel pairs", pairs},
                                                 {"single channels", singles},
                                                 {"rows inside a chunk", mid_chunk_rows},
                                                 {"x off 16 bytes", x_off},
                                                 {"8 bands a CTA", many_bands},
                                                 {"channel blocks on the small grid", small_grid_blocks},
                                                 {"N = 1", single},
                                                 {"N > 2", batches},
                                                 {"ReLU with bias", relu_bias}};
  for (const auto& [what, count] : covered) EXPECT_GE(count, 1) << what;
}

}  // namespace
