// SPDX-License-Identifier: Apache-2.0
// Step 14 -- wgmma: the Hopper (sm_90a) GEMM, for TF32 (float), __half and
// __nv_bfloat16, fp32 accumulation. Compiled for sm_90a only; host side
// wgmma/launch.cuh, declarations wgmma_sm90a.hpp.
//
// What changes from step 13 (clusters, one tile per cluster), and why it is
// faster; steps 11-13 introduce wgmma + TMA, warp specialization with the
// stage ring (arch/pipeline_sm90.cuh) and clusters sharing B:
//  * Persistent CTAs: as many as the device holds at once, each walking the
//    tiles in grouped order (wgmma/scheduler.cuh). The producer's ring runs on
//    across tiles, so a tile's stages are loading while the previous tile is
//    stored: no launch, pipeline fill or barrier set-up per tile.
//  * The tile width by shape (256, 128 or 64: wgmma/policy.hpp), and what a
//    cluster does by shape: share B, share A (narrow tiles), or split k of
//    one tile and add the halves on chip (wgmma/cluster_split_k.cuh); split-k
//    through a workspace where even the narrowest tiles cannot fill the GPU.
//  * Staged epilogue: C through swizzled shared buffers and TMA stores, 16-bit
//    tiles overlapped with the next tile's products (wgmma/epilogue.cuh).
//  * Every layout and type: TF32 (a row-major B takes the swapped product
//    C^T = op(B)^T op(A)^T, its A from registers: wgmma/swap_ab.cuh),
//    fp16 / bf16, operands repacked where TMA cannot read them in place, and
//    the fused bias / ReLU epilogue.
// H200, bench_matmul 2026-12-02, what best runs and cuBLAS timed in turn (paired): fp16 4096^3
// 0.998 of cuBLAS, 8192^3 1.026; bf16 1.001 and 1.031; TF32 1.016 and 1.008.
// Read the parts in this order: wgmma/config.cuh, cta.cuh, element.cuh, scheduler.cuh,
// mainloop.cuh, producer.cuh, epilogue.cuh, swap_ab.cuh, cluster_split_k.cuh. Which tile
// width, cluster mode and B source run a product: wgmma/policy.hpp. Measured
// speed: the docs site's learning path (docs/build_site.py); the evidence for each choice: benchmarks/tuning/matmul.md,
// a section each.
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
#include "kernelforge/epilogue.cuh"
#include "wgmma/cluster_split_k.cuh"
#include "wgmma/config.cuh"
#include "wgmma/cta.cuh"
#include "wgmma/element.cuh"
#include "wgmma/epilogue.cuh"
#include "wgmma/mainloop.cuh"
#include "wgmma/producer.cuh"
#include "wgmma/scheduler.cuh"
#include "wgmma/swap_ab.cuh"

namespace kf::detail {

/// C = fn(alpha op(A) op(B) + beta C), tiles of 128 x BlockN (256, 128, 64).
/// map_a: A as m x k, k-contiguous (boxes of a_box_rows(MulticastA) rows x one
/// swizzled row of k). map_b: op(B)^T as n x k, k-contiguous (boxes of BlockN / 2
/// rows), or (BNMajor, 16-bit) op(B) as k x n, n-contiguous (boxes of one
/// swizzled row of n x a stage's k). map_c: C as m x n in boxes of 64 rows x one
/// swizzled row, for the staged epilogue (p.staged). SwapAB: map_a is op(B) as
/// k x n, map_b is A; p.m and p.n are n and m, and C is stored transposed.
template <class T, int Cluster, bool BNMajor = false, class Epilogue = epilogue::identity, int BlockN = 256,
          bool MulticastA = false, bool ClusterSplitK = false, bool SwapAB = false>
KF_KERNEL void __launch_bounds__(wgmma::threads, 1)
    wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                 const __grid_constant__ CUtensorMap map_c, const wgmma::params<T> p, const Epilogue fn) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace wgmma;
  using tile = tile_config<BlockN, ClusterSplitK>;
  using loop = mainloop<T, tile, Cluster, BNMajor, MulticastA, ClusterSplitK, SwapAB>;
  static_assert(Cluster == 1 || Cluster == max_cluster, "clusters of 1 or 2 CTAs");
  static_assert(!MulticastA || Cluster == max_cluster, "A is shared by a cluster of 2 CTAs only");
  static_assert(!ClusterSplitK || (Cluster == max_cluster && !MulticastA),
                "the cluster split-k mode: a cluster of 2 CTAs on one tile, sharing no operand");
  extern __shared__ unsigned char wgmma_smem[];
  const cta_context<tile, Cluster> cta(smem_address(wgmma_smem));
  const auto& smem = cta.smem;
  const auto& ring = cta.ring;
  const int warpgroup = cta.warpgroup, tid_in_warpgroup = cta.tid_in_warpgroup;
  const std::uint32_t rank = cta.rank;

  // Every role walks the same work items and k-steps, so each runs the same
  // rounds of every stage. A peer's multicast of round r + 1 can land before
  // this CTA's expect_tx (the tx-count goes negative meanwhile, as the PTX ISA
  // allows), never before round r completed here: the peer issues it after its
  // `empty` of round r, which needs this CTA's consumers past `full` round r.
  // Every consumer warp of every CTA whose products read a stage (B or A is multicast) releases it.
  cta.init_barriers(&map_a, &map_b, &map_c, p.staged, consumer_warpgroups * warps_per_warpgroup * loop::stage_readers,
                    [&] {
                      if constexpr (ClusterSplitK) {
                        mbar_init(smem.recv_full, warpgroup_threads);  // each thread of the peer's sending warpgroup
                        mbar_init(smem.peer_free, warpgroup_threads);  // each thread of the peer's receiving warpgroup
                      }
                    });
  // The cluster barrier's two halves straddle the set-up below.
  barriers_ready_arrive<Cluster>();
  const tile_scheduler<T, Cluster, MulticastA, ClusterSplitK> schedule{p, (p.k + loop::stage_k - 1) / loop::stage_k,
                                                                       static_cast<int>(rank)};
  const int items = schedule.items();
  barriers_ready_wait<Cluster>();

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<producer_registers>();
    if (tid_in_warpgroup == 0) produce<loop, tile>(schedule, ring, smem, &map_a, &map_b, rank);
  } else {
    // ---------------------------------------------------------------- consumers
    setmaxnreg_inc<consumer_registers>();
    const int consumer = warpgroup - 1;
    const int lane = tid_in_warpgroup % 32;
    const int warp_in_warpgroup = tid_in_warpgroup / 32;
    // Hands a stage back to the producer(s) once its products have completed.
    const auto release = [&](int s) {
      if (lane == 0) loop::release(ring, s);
    };
    const auto operands = loop::consumer_operands(smem.a, smem.b, consumer, warp_in_warpgroup, lane);
    ring_position<tile::stages> at;
    int c_buffer = 0;  // the staged epilogue's next C buffer
    partial_exchange exchange{smem.receive, smem.recv_full, smem.peer_free, rank ^ 1u};
    // 16-bit staged tiles go out during the next tile's k-steps (staged_tile_16).
    constexpr bool overlapped_stores = element<T>::bytes == 2 && !ClusterSplitK && !SwapAB;
    staged_tile_16<T, tile::accumulators> pending;
    const std::uint32_t c_smem = smem.c + consumer * c_buffers * c_buffer_bytes;
    const int c_barrier = 1 + consumer;
    for (int item = schedule.first(); item < items; item += schedule.stride()) {
      const work_item w = schedule(item);
      float d[tile::accumulators];
#pragma unroll
      for (int i = 0; i < tile::accumulators; ++i) d[i] = 0.0f;
      fence_operands(d);

      // One k-step: wait for the stage, issue its products, keep them in flight
      // and hand the previous stage back. SwapAB first waits for every product
      // (its fragment registers are rewritten); the other consumer warpgroup's
      // products keep the tensor cores busy meanwhile.
      int previous = -1;
      for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
        ring.consumer_wait(at);
        if constexpr (SwapAB) {
          wgmma_wait<0>();
          if (previous >= 0) release(previous);
          previous = -1;
        }
        loop::mma_stage(d, operands, smem.a, at.stage);
        // While this k-step's products run: a chunk of the previous tile's stores.
        if constexpr (overlapped_stores) {
          if (p.staged) pending.store_next(p, &map_c, c_smem, c_barrier, c_buffer);
        }
        if constexpr (!SwapAB) {
          wgmma_wait<1>();  // this stage's products stay in flight; the previous stage's have completed
          if (previous >= 0) release(previous);
        }
        previous = at.stage;
        at.advance();
      }
      wgmma_wait<0>();
      fence_operands(d);
      if (previous >= 0) release(previous);  // the tile's last stage, before the stores

      if constexpr (ClusterSplitK) {
        // CTA r finishes the rows of its consumer warpgroup r; the other warpgroup sends its partial.
        if (consumer != static_cast<int>(rank)) {
          exchange.send(d, tid_in_warpgroup);
          continue;  // the peer stores these rows
        }
        exchange.receive_add(d, tid_in_warpgroup);
      }

      if constexpr (SwapAB) {
        // C^T's tile: its rows (C's columns) from tile_m, its columns (C's rows) from tile_n.
        const int c_row0 = w.tile_n * BlockN, c_col0 = w.tile_m * block_m + consumer * wgmma_m;
        if (p.staged) {
          store_tile_staged_swapped(d, p, &map_c, c_smem, c_row0, c_col0, c_barrier, fn);
        } else if (p.partial == nullptr) {
          store_tile_swapped(d, p, c_row0, c_col0, fn);
        } else {
          store_tile_swapped(d, partial_slice(p, w.slice, p.m), c_row0, c_col0, epilogue::identity{});
        }
        continue;
      }
      const int row_base = w.tile_m * block_m + consumer * wgmma_m, col_base = w.tile_n * BlockN;
      if (p.staged) {
        if constexpr (overlapped_stores) {
          pending.flush(p, &map_c, c_smem, c_barrier, c_buffer);  // what a short tile left
          pending.take(d, p, row_base, col_base, fn);
        } else {
          store_tile_staged<T>(d, p, &map_c, c_smem, row_base, col_base, c_barrier, c_buffer, fn);
        }
        continue;
      }
      // The thread's first row and column (accumulator layout: epilogue.cuh, store_tile).
      const long long row0 =
          static_cast<long long>(w.tile_m) * block_m + consumer * wgmma_m + warp_in_warpgroup * 16 + lane / 4;
      const long long col0 = static_cast<long long>(w.tile_n) * BlockN + 2 * (lane % 4);
      if (p.partial == nullptr) {
        store_tile<T>(d, p, row0, col0, fn);
      } else {
        store_tile<float>(d, partial_slice(p, w.slice, p.n), row0, col0, epilogue::identity{});
      }
    }
    if constexpr (overlapped_stores) {
      if (p.staged) pending.flush(p, &map_c, c_smem, c_barrier, c_buffer);  // the last tile's
    }
    // The last C buffers are read before the CTA's shared memory goes (their
    // writes to C land by the kernel's end without a wait here).
    if (p.staged && tid_in_warpgroup == 0) tma_store_wait_read<0>();
  }

  // No CTA may exit while its peer can still arrive on its barriers.
  if constexpr (Cluster > 1) cluster_sync();
#endif
}

}  // namespace kf::detail
