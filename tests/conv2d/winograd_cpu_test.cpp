// SPDX-License-Identifier: Apache-2.0
// CPU tests of conv2d's Winograd F(2x2,3x3) steps (6 and 8): the transforms,
// which layers qualify, the refusals before any launch, the fused and workspace
// layouts and `best`'s table. Part of test_conv2d.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernelforge/conv.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/kernels/common/fast_divmod.cuh"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/kernels/conv2d/winograd_transforms.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"

namespace {

namespace ref = kf::reference;

using kf::test::expect_error;
using kf::test::fake;

// ---- Winograd F(2x2,3x3): transforms, qualification, layout, choice -------------

// A^T ((G g G^T) (.) (B^T d B)) A is the 2 x 2 cross-correlation of the 4 x 4
// tile d with the 3 x 3 filter g: in double, to roundoff (the transforms only
// add and halve, magnitudes here are O(10)).
TEST(Conv2dWinograd, TransformsComputeTheCorrelation) {
  const auto values = kf::test::random_vector<double>(25 * 200, 41);
  for (int trial = 0; trial < 200; ++trial) {
    const double* r = values.data() + trial * 25;
    double g[9], d[4][4], u[16], v[16], m[16], y[2][2];
    for (int e = 0; e < 9; ++e) g[e] = r[e];
    for (int e = 0; e < 16; ++e) d[e / 4][e % 4] = r[9 + e];
    kf::detail::winograd_filter_transform(g, u);
    kf::detail::winograd_input_transform(d, v);
    for (int b = 0; b < 16; ++b) m[b] = u[b] * v[b];
    kf::detail::winograd_output_transform(m, y);
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        double direct = 0;
        for (int rr = 0; rr < 3; ++rr) {
          for (int ss = 0; ss < 3; ++ss) direct += g[rr * 3 + ss] * d[i + rr][j + ss];
        }
        ASSERT_NEAR(y[i][j], direct, 1e-12) << "trial " << trial << " output (" << i << ", " << j << ")";
      }
    }
  }
  // Each filter tap and input pixel reaches the outputs it should: a unit
  // filter tap (r, s) and a unit pixel (i + r, j + s) give exactly 1 at (i, j).
  for (int tap = 0; tap < 9; ++tap) {
    for (int pix = 0; pix < 16; ++pix) {
      double g[9] = {}, d[4][4] = {}, u[16], v[16], m[16], y[2][2];
      g[tap] = 1;
      d[pix / 4][pix % 4] = 1;
      kf::detail::winograd_filter_transform(g, u);
      kf::detail::winograd_input_transform(d, v);
      for (int b = 0; b < 16; ++b) m[b] = u[b] * v[b];
      kf::detail::winograd_output_transform(m, y);
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          const bool hit = pix / 4 == i + tap / 3 && pix % 4 == j + tap % 3;
          EXPECT_EQ(y[i][j], hit ? 1.0 : 0.0) << "tap " << tap << " pixel " << pix;
        }
      }
    }
  }
}

// The filter gradient by the transposed transforms (winograd_transforms.hpp:
// winograd_dw_transforms<M>): dw = G^T [sum over the M x M output blocks of
// (A dy A^T) (.) (B^T d B)] G, d the (M + 2) x (M + 2) input tile the forward reads
// for the block, equals the direct sum dw[r][s] = sum over (p, q) of dy[p][q]
// x[p + r - ph][q + s - pw] (0 outside x) for layers whose output is not a whole
// number of blocks, at padding 0, 1 and 2: in double, to roundoff (tolerance).
template <int M>
void expect_transposed_transforms_compute_dw(std::uint64_t seed, double tolerance) {
  using transforms = kf::detail::winograd_dw_transforms<M>;
  constexpr int n = transforms::n, positions = transforms::positions;
  struct layer {
    int h, w, pad;
  };
  for (const layer L : {layer{7, 9, 1}, layer{9, 11, 1}, layer{8, 5, 1}, layer{9, 9, 0}, layer{13, 9, 0},
                        layer{6, 7, 2}, layer{3, 3, 1}}) {
    const int p_out = L.h + 2 * L.pad - 2, q_out = L.w + 2 * L.pad - 2;  // 3x3, stride 1
    const auto x = kf::test::random_vector<double>(static_cast<std::size_t>(L.h * L.w), seed);
    const auto dy = kf::test::random_vector<double>(static_cast<std::size_t>(p_out * q_out), seed + 1);
    const auto x_at = [&](int i, int j) { return i < 0 || j < 0 || i >= L.h || j >= L.w ? 0.0 : x[i * L.w + j]; };
    const auto dy_at = [&](int p, int q) { return p >= p_out || q >= q_out ? 0.0 : dy[p * q_out + q]; };
    double m[positions] = {};
    for (int tp = 0; tp < p_out; tp += M) {
      for (int tq = 0; tq < q_out; tq += M) {
        double d[n][n], g[M][M], u[positions], v[positions];
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < n; ++j) d[i][j] = x_at(tp - L.pad + i, tq - L.pad + j);
        }
        for (int i = 0; i < M; ++i) {
          for (int j = 0; j < M; ++j) g[i][j] = dy_at(tp + i, tq + j);
        }
        transforms::dy(g, u);
        transforms::input(d, v);
        for (int b = 0; b < positions; ++b) m[b] += u[b] * v[b];
      }
    }
    double dw[3][3];
    transforms::output(m, dw);
    for (int r = 0; r < 3; ++r) {
      for (int sc = 0; sc < 3; ++sc) {
        double direct = 0;
        for (int p = 0; p < p_out; ++p) {
          for (int q = 0; q < q_out; ++q) direct += dy_at(p, q) * x_at(p + r - L.pad, q + sc - L.pad);
        }
        EXPECT_NEAR(dw[r][sc], direct, tolerance)
            << "F(" << M << "x" << M << ") " << L.h << "x" << L.w << " pad " << L.pad << " tap " << r << sc;
      }
    }
  }
}

// F(2x2, 3x3): 4 x 4 tiles, 2 x 2 output blocks, 16 positions.
TEST(Conv2dWinograd, TransposedTransformsComputeTheFilterGradient) {
  expect_transposed_transforms_compute_dw<2>(43, 1e-11);
  // One unit output gradient and one unit input pixel: exactly 1 at the tap that
  // joins them, 0 at the other eight.
  for (int o = 0; o < 4; ++o) {
    for (int pix = 0; pix < 16; ++pix) {
      double g2[2][2] = {}, d[4][4] = {}, u[16], v[16], m[16], dw[3][3];
      g2[o / 2][o % 2] = 1;
      d[pix / 4][pix % 4] = 1;
      kf::detail::winograd_dy_transform(g2, u);
      kf::detail::winograd_input_transform(d, v);
      for (int b = 0; b < 16; ++b) m[b] = u[b] * v[b];
      kf::detail::winograd_filter_gradient_transform(m, dw);
      for (int r = 0; r < 3; ++r) {
        for (int sc = 0; sc < 3; ++sc) {
          const bool hit = pix / 4 == o / 2 + r && pix % 4 == o % 2 + sc;
          EXPECT_EQ(dw[r][sc], hit ? 1.0 : 0.0) << "output " << o << " pixel " << pix;
        }
      }
    }
  }
}

// F(4x4, 3x3): 6 x 6 tiles, 4 x 4 output blocks, 36 positions.
TEST(Conv2dWinograd, TransposedTransforms4x4ComputeTheFilterGradient) {
  expect_transposed_transforms_compute_dw<4>(45, 1e-10);
}

TEST(Conv2dWinograd, QualifiesOnly3x3Stride1Dilation1) {
  EXPECT_STREQ(kf::to_string(kf::conv2d_variant::winograd), "winograd");
  EXPECT_STREQ(kf::to_string(kf::conv2d_variant::winograd_fused), "winograd_fused");
  EXPECT_STREQ(kf::to_string(kf::conv2d_variant::implicit_gemm_pipelined), "implicit_gemm_pipelined");
  using kf::detail::conv2d_winograd_unsupported_reason;
  EXPECT_EQ(conv2d_winograd_unsupported_reason(3, 3, 1, 1, 1, 1), nullptr);
  EXPECT_STREQ(conv2d_winograd_unsupported_reason(5, 5, 1, 1, 1, 1), "the filter is not 3x3");
  EXPECT_STREQ(conv2d_winograd_unsupported_reason(3, 1, 1, 1, 1, 1), "the filter is not 3x3");
  EXPECT_STREQ(conv2d_winograd_unsupported_reason(3, 3, 2, 1, 1, 1), "the stride is not 1");
  EXPECT_STREQ(conv2d_winograd_unsupported_reason(3, 3, 1, 2, 1, 1), "the stride is not 1");
  EXPECT_STREQ(conv2d_winograd_unsupported_reason(3, 3, 1, 1, 1, 2), "the dilation is not 1");
}

TEST(Conv2dWinograd, UnsupportedLayersAreRefusedBeforeAnyLaunch) {
  float* x = fake(0x1000000);
  float* w = fake(0x2000000);
  float* y = fake(0x3000000);
  kf::conv2d_options o;
  o.variant = kf::conv2d_variant::winograd;
  kf::conv2d_params stride2{2, 3, 9, 9, 4, 3, 3, 2, 2, 1, 1};
  expect_error(kf::errc::unsupported, "stride 2 x 2", [&] { kf::conv2d_forward<float>(stride2, x, w, nullptr, y, o); });
  kf::conv2d_params dilated{2, 3, 9, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2};
  expect_error(kf::errc::unsupported, "dilation 2 x 2",
               [&] { kf::conv2d_forward<float>(dilated, x, w, nullptr, y, o); });
  kf::conv2d_params five{2, 3, 9, 9, 4, 5, 5, 1, 1, 2, 2};
  expect_error(kf::errc::unsupported, "filter 5 x 5", [&] { kf::conv2d_forward<float>(five, x, w, nullptr, y, o); });
  kf::conv2d_params stem{1, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3};
  expect_error(kf::errc::unsupported, "use implicit_gemm or best",
               [&] { kf::conv2d_forward<float>(stem, x, w, nullptr, y, o); });
  // Transformed tensors past int indexing (x itself is 2^30 elements): N 8, C 2048,
  // 256 x 256, pad 1 -> 8 x 128 x 128 = 2^17 tiles, V = 16 x 2048 x 2^17 = 2^32 floats.
  kf::conv2d_params wide{8, 2048, 256, 256, 1, 3, 3, 1, 1, 1, 1};
  expect_error(kf::errc::unsupported, "2^31", [&] { kf::conv2d_forward<float>(wide, x, w, nullptr, y, o); });
}

// Step 8 refuses the same layers, naming itself; its own limits are U's int
// indexing and the grid's y extent (64 filters per block).
TEST(Conv2dWinograd, FusedRefusesUnsupportedLayersBeforeAnyLaunch) {
  float* x = fake(0x1000000);
  float* w = fake(0x2000000);
  float* y = fake(0x3000000);
  kf::conv2d_options o;
  o.variant = kf::conv2d_variant::winograd_fused;
  kf::conv2d_params stride2{2, 3, 9, 9, 4, 3, 3, 2, 2, 1, 1};
  expect_error(kf::errc::unsupported, "conv2d_variant::winograd_fused (F(2x2,3x3)) computes 3x3 filters at stride 1",
               [&] { kf::conv2d_forward<float>(stride2, x, w, nullptr, y, o); });
  expect_error(kf::errc::unsupported, "stride 2 x 2", [&] { kf::conv2d_forward<float>(stride2, x, w, nullptr, y, o); });
  kf::conv2d_params dilated{2, 3, 9, 9, 4, 3, 3, 1, 1, 2, 2, 2, 2};
  expect_error(kf::errc::unsupported, "dilation 2 x 2",
               [&] { kf::conv2d_forward<float>(dilated, x, w, nullptr, y, o); });
  kf::conv2d_params five{2, 3, 9, 9, 4, 5, 5, 1, 1, 2, 2};
  expect_error(kf::errc::unsupported, "filter 5 x 5", [&] { kf::conv2d_forward<float>(five, x, w, nullptr, y, o); });
  kf::conv2d_params one_by_three{2, 3, 9, 9, 4, 1, 3, 1, 1, 0, 1};
  expect_error(kf::errc::unsupported, "filter 1 x 3",
               [&] { kf::conv2d_forward<float>(one_by_three, x, w, nullptr, y, o); });
  // K = 2^22 filters of 1 channel: 65536 blocks of 64 filters, one past gridDim.y's limit.
  kf::conv2d_params many_filters{1, 1, 4, 4, std::size_t{1} << 22, 3, 3, 1, 1, 1, 1};
  expect_error(kf::errc::unsupported, "65536 blocks",
               [&] { kf::conv2d_forward<float>(many_filters, x, w, nullptr, y, o); });
  // U = 16 x C x round_up(K, 4) = 16 x 2^20 x 2^7 = 2^31 floats (w: 9 x 2^27 < 2^31 elements).
  kf::conv2d_params wide_u{1, std::size_t{1} << 20, 1, 1, 128, 3, 3, 1, 1, 1, 1};
  expect_error(kf::errc::unsupported, "2147483648 floats",
               [&] { kf::conv2d_forward<float>(wide_u, x, w, nullptr, y, o); });
}

TEST(Conv2dWinograd, FusedLayout) {
  using kf::detail::make_conv2d_winograd_fused_layout;
  // N 3, C 5, K 7, P 9, Q 7: 5 x 4 tiles per image, 60 tiles -> 2 blocks of 32;
  // K 7 -> one block of 64 filters, U rows of 8 floats.
  const auto l = make_conv2d_winograd_fused_layout(3, 5, 7, 9, 7);
  EXPECT_EQ(l.tiles_h, 5u);
  EXPECT_EQ(l.tiles_w, 4u);
  EXPECT_EQ(l.tiles, 60u);
  EXPECT_EQ(l.k_ld, 8u);
  EXPECT_EQ(l.u_floats, 16u * 5 * 8);
  EXPECT_EQ(l.bytes(), 16u * 5 * 8 * sizeof(float));
  EXPECT_EQ(l.grid_x, 2u);
  EXPECT_EQ(l.grid_y, 1u);
  EXPECT_TRUE(l.launchable());
  // bench_conv's ResNet layers: N32 C64 56x56 K64 -> 25088 tiles, 784 x 1 blocks;
  // N32 C256 14x14 K256 -> 1568 tiles, 49 x 4 blocks.
  const auto first = make_conv2d_winograd_fused_layout(32, 64, 64, 56, 56);
  EXPECT_EQ(first.tiles, 25088u);
  EXPECT_EQ(first.grid_x, 784u);
  EXPECT_EQ(first.grid_y, 1u);
  const auto third = make_conv2d_winograd_fused_layout(32, 256, 256, 14, 14);
  EXPECT_EQ(third.grid_x, 49u);
  EXPECT_EQ(third.grid_y, 4u);
  // K = 65: a second block of filters; one output: one tile, one block.
  EXPECT_EQ(make_conv2d_winograd_fused_layout(1, 1, 65, 1, 1).grid_y, 2u);
  EXPECT_EQ(make_conv2d_winograd_fused_layout(1, 1, 65, 1, 1).grid_x, 1u);
  EXPECT_EQ(make_conv2d_winograd_fused_layout(1, 1, 65, 1, 1).k_ld, 68u);
  EXPECT_TRUE(make_conv2d_winograd_fused_layout(1, 1, 64 * 65535, 1, 1).launchable());
  EXPECT_FALSE(make_conv2d_winograd_fused_layout(1, 1, 64 * 65535 + 1, 1, 1).launchable());
  EXPECT_FALSE(make_conv2d_winograd_fused_layout(1, std::size_t{1} << 20, 128, 1, 1).launchable());
  EXPECT_TRUE(make_conv2d_winograd_fused_layout(1, std::size_t{1} << 20, 124, 1, 1).launchable());
}

TEST(Conv2dWinograd, WorkspaceLayout) {
  using kf::detail::make_conv2d_winograd_layout;
  // N 3, C 5, K 7, P 9, Q 7: 5 x 4 tiles per image, 60 tiles, rows of 60 (V, M)
  // and 8 (U) floats.
  const auto l = make_conv2d_winograd_layout(3, 5, 7, 9, 7);
  EXPECT_EQ(l.tiles_h, 5u);
  EXPECT_EQ(l.tiles_w, 4u);
  EXPECT_EQ(l.tiles, 60u);
  EXPECT_EQ(l.tiles_ld, 60u);
  EXPECT_EQ(l.c_ld, 8u);
  EXPECT_EQ(l.u_floats, 16u * 7 * 8);
  EXPECT_EQ(l.v_floats, 16u * 5 * 60);
  EXPECT_EQ(l.m_floats, 16u * 7 * 60);
  EXPECT_EQ(l.bytes(), (16u * 7 * 8 + 16u * 5 * 60 + 16u * 7 * 60) * sizeof(float));
  EXPECT_TRUE(l.indexable());
  // One output: one tile, padded to a row of 4.
  const auto one = make_conv2d_winograd_layout(1, 1, 1, 1, 1);
  EXPECT_EQ(one.tiles, 1u);
  EXPECT_EQ(one.tiles_ld, 4u);
  EXPECT_EQ(one.c_ld, 4u);
  EXPECT_FALSE(make_conv2d_winograd_layout(8, 2048, 1, 256, 256).indexable());
}

TEST(Conv2dWinograd, BestTableAndTiles) {
  using kf::detail::choose_conv2d_exact_kernel;
  using kf::detail::conv2d_exact_kernel;
  using kf::detail::conv2d_winograd_min_channels;
  using kf::detail::conv2d_winograd_min_filters;
  const conv2d_exact_kernel not_winograd = kf::detail::conv2d_best_uses_pipelined
                                               ? conv2d_exact_kernel::implicit_gemm_pipelined
                                               : conv2d_exact_kernel::implicit_gemm;
  using kf::detail::conv2d_winograd_expected_to_win;
  const std::size_t c = conv2d_winograd_min_channels, k = conv2d_winograd_min_filters;
  EXPECT_TRUE(conv2d_winograd_expected_to_win(c, k, 3, 3, 1, 1, 1, 1));
  EXPECT_FALSE(conv2d_winograd_expected_to_win(c - 1, k, 3, 3, 1, 1, 1, 1));
  EXPECT_FALSE(conv2d_winograd_expected_to_win(c, k - 1, 3, 3, 1, 1, 1, 1));
  EXPECT_FALSE(conv2d_winograd_expected_to_win(c, k, 3, 3, 2, 2, 1, 1));
  EXPECT_FALSE(conv2d_winograd_expected_to_win(c, k, 3, 3, 1, 1, 2, 2));
  EXPECT_FALSE(conv2d_winograd_expected_to_win(c, k, 7, 7, 2, 2, 1, 1));  // the stem
  // best takes Winograd only where it is expected to win, and only once switched
  // on; the fused step 8 first when its switch is on.
  const conv2d_exact_kernel on_3x3 = kf::detail::conv2d_best_uses_winograd_fused ? conv2d_exact_kernel::winograd_fused
                                     : kf::detail::conv2d_best_uses_winograd     ? conv2d_exact_kernel::winograd
                                                                                 : not_winograd;
  EXPECT_EQ(choose_conv2d_exact_kernel(c, k, 3, 3, 1, 1, 1, 1), on_3x3);
  EXPECT_EQ(choose_conv2d_exact_kernel(c - 1, k, 3, 3, 1, 1, 1, 1), not_winograd);
  EXPECT_EQ(choose_conv2d_exact_kernel(c, k, 7, 7, 2, 2, 1, 1), not_winograd);
  // Step 8 only where its blocks keep 9/10 of their waves busy (132 resident on
  // the H200): the ResNet layers' 784 and 392 blocks do, 196 does not.
  using kf::detail::conv2d_winograd_fused_fills_waves;
  using kf::detail::make_conv2d_winograd_fused_layout;
  const auto blocks = [](std::size_t c_k, std::size_t hw) {
    const auto l = make_conv2d_winograd_fused_layout(32, c_k, c_k, hw, hw);
    return l.grid_x * l.grid_y;
  };
  EXPECT_EQ(blocks(64, 56), 784u);
  EXPECT_EQ(blocks(128, 28), 392u);
  EXPECT_EQ(blocks(256, 14), 196u);
  EXPECT_TRUE(conv2d_winograd_fused_fills_waves(784, 132));
  EXPECT_TRUE(conv2d_winograd_fused_fills_waves(392, 132));
  EXPECT_FALSE(conv2d_winograd_fused_fills_waves(196, 132));
  EXPECT_TRUE(conv2d_winograd_fused_fills_waves(132, 132));
  EXPECT_TRUE(conv2d_winograd_fused_fills_waves(119, 132));   // 0.90 of one wave
  EXPECT_FALSE(conv2d_winograd_fused_fills_waves(118, 132));  // 0.89
  EXPECT_FALSE(conv2d_winograd_fused_fills_waves(0, 132));
  EXPECT_FALSE(conv2d_winograd_fused_fills_waves(784, 0));
  using kf::detail::choose_conv2d_winograd_tile;
  using kf::detail::conv2d_gemm_tile;
  const int h200_sms = 132;  // a wave: 264 blocks
  // N32 C256 14x14 K256: 1568 tiles -> 13 x 2 x 16 = 416 blocks of 128 x 128.
  EXPECT_EQ(choose_conv2d_winograd_tile(1568, 256, h200_sms), conv2d_gemm_tile::m128_n128);
  // N32 C64 56x56 K64: K <= 64 -> 128 x 64.
  EXPECT_EQ(choose_conv2d_winograd_tile(25088, 64, h200_sms), conv2d_gemm_tile::m128_n64);
  // 98 tiles, K 256: 16 x 2 = 32 blocks of 128 x 128, 64 of 128 x 64 -> 64 x 64.
  EXPECT_EQ(choose_conv2d_winograd_tile(98, 256, h200_sms), conv2d_gemm_tile::m64_n64);
}

}  // namespace
