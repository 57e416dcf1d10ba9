// SPDX-License-Identifier: Apache-2.0
// Thread-block clusters (sm_90a): a CTA's rank in its cluster, the cluster-wide
// barrier, and distributed shared memory (a peer CTA's shared memory: address
// mapping and 16-byte stores). Warpgroup roles: warpgroup_sm90.cuh.
#pragma once

#include <cstdint>

#include "guards.cuh"

namespace kf::detail {

#if KF_ARCH_SM90A
__device__ __forceinline__ std::uint32_t cluster_rank() {
  std::uint32_t r = 0;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

/// cluster_sync in two halves, so that other work overlaps the barrier. The
/// relaxed arrive orders none of this thread's memory accesses: for what is
/// published by fence.mbarrier_init.release.cluster (mbarrier initialization),
/// which the PTX ISA pairs with it, not for data.
__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }

/// After one thread initialized a kernel's mbarriers (and mbar_init_fence):
/// every CTA's barriers exist before any TMA copy or remote arrive touches them.
/// Arrive, set up what needs no barrier, then wait; a single CTA (Cluster 1)
/// takes a block barrier at the arrive.
template <int Cluster>
__device__ __forceinline__ void barriers_ready_arrive() {
  if constexpr (Cluster > 1) {
    cluster_arrive_relaxed();
  } else {
    __syncthreads();
  }
}
template <int Cluster>
__device__ __forceinline__ void barriers_ready_wait() {
  if constexpr (Cluster > 1) cluster_wait();
}

/// The shared::cluster address of `smem` (a shared::cta address of this CTA's
/// layout) in CTA `cta` of the cluster: the same offset in the peer's shared memory.
__device__ __forceinline__ std::uint32_t map_shared_cluster(std::uint32_t smem, std::uint32_t cta) {
  std::uint32_t remote = 0;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem), "r"(cta));
  return remote;
}

/// A 16-byte store to distributed shared memory (`remote`: from map_shared_cluster,
/// 16-byte aligned). Weak: the writer publishes it with a release at cluster scope
/// (mbar_arrive_remote_release), the reader takes it with an acquire
/// (mbar_wait_acquire_cluster).
__device__ __forceinline__ void st_shared_cluster_v4(std::uint32_t remote, float4 v) {
  asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(remote), "f"(v.x), "f"(v.y), "f"(v.z),
               "f"(v.w)
               : "memory");
}

#endif  // KF_ARCH_SM90A

}  // namespace kf::detail
