// SPDX-License-Identifier: Apache-2.0
// The split-k planner matmul and conv2d share: when a GEMM's output tiles
// cannot fill the GPU, its reduction dimension (k of a product, C*R*S of a
// convolution) is cut into `split` slices computed by separate blocks into an
// fp32 workspace, and a reduction (split_k_reduce.cuh) sums them. How far to
// cut is a pure function of the tile count, k and a family's policy
// (split_k_policy: the family's tuning.hpp holds the numbers, its plan.hpp
// fills the policy); host only, no CUDA calls, tested on the CPU
// (tests/core/split_k_plan_test.cpp and each family's CPU tests).
#pragma once

#include <cstddef>
#include <limits>

#include "grid.hpp"

namespace kf::detail {

/// What a family allows when it splits a reduction of length k, counted in
/// the family's unit (matmul: elements of k; conv2d: BK slices of C*R*S).
/// Every limit left at its default does not bind.
struct split_k_policy {
  static constexpr std::size_t unlimited = std::numeric_limits<std::size_t>::max();
  /// Split only where the tiles are at most this many (matmul: half a wave).
  std::size_t max_tiles = unlimited;
  /// The most slices.
  std::size_t max_split = unlimited;
  /// The most blocks the split grid may have: tiles x split at most this.
  std::size_t max_blocks = unlimited;
  /// split <= k / min_mean_slice: slices of at least this long on average,
  /// before rounding (0: no such limit).
  std::size_t min_mean_slice = 0;
  /// The last, shortest slice after rounding at least this long.
  std::size_t min_last_slice = 0;
  /// Slice lengths are multiples of this (a kernel's k-step), the last one excepted.
  std::size_t granule = 1;
  /// The workspace: bytes per slice (0: none counted) and the most in all.
  std::size_t slice_bytes = 0;
  std::size_t max_workspace_bytes = unlimited;
};

/// How one launch cuts k: `split` slices of k_slice (a multiple of the
/// policy's granule), the last one shorter; split 1 and k_slice = k when it
/// does not split.
struct split_k_plan {
  int split = 1;
  std::size_t k_slice = 0;
  /// The partial sums' workspace: split slabs of rows x cols floats, none unsplit.
  [[nodiscard]] std::size_t workspace_bytes(std::size_t rows, std::size_t cols) const {
    return split > 1 ? static_cast<std::size_t>(split) * rows * cols * sizeof(float) : 0;
  }
};

/// The plan for `tiles` output tiles over a reduction of length k: unsplit
/// where the tiles exceed policy.max_tiles; else the most slices, counting
/// down from the smallest of max_split, max_blocks / tiles, k / min_mean_slice
/// and the workspace cap, whose rounded cut (slices of ceil(k / split) rounded
/// up to the granule, which can leave fewer of them) has at least two slices
/// and a last one of at least min_last_slice; unsplit when none has.
inline split_k_plan plan_split_k(std::size_t tiles, std::size_t k, const split_k_policy& policy) {
  const split_k_plan unsplit{1, k};
  if (tiles == 0 || k == 0 || tiles > policy.max_tiles) return unsplit;
  std::size_t most = policy.max_split < k ? policy.max_split : k;  // more would leave slices empty
  if (most > policy.max_blocks / tiles) most = policy.max_blocks / tiles;
  if (policy.min_mean_slice > 0 && most > k / policy.min_mean_slice) most = k / policy.min_mean_slice;
  if (policy.slice_bytes > 0 && most > policy.max_workspace_bytes / policy.slice_bytes) {
    most = policy.max_workspace_bytes / policy.slice_bytes;
  }
  const std::size_t granule = policy.granule > 0 ? policy.granule : 1;
  for (std::size_t split = most; split >= 2; --split) {
    const std::size_t slice = round_up(ceil_div(k, split), granule);
    const std::size_t used = ceil_div(k, slice);  // <= split: no empty slice
    if (used < 2 || k - (used - 1) * slice < policy.min_last_slice) continue;
    return split_k_plan{static_cast<int>(used), slice};
  }
  return unsplit;
}

}  // namespace kf::detail
