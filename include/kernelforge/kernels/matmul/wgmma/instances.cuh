// SPDX-License-Identifier: Apache-2.0
// The instances of the Hopper GEMM's kernel (14_wgmma.cuh) that the sm_90a
// object holds, and the table from the launcher's runtime choices -- element
// type, B's layout, the swapped product, the cluster's mode, the tile width --
// to one of them (wgmma/launch.cuh). Host code of the sm_90a translation units.
#pragma once

#include "../../runtime/launcher.hpp"
#include "kernelforge/error.hpp"
#include "../14_wgmma.cuh"
#include "config.cuh"
#include "policy.hpp"

namespace kf::detail::wgmma_host {

/// wgmma_kernel<T, Cluster, BNMajor, Epilogue, BlockN, MulticastA, ClusterSplitK, SwapAB>:
/// its shared memory, its clusters resident at once (and its shared-memory
/// opt-in, once per device), and its launch.
template <class T, int Cluster, bool BNMajor, class Epilogue, int BlockN, bool MulticastA = false,
          bool ClusterSplitK = false, bool SwapAB = false>
struct instance {
  static constexpr auto kernel =
      &wgmma_kernel<T, Cluster, BNMajor, Epilogue, BlockN, MulticastA, ClusterSplitK, SwapAB>;
  static constexpr int block_n = BlockN;
  static constexpr int smem_bytes = wgmma::tile_config<BlockN, ClusterSplitK>::smem_bytes;
  static int resident(int device, const char* what) {
    return resident_clusters<kernel>(device, wgmma::threads, smem_bytes, Cluster, what);
  }
};

/// What a cluster does: single CTAs (cluster 1), a pair sharing B or A
/// (multicast_a), or a pair splitting k of one 128 x 128 tile (split_k: the
/// launcher forces block_n 128 and cluster 2 then).
struct cluster_choice {
  int cluster = 1;
  bool multicast_a = false;
  bool split_k = false;
};

/// Calls f(instance<T, cluster, n_major, Epilogue, BlockN, multicast_a, split_k, swap>{})
/// for the runtime choice (N-major B: 16-bit T read with the transpose bit;
/// swap: the swapped TF32 product, its B k-major; a cluster of 2 shares B, or A
/// where multicast_a, or splits k; BlockN one of policy.hpp's
/// wgmma_block_n_choices). The cluster split-k is instantiated at BlockN 128
/// alone, N-major B for 16-bit T alone, the swapped product for TF32 alone.
template <class T, class Epilogue, int BlockN, bool NMajor, bool Swap, class F>
void with_instance_cluster(const cluster_choice& c, F&& f) {
  constexpr int pair = wgmma::max_cluster;
  if (c.cluster == 1) {
    f(instance<T, 1, NMajor, Epilogue, BlockN, false, false, Swap>{});
  } else if (c.split_k) {
    if constexpr (BlockN == 128) f(instance<T, pair, NMajor, Epilogue, BlockN, false, true, Swap>{});
  } else if (c.multicast_a) {
    f(instance<T, pair, NMajor, Epilogue, BlockN, true, false, Swap>{});
  } else {
    f(instance<T, pair, NMajor, Epilogue, BlockN, false, false, Swap>{});
  }
}

template <class T, class Epilogue, int BlockN, class F>
void with_instance_n(bool n_major, bool swap, const cluster_choice& c, F&& f) {
  if (!n_major && !swap) return with_instance_cluster<T, Epilogue, BlockN, false, false>(c, f);
  if constexpr (sizeof(T) == 2) {
    if (n_major && !swap) return with_instance_cluster<T, Epilogue, BlockN, true, false>(c, f);
  } else {
    if (swap && !n_major) return with_instance_cluster<T, Epilogue, BlockN, false, true>(c, f);
  }
  throw error(errc::unsupported,
              "wgmma_host::with_instance: N-major B is built for 16-bit types, the swapped product for TF32");
}

template <class T, class Epilogue, class F>
void with_instance(bool n_major, bool swap, const cluster_choice& c, int block_n, F&& f) {
  static_assert(sizeof(wgmma_block_n_choices) / sizeof(wgmma_block_n_choices[0]) == 3 &&
                    wgmma_block_n_choices[0] == 256 && wgmma_block_n_choices[1] == 128 &&
                    wgmma_block_n_choices[2] == 64,
                "with_instance instantiates the widths of wgmma_block_n_choices");
  if (c.split_k && block_n != 128) {
    throw error(errc::unsupported, "wgmma_host::with_instance: the cluster split-k is built for 128 x 128 tiles only");
  }
  if (block_n == 256) {
    with_instance_n<T, Epilogue, 256>(n_major, swap, c, f);
  } else if (block_n == 128) {
    with_instance_n<T, Epilogue, 128>(n_major, swap, c, f);
  } else {
    with_instance_n<T, Epilogue, 64>(n_major, swap, c, f);
  }
}

}  // namespace kf::detail::wgmma_host
