// SPDX-License-Identifier: Apache-2.0
// The cluster split-k of the Hopper GEMM (14_wgmma.cuh, ClusterSplitK): where
// 128 x 64 tiles would run one per CTA, a cluster of 2 computes one 128 x 128
// tile instead, CTA r over half of its k-steps (scheduler.cuh), and the partial
// tiles meet on chip: CTA r finishes the tile's rows 64 r .. 64 r + 63 (its
// consumer warpgroup r's); the other consumer warpgroup of each CTA sends its
// fp32 accumulators into the peer's shared memory (st.shared::cluster), and the
// receiver adds them to its own and runs the normal epilogue. No fp32 workspace
// in HBM and no reduction kernel, for one 32 KiB exchange a tile.
// Thread t of either warpgroup holds the same elements of C, so the sender
// writes its accumulators as 16-byte vectors in thread order (vector i at
// (i * 128 + t) * 16: a warp's stores are 512 contiguous bytes, no bank
// conflicts) and the receiver reads them back the same way. Two mbarriers per
// CTA, their phases counted by `exchanges` (both CTAs walk the same tiles):
//  * recv_full: the peer's 128 sending threads arrive (release, cluster scope)
//    after their stores; the receiver's cluster-scope acquire then sees them;
//  * peer_free: the peer's 128 receiving threads arrive after their loads; a
//    sender waits for it before it rewrites the peer's buffer with the next tile.
// Barriers rather than a cluster barrier per tile, which would need the
// producers too (they run ahead, filling the next tile's stages) and would hold
// each warpgroup back for the slower CTA's epilogue. The kernel's final
// cluster_sync keeps both CTAs alive until every remote store and arrival is made.
#pragma once

#include <cstdint>

#include "../../arch/cluster_sm90.cuh"
#include "../../arch/guards.cuh"
#include "../../arch/mbarrier_sm90.cuh"
#include "../../arch/smem.cuh"
#include "../../arch/warpgroup_sm90.cuh"
#include "config.cuh"

namespace kf::detail::wgmma {

#if KF_ARCH_SM90A
/// Where the exchange happens: this CTA's receive buffer and its two barriers.
struct partial_exchange {
  std::uint32_t receive, recv_full, peer_free;
  std::uint32_t peer;  ///< the other CTA's rank
  int exchanges = 0;   ///< partial tiles sent or received so far (the barriers' phases)

  /// The sending warpgroup: its accumulators into the peer's receive buffer.
  template <int Accumulators>
  __device__ __forceinline__ void send(const float (&d)[Accumulators], int tid_in_warpgroup) {
    if (exchanges > 0) mbar_wait_acquire_cluster(peer_free, (exchanges - 1) & 1);
    const std::uint32_t remote = map_shared_cluster(receive, peer);
#pragma unroll
    for (int i = 0; i < Accumulators / 4; ++i) {
      st_shared_cluster_v4(remote + (i * warpgroup_threads + tid_in_warpgroup) * 16,
                           make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]));
    }
    mbar_arrive_remote_release(recv_full, peer);
    ++exchanges;
  }

  /// The finishing warpgroup: adds the peer's partial to its accumulators.
  template <int Accumulators>
  __device__ __forceinline__ void receive_add(float (&d)[Accumulators], int tid_in_warpgroup) {
    mbar_wait_acquire_cluster(recv_full, exchanges & 1);
#pragma unroll
    for (int i = 0; i < Accumulators / 4; ++i) {
      const float4 v = load_shared_v4(receive + (i * warpgroup_threads + tid_in_warpgroup) * 16);
      d[4 * i] += v.x;
      d[4 * i + 1] += v.y;
      d[4 * i + 2] += v.z;
      d[4 * i + 3] += v.w;
    }
    mbar_arrive_remote_release(peer_free, peer);
    ++exchanges;
  }
};
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::wgmma
