// SPDX-License-Identifier: Apache-2.0
// CPU tests of gradient steps 3 and 4, implicit_gemm_wgmma's filter gradient
// (kernels/conv2d/backward/03_wgrad_wgmma.cuh: 16-bit; 04_wgrad_wgmma_tf32.cuh:
// float in TF32, which `best` takes where conv2d_wgrad_tf32_preferred): which
// layers it computes, and its plan (wgrad_wgmma_plan.hpp, for either element
// size) replayed as the kernel walks it -- every CTA
// (tile, slice), every patch of its slice, every row of its TMA boxes -- to show
// that each (output pixel, filter tap) product of every output-channel and
// input-channel block is summed exactly once, that dy's box row and x's box row
// are the same output pixel, that the pixels past the output read dy outside
// its tensor (TMA's zero fill), that the boxes keep within TMA's limits, and that
// the split's slices partition the reduction. Part of test_conv2d.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "kernelforge/conv_backward.hpp"
#include "kernelforge/kernels/conv2d/backward/wgrad_wgmma_plan.hpp"

namespace {

using kf::detail::conv2d_wgrad_wgmma_plan;
using kf::detail::plan_conv2d_wgrad_wgmma;
using z = std::size_t;

/// A layer as the planner sees it (NHWC; P and Q from the usual formula).
struct layer {
  const char* name;
  z n, c, h, w, k, r, s, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  [[nodiscard]] z p() const { return (h + 2 * pad_h - dil_h * (r - 1) - 1) / stride_h + 1; }
  [[nodiscard]] z q() const { return (w + 2 * pad_w - dil_w * (s - 1) - 1) / stride_w + 1; }
};

/// bench_conv's training layers and shapes that stress the planner: primes,
/// overhanging patches, strides up to TMA's 8, K and C off the 64 / 128 tiles.
const std::vector<layer>& layers() {
  static const std::vector<layer> all = {
      {"resnet_c64_56x56_n32", 32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1},
      {"resnet_c128_28x28_n32", 32, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1, 1},
      {"resnet_c256_14x14_n32", 32, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1},
      {"bottleneck_1x1_c256_k64_56x56_n32", 32, 256, 56, 56, 64, 1, 1, 1, 1, 0, 0, 1, 1},
      {"c512_7x7_n32", 32, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1},
      {"c8_k8_13x11_s2_d2_p1_n2", 2, 8, 13, 11, 8, 3, 3, 2, 2, 1, 1, 2, 2},
      {"c16_k24_12x10_s2_p1_n3", 3, 16, 12, 10, 24, 3, 3, 2, 2, 1, 1, 1, 1},
      {"c128_k72_7x7_n2", 2, 128, 7, 7, 72, 3, 3, 1, 1, 1, 1, 1, 1},
      {"c24_k64_11x9_1x1_n2", 2, 24, 11, 9, 64, 1, 1, 1, 1, 0, 0, 1, 1},
      {"c8_k8_40x40_n1", 1, 8, 40, 40, 8, 3, 3, 1, 1, 1, 1, 1, 1},
      {"c16_k16_17x14_5x5_s3_p1_n3", 3, 16, 17, 14, 16, 5, 5, 3, 3, 1, 1, 1, 1},
      {"c8_k200_31x29_7x7_s8_p3_n5", 5, 8, 31, 29, 200, 7, 7, 8, 8, 3, 3, 1, 1},
      {"c136_k8_300x3_n1", 1, 136, 300, 3, 8, 3, 1, 1, 1, 1, 0, 1, 1},
      {"c8_k8_1x500_s4_n1", 1, 8, 1, 500, 8, 1, 3, 1, 4, 0, 1, 1, 1},
  };
  return all;
}

constexpr z h200_sms = 132;

/// Element sizes of the two kernels: 2 (step 3) and 4 (step 4, TF32).
constexpr z element_sizes[] = {2, 4};

conv2d_wgrad_wgmma_plan plan_of(const layer& l, bool unsplit = false, z element_bytes = 2) {
  return plan_conv2d_wgrad_wgmma(l.n, l.p(), l.q(), l.k, l.c, l.r, l.s, l.stride_h, l.stride_w, l.dil_h, h200_sms,
                                 unsplit, element_bytes);
}

TEST(Conv2dWgradWgmma, VariantName) {
  EXPECT_STREQ(kf::to_string(kf::conv2d_backward_variant::implicit_gemm_wgmma), "implicit_gemm_wgmma");
}

TEST(Conv2dWgradWgmma, Applicability) {
  using kf::detail::conv2d_wgrad_wgmma_aligned;
  using kf::detail::conv2d_wgrad_wgmma_unsupported_reason;
  EXPECT_EQ(conv2d_wgrad_wgmma_unsupported_reason(64, 64, 2, 1, 1), nullptr);
  EXPECT_EQ(conv2d_wgrad_wgmma_unsupported_reason(8, 8, 2, 8, 8), nullptr);
  // float (TF32, step 4): dy_t is the pre-pass's, so K is free; C * 4 bytes a multiple of 16.
  EXPECT_EQ(conv2d_wgrad_wgmma_unsupported_reason(64, 64, 4, 1, 1), nullptr);
  EXPECT_EQ(conv2d_wgrad_wgmma_unsupported_reason(4, 17, 4, 8, 8), nullptr);
  EXPECT_NE(conv2d_wgrad_wgmma_unsupported_reason(6, 64, 4, 1, 1), nullptr);  // 24-byte pixels
  EXPECT_NE(conv2d_wgrad_wgmma_unsupported_reason(64, 64, 4, 9, 1), nullptr);
  EXPECT_NE(conv2d_wgrad_wgmma_unsupported_reason(64, 64, 8, 1, 1), nullptr);  // double
  EXPECT_NE(conv2d_wgrad_wgmma_unsupported_reason(3, 64, 2, 2, 2), nullptr);   // the RGB stem: 6-byte pixels
  EXPECT_NE(conv2d_wgrad_wgmma_unsupported_reason(64, 12, 2, 1, 1), nullptr);  // dy rows of 24 bytes
  EXPECT_NE(conv2d_wgrad_wgmma_unsupported_reason(64, 64, 2, 9, 1), nullptr);  // past TMA's element stride
  EXPECT_NE(conv2d_wgrad_wgmma_unsupported_reason(64, 64, 2, 1, 9), nullptr);
  alignas(16) static const unsigned char buffer[64] = {};
  EXPECT_TRUE(conv2d_wgrad_wgmma_aligned(buffer, buffer + 16));
  EXPECT_FALSE(conv2d_wgrad_wgmma_aligned(buffer + 2, buffer));
  EXPECT_FALSE(conv2d_wgrad_wgmma_aligned(buffer, buffer + 8));
}

/// The plan's boxes keep within TMA's limits: at most 256 elements along each
/// dimension (x's box spans stride x pixels), 64 channels of 2 bytes inside
/// (128 bytes: a multiple of 16 and the 128-byte swizzle's span), at most 64
/// pixels (a stage's rows); its tiles are 64 or 128 wide.
TEST(Conv2dWgradWgmma, BoxesWithinTmaLimits) {
  for (const z element_bytes : element_sizes) {
    for (const layer& l : layers()) {
      SCOPED_TRACE(std::string(l.name) + (element_bytes == 4 ? " (TF32)" : ""));
      const conv2d_wgrad_wgmma_plan plan = plan_of(l, false, element_bytes);
      constexpr z box_limit = 256;
      const z inner_bytes = kf::detail::conv2d_wgrad_wgmma_box_channels_of(element_bytes) * element_bytes;
      EXPECT_EQ(inner_bytes % 16, 0u);
      EXPECT_LE(inner_bytes, 128u);
      EXPECT_GE(plan.wt, 1u);
      EXPECT_GE(plan.ht, 1u);
      EXPECT_GE(plan.nt, 1u);
      const z step = kf::detail::conv2d_wgrad_wgmma_step_pixels_of(element_bytes);
      EXPECT_EQ(plan.step_pixels, step);
      EXPECT_LE(plan.patch_pixels(), step);
      EXPECT_EQ(plan.dy_t_columns(), plan.patches() * step);
      EXPECT_LE(step * element_bytes, 128u);       // TF32: dy_t's box, one 128-byte row of pixels
      EXPECT_LE(plan.wt * l.stride_w, box_limit);  // x's box, in x's pixels
      EXPECT_LE(plan.x_box_rows() * l.stride_h, box_limit);
      EXPECT_LE(plan.nt, box_limit);
      EXPECT_LE(plan.nt, l.n);
      if (plan.filter_rows == 1) {
        EXPECT_LE(plan.wt, l.q());  // no patch wider (taller) than the output
        EXPECT_LE(plan.ht, l.p());
        EXPECT_TRUE(plan.bm == 64 || plan.bm == 128);
        const bool split = plan.bn == kf::detail::conv2d_wgrad_wgmma_split_bn;  // 16-bit, C > 128, K > 64
        EXPECT_TRUE(plan.bn == 64 || plan.bn == 128 || split);
        EXPECT_EQ(plan.bm, l.k <= 64 ? 64u : 128u);
        EXPECT_EQ(plan.bn, l.c <= 64 ? 64u : split ? 256u : 128u);
        if (split) EXPECT_TRUE(element_bytes == 2 && l.c > 128 && l.k > 64);
      } else {  // filter-column tiles: 8 x 8 (TF32: 8 x 4) patches of one image, 64 x (3 taps x 64 channels)
        ASSERT_EQ(plan.filter_rows, 3u);
        EXPECT_TRUE(l.r == 3 && l.stride_h == 1 && l.dil_h == 1);
        EXPECT_EQ(std::vector<z>({plan.wt, plan.ht, plan.nt, plan.x_box_rows()}),
                  std::vector<z>({8, step / 8, 1, step / 8 + 2}));
        EXPECT_EQ(plan.bm, 64u);
        EXPECT_EQ(plan.bn, 192u);
        EXPECT_EQ(plan.tile_channels(), 64u);
      }
    }
  }
}

/// The split: non-empty slices that partition the patches in order; split only
/// where the tiles leave SMs idle, and then within one wave; the grid within
/// CUDA's limits. Unsplit (no workspace): one slice of every patch.
TEST(Conv2dWgradWgmma, SplitPartitionsTheReduction) {
  for (const z element_bytes : element_sizes) {
    for (const layer& l : layers()) {
      SCOPED_TRACE(std::string(l.name) + (element_bytes == 4 ? " (TF32)" : ""));
      for (const bool unsplit : {false, true}) {
        const conv2d_wgrad_wgmma_plan plan = plan_of(l, unsplit, element_bytes);
        // Unsplit (no memory for the slabs) keeps the patches: dy_t's size holds.
        EXPECT_EQ(plan.dy_t_columns(), plan_of(l, !unsplit, element_bytes).dy_t_columns());
        ASSERT_GE(plan.split, 1u);
        EXPECT_LE(plan.split, 65535u);
        if (unsplit) EXPECT_EQ(plan.split, 1u);
        if (plan.split > 1) {
          EXPECT_LE(plan.tiles() * plan.split, h200_sms);
          EXPECT_GE(plan.patches_per_split, kf::detail::conv2d_wgrad_wgmma_min_slice_steps);
          EXPECT_EQ(plan.slab_bytes(l.k, l.r * l.s * l.c), plan.split * l.k * l.r * l.s * l.c * sizeof(float));
          EXPECT_EQ(plan.workspace_bytes(l.k, l.r * l.s * l.c),
                    plan.slab_bytes(l.k, l.r * l.s * l.c) + plan.tiles() * sizeof(unsigned));
        } else {
          EXPECT_EQ(plan.workspace_bytes(l.k, l.r * l.s * l.c), 0u);
        }
        z next = 0;
        for (z y = 0; y < plan.split; ++y) {
          EXPECT_EQ(plan.slice_first(y), next);
          EXPECT_LT(plan.slice_first(y), plan.slice_end(y)) << "slice " << y << " is empty";
          next = plan.slice_end(y);
        }
        EXPECT_EQ(next, plan.patches());
      }
    }
  }
}

/// The kernel's walk replayed: CTA (blockIdx.x = tile, blockIdx.y = slice)
/// decodes its tile as 03_wgrad_wgmma.cuh does (k tile fastest, then c tile,
/// then tap), its producer loads patch g of its slice at origin (n0, p0, q0),
/// and row i of both boxes is box element (i % wt, i / wt % ht, i / (wt ht)).
/// Checked: every (k tile, c tile, tap) is one CTA column; in each, every
/// output pixel is row of exactly one box across the slices; dy's row and x's
/// row name the same output pixel (x's coordinates are the tap's input pixel
/// of it: TMA steps x by the stride); a row past the output lies outside dy's
/// (k, q, p, n) tensor, so TMA fills it with zeros; the boxes loaded along K
/// and C cover every channel of the tile below K and C.
TEST(Conv2dWgradWgmma, EveryPixelTapProductOnce) {
  for (const z element_bytes : element_sizes) {
    for (const layer& l : layers()) {
      SCOPED_TRACE(std::string(l.name) + (element_bytes == 4 ? " (TF32)" : ""));
      const z P = l.p(), Q = l.q(), RS = l.r * l.s;
      const conv2d_wgrad_wgmma_plan plan = plan_of(l, false, element_bytes);
      const z box_channels = kf::detail::conv2d_wgrad_wgmma_box_channels_of(element_bytes);
      // CTA columns: each (k tile, c tile, tap) once -- a filter-column tile covers the taps (0..2, s).
      std::vector<int> column_seen(plan.tiles_k * plan.tiles_c * RS, 0);
      ASSERT_EQ(plan.tiles() * plan.filter_rows, column_seen.size());
      const z channels = plan.tile_channels();
      for (z t = 0; t < plan.tiles(); ++t) {
        z u = t;
        const z kt = u % plan.tiles_k;
        u /= plan.tiles_k;
        const z ct = u % plan.tiles_c;
        const z tap_tile = u / plan.tiles_c;
        ASSERT_LT(tap_tile, plan.tap_tiles());
        for (z row = 0; row < plan.filter_rows; ++row) {
          const z tap = plan.filter_rows == 1 ? tap_tile : row * l.s + tap_tile;
          ASSERT_LT(tap, RS);
          ++column_seen[(tap * plan.tiles_c + ct) * plan.tiles_k + kt];
        }
        // The channels its boxes load (wholly-outside boxes skipped) cover the tile's channels below K and C.
        const z k0 = kt * plan.bm, c0 = ct * channels;
        // 16-bit: dy's boxes of 64 channels (TF32: dy_t's one box of bm rows), x's of box_channels.
        const z a_live = element_bytes == 2 ? std::min(plan.bm / 64, (l.k - k0 + 63) / 64) : 1;
        const z a_channels = element_bytes == 2 ? 64 : plan.bm;
        const z b_live = std::min(channels / box_channels, (l.c - c0 + box_channels - 1) / box_channels);
        EXPECT_GE(k0 + a_channels * a_live, std::min(l.k, k0 + plan.bm));
        EXPECT_GE(c0 + box_channels * b_live, std::min(l.c, c0 + channels));
        EXPECT_GE(a_live, 1u);
        EXPECT_GE(b_live, 1u);
      }
      for (int seen : column_seen) EXPECT_EQ(seen, 1);

      // The pixels: the same for every CTA column (a column's slices walk the same patches); replay one
      // column per tap to check x's coordinates too.
      for (z tap = 0; tap < RS; ++tap) {
        const z r = tap / l.s, s = tap % l.s;
        std::vector<int> pixel_seen(l.n * P * Q, 0);
        for (z y = 0; y < plan.split; ++y) {
          for (z g = plan.slice_first(y); g < plan.slice_end(y); ++g) {
            const kf::detail::conv2d_wgrad_patch_origin o = kf::detail::conv2d_wgrad_patch_of(plan, g);
            // x's box origin as the producer computes it (may be negative: padding); a
            // filter-column tile's box starts at row 0's input row, tap r's rows r image rows down it.
            const bool columns = plan.filter_rows > 1;
            const z box_r = columns ? 0 : r, row_offset = columns ? r : 0;
            const long long w0 =
                static_cast<long long>(o.q0 * l.stride_w + s * l.dil_w) - static_cast<long long>(l.pad_w);
            const long long h0 =
                static_cast<long long>(o.p0 * l.stride_h + box_r * l.dil_h) - static_cast<long long>(l.pad_h);
            for (z i = 0; i < plan.patch_pixels(); ++i) {
              const z jq = i % plan.wt, jp = i / plan.wt % plan.ht, jn = i / (plan.wt * plan.ht);
              const z q = o.q0 + jq, p = o.p0 + jp, n = o.n0 + jn;  // dy's box element i: (k, q, p, n)
              // x's element: box row i + row_offset wt (the B operand's start), stepped by the stride.
              const z e = i + row_offset * plan.wt;
              ASSERT_LT(e, plan.wt * plan.x_box_rows() * plan.nt);
              const z xq = e % plan.wt, xrow = e / plan.wt % plan.x_box_rows(), xn = e / (plan.wt * plan.x_box_rows());
              ASSERT_EQ(xn, jn);
              const long long xw = w0 + static_cast<long long>(xq * l.stride_w);
              const long long xh = h0 + static_cast<long long>(xrow * l.stride_h);
              const bool inside = n < l.n && p < P && q < Q;
              if (!inside) continue;  // dy's box is zero-filled there: the row adds 0
              // The same output pixel: x's element is the tap's input pixel of (n, p, q).
              ASSERT_EQ(xw, static_cast<long long>(q * l.stride_w + s * l.dil_w) - static_cast<long long>(l.pad_w));
              ASSERT_EQ(xh, static_cast<long long>(p * l.stride_h + r * l.dil_h) - static_cast<long long>(l.pad_h));
              ++pixel_seen[(n * P + p) * Q + q];
            }
          }
        }
        for (z i = 0; i < pixel_seen.size(); ++i) {
          ASSERT_EQ(pixel_seen[i], 1) << "tap " << tap << ", output pixel " << i;
        }
      }
    }
  }
}

/// The bench layers get full patches (no idle rows) and fill the H200's SMs.
TEST(Conv2dWgradWgmma, BenchLayersPlans) {
  const conv2d_wgrad_wgmma_plan c64 = plan_of(layers()[0]);
  EXPECT_EQ(c64.wt * c64.ht * c64.nt, 64u);
  EXPECT_EQ(c64.patches(), 32u * 56 * 56 / 64);
  EXPECT_EQ(c64.filter_rows, 3u);  // filter-column tiles: 2.7x fewer box rows than one-tap 64 x 64
  EXPECT_EQ(c64.tiles(), 3u);      // 64 x 192, 3 filter columns
  EXPECT_EQ(c64.split, 44u);       // 132 of 132 SMs
  const conv2d_wgrad_wgmma_plan c128 = plan_of(layers()[1]);
  EXPECT_EQ(c128.patch_pixels(), 64u);
  EXPECT_EQ(c128.tiles(), 9u);  // 128 x 128
  EXPECT_EQ(c128.split, 14u);
  const conv2d_wgrad_wgmma_plan c256 = plan_of(layers()[2]);
  EXPECT_EQ(c256.patch_pixels(), 64u);  // 2 x 2 x 16
  EXPECT_EQ(c256.bn, 256u);             // 128 x 256 split by rows: 4.2 MFLOP a 48 KiB stage
  EXPECT_EQ(c256.tiles(), 18u);
  EXPECT_EQ(c256.split, 7u);                           // 126 of 132 SMs
  EXPECT_EQ(plan_of(layers()[2], false, 4).bn, 128u);  // TF32 (step 4) has no split tiles
  const conv2d_wgrad_wgmma_plan bottleneck = plan_of(layers()[3]);
  EXPECT_EQ(bottleneck.bn, 128u);     // K = 64: no split tile (64 x 256 by columns ran slower)
  EXPECT_EQ(bottleneck.tiles(), 2u);  // 64 x 128, one tap, two C tiles
  EXPECT_GE(bottleneck.split, 60u);
}

/// Step 3 sums a split's slabs in the kernel where each storing thread has at most one quad of its
/// CTA's share of the tile (conv2d_wgrad_wgmma_sums_in_kernel): the bench layers of many slices
/// (measured faster so), not those of few (measured slower), never an unsplit plan.
TEST(Conv2dWgradWgmma, SlabsSummedInTheKernelWhereAQuadAThread) {
  using kf::detail::conv2d_wgrad_wgmma_storing_threads;
  using kf::detail::conv2d_wgrad_wgmma_sums_in_kernel;
  EXPECT_TRUE(conv2d_wgrad_wgmma_sums_in_kernel(plan_of(layers()[0])));       // C64: 3,072 quads / 44 = 70
  EXPECT_FALSE(conv2d_wgrad_wgmma_sums_in_kernel(plan_of(layers()[1])));      // C128: 4,096 / 14 = 293
  EXPECT_FALSE(conv2d_wgrad_wgmma_sums_in_kernel(plan_of(layers()[2])));      // C256: 8,192 / 7 = 1,171 (of 256)
  EXPECT_TRUE(conv2d_wgrad_wgmma_sums_in_kernel(plan_of(layers()[3])));       // 1x1: 2,048 / 66 = 32
  EXPECT_EQ(conv2d_wgrad_wgmma_storing_threads(plan_of(layers()[2])), 256u);  // the tile split by rows
  EXPECT_EQ(conv2d_wgrad_wgmma_storing_threads(plan_of(layers()[3])), 128u);
  for (const layer& l : layers()) {
    SCOPED_TRACE(l.name);
    EXPECT_FALSE(conv2d_wgrad_wgmma_sums_in_kernel(plan_of(l, /*unsplit=*/true)));
  }
}

/// Step 4 (TF32): the bench layers get full 32-pixel patches and fill the H200's SMs; the C64
/// 56x56 layer takes filter-column tiles (8 x 4 patches: 96 x box rows and 64 of dy_t for three
/// taps' products, against 3 x 128 one-tap).
TEST(Conv2dWgradWgmma, BenchLayersPlansTf32) {
  const conv2d_wgrad_wgmma_plan c64 = plan_of(layers()[0], false, 4);
  EXPECT_EQ(c64.patch_pixels(), 32u);
  EXPECT_EQ(c64.filter_rows, 3u);
  EXPECT_EQ(std::vector<z>({c64.wt, c64.ht, c64.x_box_rows()}), std::vector<z>({8, 4, 6}));
  EXPECT_EQ(c64.tiles(), 3u);
  EXPECT_EQ(c64.split, 44u);
  EXPECT_EQ(c64.dy_t_columns(), 32u * 56 * 56);  // no padding: every patch full
  const conv2d_wgrad_wgmma_plan c128 = plan_of(layers()[1], false, 4);
  EXPECT_EQ(c128.patch_pixels(), 32u);
  EXPECT_EQ(c128.tiles(), 9u);  // 128 x 128 one-tap tiles
  EXPECT_EQ(c128.split, 14u);
  const conv2d_wgrad_wgmma_plan c256 = plan_of(layers()[2], false, 4);
  EXPECT_EQ(c256.patch_pixels(), 32u);
  EXPECT_EQ(c256.tiles(), 36u);
  EXPECT_EQ(c256.split, 3u);
  // The slices keep at least as many pixels as step 3's.
  for (const layer& l : layers()) {
    const conv2d_wgrad_wgmma_plan plan = plan_of(l, false, 4);
    if (plan.split > 1) {
      EXPECT_GE(plan.patches_per_split * plan.step_pixels,
                kf::detail::conv2d_wgrad_wgmma_min_slice_steps * kf::detail::conv2d_wgrad_wgmma_step_pixels)
          << l.name;
    }
  }
}

/// `best` takes step 4 for float NHWC under TF32 wherever step 2 would write an
/// im2col matrix and x is read in place; not for 1x1 stride-1 unpadded layers,
/// whose x is its own, nor where C is not a multiple of 4 (the column fold).
TEST(Conv2dWgradWgmma, Tf32Route) {
  using kf::detail::conv2d_wgrad_tf32_preferred;
  // (c, r, s, stride_h, stride_w, pad_h, pad_w)
  EXPECT_TRUE(conv2d_wgrad_tf32_preferred(64, 3, 3, 1, 1, 1, 1));    // ResNet 3x3
  EXPECT_FALSE(conv2d_wgrad_tf32_preferred(3, 7, 7, 2, 2, 3, 3));    // the stem: x through the fold
  EXPECT_TRUE(conv2d_wgrad_tf32_preferred(4, 7, 7, 2, 2, 3, 3));     // 16-byte pixels: in place
  EXPECT_FALSE(conv2d_wgrad_tf32_preferred(66, 3, 3, 1, 1, 1, 1));   // C off 4: the fold
  EXPECT_TRUE(conv2d_wgrad_tf32_preferred(64, 1, 1, 2, 2, 0, 0));    // 1x1 strided: im2col
  EXPECT_TRUE(conv2d_wgrad_tf32_preferred(64, 1, 1, 1, 1, 1, 0));    // 1x1 padded: im2col
  EXPECT_TRUE(conv2d_wgrad_tf32_preferred(64, 3, 1, 1, 1, 1, 0));    // 3 x 1
  EXPECT_FALSE(conv2d_wgrad_tf32_preferred(256, 1, 1, 1, 1, 0, 0));  // x is the im2col matrix
}

}  // namespace
