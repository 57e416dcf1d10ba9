// SPDX-License-Identifier: Apache-2.0
// What every CTA of the persistent Hopper GEMMs (14_wgmma.cuh, the FP8 step
// scaled/03_wgmma.cuh, the fp32-emulation step 15_wgmma_fp32_emulated.cuh)
// sets up before its roles split: the shared-memory carve (1024-aligned, the
// swizzle is a function of the address bits), the stage ring, its warpgroup
// and rank, and -- thread 0 -- the TMA descriptor prefetches and the ring's
// barriers. (Steps 12 and 13 spell the same lines out, as teaching steps.)
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../../arch/cluster_sm90.cuh"
#include "../../arch/guards.cuh"
#include "../../arch/pipeline_sm90.cuh"
#include "../../arch/smem.cuh"
#include "../../arch/tma_sm90.cuh"
#include "../../arch/warpgroup_sm90.cuh"
#include "config.cuh"

namespace kf::detail::wgmma {

#if KF_ARCH_SM90A
/// Tile: the kernel's tile_config; Cluster: CTAs per cluster.
template <class Tile, int Cluster>
struct cta_context {
  smem_layout<Tile> smem;
  stage_ring<Tile::stages> ring;
  int warpgroup;         ///< 0: the producer; 1, 2: the consumers
  int tid_in_warpgroup;  ///< 0 .. 127
  std::uint32_t rank;    ///< in the cluster

  /// raw: the shared::cta address of the dynamic shared memory.
  __device__ __forceinline__ explicit cta_context(std::uint32_t raw)
      : smem((raw + swizzle_atom_bytes - 1) & ~std::uint32_t(swizzle_atom_bytes - 1)),
        ring(smem.ring),
        warpgroup(warpgroup_index()),
        tid_in_warpgroup(static_cast<int>(threadIdx.x % warpgroup_threads)),
        rank(Cluster > 1 ? cluster_rank() : 0) {}

  /// Thread 0: prefetches the maps (map_c where the epilogue is staged), sets
  /// up the ring for `releases` arrivals per stage and whatever `more()` adds,
  /// and fences the barriers' initialization for the cluster.
  template <class More>
  __device__ __forceinline__ void init_barriers(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                                const CUtensorMap* map_c, bool staged, int releases,
                                                More&& more) const {
    if (threadIdx.x != 0) return;
    tma_prefetch_descriptor(map_a);
    tma_prefetch_descriptor(map_b);
    if (staged) tma_prefetch_descriptor(map_c);
    ring.init(releases);
    more();
    mbar_init_fence();
  }
  __device__ __forceinline__ void init_barriers(const CUtensorMap* map_a, const CUtensorMap* map_b,
                                                const CUtensorMap* map_c, bool staged, int releases) const {
    init_barriers(map_a, map_b, map_c, staged, releases, [] {});
  }
};
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::wgmma
