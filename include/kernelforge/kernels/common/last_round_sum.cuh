// SPDX-License-Identifier: Apache-2.0
// The end of a split tile's part (last_round.hpp), on the device: each part's
// warpgroup writes its fp32 sums to its slot of a workspace and arrives at the
// tile's counter; the part that arrives last adds the other parts' sums -- in
// part order, its own in its place, so the same bits whichever part is last --
// and stores the tile. No part waits for another, so no CTA needs another to
// be resident. Used by conv2d step 9 (conv2d/wgmma_last_round.cuh) and the FP8
// matrix product (matmul/scaled/03_wgmma.cuh).
#pragma once

#include <cstddef>

#include <cuda/atomic>

#include "../arch/guards.cuh"
#include "../arch/warpgroup_sm90.cuh"

namespace kf::detail {

#if KF_ARCH_SM90A
/// A split unit's end, for one warpgroup (all its threads call it; `thread` 0
/// .. 127). `prm`: the kernel's parameters, whose split_sums (the workspace),
/// split_arrivals (counters, zero at the launch) and split_parts (parts a split
/// tile runs as) it reads. `groups` warpgroups hold a tile's accumulators (a
/// CTA's consumers, times the CTAs of a cluster tile); each part of each group
/// has a slot of N x 128 floats (N rows of the warpgroup's 128 threads, so each
/// warp's accesses are 128 bytes), each group of each tile a counter. Writes
/// the warpgroup's sums `total` to slot (tile, part, group), arrives at the
/// counter of (tile, group), and returns whether this part arrived last; if so,
/// `total` now holds the tile's sums (every part's slot, this one's too, added
/// in part order) for the caller to store, else another part stores the tile.
/// `tile` counts the split tiles from 0; `barrier` is a named barrier of the
/// warpgroup's own.
template <int N, class Params>
__device__ __forceinline__ bool sum_split_tile(const Params& prm, int tile, int part, int group, int groups,
                                               int barrier, int thread, float (&total)[N]) {
  const auto slot = [&](int p) {
    const std::size_t at = (static_cast<std::size_t>(tile) * prm.split_parts + p) * groups + group;
    return prm.split_sums + at * (N * warpgroup_threads) + thread;
  };
  float* const own = slot(part);
#pragma unroll
  for (int i = 0; i < N; ++i) __stcg(own + i * warpgroup_threads, total[i]);
  __threadfence();                                 // this thread's sums visible GPU-wide ...
  named_barrier_sync(barrier, warpgroup_threads);  // ... every thread's, before the arrival
  bool last = false;
  if (thread == 0) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> count(
        prm.split_arrivals[static_cast<std::size_t>(tile) * groups + group]);
    last = count.fetch_add(1u, cuda::std::memory_order_acq_rel) == static_cast<unsigned>(prm.split_parts - 1);
  }
  const bool tile_done = named_barrier_or(barrier, warpgroup_threads, last);  // warp-uniform, known
  if (!tile_done) return false;
  __threadfence();  // the other parts' sums, seen by every thread
  // Every part's slot, this one's too, in part order: the same sum whichever part arrived last.
#pragma unroll
  for (int i = 0; i < N; ++i) total[i] = __ldcg(slot(0) + i * warpgroup_threads);
#pragma unroll 1
  for (int p = 1; p < prm.split_parts; ++p) {
    const float* const sums = slot(p);
#pragma unroll
    for (int i = 0; i < N; ++i) total[i] += __ldcg(sums + i * warpgroup_threads);
  }
  return true;
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail
