// SPDX-License-Identifier: Apache-2.0
// The matrix product's tuning data: tile sizes of the warp_tiled and large_tile
// kernels per GPU architecture, the switch that lets variant best run
// large_tile, and the split-k limits, each with the evidence behind it
// (benchmarks/tuning/matmul.md). The rules that read them are in plan.hpp;
// the wgmma step's choices are in wgmma/policy.hpp. Host and device code both
// read this file.
#pragma once

#include <cstddef>

namespace kf::detail {

/// Which warp_tiled configuration an architecture uses.
enum class warp_tiled_tuning_id { large_smem, small_smem };

/// Common shape: a 128 x 128 block tile, 8 warps as 2 (m) x 4 (n) of 64 x 32
/// warp tiles, 8 x 8 outputs per thread (64 accumulators; 16 FMAs per 16-byte
/// shared load). One block of 256 threads per SM: the kernel needs ~170
/// registers per thread (64 accumulators + 32-48 fragment registers + copy
/// state); capping it at 128 for two blocks per SM spills on every layout.
struct warp_tiled_base {
  static constexpr int block_m = 128, block_n = 128;
  static constexpr int warps_m = 2, warps_n = 4;
  static constexpr int thread_m = 8, thread_n = 8;
  static constexpr int min_blocks_per_sm = 1;  ///< __launch_bounds__ minimum blocks per SM
  static constexpr int group_m = 8;            ///< tile-row groups for L2 reuse (rasterization)
};

/// sm_80, sm_87, sm_90, sm_100/103/110 (164-228 KB shared memory per SM):
/// k-slices of 32 (per slice: 2048 FMAs per thread against ~80 instructions of
/// copy, barrier and loop overhead and 128 shared loads, 91% FFMA issue
/// density in the SASS of sm_90) and 3 stages in flight: 103 KB per block.
struct warp_tiled_large_smem : warp_tiled_base {
  static constexpr warp_tiled_tuning_id id = warp_tiled_tuning_id::large_smem;
  static constexpr int block_k = 32, stages = 3;
};

/// sm_75, sm_86, sm_89, sm_120/121 (64-100 KB per SM): k-slices of 16 and 3
/// stages: 60 KB per block (sm_75 allows 64 KB per block).
struct warp_tiled_small_smem : warp_tiled_base {
  static constexpr warp_tiled_tuning_id id = warp_tiled_tuning_id::small_smem;
  static constexpr int block_k = 16, stages = 3;
};

// ---- split-k: products whose m x n tiles cannot fill the GPU --------------
// The limits plan.hpp's plan_matmul_split_k gives the shared planner
// (common/split_k_plan.hpp); benchmarks/tuning/matmul.md#plan_matmul_split_k.
/// Split only when the tiles fill at most this fraction of one wave (1/2).
/// Evidence: wgmma, H200 2026-11-30: 128x8192x8192 0.52 -> 0.80, TF32 1024^3 0.47 -> 0.52 of cuBLAS.
constexpr int split_k_wave_fraction_den = 2;
/// Each k-slice is at least this long on average, so a slice amortizes its
/// prologue, epilogue and its share of the reduction (16 k-steps of 16).
/// Evidence: none measured for the SIMT kernels (no sweep recorded); the wgmma kernel's: wgmma/policy.hpp.
constexpr std::size_t split_k_min_slice = 256;
/// The most slices. The reduction issues its slabs' loads 8 at a time
/// (common/split_k_reduce.cuh), so more slabs cost their bytes, not a load
/// latency each; min_slice and the workspace cap bound them first.
/// Evidence (to measure: UNVERIFIED on the GPU): the conv2d fp32 wgrad's GEMM,
/// m = 64, n = 576, k = 100352, ran 3 tiles x 16 slices (48 of 132 SMs) for
/// about 1.3 ms; 16 was "none measured; bounds the reduction's reads".
constexpr int split_k_max = 64;
/// The split-k workspace (split x m x n floats) is capped at this many bytes.
/// Evidence: none measured; a memory bound (64 MiB per concurrent call from the runtime's pool).
constexpr std::size_t split_k_max_workspace_bytes = std::size_t(64) << 20;

// ---- large_tile (08_large_tile.cuh) ------------------------------------------
/// Common shape: 8 warps of 64 x 64 warp tiles, 16 (m) x 8 (n) outputs per
/// thread (128 accumulators; 128 FMAs per 6 LDS.128 per k-step), one block of
/// 256 threads per SM (226-255 registers, no spills). The architecture classes are those of
/// warp_tiled (warp_tiled_tuning_for): the same shared-memory budgets.
struct large_tile_base {
  static constexpr int warp_m = 64, warp_n = 64;  ///< the warp tile (4 x 8 lanes of 16 x 8)
  static constexpr int threads = 256;
  static constexpr int group_m = 8;  ///< tile-row groups for L2 reuse (rasterization)
};

/// 128 x 256 block tiles (warps 2 x 4): the tile for most shapes. For the
/// untransposed A it copies half as many 4-byte elements per thread as 256 x 128.
template <warp_tiled_tuning_id Id>
struct large_tile_128x256 : large_tile_base {
  static constexpr warp_tiled_tuning_id id = Id;
  static constexpr int block_m = 128, block_n = 256;
  /// sm_80/90/100: k-slices of 16, 3 stages (75 KB); elsewhere 8 and 3 (38 KB).
  static constexpr int block_k = Id == warp_tiled_tuning_id::large_smem ? 16 : 8;
  static constexpr int stages = 3;
};

/// 256 x 128 block tiles (warps 4 x 2): for shapes whose 128 x 256 tiles leave
/// the last wave much emptier (4095 x 4097: 544 tiles of 128 x 256 are 4.12
/// waves of 132; 528 tiles of 256 x 128 are 4.00).
template <warp_tiled_tuning_id Id>
struct large_tile_256x128 : large_tile_base {
  static constexpr warp_tiled_tuning_id id = Id;
  static constexpr int block_m = 256, block_n = 128;
  static constexpr int block_k = Id == warp_tiled_tuning_id::large_smem ? 16 : 8;
  static constexpr int stages = 3;
};

/// Whether variant best may run large_tile for an exact fp32 product (the rule:
/// plan.hpp's best_is_large_tile). Set to false to make best run warp_tiled
/// everywhere (the comparison switch; variant warp_tiled and large_tile select
/// either directly).
/// Evidence: H200 2026-11-30, large_tile 0.91-1.05 of cuBLAS SGEMM, warp_tiled 0.82-0.91
/// (matmul.md#best_is_large_tile).
constexpr bool best_uses_large_tile = true;

/// Whether math_mode::fp32_emulated runs step 17 (the large operand split in
/// registers) on the skinny shapes plan.hpp's choose_fp32_emulated_large names;
/// false: step 15 everywhere on the wgmma route (fp32_emulated_wgmma_kernel::skinny
/// still forces step 17 for the tests and bench_matmul's skinny_vs_step15 rows).
/// Evidence: H200 2026-12-04, 128x8192x8192, step 17 54.3 TFLOP/s against step 15's
/// 42.0 in the same pairs (step15_over_skinny 1.291), once its split lost its branch
/// (2026-12-03, with the branch: 40.3 against 42.2); split ahead of the products,
/// 60.4 against 41.7 (1.448) (matmul.md#fp32-emulation-for-skinny-products-step-17).
constexpr bool best_uses_fp32_emulated_skinny = true;

/// Whether kf::scaled_matmul runs the FP8 GEMM's two-partials tile (128 x 128
/// in clusters of 2 since 2026-12-07; 128 x 144 before, which the first
/// evidence below measured) where wgmma/policy.hpp's choose_scaled_block_n picks
/// 128 x 192 and k is at least scaled_two_partials_min_k, in every scaling mode:
/// the next k-step's products issued into a second partial set before the last
/// one is promoted, so the tensor cores do not drain every 128 of k
/// (scaled/03_wgmma.cuh; blockwise, a 128-wide tile is one block of B's scales).
/// bench_scaled_matmul's two_partials_vs_192 rows time both (forced) in turn.
/// Evidence: H200 2026-12-04, 144 over 192 in one run, per-tensor / rowwise:
/// 4096^3 1.038 / 1.042, 8192^3 1.049 / 1.059, 4096x7168x16384 1.083 / 1.082;
/// 8192x8192x1024 0.967 / 0.983, hence the depth rule (wgmma/policy.hpp).
/// Blockwise, H100 2026-12-07, one run, 192's time over two-partials': 4096^3
/// 1.148, 8192^3 1.136, 4096x7168x16384 1.155; ours / cuBLASLt's block-scaled
/// mode 0.82-0.85 -> 0.95-0.97 there (matmul.md#fp8, "Twelfth look").
constexpr bool best_uses_scaled_two_partials = true;

}  // namespace kf::detail
