// SPDX-License-Identifier: Apache-2.0
// Tile sizes of the warp_tiled and large_tile kernels per GPU architecture,
// which of them variant best runs, and the split-k rule (the wgmma step's
// choices: wgmma/policy.hpp). Host and device code both read
// this file (the device code compiles only the configuration its architecture uses; the launcher picks the same one
// from the architecture of the image that runs).
#pragma once

#include <cstddef>

#include "../common/grid.hpp"

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

/// cc: major * 10 + minor of the code that runs (see the launcher).
KF_TUNING_FN warp_tiled_tuning_id warp_tiled_tuning_for(int cc) {
  return cc == 80 || cc == 87 || (cc >= 90 && cc < 120) ? warp_tiled_tuning_id::large_smem
                                                        : warp_tiled_tuning_id::small_smem;
}

// ---- split-k: products whose m x n tiles cannot fill the GPU --------------
/// Split only when the tiles fill less than this fraction of one wave (1/2).
constexpr int split_k_wave_fraction_den = 2;
/// Each k-slice is at least this long, so a slice amortizes its prologue,
/// epilogue and its share of the reduction (16 k-steps of 16).
constexpr std::size_t split_k_min_slice = 256;
constexpr int split_k_max = 16;
/// The split-k workspace (split x m x n floats) is capped at this many bytes.
constexpr std::size_t split_k_max_workspace_bytes = std::size_t(64) << 20;

/// How many k-slices to split a product with `tiles` block tiles into, when
/// `resident_blocks` blocks fit on the GPU at once: 1 when the tiles already
/// fill half a wave; else enough slices to fill about one wave, each at least
/// split_k_min_slice long, the workspace within its cap.
inline int choose_split_k(std::size_t tiles, std::size_t m, std::size_t n, std::size_t k, int resident_blocks,
                          std::size_t min_slice = split_k_min_slice) {
  if (tiles == 0 || resident_blocks <= 0 || tiles * split_k_wave_fraction_den > std::size_t(resident_blocks)) return 1;
  std::size_t split = std::size_t(resident_blocks) / tiles;
  if (split > std::size_t(split_k_max)) split = split_k_max;
  if (split > k / min_slice) split = k / min_slice;
  const std::size_t bytes_per_slice = m * n * sizeof(float);
  if (bytes_per_slice > 0 && split > split_k_max_workspace_bytes / bytes_per_slice) {
    split = split_k_max_workspace_bytes / bytes_per_slice;
  }
  return split < 2 ? 1 : static_cast<int>(split);
}

/// How one launch cuts k: `split` slices of k_slice (a multiple of the kernel's
/// block_k, so every slice but the last is whole k-steps), the last one shorter;
/// split 1 and k_slice = k when it does not split.
struct split_k_plan {
  int split = 1;
  std::size_t k_slice = 0;
  /// The partial tiles' workspace: split x m x n floats, none unsplit.
  [[nodiscard]] std::size_t workspace_bytes(std::size_t m, std::size_t n) const {
    return split > 1 ? std::size_t(split) * m * n * sizeof(float) : 0;
  }
};

/// choose_split_k's split, with the slice rounded up to `block_k`; the
/// rounding can leave fewer slices (k = 4100 in 16: slices of 288, 15 of them).
inline split_k_plan plan_split_k(std::size_t tiles, std::size_t m, std::size_t n, std::size_t k, int block_k,
                                 int resident_blocks, std::size_t min_slice = split_k_min_slice) {
  split_k_plan plan;
  plan.split = choose_split_k(tiles, m, n, k, resident_blocks, min_slice);
  plan.k_slice = k;
  if (plan.split > 1) {
    plan.k_slice = ceil_div(ceil_div(k, plan.split), block_k) * block_k;
    plan.split = static_cast<int>(ceil_div(k, plan.k_slice));
  }
  return plan;
}

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

/// Which large_tile orientation runs a product: the one whose tiles fill the
/// GPU in fewer waves of `resident_blocks` (ties: 128 x 256). Products that
/// split k fill their waves by splitting, so they keep 128 x 256.
inline bool large_tile_prefers_256x128(std::size_t m, std::size_t n, int resident_blocks) {
  if (resident_blocks <= 0) return false;
  const auto waves = [&](std::size_t bm, std::size_t bn) {
    const std::size_t tiles = ((m + bm - 1) / bm) * ((n + bn - 1) / bn);
    return (tiles + std::size_t(resident_blocks) - 1) / std::size_t(resident_blocks);
  };
  const std::size_t wide = waves(128, 256), tall = waves(256, 128);
  return tall < wide &&
         ((m + 127) / 128) * ((n + 255) / 256) * split_k_wave_fraction_den > std::size_t(resident_blocks);
}

/// Whether variant best runs large_tile (else warp_tiled) for an exact fp32
/// product, by the architecture class of the code that runs and the shape.
/// large_tile where it was tuned (the large_smem class: sm_80, sm_90, sm_100)
/// and a 128 x 256 tile is at least a quarter used; warp_tiled elsewhere.
/// Set to false to make best run warp_tiled everywhere (the comparison switch;
/// variant warp_tiled and large_tile select either directly).
constexpr bool best_uses_large_tile = true;
KF_TUNING_FN bool best_is_large_tile(warp_tiled_tuning_id arch, std::size_t m, std::size_t n) {
  return best_uses_large_tile && arch == warp_tiled_tuning_id::large_smem && m >= 64 && n >= 64;
}

}  // namespace kf::detail
