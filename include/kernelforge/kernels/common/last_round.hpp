// SPDX-License-Identifier: Apache-2.0
// The last round of a persistent grid, split over the CTAs that would wait:
// the plan (host) and the units the grid walks (host and device). Used by
// conv2d step 9 (conv2d/wgmma_last_round.cuh) and the FP8 matrix product
// (matmul/scaled/03_wgmma.cuh); the device side's sum of a split tile's parts:
// last_round_sum.cuh.
//
// A persistent grid of G CTAs (or clusters) walks its T tiles round by round;
// the last round holds T % G tiles and takes as long as a whole one while the
// rest of the grid idles (conv2d N32 C128 28x28 K128 in fp32 emulation: 196
// tiles on 132 CTAs; FP8 4096x7168x16384: 800 cluster tiles on 66
// clusters, a last round of 8). Each of the last round's tiles becomes `parts`
// units, a run of the tile's k-steps each: the grid's units are the whole
// tiles, then the parts, and the producer and the consumers walk units as they
// walked tiles (last_round_unit_of).
#pragma once

#include <cstddef>

#include "grid.hpp"
#include "host_device.hpp"

namespace kf::detail {

/// How a persistent grid walks its tiles: whole tiles (units 0 .. split_from -
/// 1, round by round), then each of the last round's tiles as `parts` runs of
/// part_steps k-steps. parts = 1: no split.
struct last_round_plan {
  std::size_t split_from = 0;  ///< the first split tile (a multiple of the grid)
  std::size_t parts = 1;       ///< units each split tile becomes
  std::size_t part_steps = 0;  ///< k-steps of a part (the last part's may be fewer)

  /// The grid's units: the whole tiles, then the split tiles' parts.
  [[nodiscard]] std::size_t units(std::size_t tiles) const { return split_from + (tiles - split_from) * parts; }
  /// The rounds `grid` CTAs take over `tiles`, counted in 1 / parts of a round: the whole
  /// rounds, then a split last round's one part (unsplit: every round, the last one whole).
  [[nodiscard]] std::size_t round_parts(std::size_t tiles, std::size_t grid) const {
    if (tiles > split_from) return split_from / grid * parts + 1;
    return ceil_div(tiles, grid);
  }
};

/// What a CTA computes in one turn of the persistent loop: tile `tile`'s
/// k-steps [kt_begin, kt_end), part `part` of the tile's parts (0 of 1: the
/// whole tile).
struct last_round_unit {
  int tile, kt_begin, kt_end, part;
};

/// Where a unit past split_from lies among the split tiles: split tile
/// `split` (counted from 0, the tile split_from + split) and its part.
struct last_round_part {
  int split, part;
};

/// Unit u (>= split_from, parts > 1) as a split tile's part: the split tiles'
/// parts in turn, so a tile's parts run on adjacent CTAs of the last round.
KF_HOST_DEVICE constexpr last_round_part last_round_part_of(int u, int split_from, int parts) {
  const int i = u - split_from;
  return {i / parts, i % parts};
}

/// Unit u of a grid split as a last_round_plan says (parts = 1: no split):
/// tile u whole below split_from; past it, a split tile's part (last_round_part_of).
KF_HOST_DEVICE constexpr last_round_unit last_round_unit_of(int u, int split_from, int parts, int part_steps,
                                                            int k_steps) {
  if (parts == 1 || u < split_from) return {u, 0, k_steps, 0};
  const last_round_part at = last_round_part_of(u, split_from, parts);
  const int begin = at.part * part_steps;
  const int end = begin + part_steps < k_steps ? begin + part_steps : k_steps;
  return {split_from + at.split, begin, end, at.part};
}

/// The last round of `tiles` tiles on `grid` CTAs (or clusters), each tile
/// k_blocks k-blocks of block_steps ring stages (a part keeps whole k-blocks).
/// A last round of r tiles (0 < r < grid) takes as long as a whole one; split
/// into parts = grid / r runs (at most max_parts, each at least min_k_blocks
/// long) it takes about 1 / parts of one, plus the sum of the parts.
inline last_round_plan plan_last_round(std::size_t tiles, std::size_t grid, std::size_t k_blocks,
                                       std::size_t block_steps, std::size_t max_parts, std::size_t min_k_blocks) {
  last_round_plan plan;
  plan.split_from = tiles;
  plan.part_steps = k_blocks * block_steps;
  if (grid == 0 || tiles <= grid || tiles % grid == 0) return plan;  // one round, or every round full
  const std::size_t last = tiles % grid;
  std::size_t parts = grid / last;
  if (parts > max_parts) parts = max_parts;
  const std::size_t most_by_length = min_k_blocks == 0 ? k_blocks : k_blocks / min_k_blocks;
  if (parts > most_by_length) parts = most_by_length;
  if (parts < 2) return plan;
  const std::size_t part_blocks = ceil_div(k_blocks, parts);
  plan.parts = ceil_div(k_blocks, part_blocks);  // no empty part (18 k-blocks in 4: 5, 5, 5, 3)
  plan.split_from = tiles - last;
  plan.part_steps = part_blocks * block_steps;
  return plan;
}

}  // namespace kf::detail
