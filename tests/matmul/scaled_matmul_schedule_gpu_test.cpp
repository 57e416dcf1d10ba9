// SPDX-License-Identifier: Apache-2.0
// The FP8 wgmma kernel's schedules on the GPU (scaled/03_wgmma.cuh; the rest of
// kf::scaled_matmul: scaled_matmul_gpu_test.cpp, the same binary): the
// two-partials tile (128 x 128 in clusters of 2), forced, at the edges of its
// tiles and k-loop and bit for bit against the 128 x 192 tile, and by shape in
// every scaling mode (blockwise: one set); the persistent grid's last round split over
// the clusters that would wait, at 2, 3 and 4 parts on this GPU's grid.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "kernelforge/kernelforge.hpp"
#include "kernelforge/kernels/common/last_round.hpp"
#include "scaled_matmul_case.hpp"
#include "scaled_matmul_gpu_support.hpp"
#include "test_support.hpp"

namespace {

using namespace kf::test::scaled_gpu;  // scaled_matmul_gpu_support.hpp: its helpers and the names both files use

template <class T>
class ScaledMatmulTwoPartials : public ::testing::Test {};
TYPED_TEST_SUITE(ScaledMatmulTwoPartials, Combos, ComboNames);

// The two-partials tile (scaled/03_wgmma.cuh: 128 x 128 in clusters of 2), forced (best takes it by shape from
// k = 2048 where the wide tile would run: wgmma/policy.hpp, scaled_two_partials_min_k), in every scaling mode, at
// shapes crossing every edge of its tiles -- m odd, n = 127, 129 and 257 (a last tile of one column), 1 x 1 -- and
// of its k-loop, unrolled by 2: k = 127 and 129 (one and two k-steps: its two tails), 300 (three: the loop once,
// then one), 385 (four: once, then two), 1000, 4096. D from registers (n not whole 16-byte units, or beta != 0) and
// staged (n = 280, 296: two whole TMA chunks of 64 a tile, then a ragged third tile), with bias, ReLU and amax, or
// the amax alone, or nothing; every operand pair and D type.
scaled_case two_partials_case(std::size_t m, std::size_t n, std::size_t k, fp8_scaling mode) {
  scaled_case c;
  c.m = m, c.n = n, c.k = k, c.mode = mode;
  c.tile = kf::detail::scaled_wgmma_tile::two_partials;
  return c;
}

TYPED_TEST(ScaledMatmulTwoPartials, Tiles) {
  KF_SKIP_WITHOUT_FP8();
  if (!wgmma_device()) GTEST_SKIP() << "the wgmma step needs compute capability 9.0";
  struct shape {
    std::size_t m, n, k;
  };
  const shape shapes[] = {{1, 1, 129},     {1, 1, 4096},     {129, 127, 127}, {257, 129, 129},
                          {300, 257, 385}, {131, 280, 1000}, {64, 296, 4096}, {383, 296, 300}};
  std::uint64_t seed = 900;
  for (fp8_scaling mode : {fp8_scaling::per_tensor, fp8_scaling::rowwise, fp8_scaling::blockwise}) {
    for (const shape& s : shapes) {
      scaled_case c = two_partials_case(s.m, s.n, s.k, mode);
      c.bias = c.relu = c.amax = true;
      EXPECT_TRUE(run<TypeParam>(c, seed++, scaled_matmul_variant::wgmma));
      c.beta = 0.5f;
      c.alpha = 1.5f;
      EXPECT_TRUE(run<TypeParam>(c, seed++, scaled_matmul_variant::wgmma));
    }
    for (const auto [bias, relu, amax] : {std::tuple{false, false, true}, std::tuple{false, false, false}}) {
      scaled_case c = two_partials_case(383, 296, 640, mode);
      c.bias = bias;
      c.relu = relu;
      c.amax = amax;
      EXPECT_TRUE(run<TypeParam>(c, seed++, scaled_matmul_variant::wgmma));
    }
  }
}

// The two-partials tile as best takes it by shape where 128-wide tiles fill the GPU but 192-wide ones would
// be too few (11 x 9 tiles of 128 x 128 on 132 SMs: wgmma/policy.hpp), two tile rows or more (clusters of 2):
// every scaling mode with two partial sets (blockwise: the block scales in the promotion), with bias, ReLU and amax,
// 16-bit D staged after the k-steps (no overlapped store beside three sets).
TEST(ScaledMatmulWgmma, TwoPartialsTileByShape) {
  KF_SKIP_WITHOUT_FP8();
  if (!wgmma_device()) GTEST_SKIP() << "the wgmma step needs compute capability 9.0";
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  const std::size_t m = 11 * 128 - 3, n = 9 * 128 - 5, k = 300;
  std::uint64_t seed = 2900;
  for (fp8_scaling mode : {fp8_scaling::per_tensor, fp8_scaling::rowwise, fp8_scaling::blockwise}) {
    if (kf::detail::choose_scaled_block_n(m, n, k, sms) != 128) {
      GTEST_SKIP() << "this GPU's " << sms << " SMs take another tile at " << m << " x " << n;
    }
    scaled_case c;
    c.m = m, c.n = n, c.k = k, c.mode = mode;
    c.bias = c.relu = c.amax = true;
    using combo = std::tuple<__nv_fp8_e4m3, __nv_fp8_e4m3, __nv_bfloat16>;
    EXPECT_TRUE(run<combo>(c, seed++, scaled_matmul_variant::wgmma)) << kf::to_string(mode);
  }
}

// The 128 x 64 tile (what best runs where 128-wide tiles would not fill the GPU) keeps two partial sets in
// every scaling mode (scaled/03_wgmma.cuh; blockwise: the block scales in the promotion): 1024 x 200 (32
// tiles of 128 x 64) at k = 127, 129, 300, 385 (one to four k-steps: the two-set loop's tails and one pass
// of its body) and 1024, with bias, ReLU and amax; 16-bit D staged (its chunks stored during the k-steps of
// a CTA's next tile or after its last).
TYPED_TEST(ScaledMatmulTwoPartials, NarrowTile) {
  KF_SKIP_WITHOUT_FP8();
  if (!wgmma_device()) GTEST_SKIP() << "the wgmma step needs compute capability 9.0";
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  ASSERT_EQ(kf::detail::choose_scaled_block_n(1024, 200, 1024, sms), 64) << "not the 128 x 64 tile";
  std::uint64_t seed = 1900;
  for (fp8_scaling mode : {fp8_scaling::per_tensor, fp8_scaling::rowwise, fp8_scaling::blockwise}) {
    for (const std::size_t k : {127u, 129u, 300u, 385u, 1024u}) {
      scaled_case c;
      c.m = 1024, c.n = 200, c.k = k, c.mode = mode;
      c.bias = c.relu = c.amax = true;
      EXPECT_TRUE(run<TypeParam>(c, seed++, scaled_matmul_variant::wgmma));
    }
  }
}

// Two partial sets change when each k-step's products are promoted, not what is added or in what
// order: D equals the 128 x 192 tile's bit for bit (float D, so that no rounding to D hides a
// difference), in every scaling mode (blockwise: the same scale products in the same FMAs), with ragged tiles
// and k.
TEST(ScaledMatmulWgmma, TwoPartialsMatchWideTile) {
  KF_SKIP_WITHOUT_FP8();
  if (!wgmma_device()) GTEST_SKIP() << "the wgmma step needs compute capability 9.0";
  using fp8 = __nv_fp8_e4m3;
  const std::size_t m = 300, n = 296, k = 1000;
  const std::vector<fp8> a = kf::test::random_vector<fp8>(m * k, 950, 0.25, 8.0);
  const std::vector<fp8> b = kf::test::random_vector<fp8>(n * k, 951, 0.25, 8.0);
  kf::device_buffer<fp8> da = kf::to_device(a), db = kf::to_device(b);
  for (fp8_scaling mode : {fp8_scaling::per_tensor, fp8_scaling::rowwise, fp8_scaling::blockwise}) {
    const std::vector<float> sa = kf::test::random_scales(kf::test::scale_count_a(mode, m, k), 952);
    const std::vector<float> sb = kf::test::random_scales(kf::test::scale_count_b(mode, n, k), 953);
    kf::device_buffer<float> dsa = kf::to_device(sa), dsb = kf::to_device(sb);
    const kf::fp8_scales scales{mode, dsa.data(), dsb.data()};
    std::vector<float> d[2];
    int i = 0;
    for (const auto tile : {kf::detail::scaled_wgmma_tile::wide, kf::detail::scaled_wgmma_tile::two_partials}) {
      kf::device_buffer<float> dd(m * n);
      kf::detail::scaled_matmul_forced_tile(op::none, op::transpose, m, n, k, 1.0f, da.data(), k, db.data(), k, scales,
                                            0.0f, dd.data(), n, kf::scaled_matmul_options{}, tile);
      d[i++] = kf::to_host(dd);
    }
    std::size_t differ = 0, first = 0;
    for (std::size_t e = 0; e < m * n; ++e) {
      if (std::memcmp(&d[0][e], &d[1][e], sizeof(float)) != 0 && differ++ == 0) first = e;
    }
    EXPECT_EQ(differ, 0u) << kf::to_string(mode) << ": first at row " << first / n << ", column " << first % n << ": "
                          << d[0][first] << " (128 x 192) vs " << d[1][first] << " (two partials)";
  }
}

// The persistent grid's last round, split: products whose last round of cluster tiles on this GPU
// would leave most clusters idle, so that each of its tiles runs as 2, 3 and 4 parts on the clusters
// that would wait (common/last_round.hpp, plan_last_round; the grid: a cluster of 2 CTAs per 2 SMs,
// one CTA an SM by the kernel's ~200 KB of shared memory). One row of cluster tiles (m = 250: its
// second tile row ragged), n ragged, k = 2085 (17 k-steps of 128, the last ragged); the 128 x 192
// tile in every scaling mode and the two-partials one per-tensor and blockwise; the bias and the amax on, float D
// NaN-poisoned. Every element of D must be written, the amax must be the largest |D| stored (the
// parts that do not store add nothing), and a sample of D (every 5th row, every 31st column and the
// last) must match the double reference within check_scaled_matmul's bound.
TEST(ScaledMatmulWgmma, LastRoundSplitOverIdleClusters) {
  KF_SKIP_WITHOUT_FP8();
  if (!wgmma_device()) GTEST_SKIP() << "the wgmma step needs compute capability 9.0";
  using fp8 = __nv_fp8_e4m3;
  using kf::detail::scaled_wgmma_tile;
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  const auto grid = static_cast<std::size_t>(sms) / 2;
  const std::size_t m = 250, k = 2085, k_steps = 17, kb = (k + 127) / 128;
  std::uint64_t seed = 7000;
  for (const scaled_wgmma_tile tile : {scaled_wgmma_tile::wide, scaled_wgmma_tile::two_partials}) {
    const std::size_t block_n =
        tile == scaled_wgmma_tile::wide ? kf::detail::scaled_wide_block_n : kf::detail::scaled_two_partials_block_n;
    for (const fp8_scaling mode : {fp8_scaling::per_tensor, fp8_scaling::rowwise, fp8_scaling::blockwise}) {
      if (tile == scaled_wgmma_tile::two_partials && mode == fp8_scaling::rowwise) continue;
      for (const std::size_t parts : {2u, 3u, 4u}) {
        const std::size_t tiles = grid + grid / parts;  // grid / parts cluster tiles in the last round
        const std::size_t n = block_n * tiles - 5;
        ASSERT_EQ(kf::detail::plan_last_round(tiles, grid, k_steps, 1, kf::detail::scaled_last_round_max_parts,
                                              kf::detail::scaled_last_round_min_k_steps)
                      .parts,
                  parts)
            << "not split as meant";
        SCOPED_TRACE(kf::to_string(mode) +
                     std::string(tile == scaled_wgmma_tile::wide ? ", 128 x 192" : ", 128 x 128 two partials") + ", " +
                     std::to_string(parts) + " parts");
        const std::vector<fp8> a = kf::test::random_vector<fp8>(m * k, seed, 0.25, 8.0);
        const std::vector<fp8> b = kf::test::random_vector<fp8>(n * k, seed + 1, 0.25, 8.0);
        const std::vector<float> sa = kf::test::random_scales(kf::test::scale_count_a(mode, m, k), seed + 2);
        const std::vector<float> sb = kf::test::random_scales(kf::test::scale_count_b(mode, n, k), seed + 3);
        const std::vector<float> bias = kf::test::random_vector<float>(n, seed + 4);
        seed += 5;
        kf::device_buffer<fp8> da = kf::to_device(a), db = kf::to_device(b);
        kf::device_buffer<float> dsa = kf::to_device(sa), dsb = kf::to_device(sb), dbias = kf::to_device(bias);
        kf::device_buffer<float> dd(m * n), damax(1);
        kf::test::poison(dd.data(), dd.size_bytes());
        kf::test::poison(damax.data(), damax.size_bytes());
        const kf::fp8_scales scales{mode, dsa.data(), dsb.data()};
        kf::scaled_matmul_options options;
        options.bias = dbias.data();
        options.amax = damax.data();
        kf::detail::scaled_matmul_forced_tile(op::none, op::transpose, m, n, k, 1.0f, da.data(), k, db.data(), k,
                                              scales, 0.0f, dd.data(), n, options, tile);
        const std::vector<float> d = kf::to_host(dd);
        const float amax = kf::to_host(damax)[0];
        float largest = 0.0f;
        std::size_t unwritten = 0;
        for (std::size_t e = 0; e < m * n; ++e) {
          if (!std::isfinite(d[e])) {
            if (unwritten++ == 0) ADD_FAILURE() << "D(" << e / n << ", " << e % n << ") = " << d[e];
          } else {
            largest = std::max(largest, std::fabs(d[e]));
          }
        }
        EXPECT_EQ(unwritten, 0u);
        EXPECT_EQ(amax, largest) << "the amax is not the largest |D| stored";
        std::vector<std::size_t> columns;
        for (std::size_t c = 0; c < n; c += 31) columns.push_back(c);
        columns.push_back(n - 1);
        std::size_t bad = 0;
        for (std::size_t r = 0; r < m; r += 5) {
          for (const std::size_t c : columns) {
            double sum = 0.0, scale = 0.0;
            for (std::size_t p = 0; p < k; ++p) {
              const double t =
                  kf::reference::scale_of_a(scales, sa.data(), r, p, kb) * kf::reference::to_double(a[r * k + p]) *
                  kf::reference::scale_of_b(scales, sb.data(), p, c, kb) * kf::reference::to_double(b[c * k + p]);
              sum += t;
              scale += std::fabs(t);
            }
            const double want = sum + bias[c];
            const double bound =
                ((4.0 * std::sqrt(static_cast<double>(k)) + 8.0) * std::ldexp(1.0, -23) + std::ldexp(1.0, -11)) *
                    scale +
                2.0 * kf::test::unit_roundoff<float>() * std::fabs(want);
            if (!(std::fabs(d[r * n + c] - want) <= bound) && bad++ < 5) {
              ADD_FAILURE() << "D(" << r << ", " << c << ") = " << d[r * n + c] << ", want " << want;
            }
          }
        }
        EXPECT_EQ(bad, 0u);
      }
    }
  }
}

}  // namespace
