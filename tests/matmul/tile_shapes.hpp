// SPDX-License-Identifier: Apache-2.0
// Boundary shapes derived from a kernel's own tile constants, as CUTLASS's
// TestAll does (test/unit/gemm/device/testbed.h): the tensor-core tests take
// block_m, block_n, the k-depth of a stage and the stage count from the
// kernel's config (09_tensor_core_tf32.cuh, 10_tensor_core_f16.cuh,
// wgmma/config.cuh), so a new tile size moves its test shapes with it.
//
// For a tile T_m x T_n, k-steps of K and S stages in flight:
//   1 x 1 x 1                              every tile partial, one k-step
//   T_m x T_n x K                          one whole tile, one whole k-step
//   (T_m + 1) x (T_n + 1) x (K - 1)        two tiles each way, the second 1 wide; one partial k-step
//   (T_m - 1) x (2 T_n + 7) x (K + 1)      one partial tile row, three tile columns; two k-steps
//   (2 T_m + 7) x (T_n - 1) x (S K + 1)    three tile rows, one partial column; the ring wraps by one element
//   (2 T_m + 7) x (2 T_n + 7) x ((S + 1) K - 1)  three tiles each way (an odd count: a cluster
//                                          of 2 has its second CTA outside C), the ring wraps by a partial step
// So every size 1, T - 1, T, T + 1 and 2T + 7 appears in m and in n, and k
// sees one partial, one whole, two and more than S steps.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace kf::test {

/// A kernel configuration's tile: block_m x block_n, k-steps of block_k, `stages` in flight.
struct tile_shape {
  std::size_t block_m, block_n, block_k, stages;
};

/// The boundary shapes of a tile (see the top of this file); Shape: an aggregate {m, n, k}.
template <class Shape>
std::vector<Shape> boundary_shapes(const tile_shape& t) {
  const std::size_t bm = t.block_m, bn = t.block_n, bk = t.block_k, s = t.stages;
  return {{1, 1, 1},
          {bm, bn, bk},
          {bm + 1, bn + 1, bk - 1},
          {bm - 1, 2 * bn + 7, bk + 1},
          {2 * bm + 7, bn - 1, s * bk + 1},
          {2 * bm + 7, 2 * bn + 7, (s + 1) * bk - 1}};
}

/// How an extent meets a tile: the tile count (1, 2, or 3 and more) and whether the last one is partial.
struct extent_class {
  std::size_t tiles;
  bool partial;
};

inline extent_class classify(std::size_t extent, std::size_t tile) {
  return {std::min<std::size_t>((extent + tile - 1) / tile, 3), extent % tile != 0};
}

/// k's class: one step, 2 to `stages` steps (the ring not yet reused), or more; whether the last step is partial.
inline extent_class classify_k(std::size_t k, const tile_shape& t) {
  const std::size_t steps = (k + t.block_k - 1) / t.block_k;
  return {steps <= 1 ? 1u : steps <= t.stages ? 2u : 3u, k % t.block_k != 0};
}

/// True when `stronger` meets the tile's edges wherever `shape` does: in m and
/// n the same partial-or-whole last tile and at least as many tiles, in k the
/// same class (one step, within the ring, past it) and the same partial-or-whole last step.
template <class Shape>
bool covers(const Shape& stronger, const Shape& shape, const tile_shape& t) {
  const auto at_least = [](extent_class a, extent_class b) { return a.tiles >= b.tiles && a.partial == b.partial; };
  const extent_class ka = classify_k(stronger.k, t), kb = classify_k(shape.k, t);
  return at_least(classify(stronger.m, t.block_m), classify(shape.m, t.block_m)) &&
         at_least(classify(stronger.n, t.block_n), classify(shape.n, t.block_n)) && ka.tiles == kb.tiles &&
         ka.partial == kb.partial;
}

template <class Shape>
bool same_shape(const Shape& a, const Shape& b) {
  return a.m == b.m && a.n == b.n && a.k == b.k;
}

/// Expects every case of `before` (a suite's hand-listed cases) to run in
/// `now`, or a case of the same configuration (same_config) whose shape covers
/// its shape under tile_of(case); prints how many run as they were and how
/// many are covered. Case: has a shape `s`; describe(case) names it.
template <class Case, class SameConfig, class TileOf, class Describe>
void expect_cases_covered(const std::vector<Case>& now, const std::vector<Case>& before, SameConfig same_config,
                          TileOf tile_of, Describe describe) {
  std::size_t same = 0, covered = 0;
  for (const Case& old : before) {
    bool exact = false, stronger = false;
    for (const Case& c : now) {
      if (!same_config(c, old)) continue;
      exact = exact || same_shape(c.s, old.s);
      stronger = stronger || covers(c.s, old.s, tile_of(c));
    }
    same += exact;
    covered += !exact && stronger;
    EXPECT_TRUE(exact || stronger) << describe(old) << " is no longer covered";
  }
  std::printf("%zu hand-listed cases: %zu still run, %zu covered by a boundary shape; %zu cases now\n", before.size(),
              same, covered, now.size());
}

}  // namespace kf::test
