// SPDX-License-Identifier: Apache-2.0
// The persistent tile scheduler of the Hopper GEMM (14_wgmma.cuh): the grid
// holds as many CTAs as the device runs at once, and cluster g walks the work
// items g, g + G, g + 2G, ... (G clusters in the grid). A work item is a cluster
// tile and a k-slice (item = tile * splits + slice); cluster tiles are visited
// in grouped order (raster_group cluster rows at a time) so that the CTAs
// running together share A's rows and B's columns in L2. Producer and
// consumers walk the same items, so the stage ring runs on from one tile into
// the next with no fill, launch or barrier set-up per tile. With LastRound (the
// FP8 kernel), the items past the whole cluster tiles are the last round's
// tiles' parts (common/last_round.hpp).
#pragma once

#include "../../common/last_round.hpp"
#include "../../common/raster.hpp"
#include "config.cuh"

namespace kf::detail::wgmma {

/// A block tile of C (tile_m, tile_n in block tiles), its k-slice, and its k-steps [kt_begin, kt_end).
struct work_item {
  int tile_m, tile_n, slice, kt_begin, kt_end;
};

/// The CTAs of a cluster take adjacent m-tiles sharing B (the default), adjacent
/// n-tiles sharing A (MulticastA), or the same tile, each over half of its
/// k-steps (ClusterSplitK; splits is 1 then). In the last, ragged cluster tile
/// the second CTA's tile may lie wholly outside C: it still loads and multicasts
/// its half for its peer, TMA fills its own half with zeros and its stores skip
/// everything.
template <class T, int Cluster, bool MulticastA, bool ClusterSplitK, bool LastRound = false>
struct tile_scheduler {
  static_assert(!LastRound || !ClusterSplitK, "the last round's parts run on whole clusters");
  static constexpr int b_sharers = cluster_sharing<Cluster, MulticastA, ClusterSplitK>::b_sharers;
  static constexpr int a_sharers = cluster_sharing<Cluster, MulticastA, ClusterSplitK>::a_sharers;

  const params<T>& p;
  int k_tiles;  ///< k-steps of the whole product
  int rank;     ///< this CTA's rank in its cluster

  [[nodiscard]] __device__ __forceinline__ int items() const {
    const int tiles = p.cluster_tiles_m * p.cluster_tiles_n * p.splits;
    if constexpr (LastRound) return p.split_from + (tiles - p.split_from) * p.split_parts;  // parts 1: tiles
    return tiles;
  }
  /// This CTA's first item, and the distance to its next.
  [[nodiscard]] __device__ __forceinline__ static int first() { return static_cast<int>(blockIdx.x) / Cluster; }
  [[nodiscard]] __device__ __forceinline__ static int stride() { return static_cast<int>(gridDim.x) / Cluster; }

  [[nodiscard]] __device__ __forceinline__ work_item operator()(int item) const {
    work_item w;
    int cluster_tile;
    if constexpr (LastRound) {  // unsplit by `splits`: an item is a cluster tile, or a part of one
      const last_round_unit u = last_round_unit_of(item, p.split_from, p.split_parts, p.split_steps, k_tiles);
      cluster_tile = u.tile;
      w.slice = 0;
      w.kt_begin = u.kt_begin;
      w.kt_end = u.kt_end;
    } else {
      cluster_tile = item / p.splits;
    }
    const tile_coord t = grouped_tile(cluster_tile, p.cluster_tiles_m, p.cluster_tiles_n, raster_group);
    if constexpr (ClusterSplitK) {
      // CTA r takes the k-steps [r * half, (r + 1) * half) (half rounded up:
      // with an odd count CTA 1 has one step fewer, with a single step none,
      // and then contributes zeros).
      const int half = (k_tiles + 1) / 2;
      w.tile_m = static_cast<int>(t.m);
      w.tile_n = static_cast<int>(t.n);
      w.slice = 0;
      w.kt_begin = min(k_tiles, rank * half);
      w.kt_end = min(k_tiles, w.kt_begin + half);
      return w;
    }
    w.tile_m = static_cast<int>(t.m) * b_sharers + (MulticastA ? 0 : rank);
    w.tile_n = static_cast<int>(t.n) * a_sharers + (MulticastA ? rank : 0);
    if constexpr (!LastRound) {
      w.slice = item % p.splits;
      w.kt_begin = w.slice * p.split_k_tiles;
      w.kt_end = min(k_tiles, w.kt_begin + p.split_k_tiles);
    }
    return w;
  }
};

}  // namespace kf::detail::wgmma
