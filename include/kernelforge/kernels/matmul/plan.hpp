// SPDX-License-Identifier: Apache-2.0
// The matrix product's selection rules for the SIMT steps, pure functions of
// the architecture, the shape and the device's resident blocks over the data
// in tuning.hpp, tested on the CPU (tests/matmul/matmul_cpu_test.cpp): which
// warp_tiled / large_tile configuration an architecture compiles and runs,
// large_tile's orientation, whether variant best runs large_tile, and the
// split-k plan (the shared planner, common/split_k_plan.hpp, with the
// matmul's limits; the wgmma kernel's own choices: wgmma/policy.hpp).
// warp_tiled_tuning_for is read by device code too (KF_TUNING_FN).
#pragma once

#include <cstddef>

#include "../common/grid.hpp"
#include "../common/host_device.hpp"
#include "../common/split_k_plan.hpp"
#include "tuning.hpp"

namespace kf::detail {

/// Which warp_tiled (and large_tile) configuration an architecture uses.
/// cc: major * 10 + minor of the code that runs (see the launcher).
KF_TUNING_FN warp_tiled_tuning_id warp_tiled_tuning_for(int cc) {
  return cc == 80 || cc == 87 || (cc >= 90 && cc < 120) ? warp_tiled_tuning_id::large_smem
                                                        : warp_tiled_tuning_id::small_smem;
}

/// The split-k limits of a product of m x n outputs whose kernel steps k by
/// `block_k`, with `resident_blocks` blocks on the GPU at once (tuning.hpp):
/// split only where the tiles fill at most half a wave, into slices that fill
/// about one wave, at most split_k_max, `min_slice` long on average, the
/// workspace within split_k_max_workspace_bytes.
inline split_k_policy matmul_split_k_policy(std::size_t m, std::size_t n, int block_k, int resident_blocks,
                                            std::size_t min_slice = split_k_min_slice) {
  const std::size_t resident = resident_blocks > 0 ? static_cast<std::size_t>(resident_blocks) : 0;
  split_k_policy p;
  p.max_tiles = resident / split_k_wave_fraction_den;  // tiles * den <= resident
  p.max_split = split_k_max;
  p.max_blocks = resident;
  p.min_mean_slice = min_slice;
  p.granule = static_cast<std::size_t>(block_k);
  p.slice_bytes = m * n * sizeof(float);
  p.max_workspace_bytes = split_k_max_workspace_bytes;
  return p;
}

/// How a product of `tiles` block tiles cuts k (plan_split_k with
/// matmul_split_k_policy): slices rounded up to `block_k`, which can leave
/// fewer of them (k = 4100 in 16: slices of 288 with block_k 32, 15 of them).
inline split_k_plan plan_matmul_split_k(std::size_t tiles, std::size_t m, std::size_t n, std::size_t k, int block_k,
                                        int resident_blocks, std::size_t min_slice = split_k_min_slice) {
  return plan_split_k(tiles, k, matmul_split_k_policy(m, n, block_k, resident_blocks, min_slice));
}

/// The split-k reduction indexes a partial slab (m x n floats) with int: the
/// workspace cap keeps it below 2^31 elements whenever k is split.
static_assert(split_k_max_workspace_bytes / (2 * sizeof(float)) < (std::size_t{1} << 31),
              "a split-k slab must stay below 2^31 elements");

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
/// and a 128 x 256 tile is at least a quarter used; warp_tiled elsewhere
/// (and everywhere while tuning.hpp's best_uses_large_tile is off).
KF_TUNING_FN bool best_is_large_tile(warp_tiled_tuning_id arch, std::size_t m, std::size_t n) {
  return best_uses_large_tile && arch == warp_tiled_tuning_id::large_smem && m >= 64 && n >= 64;
}

}  // namespace kf::detail
