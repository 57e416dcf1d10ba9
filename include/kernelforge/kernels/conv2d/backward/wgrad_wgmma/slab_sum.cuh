// SPDX-License-Identifier: Apache-2.0
// The split's fp32 slabs summed by the split's own CTAs (gradient steps 3 and
// 9: 03_wgrad_wgmma.cuh, 09_wgrad_mma_tf32_pointwise.cuh), instead of by a second kernel (common/split_k_reduce.cuh).
//
// A split wgrad launch is one wave (the planner keeps tiles x slices within the
// resident CTAs: wgrad_wgmma_plan.hpp), and its launch is cooperative, so every
// CTA of a tile -- one a slice -- is resident at once and may wait for the
// others. Each CTA writes its slab of the tile, arrives at the tile's counter
// (release, GPU scope), waits until all `split` slices have (acquire), and then
// sums 1/split of the tile's elements over the slabs, in slab order z = 0, 1, ...
// -- split_k_reduce's order, so the same bits -- and writes them to dw.
//
// What it improves over the second kernel: no launch and no gap between the
// two, and the reduction's reads (split x the tile, fp32) spread over all the
// split's SMs while the slabs are hot in L2. It is faster where a CTA's share is
// a few quads over many slabs (the 1x1 C256 K64 dw, 66 slices: 42.6 -> 40.1 us on
// the H100) and slower where it is several quads a thread over few slabs (the
// C256 dw, 7 slices: 27.7 -> 29.9 us), so the launcher asks
// conv2d_wgrad_wgmma_sums_in_kernel (wgrad_wgmma_plan.hpp) first; measurements:
// benchmarks/tuning/conv2d.md, "the split's slabs summed by its own CTAs". The
// counters (one a tile, zeroed before the launch) live after the slabs in the
// split's workspace.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda/atomic>

#include "../../../arch/guards.cuh"
#include "../../../arch/warpgroup_sm90.cuh"  // named_barrier_sync
#include "../../../common/numeric.cuh"
#include "../../../common/split_k_reduce.cuh"  // split_k_sum_slabs: the slab order
#include "cta.cuh"

namespace kf::detail::conv2d_wgrad {

#if KF_ARCH_SM90A
/// Returns once all `split` slices' CTAs of this CTA's tile have written their
/// slabs, this CTA's too: its `threads` storing threads (thread 0 .. threads - 1,
/// named barrier `barrier`) have each stored their part; thread 0 arrives at
/// the tile's counter `arrivals` and waits for the others.
__device__ __forceinline__ void wait_for_tile_slabs(unsigned* arrivals, unsigned split, int thread, int threads,
                                                    int barrier) {
  __threadfence();                       // this thread's slab stores, visible GPU-wide ...
  named_barrier_sync(barrier, threads);  // ... every storing thread's ...
  if (thread == 0) {
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> count(*arrivals);
    count.fetch_add(1u, cuda::std::memory_order_release);  // ... before the arrival
    while (count.load(cuda::std::memory_order_acquire) < split) __nanosleep(64);
  }
  named_barrier_sync(barrier, threads);  // the other slices' slabs visible to every thread
}

/// dw of this CTA's share of its tile: the tile's valid elements (output
/// channels k0 .. k0 + KTile - 1 below K; columns as the kernel stores them:
/// one tap's CTile channels, or -- filter-column tiles, Rows > 1 -- CTile
/// channels of each of the taps (0 .. Rows - 1, s)), four columns at a time,
/// quads [y Q / split, (y + 1) Q / split) of the tile's Q for slice y, each the
/// sum of the `split` slabs in slab order. C is a multiple of 4 and c0 of
/// CTile, so a quad that starts below C ends there and is 16-byte aligned in a
/// slab (pair_stores, 16-bit dw: aligned to element pairs).
/// Lanes > 1, where the split is long and a CTA's share short (gradient step 9,
/// 09_wgrad_mma_tf32_pointwise.cuh: 131 slices of a 64 x 256 tile, 32 quads a
/// CTA): Lanes threads of a warp share a quad, lane j summing slabs j, j +
/// Lanes, ... in order, and the lanes' sums added by a fixed shuffle tree --
/// the same bits run to run, though not split_k_reduce's. One quad a thread
/// waits on split / 8 rounds of L2 latency (split_k_sum_slabs's batches);
/// Lanes a quad, on split / (8 Lanes). `threads` is then a multiple of 32.
template <class T, int KTile, int CTile, int Rows, int Lanes = 1>
__device__ __forceinline__ void sum_tile_slabs(const geometry& g, const cta_tile& tile, const float* partial,
                                               unsigned* arrivals, T* dw, bool pair_stores, int thread, int threads,
                                               int barrier) {
  static_assert(Lanes > 0 && Lanes <= 32 && (Lanes & (Lanes - 1)) == 0, "Lanes: a power of two within a warp");
  const auto split = static_cast<int>(gridDim.y);
  wait_for_tile_slabs(arrivals, static_cast<unsigned>(split), thread, threads, barrier);
  constexpr int quads_per_row = CTile * Rows / 4;
  constexpr int quads = KTile * quads_per_row;
  const auto y = static_cast<int>(blockIdx.y);
  const int first = static_cast<int>(static_cast<long long>(quads) * y / split);
  const int end = static_cast<int>(static_cast<long long>(quads) * (y + 1) / split);
  const auto* slabs = reinterpret_cast<const float4*>(partial);
  const std::size_t slab4 = static_cast<std::size_t>(g.k) * static_cast<std::size_t>(g.rsc) / 4;
  const int lane = thread % Lanes;
  // Every thread runs every pass (Lanes > 1: the shuffles need the whole warp); a quad past the share or the
  // tile's valid elements loads and stores nothing.
  for (int base = first; base < end; base += threads / Lanes) {
    const int q = base + thread / Lanes;
    const int k = tile.k0 + q / quads_per_row;
    const int n = 4 * (q % quads_per_row);
    const int tap = Rows == 1 ? tile.tap : (n / CTile) * g.s + tile.s;
    const int c = tile.c0 + (Rows == 1 ? n : n % CTile);
    const bool mine = q < end && k < g.k && c < g.c;
    const std::size_t e = static_cast<std::size_t>(k) * static_cast<std::size_t>(g.rsc) +
                          static_cast<std::size_t>(tap) * static_cast<std::size_t>(g.c) + static_cast<std::size_t>(c);
    float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (mine && lane < split) {  // slabs lane, lane + Lanes, ...: every Lanes-th slab from the lane's
      const float4* const lane_slabs = slabs + static_cast<std::size_t>(lane) * slab4;
      s = __ldcg(lane_slabs + e / 4);
      split_k_sum_slabs(s, lane_slabs, slab4 * Lanes, e / 4, (split - lane + Lanes - 1) / Lanes, add_float4{},
                        slab_load_l2{});
    }
    if constexpr (Lanes > 1) {
#pragma unroll
      for (int d = Lanes / 2; d > 0; d /= 2) {
        s.x += __shfl_down_sync(0xFFFFFFFFu, s.x, d, Lanes);
        s.y += __shfl_down_sync(0xFFFFFFFFu, s.y, d, Lanes);
        s.z += __shfl_down_sync(0xFFFFFFFFu, s.z, d, Lanes);
        s.w += __shfl_down_sync(0xFFFFFFFFu, s.w, d, Lanes);
      }
    }
    if (!mine || lane != 0) continue;
    if constexpr (sizeof(T) == 2) {  // (pair_stores: 16-bit dw only)
      if (pair_stores) {
        auto* out = reinterpret_cast<std::uint32_t*>(dw + e);
        out[0] = from_compute_pair<T>(s.x, s.y);
        out[1] = from_compute_pair<T>(s.z, s.w);
        continue;
      }
    }
    dw[e] = from_compute<T>(s.x);
    dw[e + 1] = from_compute<T>(s.y);
    dw[e + 2] = from_compute<T>(s.z);
    dw[e + 3] = from_compute<T>(s.w);
  }
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::conv2d_wgrad
