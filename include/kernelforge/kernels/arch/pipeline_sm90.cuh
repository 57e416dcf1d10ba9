// SPDX-License-Identifier: Apache-2.0
// The stage ring of an sm_90a producer/consumer kernel: Stages buffers in shared
// memory that a producer fills (with TMA) and consumers read, in turn, each with
// two mbarriers:
//  * full[s]: the producer's arrive.expect_tx of the stage's bytes; it completes
//    once those bytes have landed (TMA counts them off). Consumers wait on it.
//  * empty[s]: one arrival from every reader (a thread, a warp or a CTA of the
//    cluster, as the kernel counts them); it completes once all have finished
//    with the stage. The producer waits on it before refilling the stage.
// Both roles walk the same sequence of stages, so each keeps a ring_position:
// the stage it uses next and the parity of that stage's round (round r of a
// stage has parity r % 2). The producer waits for the previous round's release,
// parity ^ 1; in the first round that is the barrier's phase before its first,
// which an mbarrier counts as complete, so the first pass through the ring does
// not wait (as CUTLASS's PipelineTmaAsync starts its producer).
// Used by every sm_90a kernel (matmul's wgmma steps, conv2d's implicit GEMM,
// filter2d's TMA pipeline); the kernels keep only what differs: who the readers
// are and what a stage holds.
#pragma once

#include <cstdint>

#include "guards.cuh"
#include "mbarrier_sm90.cuh"

namespace kf::detail {

/// The barriers of a ring of `stages` stages: full[0 .. stages), then empty[0 .. stages), 8 bytes each.
__host__ __device__ constexpr int stage_ring_barrier_bytes(int stages) { return 2 * stages * 8; }

#if KF_ARCH_SM90A
/// Where a role stands in the ring: the stage it uses next and its round's parity.
template <int Stages>
struct ring_position {
  int stage = 0;
  std::uint32_t phase = 0;
  __device__ __forceinline__ void advance() {
    if (++stage == Stages) {
      stage = 0;
      phase ^= 1;
    }
  }
  /// n steps at once: a reader that skips the stages other readers take.
  __device__ __forceinline__ void advance(int n) {
    const int to = stage + n;
    phase ^= static_cast<std::uint32_t>((to / Stages) & 1);
    stage = to % Stages;
  }
};

/// The ring's barriers, at shared-memory address `barriers` (stage_ring_barrier_bytes(Stages) bytes, 8-aligned).
template <int Stages>
struct stage_ring {
  static constexpr int stages = Stages;
  static constexpr int barrier_bytes = 8;
  std::uint32_t full_bar;  ///< full[0]; full[s] = full_bar + 8 s
  __device__ __forceinline__ explicit stage_ring(std::uint32_t barriers) : full_bar(barriers) {}

  [[nodiscard]] __device__ __forceinline__ std::uint32_t full(int s) const { return full_bar + s * barrier_bytes; }
  [[nodiscard]] __device__ __forceinline__ std::uint32_t empty(int s) const {
    return full_bar + (Stages + s) * barrier_bytes;
  }

  /// One thread, before either role starts (then mbar_init_fence and a block or
  /// cluster barrier): full expects the producer's one arrival a round, empty
  /// `readers` releases.
  __device__ __forceinline__ void init(unsigned readers) const {
#pragma unroll
    for (int s = 0; s < Stages; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), readers);
    }
  }

  /// Producer: waits until the stage at `at` is free (every reader released its
  /// previous round), arms its full barrier for `bytes`, and returns that
  /// barrier for the copies to complete.
  __device__ __forceinline__ std::uint32_t producer_acquire(const ring_position<Stages>& at, unsigned bytes) const {
    mbar_wait(empty(at.stage), at.phase ^ 1);
    const std::uint32_t bar = full(at.stage);
    mbar_arrive_expect_tx(bar, bytes);
    return bar;
  }

  /// Consumer: waits until the stage at `at` has landed.
  __device__ __forceinline__ void consumer_wait(const ring_position<Stages>& at) const {
    mbar_wait(full(at.stage), at.phase);
  }

  /// Consumer: whether the stage at `at` has landed, without waiting; a consumer
  /// that asks while its products run takes the test's latency off the path to
  /// its next products (and calls consumer_wait only when the answer was no).
  [[nodiscard]] __device__ __forceinline__ bool consumer_ready(const ring_position<Stages>& at) const {
    return mbar_test_wait(full(at.stage), at.phase);
  }

  /// Consumer: one reader's release of stage s, in this CTA.
  __device__ __forceinline__ void release(int s) const { mbar_arrive(empty(s)); }

  /// Consumer: one reader's release of stage s in each of the cluster's
  /// `Cluster` CTAs (their copies multicast parts of this CTA's stage, so each
  /// must know before it refills them).
  template <int Cluster>
  __device__ __forceinline__ void release_cluster(int s) const {
#pragma unroll
    for (int cta = 0; cta < Cluster; ++cta) mbar_arrive_cluster(empty(s), static_cast<std::uint32_t>(cta));
  }
};
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail
