// SPDX-License-Identifier: Apache-2.0
// The host side of the fp32-emulation step (15_wgmma_fp32_emulated.cuh), for
// its sm_90a translation unit alone (src/matmul/wgmma_sm90a_fp32_emulated.cu):
// the split pre-pass into a pooled workspace, the TMA maps, the tile width and
// cluster by shape, the persistent grid and the cluster launch.
#pragma once

#include <cstddef>
#include <limits>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "../common/alignment.hpp"
#include "../common/grid.hpp"
#include "../runtime/device_facts.hpp"
#include "../runtime/kernel_attributes.hpp"
#include "../runtime/launcher.hpp"
#include "../runtime/tensor_map.hpp"
#include "../runtime/workspace.hpp"
#include "15_wgmma_fp32_emulated.cuh"
#include "fp32_emulated_instances.cuh"
#include "gemm_args.cuh"
#include "split_k.cuh"
#include "split_tf32.cuh"
#include "wgmma/config.cuh"
#include "wgmma/policy.hpp"
#include "wgmma/staged_c.hpp"
#include "wgmma_sm90a.hpp"  // wgmma_available

namespace kf::detail::fp32_emulated_host {

/// wgmma_fp32_emulated_kernel<Cluster, BlockN, *>: its two instances (finite
/// inputs; inputs with an inf or a NaN), their shared memory and launch.
template <int Cluster, int BlockN>
using instance = fp32_emulated_instances<&wgmma_fp32_emulated_kernel<Cluster, BlockN, false>,
                                         &wgmma_fp32_emulated_kernel<Cluster, BlockN, true>,
                                         wgmma::tile_config<BlockN>::smem_bytes, Cluster>;

/// Calls f(instance<...>{}) for the cluster size (1, 2) and tile width (128, 64) chosen at run time.
template <class F>
void with_instance(int cluster, int block_n, F&& f) {
  if (block_n == 128) {
    if (cluster == 1) {
      f(instance<1, 128>{});
    } else {
      f(instance<2, 128>{});
    }
  } else if (cluster == 1) {
    f(instance<1, 64>{});
  } else {
    f(instance<2, 64>{});
  }
}

/// See wgmma_fp32_emulated_try_launch (wgmma_sm90a.hpp).
inline bool try_launch(const gemm_args<float>& g, const epilogue::bias_relu_threshold<float>& fused, int device,
                       cudaStream_t stream, const char* what) {
  using wgmma::block_m;
  using wgmma::max_cluster;
  constexpr int stage_k = split_block_k;
  // Every check before any work: a false return has enqueued nothing.
  if (g.k == 0) return false;                  // C = beta C + epilogue: the launcher's own path
  if (!wgmma_available(device)) return false;  // compute capability 9.0 with the sm_90a image
  const std::size_t ld = split_tf32_ld(g.k);
  if (g.m > wgmma::max_extent || g.n > wgmma::max_extent || ld > wgmma::max_extent) return false;
  if (encode_tiled() == nullptr) return false;
  // The tile width by shape (128 x 128, or 128 x 64 where 128-wide tiles leave
  // SMs idle), and clusters of 2 sharing B where there are two tile rows.
  const std::size_t tiles_m = ceil_div(g.m, block_m);
  const int block_n = choose_wgmma_block_n(g.m, g.n, instance<1, 128>::resident(device, what), 128);
  const int cluster = tiles_m < 2 ? 1 : max_cluster;
  const std::size_t tiles_n = ceil_div(g.n, static_cast<std::size_t>(block_n));
  const std::size_t cluster_tiles_m = ceil_div(tiles_m, static_cast<std::size_t>(cluster));
  if (cluster_tiles_m * tiles_n > static_cast<std::size_t>(std::numeric_limits<int>::max())) return false;

  // The split operands (A as m x k and op(B)^T as n x k, hi and lo per 32 of
  // k), then the non-finite flag, in one pooled workspace.
  const split_gemm_operands operands(g, device, stream);  // back to the pool on return
  if (!operands.allocated()) return false;                // no pool or no memory: the caller reports it
  CUtensorMap map_a{}, map_b{}, map_c{};
  if (!encode_sw128(map_a, operands.a(), ld, g.m, ld, stage_k, wgmma::box_rows) ||
      !encode_sw128(map_b, operands.b(), ld, g.n, ld, stage_k, static_cast<cuuint32_t>(block_n / max_cluster))) {
    return false;
  }
  operands.enqueue(g, stream, what);

  int resident = 0;
  with_instance(cluster, block_n, [&](auto chosen) { resident = decltype(chosen)::resident(device, what); });
  wgmma::params<float> p = wgmma::params_of(g.C, g.ldc, g.m, g.n, ld, g.alpha, g.beta, cluster_tiles_m, tiles_n);
  // Split-k where the tiles fill less than half the GPU (as step 14), in whole
  // k-blocks: a slice's stages are its blocks' hi and lo pairs.
  const split_k_workspace split(plan_matmul_split_k(tiles_m * tiles_n, g.m, g.n, g.k, stage_k, resident * cluster,
                                                    wgmma_split_k_min_slice(sizeof(float))),
                                g.m, g.n, g.k, device, stream);
  p.partial = split.partials();
  p.splits = split.plan().split;
  p.split_k_tiles = 2 * static_cast<int>(ceil_div(split.plan().k_slice, static_cast<std::size_t>(stage_k)));
  // C through shared memory and TMA stores where it can (wgmma/staged_c.hpp).
  p.staged = wgmma::encode_staged_c(map_c, g, p.partial != nullptr);

  // Both instances; the one the pre-pass's flag does not name returns at once.
  const std::size_t items = cluster_tiles_m * tiles_n * static_cast<std::size_t>(p.splits);
  with_instance(cluster, block_n, [&](auto chosen) {
    decltype(chosen)::launch(items, resident, stream, what, map_a, map_b, map_c, p, fused,
                             static_cast<const unsigned*>(operands.nonfinite()));
  });
  check_launch(what);
  split.reduce(g, fused, stream);
  return true;
}

}  // namespace kf::detail::fp32_emulated_host
