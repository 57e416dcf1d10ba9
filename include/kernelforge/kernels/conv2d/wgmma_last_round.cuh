// SPDX-License-Identifier: Apache-2.0
// The last round of a persistent wgmma grid, split over the CTAs that would
// wait (conv2d step 9, 09_implicit_gemm_wgmma_fp32_emulated.cuh; when and how
// far: plan_conv2d_wgmma_last_round, wgmma_plan.hpp).
//
// A persistent grid of G CTAs walks its T tiles round by round; the last round
// holds T % G tiles and takes as long as a whole one while the rest of the
// grid idles (N32 C128 28x28 K128 in fp32 emulation: 196 tiles of 36 k-blocks
// on 132 CTAs, so two rounds of 36 k-blocks where 1.5 would do). Here each of
// the last round's tiles becomes `parts` units, a run of the tile's k-steps
// each: the grid's units are the whole tiles, then the parts, and the producer
// and the consumers walk units as they walked tiles (unit_of). A part's
// consumer warpgroup writes its fp32 sums to its slot of the workspace and
// arrives at its tile's counter; the part that arrives last adds the other
// parts' sums -- in part order, its own in its place, so the same bits
// whichever part is last -- and stores the tile. No part waits for another,
// so no CTA needs another to be resident.
#pragma once

#include <cstddef>

#include <cuda/atomic>

#include "../arch/guards.cuh"
#include "../arch/warpgroup_sm90.cuh"
#include "wgmma_config.cuh"
#include "wgmma_plan.hpp"

namespace kf::detail::conv2d_wgmma {

using work_unit = conv2d_wgmma_unit;

/// The grid's units: the whole tiles, then the split tiles' parts.
template <class T>
__device__ __forceinline__ int units(const params<T>& prm) {
  return prm.split_parts == 1 ? prm.tiles : prm.split_from + (prm.tiles - prm.split_from) * prm.split_parts;
}

/// Unit u (conv2d_wgmma_unit_of, wgmma_plan.hpp).
template <class T>
__device__ __forceinline__ work_unit unit_of(const params<T>& prm, int u) {
  return conv2d_wgmma_unit_of(u, prm.split_from, prm.split_parts, prm.split_steps, prm.k_steps);
}

template <class T>
__device__ __forceinline__ bool is_split(const params<T>& prm, const work_unit& unit) {
  return prm.split_parts > 1 && unit.tile >= prm.split_from;
}

#if KF_ARCH_SM90A
/// A split unit's end, for one consumer warpgroup (all its threads call it;
/// `thread` 0 .. 127): writes the warpgroup's sums `total` to the unit's slot,
/// arrives at the tile's counter, and returns whether this part arrived last;
/// if so, `total` now holds the tile's sums (every part's slot, this one's too,
/// added in part order) for the caller to store, else another part stores the tile.
template <int N, class T>
__device__ __forceinline__ bool sum_split_tile(const params<T>& prm, const work_unit& unit, int consumer, int thread,
                                               float (&total)[N]) {
  const int tile = unit.tile - prm.split_from;
  // Slot (tile, part, consumer): N rows of the warpgroup's 128 threads, so each warp's accesses are 128 bytes.
  const auto slot = [&](int part) {
    const std::size_t at = (static_cast<std::size_t>(tile) * prm.split_parts + part) * consumer_warpgroups + consumer;
    return prm.split_sums + at * (N * warpgroup_threads) + thread;
  };
  float* const own = slot(unit.part);
#pragma unroll
  for (int i = 0; i < N; ++i) __stcg(own + i * warpgroup_threads, total[i]);
  __threadfence();  // this thread's sums visible GPU-wide ...
  const int barrier = split_barrier + consumer;
  named_barrier_sync(barrier, warpgroup_threads);  // ... every thread's, before the arrival
  bool last = false;
  if (thread == 0) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> count(
        prm.split_arrivals[static_cast<std::size_t>(tile) * consumer_warpgroups + consumer]);
    last = count.fetch_add(1u, cuda::std::memory_order_acq_rel) == static_cast<unsigned>(prm.split_parts - 1);
  }
  const bool tile_done = named_barrier_or(barrier, warpgroup_threads, last);  // warp-uniform, known
  if (!tile_done) return false;
  __threadfence();  // the other parts' sums, seen by every thread
  // Every part's slot, this one's too, in part order: the same sum whichever part arrived last.
#pragma unroll
  for (int i = 0; i < N; ++i) total[i] = __ldcg(slot(0) + i * warpgroup_threads);
#pragma unroll 1
  for (int part = 1; part < prm.split_parts; ++part) {
    const float* const sums = slot(part);
#pragma unroll
    for (int i = 0; i < N; ++i) total[i] += __ldcg(sums + i * warpgroup_threads);
  }
  return true;
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::conv2d_wgmma
