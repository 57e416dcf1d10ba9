// SPDX-License-Identifier: Apache-2.0
// Step 13 -- wgmma_clusters: step 12's CTAs in clusters of two that share B's
// tile through TMA multicast, and tiles visited in grouped order for L2 reuse.
// Compiled for sm_90a only; host side wgmma_steps_sm90a.cu.
//
// What changes from step 12, and what it buys (measured below: not at every shape):
//  * A thread-block cluster of 2 CTAs on adjacent m-tiles of the same n-tile:
//    both need the same B tile, so each CTA loads half of B's boxes and TMA
//    multicasts them into both CTAs' shared memory (wgmma/mainloop.cuh,
//    b_sharers = 2). B's traffic from L2 halves: a CTA receives 48 KiB a
//    k-step but fetches 32.
//  * The stage ring spans the cluster: a stage is filled partly by the peer, so
//    a consumer warp releases it to both CTAs' `empty` barriers
//    (stage_ring::release_cluster), and no CTA refills a stage its peer still
//    reads. The CTAs' barriers must exist before either touches the other's
//    (a cluster barrier after initialization), and neither may exit while the
//    other can still arrive on its barriers (one at the end).
//  * Grouped rasterization (common/raster.hpp): consecutive clusters walk 8
//    cluster rows down one column of tiles before moving along n, so the
//    clusters running at once share A's rows and B's columns in L2.
// What it leaves for step 14: one tile per cluster (a launch, a pipeline fill
// and a barrier set-up per tile; the last wave idles SMs), one tile width,
// stores from registers, and the row-major layout only.
// H200, bench_matmul 2026-12-02 (one run; rows timed separately, ratio to cuBLAS of the same type):
// fp16 8192^3 647 TFLOP/s (0.94, step 12: 0.88), bf16 673 (0.93, step 12: 0.89); but at 4096^3
// slower than step 12: fp16 614 (0.79 against 0.83), bf16 664 (0.89 against 0.92) -- not yet
// profiled (benchmarks/tuning/matmul.md#hopper-learning-steps-11-13).
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../arch/cluster_sm90.cuh"
#include "../arch/guards.cuh"
#include "../arch/pipeline_sm90.cuh"
#include "../arch/smem.cuh"
#include "../arch/tma_sm90.cuh"
#include "../arch/warpgroup_sm90.cuh"
#include "../common/kernel.cuh"
#include "../common/raster.hpp"
#include "kernelforge/epilogue.cuh"
#include "wgmma/config.cuh"
#include "wgmma/epilogue.cuh"
#include "wgmma/mainloop.cuh"

namespace kf::detail {

/// C = alpha A B + beta C, one 256 x 256 cluster tile (two 128 x 256 CTA
/// tiles along m) per cluster of 2 (cluster blockIdx.x / 2 in grouped order
/// over p.cluster_tiles_m x p.cluster_tiles_n). Maps as step 12's.
template <class T>
KF_KERNEL void __launch_bounds__(wgmma::threads, 1)
    wgmma_clusters_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                          const wgmma::params<T> p) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace wgmma;
  constexpr int cluster = max_cluster;
  using tile = tile_config<256>;
  using loop = mainloop<T, tile, cluster, /*BNMajor=*/true, false, false, false>;
  extern __shared__ unsigned char wgmma_clusters_smem[];
  const std::uint32_t raw = smem_address(wgmma_clusters_smem);
  const smem_layout<tile> smem((raw + swizzle_atom_bytes - 1) & ~std::uint32_t(swizzle_atom_bytes - 1));
  const stage_ring<tile::stages> ring(smem.ring);
  const int warpgroup = warpgroup_index();
  const int tid_in_warpgroup = threadIdx.x % warpgroup_threads;
  const std::uint32_t rank = cluster_rank();
  if (threadIdx.x == 0) {
    tma_prefetch_descriptor(&map_a);
    tma_prefetch_descriptor(&map_b);
    // Every consumer warp of both CTAs releases a stage: both read the B boxes this CTA multicasts.
    ring.init(consumer_warpgroups * warps_per_warpgroup * loop::stage_readers);
    mbar_init_fence();
  }
  cluster_sync();  // both CTAs' barriers exist before either CTA's copies or releases reach them
  const tile_coord t =
      grouped_tile(static_cast<int>(blockIdx.x) / cluster, p.cluster_tiles_m, p.cluster_tiles_n, raster_group);
  const int tile_m = static_cast<int>(t.m) * cluster + static_cast<int>(rank), tile_n = static_cast<int>(t.n);
  const int k_steps = (p.k + loop::stage_k - 1) / loop::stage_k;

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<producer_registers>();
    if (tid_in_warpgroup == 0) {
      ring_position<tile::stages> at;
      for (int kt = 0; kt < k_steps; ++kt) {
        const std::uint32_t full = ring.producer_acquire(at, tile::stage_bytes);  // A and all of B land here
        loop::load_stage(&map_a, &map_b, smem.a + at.stage * a_tile_bytes, smem.b + at.stage * tile::b_tile_bytes, full,
                         tile_m, tile_n, kt, rank);
        at.advance();
      }
    }
  } else {
    // ---------------------------------------------------------------- consumers
    setmaxnreg_inc<consumer_registers>();
    const int consumer = warpgroup - 1;
    const int lane = tid_in_warpgroup % 32, warp = tid_in_warpgroup / 32;
    const auto operands = loop::consumer_operands(smem.a, smem.b, consumer, warp, lane);
    float d[tile::accumulators];
#pragma unroll
    for (int i = 0; i < tile::accumulators; ++i) d[i] = 0.0f;
    fence_operands(d);
    ring_position<tile::stages> at;
    int previous = -1;
    for (int kt = 0; kt < k_steps; ++kt) {
      ring.consumer_wait(at);
      loop::mma_stage(d, operands, smem.a, at.stage);
      wgmma_wait<1>();
      if (previous >= 0 && lane == 0) ring.template release_cluster<cluster>(previous);
      previous = at.stage;
      at.advance();
    }
    wgmma_wait<0>();
    fence_operands(d);
    const long long row0 = static_cast<long long>(tile_m) * block_m + consumer * wgmma_m + warp * 16 + lane / 4;
    const long long col0 = static_cast<long long>(tile_n) * tile::block_n + 2 * (lane % 4);
    store_tile<T>(d, p, row0, col0, epilogue::identity{});
  }
  cluster_sync();  // no CTA exits while its peer can still arrive on its barriers
#endif
}

}  // namespace kf::detail
