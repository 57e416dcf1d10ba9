// SPDX-License-Identifier: Apache-2.0
// conv2d's tuning data, each constant with the evidence behind it
// (benchmarks/tuning/conv2d.md, a section per decision): the implicit GEMM's
// occupancy goal, its block tiles and the table from a tile to the kernels'
// template arguments, the split-K limits, and which kernel `best` runs in
// exact fp32 (Winograd, fused or not, or the implicit GEMM). The rules that
// read them are in plan.hpp (the wgmma step's: wgmma_plan.hpp).
#pragma once

#include <cstddef>

namespace kf::detail {

/// Block tiles of the implicit-GEMM kernels (rows of M = N*P*Q x columns of K).
enum class conv2d_gemm_tile { m128_n128, m128_n64, m64_n64 };

/// Resident blocks per SM the tile choice aims for: with two, one block's loads
/// overlap the other's math.
/// Evidence: H200 2026-11-29, N32 C64 56x56 K64 128x64 at 2 blocks/SM 34.8 TFLOP/s, 33.2 at 4
/// (conv2d.md#with_conv2d_gemm_tile).
constexpr std::size_t conv2d_gemm_blocks_per_sm_goal = 2;

// ---- split-K: layers whose output tiles cannot fill the GPU -------------------
// The limits plan.hpp's choose_conv2d_gemm_plan gives the shared planner
// (common/split_k_plan.hpp); benchmarks/tuning/conv2d.md#choose_conv2d_gemm_plan.
/// The most splits: the reduction reads split x |y| floats.
/// Evidence: H200 2026-11-29, N32 C256 14x14 K256 split 4 with 128x128 tiles 33.0 TFLOP/s exact, 24.7 unsplit; no gain
/// past 4.
constexpr std::size_t conv2d_split_max = 4;
/// The fewest BK slices each split keeps (shorter runs spend their time
/// filling the double-buffered pipeline).
/// Evidence: none measured (no sweep recorded); 16 slices of 8 = 128 of C*R*S per split.
constexpr std::size_t conv2d_split_min_slices = 16;
/// The most blocks a split grid may reach, in waves of sm_count x
/// conv2d_gemm_blocks_per_sm_goal (past two, more splits only add workspace
/// traffic: the SMs are already busy).
/// Evidence: H200 2026-11-29, N32 C128 28x28 K128 (tiles already fill the GPU): split-K did not help.
constexpr std::size_t conv2d_split_max_waves = 2;

/// The kernels' template arguments for one conv2d_gemm_tile: the block tile
/// (bm x bn), the minimum resident blocks per SM of the exact fp32 kernels'
/// __launch_bounds__ (implicit_gemm, implicit_gemm_pipelined, Winograd's GEMM),
/// and the warp grid of the TF32 kernel (implicit_gemm_tf32).
template <int BM, int BN, int MinBlocks, int Tf32WarpsM, int Tf32WarpsN>
struct conv2d_gemm_tile_config {
  static constexpr int bm = BM, bn = BN, min_blocks = MinBlocks;
  static constexpr int tf32_warps_m = Tf32WarpsM, tf32_warps_n = Tf32WarpsN;
};

/// The one table from conv2d_gemm_tile to template arguments: calls
/// launch(conv2d_gemm_tile_config<...>{}) and returns what it returns.
/// Minimum blocks per SM: 2 caps registers at 128 for the 256-thread tile and
/// at 255 for the 128-thread tile (155 used, no spills: 2 blocks per SM measured
/// faster than 4 on the H200 -- 34.8 against 33.2 TFLOP/s on N32 C64 56x56 K64
/// 3x3); the 64-thread tile gets what it needs (its A loader holds 8 rows per thread).
template <class Launch>
decltype(auto) with_conv2d_gemm_tile(conv2d_gemm_tile tile, Launch&& launch) {
  switch (tile) {
    case conv2d_gemm_tile::m128_n128: return launch(conv2d_gemm_tile_config<128, 128, 2, 2, 4>{});
    case conv2d_gemm_tile::m128_n64: return launch(conv2d_gemm_tile_config<128, 64, 2, 4, 2>{});
    case conv2d_gemm_tile::m64_n64: break;
  }
  return launch(conv2d_gemm_tile_config<64, 64, 1, 2, 2>{});
}

// ---- what `best` runs in exact fp32: Winograd F(2x2,3x3) (steps 6, 8) ---------

/// Where `best` (exact fp32) runs Winograd: stride-1 3x3 layers with at least
/// this many input and output channels. Below, its transforms (V and M are 4x
/// the input and output, through HBM) outweigh the GEMMs' 2.25x saving.
/// Evidence: H200 2026-11-30, Winograd / implicit GEMM 1.18 at C64 K64 56x56, 1.33-1.36 at C128, C256
/// (conv2d.md#conv2d_best_uses_winograd).
constexpr std::size_t conv2d_winograd_min_channels = 64;
/// Evidence: as conv2d_winograd_min_channels (no layer with K below 64 measured).
constexpr std::size_t conv2d_winograd_min_filters = 64;
/// Whether `best` runs Winograd on the layers conv2d_winograd_expected_to_win
/// (plan.hpp) lists: on, it beat the implicit GEMM on every such layer measured.
/// Evidence: as conv2d_winograd_min_channels: 1.18-1.36x on the three ResNet layers.
constexpr bool conv2d_best_uses_winograd = true;
/// Whether `best` runs step 8's fused Winograd (winograd_fused) rather than step
/// 6's four passes on the layers conv2d_winograd_expected_to_win lists, where
/// its blocks fill their waves (conv2d_winograd_fused_fills_waves, plan.hpp) and
/// the device grants its shared memory: on, it won on the two layers whose
/// waves it fills.
/// Evidence: H200, ours / cuDNN fp32, fused vs four passes: C64 56x56 1.05 vs 0.89, C128 28x28 0.81 vs 0.77
/// (conv2d.md#conv2d_winograd_fused_fills_waves).
constexpr bool conv2d_best_uses_winograd_fused = true;
/// Whether `best` runs implicit_gemm_pipelined rather than implicit_gemm for
/// exact layers Winograd does not take: off, it lost on every layer measured.
/// Evidence: H200 2026-11-30, pipelined 12-19% slower on all four layers (conv2d.md#conv2d_best_uses_pipelined).
constexpr bool conv2d_best_uses_pipelined = false;

/// Step 8 runs one 168 KiB block per SM, so a layer of few blocks leaves much
/// of its last wave idle, where step 6's small blocks fill the GPU. `best`
/// takes step 8 where its blocks keep at least 9/10 of their waves busy.
/// Evidence: H200, one bench_conv run, ours / cuDNN fp32, fused vs four passes: N32 C64 56x56 (784
/// blocks, 5.94 waves of 132) 1.05 vs 0.89; C128 28x28 (392, 2.97 waves) 0.81
/// vs 0.77; C256 14x14 (196, 1.48 waves: 74% of two waves busy) 0.61 vs 0.71.
constexpr std::size_t conv2d_winograd_fused_fill_num = 9, conv2d_winograd_fused_fill_den = 10;

// ---- steps 7 and 9 (wgmma): the persistent grid's last round ------------------

/// The most CTAs one tile of a persistent wgmma grid's last round is split
/// over (plan_conv2d_wgmma_last_round): each part sums its share of the
/// tile's k-blocks and the last to finish adds the others' fp32 partials (read
/// from L2) before its store, so more parts cost more of those reads.
/// Evidence: H100 2026-12-06, fp32 emulation, N32 C128 28x28 K128 (2 parts), with the consumers'
/// turns: NCHW 114.4 -> 101.6 us, NHWC 103.4 -> 91.4 (-11%; without the turns -3% / -6%)
/// (conv2d.md#conv2d_wgmma_last_round; 3 and 4 parts tested, not timed).
constexpr std::size_t conv2d_wgmma_last_round_max_parts = 4;
/// The fewest k-blocks a part keeps: below it a part spends its time filling
/// the ring and summing partials.
/// Evidence: none measured; the three ResNet 3x3 layers' parts keep 18 or more.
constexpr std::size_t conv2d_wgmma_last_round_min_k_blocks = 4;

// ---- step 13: fp32 emulation on halo tiles (13_implicit_gemm_wgmma_halo_fp32_emulated.cuh) ----

/// Step 13 takes a layer from step 9 where its 8-wide halo tiles cost at most num / den of step
/// 9's rounds of the persistent grid (conv2d_fp32_emulated_prefers_halo): a halo tile runs
/// faster than step 9's, but 8-wide tiles compute the columns past a width that is no multiple
/// of 8 (28 -> 32), and step 9 splits its last round where step 13 does not.
/// Evidence: H200 2026-12-07, N32 3x3 p1, step 13 / step 9 time, two runs alternated
/// (halo rounds / step 9's): C64 56x56 (6 / 6) 0.84 NCHW, 0.83 NHWC; C256 14x14 (1 / 1) 0.91,
/// 0.99; C128 28x28 (2 / 1.5) 1.03, 1.09 (conv2d.md#conv2d-fp32-emulation-on-halo-tiles).
constexpr std::size_t conv2d_fp32_emulated_halo_rounds_num = 5, conv2d_fp32_emulated_halo_rounds_den = 4;

// ---- step 10: few input channels, large filters (10_few_channels_mma.cuh) ---------

/// Output pixels one CTA of step 10 computes at most (a band of whole output
/// rows, or of a part of one): 8 warps of 32 pixels. More pixels per CTA
/// spread the filter's load (once per CTA, 27 KB for the stem) over more
/// products; fewer make more CTAs for small layers.
/// Evidence: none measured yet; the stem's band (2 rows x 112 = 224 pixels, 7 warps) fills
/// every warp (conv2d.md#conv2d_few_channels).
constexpr std::size_t conv2d_few_channels_max_pixels = 256;
/// Shared memory a step-10 CTA may use (filter + patch): two CTAs fit an SM of every
/// sm_80+ GPU but the 100 KB ones, and every such GPU grants it to a block.
/// Evidence: none measured; the stem takes 44 KB (conv2d.md#conv2d_few_channels).
constexpr std::size_t conv2d_few_channels_smem_budget = std::size_t{64} * 1024;
/// Whether `best` runs step 10 on the 16-bit NHWC layers it computes (C <= 4)
/// rather than step 7 behind its column fold.
/// Evidence: H200, the stem (N16 C3 224x224 K64 7x7 s2 p3), step 10 2.17x (fp16) and 2.15x (bf16)
/// faster than step 7 behind its fold, paired (few_channels_vs_fold; conv2d.md#conv2d_few_channels).
constexpr bool conv2d_best_uses_few_channels = true;

// ---- step 11: step 10's bands on persistent CTAs (11_few_channels_persistent.cuh) -

/// Shared memory a step-11 CTA may use (filter, tap table, the next band's
/// staged rows, the patch and the warps' output tiles): two CTAs fit the SM of
/// sm_80 (164 KB) and sm_90 (228 KB), one the 100 KB SM of sm_86 and sm_89. The
/// launch grid is the resident CTAs at this size. A layer beyond it runs step 10.
/// Evidence: none measured; the stem takes 71 KB (conv2d.md#conv2d_few_channels_persistent).
constexpr std::size_t conv2d_few_channels_persistent_smem_budget = std::size_t{80} * 1024;
/// Whether `best` runs step 11 on the layers its plan takes, ahead of step 10.
/// Evidence: H200 2026-12-04, the stem (N16 C3 224x224 K64 7x7 s2 p3), step 10's time over step
/// 11's, paired (persistent_vs_one_band): fp16 1.514, bf16 1.524 (43.3 us) in step 10's bands; 2.015 / 2.020
/// (32.8 us) in the bands its plan picks for the grid (conv2d.md#conv2d_few_channels_persistent).
constexpr bool conv2d_best_uses_few_channels_persistent = true;

}  // namespace kf::detail
