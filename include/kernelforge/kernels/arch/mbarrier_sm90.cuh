// SPDX-License-Identifier: Apache-2.0
// Shared-memory barriers with transaction counts (mbarrier, sm_90a): how a TMA
// copy tells its consumers that a stage has landed, and how consumers hand the
// stage back. Bodies exist only under KF_ARCH_SM90A; kernels that call them are
// compiled for sm_90a alone.
#pragma once

#include <cstdint>

#include "cluster_sm90.cuh"  // map_shared_cluster
#include "guards.cuh"

namespace kf::detail {

#if KF_ARCH_SM90A
__device__ __forceinline__ void mbar_init(std::uint32_t bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

/// Makes initialized barriers visible to the cluster and to the async proxy (TMA).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

/// One test of a phase-parity wait: true once the phase of `bar` with parity
/// `parity` has completed. The acquire is at CTA scope (enough for TMA's
/// complete_tx and local arrivals), or at cluster scope with ClusterAcquire (a
/// peer CTA's stores before its releasing remote arrival become visible).
template <bool ClusterAcquire>
__device__ __forceinline__ bool mbar_try_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  if constexpr (ClusterAcquire) {
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } else {
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  }
  return done != 0;
}

/// The same test, never suspending the thread (mbarrier.test_wait): for a
/// consumer that asks early whether its next stage has landed and goes on with
/// other work either way.
__device__ __forceinline__ bool mbar_test_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  asm volatile(
      "{\n .reg .pred p;\n"
      " mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}

__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  while (!mbar_try_wait<false>(bar, parity)) {
  }
}

__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/// mbar_wait with acquire semantics at cluster scope: what a peer CTA wrote to
/// this CTA's shared memory (st.shared::cluster) before its releasing arrive
/// (mbar_arrive_remote_release) is visible once the phase completes.
__device__ __forceinline__ void mbar_wait_acquire_cluster(std::uint32_t bar, std::uint32_t parity) {
  while (!mbar_try_wait<true>(bar, parity)) {
  }
}

/// Arrives on the barrier at the same shared-memory offset in CTA `cta` of the cluster.
__device__ __forceinline__ void mbar_arrive_cluster(std::uint32_t bar, std::uint32_t cta) {
  const std::uint32_t remote = map_shared_cluster(bar, cta);
  // Default semantics (release, CTA scope), as CUTLASS's ClusterBarrier: the
  // stage's only readers were this warp's products, already complete; a
  // cluster-scope release would add a GPU-wide memory barrier to every release.
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

/// Arrives on the barrier at the same shared-memory offset in CTA `cta` of the
/// cluster with release semantics at cluster scope: this thread's earlier
/// accesses -- its stores into the peer's shared memory (st_shared_cluster_v4),
/// or its reads of a buffer the peer will overwrite -- are ordered before the
/// arrival for a thread that waits with mbar_wait_acquire_cluster.
__device__ __forceinline__ void mbar_arrive_remote_release(std::uint32_t bar, std::uint32_t cta) {
  const std::uint32_t remote = map_shared_cluster(bar, cta);
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail
