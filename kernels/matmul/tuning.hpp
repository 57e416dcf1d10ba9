// SPDX-License-Identifier: Apache-2.0
// Tile sizes of the warp_tiled kernel per GPU architecture, and the split-k
// rule: the one place to tune them. Host and device code both read this file
// (the device code compiles only the configuration its architecture uses; the
// launcher picks the same one from the architecture of the image that runs).
#pragma once

#include <cstddef>

#if defined(__CUDACC__)
#define KF_TUNING_FN __host__ __device__ constexpr
#else
#define KF_TUNING_FN constexpr
#endif

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
inline int choose_split_k(std::size_t tiles, std::size_t m, std::size_t n, std::size_t k, int resident_blocks) {
  if (tiles == 0 || resident_blocks <= 0 || tiles * split_k_wave_fraction_den > std::size_t(resident_blocks)) return 1;
  std::size_t split = std::size_t(resident_blocks) / tiles;
  if (split > std::size_t(split_k_max)) split = split_k_max;
  if (split > k / split_k_min_slice) split = k / split_k_min_slice;
  const std::size_t bytes_per_slice = m * n * sizeof(float);
  if (bytes_per_slice > 0 && split > split_k_max_workspace_bytes / bytes_per_slice) {
    split = split_k_max_workspace_bytes / bytes_per_slice;
  }
  return split < 2 ? 1 : static_cast<int>(split);
}

}  // namespace kf::detail

#undef KF_TUNING_FN
