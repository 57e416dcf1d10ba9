// SPDX-License-Identifier: Apache-2.0
// The channels_last cases (conv2d_nhwc_cases.hpp) cover the wgmma kernels' k-step
// forms and launch options, checked against the host's plans on the CPU (no GPU
// needed): step 7's filter-column tiles, step 12's halo tiles, the resident filter
// and 16-bit y staged for TMA. The rest of what the cases cover:
// conv2d_nhwc_cases_test.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <utility>

#include "conv2d_nhwc_cases.hpp"
#include "conv2d_nhwc_wgmma_launches.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/wgmma_k_steps.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"

namespace {

/// The 16-bit filter-column tiles (07_implicit_gemm_wgmma.cuh, Rows = 3), on the
/// layers halo tiles leave them (R = 6, S = 1 after the column fold, S > 3): a 3 x 5
/// layer takes them (at bench_conv's N = 32 too: this fails if the launch's plan
/// falls back to one-tap k-steps), and the cases that take them cover both tile
/// forms and widths, both schedules, Q past a multiple of 8, several images, R =
/// 6, the ReLU, bias and none, several and partial channel blocks, the column fold
/// and misaligned y.
TEST(Conv2dNhwcCases, FilterColumnCases) {
  int columns = 0, two_images = 0, one_image = 0, wide = 0, q_overhang = 0, batch = 0, two_groups = 0, relu = 0;
  int bias = 0, no_bias = 0, chunks = 0, partial_chunk = 0, pingpong = 0, cooperative = 0, folded = 0, y_off = 0;
  for (const nhwc_case& c : nhwc_cases()) {
    const kf::conv2d_params& p = c.p;
    if (kf::detail::conv2d_nhwc_wgmma_unsupported_reason(p.stride_h, p.stride_w) != nullptr) continue;
    const kf::detail::conv2d_wgmma_tile t = half_plan_of(c);
    if (std::string(c.name) == "columns_c64_8x16_k48_3x5_p1x2_n4") {
      EXPECT_EQ(t.filter_rows, 3u) << c.name << " must take the filter-column tiles";
      EXPECT_EQ(t.halo_width, 0u) << c.name;
      EXPECT_EQ(t.nt, 2u) << c.name;
    }
    if (t.filter_rows == 1 || t.halo_width != 0) continue;
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
  // A bench-sized layer 5 taps wide: N = 32.
  const kf::detail::conv2d_wgmma_tile bench =
      half_plan_of({"bench_c64_56x56_3x5_n32", nhwc(32, 64, 56, 56, 64, 3, 5, 1, 1, 1, 2), true});
  EXPECT_EQ(bench.filter_rows, 3u);
  EXPECT_EQ(bench.halo_width, 0u);
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

/// Step 12's halo tiles (12_implicit_gemm_wgmma_halo.cuh; 16-bit plans here, float's
/// are the same tiles wherever its ping-pong rule holds too): bench_conv's three 3x3
/// layers take them at N = 32, and the cases that do cover both tile forms and widths,
/// Q and P past the tile, several images, 2 and 3 channel blocks and a partial one,
/// the ReLU, bias and none, misaligned y, a 1 x 1 output and asymmetric padding.
TEST(Conv2dNhwcCases, HaloCases) {
  for (const auto& [c, hw] : {std::pair<std::size_t, std::size_t>{64, 56}, {128, 28}, {256, 14}}) {
    const kf::conv2d_params bench = nhwc(32, c, hw, hw, c, 3, 3, 1, 1, 1, 1);
    EXPECT_EQ(half_plan_of({"bench", bench, true}).halo_width, 10u) << "C" << c;
  }
  int halo = 0, two_images = 0, one_image = 0, wide = 0, narrow = 0, q_overhang = 0, p_overhang = 0, batch = 0;
  int chunks = 0, three_chunks = 0, partial_chunk = 0, relu = 0, bias = 0, no_bias = 0, y_off = 0, one_pixel = 0;
  int asymmetric = 0;
  for (const nhwc_case& c : nhwc_cases()) {
    const kf::conv2d_params& p = c.p;
    if (kf::detail::conv2d_nhwc_wgmma_unsupported_reason(p.stride_h, p.stride_w) != nullptr) continue;
    const kf::detail::conv2d_wgmma_tile t = half_plan_of(c);
    if (t.halo_width == 0) continue;
    ++halo;
    const half_layer l = half_layer_of(c);
    EXPECT_TRUE(l.in_place && l.pingpong()) << c.name;  // halo tiles: read in place, ping-pong only
    const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
    two_images += t.nt == 2 ? 1 : 0;
    one_image += t.nt == 1 ? 1 : 0;
    wide += t.bn == 128 ? 1 : 0;
    narrow += t.bn == 64 ? 1 : 0;
    q_overhang += Q % 8 != 0 ? 1 : 0;
    p_overhang += P % t.ht != 0 ? 1 : 0;
    batch += p.batch > 1 ? 1 : 0;
    chunks += l.c_chunks > 1 ? 1 : 0;
    three_chunks += l.c_chunks > 2 ? 1 : 0;
    partial_chunk += l.channels % 64 != 0 ? 1 : 0;
    relu += c.relu ? 1 : 0;
    bias += c.bias ? 1 : 0;
    no_bias += c.bias ? 0 : 1;
    y_off += c.y_offset > 0 ? 1 : 0;
    one_pixel += P * Q == 1 ? 1 : 0;
    asymmetric += p.pad_h != p.pad_w ? 1 : 0;
  }
  EXPECT_GE(halo, 10);
  EXPECT_GE(two_images, 1);
  EXPECT_GE(one_image, 1);
  EXPECT_GE(wide, 1);
  EXPECT_GE(narrow, 1);
  EXPECT_GE(q_overhang, 1);
  EXPECT_GE(p_overhang, 1);
  EXPECT_GE(batch, 1);
  EXPECT_GE(chunks, 1);
  EXPECT_GE(three_chunks, 1);
  EXPECT_GE(partial_chunk, 1);
  EXPECT_GE(relu, 1);
  EXPECT_GE(bias, 1);
  EXPECT_GE(no_bias, 1);
  EXPECT_GE(y_off, 1);
  EXPECT_GE(one_pixel, 1);
  EXPECT_GE(asymmetric, 1);
}

/// The cases that take step 7's resident filter in 16-bit (conv2d_wgmma_resident_filter, by the
/// launch's plan): one-tap and filter-column tiles, a partial channel tile, the bias with the ReLU,
/// and the column fold.
TEST(Conv2dNhwcCases, ResidentFilterCases) {
  int resident = 0, one_tap = 0, columns = 0, k_partial = 0, bias_relu = 0, folded = 0;
  for (const auto& [c, h] : wgmma_half_launches()) {
    const kf::conv2d_params& p = c.p;
    const kf::detail::conv2d_wgmma_tile& t = h.tile;
    const half_layer& l = h.layer;
    if (!h.resident) continue;
    ++resident;
    one_tap += t.filter_rows == 1 ? 1 : 0;
    columns += t.filter_rows > 1 ? 1 : 0;
    k_partial += p.out_channels % t.bn != 0 ? 1 : 0;
    bias_relu += c.bias && c.relu ? 1 : 0;
    folded += l.in_place ? 0 : 1;
  }
  EXPECT_GE(resident, 4);
  EXPECT_GE(one_tap, 1);
  EXPECT_GE(columns, 1);
  EXPECT_GE(k_partial, 1);
  EXPECT_GE(bias_relu, 1);
  EXPECT_GE(folded, 1);
}

/// The cases whose 16-bit y goes through shared memory and TMA (conv2d_wgmma_staged_y, by the
/// launch's plan): the staged_y_* ones and the ResNet 1x1 layer, and no other; between them the
/// bias with the ReLU, a ragged last tile, fewer pixels than a warpgroup's 64 rows, K below the
/// 64-wide box, 1 and 3 channel blocks, and more than 2 tiles a CTA of a full H200. Misaligned y
/// and K odd keep the register stores.
TEST(Conv2dNhwcCases, StagedYCases) {
  int staged = 0, bias_relu = 0, ragged = 0, few_pixels = 0, narrow_k = 0, one_block = 0, three_blocks = 0;
  int many_tiles = 0;
  for (const auto& [c, h] : wgmma_half_launches()) {
    const kf::conv2d_params& p = c.p;
    const kf::detail::conv2d_wgmma_tile& t = h.tile;
    const half_layer& l = h.layer;
    const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p), m = p.batch * P * Q;
    const bool pointwise = p.filter_height == 1 && p.filter_width == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                           p.pad_h == 0 && p.pad_w == 0;
    const bool takes =
        kf::detail::conv2d_wgmma_staged_y(2, pointwise && l.in_place, l.pingpong(), h.resident, t.bn, t.filter_rows,
                                          h.steps, h.ring, p.out_channels, c.y_offset == 0);
    // Every layer that stages y (4 k-steps at most of 8 stages) asks for a tile's boxes together too.
    if (takes) EXPECT_TRUE(kf::detail::conv2d_wgmma_tile_loads_together(h.resident, h.steps, h.ring)) << c.name;
    const std::string name = c.name;
    EXPECT_EQ(takes, name.rfind("staged_y_", 0) == 0 || name == "resnet_c256_14x14_k64_1x1_n2") << name;
    if (!takes) continue;
    ++staged;
    bias_relu += c.bias && c.relu ? 1 : 0;
    ragged += m % 128 != 0 ? 1 : 0;
    few_pixels += m < 64 ? 1 : 0;
    narrow_k += p.out_channels < 64 ? 1 : 0;
    one_block += l.c_chunks == 1 ? 1 : 0;
    three_blocks += l.c_chunks == 3 ? 1 : 0;
    many_tiles += (m + 127) / 128 > 2 * 132 ? 1 : 0;
  }
  EXPECT_EQ(staged, 5);
  EXPECT_GE(bias_relu, 1);
  EXPECT_GE(ragged, 2);
  EXPECT_GE(few_pixels, 1);
  EXPECT_GE(narrow_k, 2);
  EXPECT_GE(one_block, 2);
  EXPECT_GE(three_blocks, 1);
  EXPECT_GE(many_tiles, 1);
}

}  // namespace
