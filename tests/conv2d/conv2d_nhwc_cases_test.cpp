// SPDX-License-Identifier: Apache-2.0
// The channels_last conv2d cases (conv2d_nhwc_cases.hpp) cover what
// conv2d_nhwc_gpu_test.cpp's header says they cover, checked against the
// kernels' plans on the CPU (no GPU needed): boxes spanning images, pointwise
// layers as one row, the filter-column tiles, Winograd on float's NCHW route, the
// fused bias + ReLU on both wgmma schedules, the resident filter, 16-bit y staged for TMA, the folded inputs,
// and bounds that can fail. Steps 10 and 11's cases: conv2d_nhwc_few_channel_cases_test.cpp.
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
/// the layer -- a pointwise one as one row of pixels -- where TMA reads it in place, else
/// its column fold).
kf::detail::conv2d_wgmma_tile half_plan_of(const nhwc_case& c) {
  alignas(16) static const __half base[64] = {};
  const __half* x = base + c.x_offset;
  const __half* w = base + c.w_offset;
  const std::size_t P = kf::conv2d_output_height(c.p), Q = kf::conv2d_output_width(c.p);
  kf::detail::conv2d_args<__half> a = kf::detail::make_conv2d_args<__half>(c.p, P, Q, x, w, nullptr, nullptr);
  a = kf::detail::conv2d_one_row_if_pointwise(a);
  if (!kf::detail::conv2d_nhwc_wgmma_reads_in_place(c.p.in_channels, sizeof(__half), x, w)) {
    const std::size_t folded =
        kf::detail::conv2d_nhwc_folded_channels(c.p.filter_width, c.p.in_channels, sizeof(__half));
    a = kf::detail::conv2d_nhwc_column_fold_of(a, static_cast<int>(folded), x);
  }
  return kf::detail::plan_conv2d_nhwc_wgmma_of(a);
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

/// Case `c`'s 16-bit launch as the host plans it: the tile, the layer, the k-steps, the ring's
/// stages (wgmma_config.cuh's ring_stages: 8 and 6 for one-tap tiles 64 and 128 wide, 5 and 3 for
/// filter-column ones) and whether the filter is resident (conv2d_wgmma_resident_filter).
struct half_launch {
  kf::detail::conv2d_wgmma_tile tile;
  half_layer layer;
  std::size_t steps, ring;
  bool resident;
};

half_launch half_launch_of(const nhwc_case& c) {
  const kf::conv2d_params& p = c.p;
  half_launch h{half_plan_of(c), half_layer_of(c), 0, 0, false};
  const kf::detail::conv2d_wgmma_tile& t = h.tile;
  h.steps = kf::detail::conv2d_nhwc_wgmma_k_steps(t, h.layer.channels, p.filter_height,
                                                  h.layer.in_place ? p.filter_width : 1, sizeof(__half));
  h.ring = t.filter_rows > 1 ? (t.bn == 64 ? 5 : 3) : (t.bn == 64 ? 8 : 6);
  h.resident = kf::detail::conv2d_wgmma_resident_filter(t.tiles_k, h.layer.pingpong(), h.steps, h.ring);
  return h;
}

/// The cases the wgmma kernel takes (its strides), each with its 16-bit launch.
std::vector<std::pair<nhwc_case, half_launch>> wgmma_half_launches() {
  std::vector<std::pair<nhwc_case, half_launch>> out;
  for (const nhwc_case& c : nhwc_cases()) {
    if (kf::detail::conv2d_nhwc_wgmma_unsupported_reason(c.p.stride_h, c.p.stride_w) != nullptr) continue;
    out.emplace_back(c, half_launch_of(c));
  }
  return out;
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
