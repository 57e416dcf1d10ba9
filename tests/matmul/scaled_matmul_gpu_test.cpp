// SPDX-License-Identifier: Apache-2.0
// kf::scaled_matmul on the GPU (skips without one, or below compute capability
// 8.9), best (the wgmma step on Hopper) and naive: every operand pair x output
// type x scaling mode against the double
// reference of the dequantized operands (scaled_matmul_case.hpp), at shapes that
// cross the 128-long promotion / scale blocks of k and of n (k = 127, 129, 255,
// 385, 1031; n = 129, 257), with every transpose, padded and misaligned
// storage, the epilogue (beta, bias, ReLU), the amax, NaN inputs and saturated
// inputs; empty shapes (m, n or k = 0).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "kernelforge/kernelforge.hpp"
#include "kernelforge/kernels/common/last_round.hpp"
#include "scaled_matmul_case.hpp"
#include "test_support.hpp"

namespace {

using kf::fp8_scaling;
using kf::op;
using kf::scaled_matmul_variant;
using kf::test::scaled_case;

bool fp8_device() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  return major * 10 + minor >= 89;
}

/// The variant the wgmma tests force: wgmma on compute capability 9.0 (it throws
/// rather than fall back, so a silent fallback cannot pass), else best.
scaled_matmul_variant wgmma_or_best() {
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return scaled_matmul_variant::best;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  return major == 9 ? scaled_matmul_variant::wgmma : scaled_matmul_variant::best;
}

/// Compute capability 9.0: the wgmma step runs (a forced tile throws errc::unsupported elsewhere).
bool wgmma_device() {
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  return major == 9;
}

#define KF_SKIP_WITHOUT_FP8()                                                       \
  do {                                                                              \
    KF_SKIP_WITHOUT_GPU();                                                          \
    if (!fp8_device()) GTEST_SKIP() << "FP8 needs compute capability 8.9 or newer"; \
  } while (0)

template <class T>
class ScaledMatmul : public ::testing::Test {};

using Combos =
    ::testing::Types<std::tuple<__nv_fp8_e4m3, __nv_fp8_e4m3, __nv_bfloat16>,
                     std::tuple<__nv_fp8_e4m3, __nv_fp8_e4m3, __half>, std::tuple<__nv_fp8_e4m3, __nv_fp8_e4m3, float>,
                     std::tuple<__nv_fp8_e4m3, __nv_fp8_e5m2, __nv_bfloat16>,
                     std::tuple<__nv_fp8_e4m3, __nv_fp8_e5m2, __half>, std::tuple<__nv_fp8_e4m3, __nv_fp8_e5m2, float>,
                     std::tuple<__nv_fp8_e5m2, __nv_fp8_e4m3, __nv_bfloat16>,
                     std::tuple<__nv_fp8_e5m2, __nv_fp8_e4m3, __half>, std::tuple<__nv_fp8_e5m2, __nv_fp8_e4m3, float>>;

struct ComboNames {
  template <class T>
  static std::string GetName(int) {
    using TD = std::tuple_element_t<2, T>;
    const char* d = std::is_same_v<TD, float> ? "f32" : std::is_same_v<TD, __half> ? "f16" : "bf16";
    return std::string(kf::test::fp8_name<std::tuple_element_t<0, T>>()) + "_" +
           kf::test::fp8_name<std::tuple_element_t<1, T>>() + "_" + d;
  }
};
TYPED_TEST_SUITE(ScaledMatmul, Combos, ComboNames);

template <class Combo>
::testing::AssertionResult run(const scaled_case& c, std::uint64_t seed,
                               scaled_matmul_variant v = scaled_matmul_variant::best) {
  using TA = std::tuple_element_t<0, Combo>;
  using TB = std::tuple_element_t<1, Combo>;
  using TD = std::tuple_element_t<2, Combo>;
  return kf::test::check_scaled_matmul<TA, TB, TD>(c, v, seed);
}

constexpr fp8_scaling modes[] = {fp8_scaling::per_tensor, fp8_scaling::rowwise, fp8_scaling::blockwise};

// Shapes that cross the 128-long blocks of k (promotion, blockwise scales) and of n (B's 128 x 128 scale blocks).
TYPED_TEST(ScaledMatmul, EveryModeAcrossBlocks) {
  KF_SKIP_WITHOUT_FP8();
  struct shape {
    std::size_t m, n, k;
  };
  const shape shapes[] = {{1, 1, 1}, {1, 1, 129}, {33, 65, 17}, {127, 129, 255}, {64, 257, 385}, {5, 130, 1031}};
  std::uint64_t seed = 1;
  for (fp8_scaling mode : modes) {
    for (const shape& s : shapes) {
      scaled_case c;
      c.m = s.m;
      c.n = s.n;
      c.k = s.k;
      c.mode = mode;
      EXPECT_TRUE(run<TypeParam>(c, seed++));
      c.trans_a = op::transpose;  // and the layout FP8 tensor cores do not read directly (repacked)
      c.trans_b = op::none;
      EXPECT_TRUE(run<TypeParam>(c, seed++, scaled_matmul_variant::naive));
      EXPECT_TRUE(run<TypeParam>(c, seed++, wgmma_or_best()));
    }
  }
}

// The wgmma step's tiles (wgmma_sm90a only): several tile rows in clusters of 2
// sharing B with a ragged last cluster (300 rows: 3 tile rows), 64- and 128-wide
// tiles (by shape), ragged n and k, D through the staged (TMA) epilogue (n a
// multiple of 16 bytes, beta 0) and from registers (beta != 0), blockwise
// scales across tiles of 64 columns (two tiles share a B scale block).
TYPED_TEST(ScaledMatmul, WgmmaTiles) {
  KF_SKIP_WITHOUT_FP8();
  struct shape {
    std::size_t m, n, k;
  };
  const shape shapes[] = {{300, 264, 1000}, {129, 96, 384}, {257, 200, 130}};
  std::uint64_t seed = 500;
  for (fp8_scaling mode : modes) {
    for (const shape& s : shapes) {
      scaled_case c;
      c.m = s.m;
      c.n = s.n;
      c.k = s.k;
      c.mode = mode;
      c.bias = c.relu = c.amax = true;
      EXPECT_TRUE(run<TypeParam>(c, seed++, wgmma_or_best()));
      c.beta = 0.5f;
      c.alpha = 2.0f;
      EXPECT_TRUE(run<TypeParam>(c, seed++, wgmma_or_best()));
    }
  }
}

// The mma.sync step (compute capability 8.9+; forced, so it throws rather than
// fall back): TN with 16-byte aligned rows (pad makes k + pad a multiple of 16),
// tiles crossing m, n and k (k cut inside a 16-byte chunk: 130, 1000), several
// promotion blocks, every mode, the epilogue.
TYPED_TEST(ScaledMatmul, MmaSyncTiles) {
  KF_SKIP_WITHOUT_FP8();
  struct shape {
    std::size_t m, n, k, pad;
  };
  const shape shapes[] = {{300, 264, 1000, 8}, {129, 96, 384, 0}, {257, 200, 130, 14}, {1, 1, 16, 0}};
  std::uint64_t seed = 700;
  for (fp8_scaling mode : modes) {
    for (const shape& s : shapes) {
      scaled_case c;
      c.m = s.m;
      c.n = s.n;
      c.k = s.k;
      c.pad = s.pad;
      c.mode = mode;
      c.bias = c.relu = c.amax = true;
      EXPECT_TRUE(run<TypeParam>(c, seed++, scaled_matmul_variant::mma_sync));
      c.beta = 0.5f;
      EXPECT_TRUE(run<TypeParam>(c, seed++, scaled_matmul_variant::mma_sync));
    }
  }
}

// The persistent walk (more cluster tiles than the GPU holds at once: 1536^2 in
// 128 x 128 tiles is 72 clusters of 2) and one tile row of 128 x 128 tiles (cluster of 1).
TEST(ScaledMatmulWgmma, PersistentAndSingleRow) {
  KF_SKIP_WITHOUT_FP8();
  scaled_case c;
  c.m = 1536;
  c.n = 1536;
  c.k = 256;
  c.mode = fp8_scaling::blockwise;
  c.amax = true;
  EXPECT_TRUE((kf::test::check_scaled_matmul<__nv_fp8_e4m3, __nv_fp8_e4m3, __nv_bfloat16>(c, wgmma_or_best(), 600)));
  c.mode = fp8_scaling::rowwise;
  EXPECT_TRUE((kf::test::check_scaled_matmul<__nv_fp8_e5m2, __nv_fp8_e4m3, float>(c, wgmma_or_best(), 601)));
  c.m = 128;
  c.n = 128 * 110;
  c.k = 200;
  c.mode = fp8_scaling::per_tensor;
  EXPECT_TRUE((kf::test::check_scaled_matmul<__nv_fp8_e4m3, __nv_fp8_e5m2, __half>(c, wgmma_or_best(), 602)));
}

// The 128 x 192 tiles (choose_scaled_block_n takes them for 2900 x 4466 on 132 SMs:
// 23 x 24 tiles, pinned by the CPU tuning test), every scaling mode: a ragged last
// cluster (23 tile rows), ragged last tile column (4466 = 23 x 192 + 50) and k
// (130: two promotion blocks, the second of 2 columns). Blockwise, the even tile
// columns cross a 128-column block of B's scales 128 columns in, the odd ones 64
// columns in, and the last (from column 4416) has no next block inside D
// (next_b_scale_block_group). 16-bit D through the staged epilogue after the tile,
// with each functor the call can ask for (bias, ReLU, both, neither) and the amax
// taken from the stored pairs; float D staged, and from registers with beta.
TEST(ScaledMatmulWgmma, WideTiles) {
  KF_SKIP_WITHOUT_FP8();
  scaled_case c;
  c.m = 2900;
  c.n = 4466;
  c.k = 130;
  c.pad = 14;  // rows of 144 bytes: 16-byte aligned, read in place
  std::uint64_t seed = 610;
  c.bias = c.relu = c.amax = true;
  for (fp8_scaling mode : {fp8_scaling::per_tensor, fp8_scaling::blockwise}) {  // bf16 D staged
    c.mode = mode;
    EXPECT_TRUE(
        (kf::test::check_scaled_matmul<__nv_fp8_e4m3, __nv_fp8_e4m3, __nv_bfloat16>(c, wgmma_or_best(), seed++)));
  }
  c.beta = 0.5f;
  c.alpha = 1.5f;
  for (fp8_scaling mode : {fp8_scaling::rowwise, fp8_scaling::blockwise}) {  // float D from registers (beta)
    c.mode = mode;
    EXPECT_TRUE((kf::test::check_scaled_matmul<__nv_fp8_e4m3, __nv_fp8_e5m2, float>(c, wgmma_or_best(), seed++)));
  }
  // Blockwise, staged: each functor, the amax with and without a bias and ReLU, float D.
  c.mode = fp8_scaling::blockwise;
  c.beta = 0.0f;
  c.alpha = 0.75f;
  for (const auto [bias, relu, amax] : {std::tuple{true, false, false}, std::tuple{false, true, true},
                                        std::tuple{false, false, true}, std::tuple{false, false, false}}) {
    c.bias = bias;
    c.relu = relu;
    c.amax = amax;
    EXPECT_TRUE((kf::test::check_scaled_matmul<__nv_fp8_e5m2, __nv_fp8_e4m3, __half>(c, wgmma_or_best(), seed++)));
  }
  c.bias = c.relu = c.amax = true;
  EXPECT_TRUE((kf::test::check_scaled_matmul<__nv_fp8_e4m3, __nv_fp8_e4m3, float>(c, wgmma_or_best(), seed++)));
  // A NaN in op(A)'s row 2000 (tile row 15): D's row and the amax are NaN, taken from the packed pairs.
  c.nan_row = 2000;
  EXPECT_TRUE((kf::test::check_scaled_matmul<__nv_fp8_e4m3, __nv_fp8_e4m3, __nv_bfloat16>(c, wgmma_or_best(), seed++)));
}

// The 128 x 144 two-partials tile (scaled/03_wgmma.cuh), forced (best takes it by shape from k = 2048
// where the wide tile would run: wgmma/policy.hpp, scaled_two_partials_min_k), per-tensor and rowwise, at shapes
// crossing every edge of its tiles -- m odd, n = 143, 145 and 289 (a last tile of one column), 1 x 1 -- and of its
// k-loop, unrolled by 2: k = 127 and 129 (one and two k-steps: its two tails), 300 (three: the loop once, then one),
// 385 (four: once, then two), 1000, 4096. D from registers (n not whole 16-byte units, or beta != 0) and staged (n =
// 280, 296: two TMA chunks a tile and its last 16 columns from registers), with bias, ReLU and amax, or the amax alone,
// or nothing; every operand pair and D type.
scaled_case two_partials_case(std::size_t m, std::size_t n, std::size_t k, fp8_scaling mode) {
  scaled_case c;
  c.m = m, c.n = n, c.k = k, c.mode = mode;
  c.tile = kf::detail::scaled_wgmma_tile::two_partials;
  return c;
}

TYPED_TEST(ScaledMatmul, TwoPartialsTiles) {
  KF_SKIP_WITHOUT_FP8();
  if (!wgmma_device()) GTEST_SKIP() << "the wgmma step needs compute capability 9.0";
  struct shape {
    std::size_t m, n, k;
  };
  const shape shapes[] = {{1, 1, 129},     {1, 1, 4096},     {129, 143, 127}, {257, 145, 129},
                          {300, 289, 385}, {131, 280, 1000}, {64, 296, 4096}, {383, 296, 300}};
  std::uint64_t seed = 900;
  for (fp8_scaling mode : {fp8_scaling::per_tensor, fp8_scaling::rowwise}) {
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

// Two partial sets change when each k-step's products are promoted, not what is added or in what
// order: D equals the 128 x 192 tile's bit for bit (float D, so that no rounding to D hides a
// difference), per-tensor and rowwise, with ragged tiles and k.
TEST(ScaledMatmulWgmma, TwoPartialsMatchWideTile) {
  KF_SKIP_WITHOUT_FP8();
  if (!wgmma_device()) GTEST_SKIP() << "the wgmma step needs compute capability 9.0";
  using fp8 = __nv_fp8_e4m3;
  const std::size_t m = 300, n = 296, k = 1000;
  const std::vector<fp8> a = kf::test::random_vector<fp8>(m * k, 950, 0.25, 8.0);
  const std::vector<fp8> b = kf::test::random_vector<fp8>(n * k, 951, 0.25, 8.0);
  kf::device_buffer<fp8> da = kf::to_device(a), db = kf::to_device(b);
  for (fp8_scaling mode : {fp8_scaling::per_tensor, fp8_scaling::rowwise}) {
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
                          << d[0][first] << " (128 x 192) vs " << d[1][first] << " (128 x 144)";
  }
}

// The persistent grid's last round, split: products whose last round of cluster tiles on this GPU
// would leave most clusters idle, so that each of its tiles runs as 2, 3 and 4 parts on the clusters
// that would wait (common/last_round.hpp, plan_last_round; the grid: a cluster of 2 CTAs per 2 SMs,
// one CTA an SM by the kernel's ~200 KB of shared memory). One row of cluster tiles (m = 250: its
// second tile row ragged), n ragged, k = 2085 (17 k-steps of 128, the last ragged); the 128 x 192
// tile in every scaling mode and the 128 x 144 one per-tensor; the bias and the amax on, float D
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
      if (tile == scaled_wgmma_tile::two_partials && mode != fp8_scaling::per_tensor) continue;
      for (const std::size_t parts : {2u, 3u, 4u}) {
        const std::size_t tiles = grid + grid / parts;  // grid / parts cluster tiles in the last round
        const std::size_t n = block_n * tiles - 5;
        ASSERT_EQ(kf::detail::plan_last_round(tiles, grid, k_steps, 1, kf::detail::scaled_last_round_max_parts,
                                              kf::detail::scaled_last_round_min_k_steps)
                      .parts,
                  parts)
            << "not split as meant";
        SCOPED_TRACE(kf::to_string(mode) +
                     std::string(tile == scaled_wgmma_tile::wide ? ", 128 x 192" : ", 128 x 144") + ", " +
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

// The epilogue: alpha, beta (D read), bias, ReLU, amax; padded and misaligned storage.
TYPED_TEST(ScaledMatmul, EpilogueAndStorage) {
  KF_SKIP_WITHOUT_FP8();
  std::uint64_t seed = 100;
  for (fp8_scaling mode : modes) {
    scaled_case c;
    c.m = 67;
    c.n = 131;
    c.k = 200;
    c.mode = mode;
    c.alpha = 0.75f;
    c.beta = -0.5f;
    c.bias = c.relu = c.amax = true;
    c.pad = 3;
    c.offset = 1;
    EXPECT_TRUE(run<TypeParam>(c, seed++));
    c.beta = 0.0f;  // D poisoned: NaN must not leak through
    c.trans_a = op::transpose;
    EXPECT_TRUE(run<TypeParam>(c, seed++));
  }
}

// Every transpose combination, rowwise scales.
TYPED_TEST(ScaledMatmul, EveryTranspose) {
  KF_SKIP_WITHOUT_FP8();
  std::uint64_t seed = 200;
  for (op ta : {op::none, op::transpose}) {
    for (op tb : {op::none, op::transpose}) {
      scaled_case c;
      c.m = 45;
      c.n = 77;
      c.k = 300;
      c.trans_a = ta;
      c.trans_b = tb;
      c.mode = fp8_scaling::rowwise;
      c.amax = true;
      EXPECT_TRUE(run<TypeParam>(c, seed++));
    }
  }
}

// A NaN in op(A)'s row 3 makes that row of D NaN (and the amax NaN); inputs at
// the type's largest finite value (saturated conversions) accumulate in fp32
// without overflow (a __half D overflows to inf, as the reference does).
TYPED_TEST(ScaledMatmul, NanAndSaturatedInputs) {
  KF_SKIP_WITHOUT_FP8();
  scaled_case c;
  c.m = 9;
  c.n = 40;
  c.k = 130;
  c.mode = fp8_scaling::blockwise;
  c.amax = true;
  c.nan_row = 3;
  EXPECT_TRUE(run<TypeParam>(c, 300));
  c.nan_row = static_cast<std::size_t>(-1);
  c.saturating = true;
  EXPECT_TRUE(run<TypeParam>(c, 301));
}

// Empty products: k == 0 gives D = beta * D + bias (scales may be null); m or n == 0 writes amax = 0 only.
TYPED_TEST(ScaledMatmul, EmptyShapes) {
  KF_SKIP_WITHOUT_FP8();
  scaled_case c;
  c.m = 7;
  c.n = 9;
  c.k = 0;
  c.beta = 2.0f;
  c.bias = c.amax = true;
  EXPECT_TRUE(run<TypeParam>(c, 400));
  for (auto [m, n] : {std::pair<std::size_t, std::size_t>{0, 5}, {5, 0}}) {
    c.m = m;
    c.n = n;
    c.k = 3;
    EXPECT_TRUE(run<TypeParam>(c, 401));
  }
}

}  // namespace
