// SPDX-License-Identifier: Apache-2.0
// CPU tests of the Hopper steps' selection rules (test_matmul_cpu, beside
// matmul_tuning_test.cpp): include/kernelforge/kernels/matmul/wgmma/policy.hpp --
// split-k by element size, which operand the TF32 product swaps, the tile width,
// the clusters (sharing A, splitting k) and the FP8 step's tiles.
#include <gtest/gtest.h>

#include <cstddef>

#include "kernelforge/kernels/common/last_round.hpp"
#include "kernelforge/kernels/matmul/plan.hpp"
#include "kernelforge/kernels/matmul/wgmma/policy.hpp"

namespace {

TEST(MatmulTuning, WgmmaSplitKByElementSize) {
  using kf::detail::plan_matmul_split_k;
  using kf::detail::wgmma_split_k_min_slice;
  const int resident = 132;
  const std::size_t tf32 = wgmma_split_k_min_slice(4), f16 = wgmma_split_k_min_slice(2);
  // 1024^3 in 128 x 64 tiles (128, choose_wgmma_block_n): neither type splits
  // (128 tiles fill more than half of 132).
  EXPECT_EQ(plan_matmul_split_k(128, 1024, 1024, 1024, 32, resident, tf32).split, 1);
  EXPECT_EQ(plan_matmul_split_k(128, 1024, 1024, 1024, 64, resident, f16).split, 1);
  // 128 x 8192 x 8192 (128 tiles of 128 x 64): unsplit too.
  EXPECT_EQ(plan_matmul_split_k(128, 128, 8192, 8192, 32, resident, tf32).split, 1);
  EXPECT_EQ(plan_matmul_split_k(128, 128, 8192, 8192, 64, resident, f16).split, 1);
  // Where 128 x 128 tiles are forced (64 of them), both split in 2, slices of 4096.
  EXPECT_EQ(plan_matmul_split_k(64, 128, 8192, 8192, 32, resident, tf32).split, 2);
  const auto plan = plan_matmul_split_k(64, 128, 8192, 8192, 64, resident, f16);
  EXPECT_EQ(plan.split, 2);
  EXPECT_EQ(plan.k_slice, 4096u);
  // Half a wave of 128 x 64 tiles (66) still splits; 67 do not.
  EXPECT_EQ(plan_matmul_split_k(66, 128, 66 * 64, 1024, 32, resident, tf32).split, 2);
  EXPECT_EQ(plan_matmul_split_k(67, 128, 67 * 64, 1024, 32, resident, tf32).split, 1);
  // The 16-bit GPU tests' split shape (tensor_core_f16_test.cu: 130 x 300 x 2051,
  // 10 tiles of 128 x 64, 6 of 128 x 128): 2 slices of 1088 (1026 rounded up to 64).
  for (std::size_t tiles : {10u, 6u}) {
    const auto odd = plan_matmul_split_k(tiles, 130, 300, 2051, 64, resident, f16);
    EXPECT_EQ(odd.split, 2) << tiles;
    EXPECT_EQ(odd.k_slice, 1088u) << tiles;
  }
  // The TF32 GPU tests' split shape at 128 x 64 (513 x 257 x 1031: 5 x 5 = 25
  // tiles): 4 slices of 288 (258 rounded up to 32).
  const auto tf32_odd = plan_matmul_split_k(25, 513, 257, 1031, 32, resident, tf32);
  EXPECT_EQ(tf32_odd.split, 4);
  EXPECT_EQ(tf32_odd.k_slice, 288u);
}

TEST(MatmulTuning, WgmmaBSourceSwapsTheRowMajorTf32Product) {
  using kf::detail::choose_wgmma_b_source;
  using src = kf::detail::wgmma_b_source;
  using mode = kf::detail::wgmma_tf32_b_mode;
  // op(B)^T k-contiguous with 16-byte rows: read in place, every type.
  EXPECT_EQ(choose_wgmma_b_source(4, true, true, mode::by_shape), src::k_major);
  EXPECT_EQ(choose_wgmma_b_source(2, true, true, mode::repack), src::k_major);
  // n-contiguous B (the row-major product): 16-bit types read it N-major
  // (transpose bit); TF32 swaps the product, or repacks B where forced.
  EXPECT_EQ(choose_wgmma_b_source(2, false, true, mode::by_shape), src::n_major);
  EXPECT_EQ(choose_wgmma_b_source(2, false, true, mode::repack), src::n_major);
  EXPECT_EQ(choose_wgmma_b_source(4, false, true, mode::by_shape), src::swapped);
  EXPECT_EQ(choose_wgmma_b_source(4, false, true, mode::repack), src::repacked);
  // Rows TMA cannot read (not 16-byte aligned): repacked, whatever the layout.
  for (std::size_t bytes : {2u, 4u}) {
    for (bool trans_b : {false, true}) {
      for (mode tf32 : {mode::by_shape, mode::repack}) {
        EXPECT_EQ(choose_wgmma_b_source(bytes, trans_b, false, tf32), src::repacked);
      }
    }
  }
}

TEST(MatmulTuning, WgmmaBlockNIsTheWidestThatFillsTheGpu) {
  using kf::detail::choose_wgmma_block_n;
  const int resident = 132;  // H200: 132 SMs x 1 CTA; the threshold is 3/4 of it: 99 tiles
  // bench_matmul's shapes: 128 x 256 tiles where they fill the GPU, else 128 x 128,
  // else 128 x 64.
  EXPECT_EQ(choose_wgmma_block_n(4096, 4096, resident), 256);  // 512 tiles
  EXPECT_EQ(choose_wgmma_block_n(8192, 8192, resident), 256);  // 2048 (8192 x 8192 x 1024 too)
  EXPECT_EQ(choose_wgmma_block_n(2048, 2048, resident), 256);  // 16 x 8 = 128
  EXPECT_EQ(choose_wgmma_block_n(1024, 1024, resident), 64);   // 32 tiles; 64 of 128 x 128; 128 of 128 x 64
  // The FP8 kernel's widest tile is 128 x 128: 4096^3 takes it, 1024^3 still 64.
  EXPECT_EQ(choose_wgmma_block_n(4096, 4096, resident, 128), 128);
  EXPECT_EQ(choose_wgmma_block_n(1024, 1024, resident, 128), 64);
  EXPECT_EQ(choose_wgmma_block_n(128, 8192, resident), 64);  // 32; 64; 128
  // FP8 (choose_scaled_block_n, the same in every scaling mode: it does not take the mode): 128 x 192
  // from 4 waves of 132 (528 tiles) and two tile rows; else the width above up to 128. The two-partials
  // tile (128 x 128 in clusters of 2) takes the wide tile's place from k = scaled_two_partials_min_k (2048)
  // while tuning.hpp's best_uses_scaled_two_partials is on.
  using kf::detail::choose_scaled_block_n;
  using kf::detail::scaled_wgmma_tile;
  const int deep = kf::detail::best_uses_scaled_two_partials ? 128 : 192;
  static_assert(kf::detail::scaled_two_partials_block_n == 128, "the two-partials tile is 128 wide");
  static_assert(kf::detail::scaled_two_partials_min_k == 2048, "the cases below straddle it");
  EXPECT_EQ(choose_scaled_block_n(8192, 8192, 8192, resident), deep);  // 64 x 43 = 2752 tiles
  EXPECT_EQ(choose_scaled_block_n(8192, 8192, 2048, resident), deep);  // from 2048 of k
  EXPECT_EQ(choose_scaled_block_n(8192, 8192, 2047, resident), 192);   // shallower: the wide tile
  EXPECT_EQ(choose_scaled_block_n(8192, 8192, 1024, resident), 192);   // (8192x8192x1024: two partials lost at 144)
  EXPECT_EQ(choose_scaled_block_n(4096, 4096, 4096, resident), deep);  // 32 x 22 = 704
  EXPECT_EQ(choose_scaled_block_n(4096, 7168, 16384, resident), deep);
  EXPECT_EQ(choose_scaled_block_n(2048, 2048, 8192, resident), 128);           // 16 x 11 = 176
  EXPECT_EQ(choose_scaled_block_n(1024, 1024, 1024, resident), 64);            // 48 wide tiles; 64 of 128 x 128
  EXPECT_EQ(choose_scaled_block_n(128, 8192, 8192, resident), 64);             // one tile row: no cluster
  EXPECT_EQ(choose_scaled_block_n(2900, 4466, 130, resident), 192);            // the GPU test's: 23 x 24 = 552
  EXPECT_EQ(choose_scaled_block_n(22 * 128, 24 * 192, 4096, resident), deep);  // 528: exactly 4 waves
  EXPECT_EQ(choose_scaled_block_n(22 * 128, 23 * 192, 4096, resident), 128);   // 506
  EXPECT_EQ(choose_scaled_block_n(8192, 8192, 8192, 0), 128);                  // no resident count: never wide
  // Forced (the tests, bench_scaled_matmul's two_partials_vs_192 rows): whatever the shape and scaling.
  EXPECT_EQ(choose_scaled_block_n(8192, 8192, 8192, resident, scaled_wgmma_tile::wide), 192);
  EXPECT_EQ(choose_scaled_block_n(1, 1, 1, resident, scaled_wgmma_tile::wide), 192);
  EXPECT_EQ(choose_scaled_block_n(8192, 8192, 1024, resident, scaled_wgmma_tile::two_partials), 128);
  EXPECT_EQ(choose_scaled_block_n(1, 1, 1, resident, scaled_wgmma_tile::two_partials), 128);
  EXPECT_EQ(choose_scaled_block_n(8192, 8192, 8192, resident, scaled_wgmma_tile::two_partials), 128);
  EXPECT_EQ(choose_scaled_block_n(1024, 1024, 1024, resident, scaled_wgmma_tile::two_partials), 128);
  // The thresholds: 99 tiles of 128 x 256 fill 3/4 of 132, 98 do not; then
  // 99 of 128 x 128 (11 tile rows x 9) do, 98 (14 x 7) do not.
  EXPECT_EQ(choose_wgmma_block_n(99 * 128, 256, resident), 256);
  EXPECT_EQ(choose_wgmma_block_n(98 * 128, 256, resident), 128);                  // 98 x 2 = 196 of 128 x 128
  EXPECT_EQ(choose_wgmma_block_n(99 * 128 - 127, 1, resident), 256);              // ragged m: 99 tile rows
  EXPECT_EQ(choose_wgmma_block_n(11 * 128, 9 * 128, resident), 128);              // 11 x 5 = 55 wide; 99 of 128 x 128
  EXPECT_EQ(choose_wgmma_block_n(14 * 128, 7 * 128, resident), 64);               // 14 x 4 = 56; 98; 196 of 128 x 64
  EXPECT_EQ(choose_wgmma_block_n(14 * 128, 7 * 128 - 63, resident), 64);          // ragged n: 7 tile columns of 128
  EXPECT_EQ(choose_wgmma_block_n(11 * 128 - 127, 9 * 128 - 127, resident), 128);  // ragged m and n: 11 x 9
  // The GPU tests' shapes (tests/matmul: tensor_core_*_test.cu, epilogue_test.cu): what each runs
  // by shape (the tests also force the other widths).
  EXPECT_EQ(choose_wgmma_block_n(4095, 4097, resident), 256);  // 32 x 17 = 544 tiles
  EXPECT_EQ(choose_wgmma_block_n(1090, 2904, resident), 256);  // 9 x 12 = 108 (and 1090 x 2900)
  EXPECT_EQ(choose_wgmma_block_n(1090, 2900, resident), 256);
  EXPECT_EQ(choose_wgmma_block_n(513, 257, resident), 64);  // 5 x 5 = 25 tiles of 128 x 64
  EXPECT_EQ(choose_wgmma_block_n(300, 520, resident), 64);
  EXPECT_EQ(choose_wgmma_block_n(130, 300, resident), 64);
  EXPECT_EQ(choose_wgmma_block_n(200, 136, resident), 64);
  EXPECT_EQ(choose_wgmma_block_n(1, 4096, resident), 64);
  EXPECT_EQ(choose_wgmma_block_n(1, 1, resident), 64);
  // The largest boundary shape of the 128 x 64 tile (tile_shapes.hpp: 2 x 128 + 7
  // by 2 x 64 + 7), which the tensor-core tests run by shape as 128 x 64 tiles.
  EXPECT_EQ(choose_wgmma_block_n(263, 135, resident), 64);
  // Clusters of two on a GPU whose pairs hold fewer than 132 CTAs (e.g. 60 x 2):
  // the same thresholds against that count (3/4 of 120 = 90 tiles).
  EXPECT_EQ(choose_wgmma_block_n(1024, 1024, 120), 64);
  EXPECT_EQ(choose_wgmma_block_n(2048, 2048, 120), 256);
  // No resident count (no occupancy): every width "fills"; the widest.
  EXPECT_EQ(choose_wgmma_block_n(1, 1, 0), 256);
}

// The FP8 step's last round (common/last_round.hpp, plan_last_round with wgmma/policy.hpp's
// scaled_last_round_max_parts and _min_k_steps) on 66 clusters of 2 (132 SMs): split where few
// cluster tiles are left for the last round, not where it is more than half full.
TEST(MatmulTuning, ScaledLastRoundSplitsWhereFewTilesAreLeft) {
  const auto plan = [](std::size_t cluster_tiles, std::size_t k) {
    return kf::detail::plan_last_round(cluster_tiles, 66, (k + 127) / 128, 1, kf::detail::scaled_last_round_max_parts,
                                       kf::detail::scaled_last_round_min_k_steps);
  };
  // 4096^3 at 128 x 144 (until 2026-12-07): 16 cluster rows x 29 columns = 464, 7 rounds and 2 left: 4 parts
  // of 8 k-steps; at 128 x 128, 16 x 32 = 512, 50 left: not split.
  EXPECT_EQ(plan(16 * 32, 4096).parts, 1u);
  const auto cube = plan(16 * 29, 4096);
  EXPECT_EQ(cube.parts, 4u);
  EXPECT_EQ(cube.split_from, 462u);
  EXPECT_EQ(cube.part_steps, 8u);
  EXPECT_EQ(cube.units(464), 462u + 2 * 4);
  // 4096x7168x16384: 16 x 50 = 800, 8 left: 66 / 8 parts, at most 4, of 32 k-steps.
  const auto deep = plan(16 * 50, 16384);
  EXPECT_EQ(deep.parts, 4u);
  EXPECT_EQ(deep.split_from, 792u);
  EXPECT_EQ(deep.part_steps, 32u);
  EXPECT_EQ(plan(32 * 57, 8192).parts, 1u);  // 8192^3: 1,824, 42 left: not split
  EXPECT_EQ(plan(32 * 43, 1024).parts, 1u);  // 8192x8192x1024 at 128 x 192: 1,376, 56 left
  EXPECT_EQ(plan(66 * 4, 4096).parts, 1u);   // whole rounds
  EXPECT_EQ(plan(50, 4096).parts, 1u);       // one round
  EXPECT_EQ(plan(16 * 29, 512).parts, 1u);   // 4 k-steps: too short to split
  EXPECT_EQ(plan(16 * 29, 1024).parts, 2u);  // 8 k-steps: 2 parts of 4
}

TEST(MatmulTuning, WgmmaClusterSharesAForNarrowTiles) {
  using kf::detail::wgmma_cluster_ctas;
  using kf::detail::wgmma_cluster_mode;
  using kf::detail::wgmma_cluster_shares_a;
  constexpr auto by_shape = wgmma_cluster_mode::by_shape;
  // 128 x 64 tiles in several tile rows (1024^3: 8 x 16): A's 128 rows a
  // stage outnumber B's 64, so the cluster shares A.
  EXPECT_TRUE(wgmma_cluster_shares_a(by_shape, 64, 8, 16));
  EXPECT_TRUE(wgmma_cluster_shares_a(by_shape, 64, 2, 128));
  EXPECT_TRUE(wgmma_cluster_shares_a(by_shape, 64, 8, 3));  // odd tile columns: the last cluster's partner idles
  // A single tile row (128 x 8192 x 8192: 1 x 128) streams B from HBM once and
  // keeps A in L2: single CTAs measured faster than sharing A (0.94 vs 0.91).
  EXPECT_FALSE(wgmma_cluster_shares_a(by_shape, 64, 1, 128));
  // Wider tiles share B (equal rows at 128, B's more at 256), even in a single
  // tile row (TF32 128 x 8192 x 8192 at 128 x 128: single CTAs, as before).
  EXPECT_FALSE(wgmma_cluster_shares_a(by_shape, 128, 8, 64));
  EXPECT_FALSE(wgmma_cluster_shares_a(by_shape, 256, 16, 8));
  // A single tile column has no partner along n: B (the partner along m).
  EXPECT_FALSE(wgmma_cluster_shares_a(by_shape, 64, 16, 1));
  // Forced either way, whatever the shape (tests and bench_matmul's rows).
  EXPECT_TRUE(wgmma_cluster_shares_a(wgmma_cluster_mode::share_a, 256, 1, 1));
  EXPECT_FALSE(wgmma_cluster_shares_a(wgmma_cluster_mode::share_b, 64, 8, 16));
  // Cluster size: 2 where the shared operand's axis has two tiles or more.
  EXPECT_EQ(wgmma_cluster_ctas(2, true, 8, 16), 2);
  EXPECT_EQ(wgmma_cluster_ctas(2, true, 1, 128), 2);   // a single tile row shares A
  EXPECT_EQ(wgmma_cluster_ctas(2, true, 8, 1), 1);     // a single tile column cannot
  EXPECT_EQ(wgmma_cluster_ctas(2, false, 1, 128), 1);  // nor a single tile row share B
  EXPECT_EQ(wgmma_cluster_ctas(2, false, 8, 1), 2);
  EXPECT_EQ(wgmma_cluster_ctas(1, true, 8, 16), 1);  // cluster_size 1: single CTAs
  EXPECT_EQ(wgmma_cluster_ctas(1, false, 8, 16), 1);
  EXPECT_EQ(wgmma_cluster_ctas(2, false, 0, 0), 1);  // nothing to pair
}

TEST(MatmulTuning, WgmmaClusterSplitKFitsWhereNarrowTilesRunOnePerCta) {
  using kf::detail::wgmma_cluster_split_k_fits;
  const int resident = 132;
  // 1024^3: 128 tiles of 128 x 64, unsplit, or 64 of 128 x 128 in clusters of 2 (128 CTAs).
  EXPECT_TRUE(wgmma_cluster_split_k_fits(1024, 1024, 1024, 2, 64, resident));
  EXPECT_TRUE(wgmma_cluster_split_k_fits(1024, 1024, 1024, 4, 32, resident));
  EXPECT_TRUE(wgmma_cluster_split_k_fits(1024, 1024, 4096, 2, 64, resident));
  EXPECT_TRUE(wgmma_cluster_split_k_fits(128, 8192, 8192, 2, 64, resident));
  // TF32 128 x 8192 x 8192, k-major B, and swapped (its row-major B: the kernel's m and n are 8192 and 128).
  EXPECT_TRUE(wgmma_cluster_split_k_fits(128, 8192, 8192, 4, 32, resident));
  EXPECT_TRUE(wgmma_cluster_split_k_fits(8192, 128, 8192, 4, 32, resident));
  // Wider tiles by shape (2048 x 1024: 128 tiles of 128 x 128), or too many tiles for 2 CTAs each.
  EXPECT_FALSE(wgmma_cluster_split_k_fits(2048, 1024, 1024, 2, 64, resident));
  EXPECT_FALSE(wgmma_cluster_split_k_fits(1024, 1024, 1024, 2, 64, 100));  // 128 tiles of 128 x 64 > 100 CTAs
  // 128 x 64 tiles that split k through the workspace (TF32 513 x 257 x 1031: 25 tiles, 4 slices).
  EXPECT_FALSE(wgmma_cluster_split_k_fits(513, 257, 1031, 4, 32, resident));
  // Nothing to run, or no occupancy figure.
  EXPECT_FALSE(wgmma_cluster_split_k_fits(0, 1024, 1024, 2, 64, resident));
  EXPECT_FALSE(wgmma_cluster_split_k_fits(1024, 1024, 1024, 2, 64, 0));
}

TEST(MatmulTuning, WgmmaClusterSplitKByShapeNeedsLongHalves) {
  using kf::detail::wgmma_cluster_splits_k;
  const int resident = 132;
  // TF32 1024^3: 32 k-steps of 32, 16 a CTA; fp16 1024 x 1024 x 4096: 64 of 64, 32 a CTA.
  EXPECT_TRUE(wgmma_cluster_splits_k(1024, 1024, 1024, 4, 32, resident));
  EXPECT_TRUE(wgmma_cluster_splits_k(1024, 1024, 4096, 2, 64, resident));
  // fp16 1024^3: 8 a CTA (measured slower than 128 x 64 tiles); short k in either precision.
  EXPECT_FALSE(wgmma_cluster_splits_k(1024, 1024, 1024, 2, 64, resident));
  EXPECT_FALSE(wgmma_cluster_splits_k(1024, 1024, 256, 4, 32, resident));
  EXPECT_FALSE(wgmma_cluster_splits_k(1024, 1024, 960, 4, 32, resident));  // 30 steps, 15 a CTA
  EXPECT_TRUE(wgmma_cluster_splits_k(1024, 1024, 992, 4, 32, resident));   // 31 steps, 16 a CTA
  // TF32 128 x 8192 x 8192 swapped (its row-major B): 64 tile rows of the kernel's 8192 x 128, 128 steps a
  // CTA (H200: 1.09 of cuBLAS against 0.97 for 128 x 128 tiles split through the workspace).
  EXPECT_TRUE(wgmma_cluster_splits_k(8192, 128, 8192, 4, 32, resident));
  // A single tile row (B's stream from HBM bounds it), or a shape that does not fit (wider tiles by shape).
  EXPECT_FALSE(wgmma_cluster_splits_k(128, 8192, 8192, 2, 64, resident));
  EXPECT_FALSE(wgmma_cluster_splits_k(2048, 1024, 4096, 2, 64, resident));
  EXPECT_FALSE(wgmma_cluster_splits_k(1024, 1024, 1024, 4, 0, resident));
}

}  // namespace
