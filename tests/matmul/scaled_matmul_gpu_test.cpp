// SPDX-License-Identifier: Apache-2.0
// kf::scaled_matmul on the GPU (skips without one, or below compute capability
// 8.9), best (the wgmma step on Hopper) and naive: every operand pair x output
// type x scaling mode against the double
// reference of the dequantized operands (scaled_matmul_case.hpp), at shapes that
// cross the 128-long promotion / scale blocks of k and of n (k = 127, 129, 255,
// 385, 1031; n = 129, 257), with every transpose, padded and misaligned
// storage, the epilogue (beta, bias, ReLU), the amax, NaN inputs and saturated
// inputs; empty shapes (m, n or k = 0). The wgmma kernel's two-partials tile and
// last round split: scaled_matmul_schedule_gpu_test.cpp (the same binary).
#include <gtest/gtest.h>

#include <tuple>

#include "kernelforge/kernelforge.hpp"
#include "scaled_matmul_case.hpp"
#include "scaled_matmul_gpu_support.hpp"
#include "test_support.hpp"

namespace {

using namespace kf::test::scaled_gpu;  // scaled_matmul_gpu_support.hpp: its helpers and the names both files use

template <class T>
class ScaledMatmul : public ::testing::Test {};
TYPED_TEST_SUITE(ScaledMatmul, Combos, ComboNames);

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
