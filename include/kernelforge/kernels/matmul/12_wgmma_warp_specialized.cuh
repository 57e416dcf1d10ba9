// SPDX-License-Identifier: Apache-2.0
// Step 12 -- wgmma_warp_specialized: a producer warpgroup copies, two consumer
// warpgroups multiply, and a deeper stage ring sits between them. Compiled for
// sm_90a only; host side wgmma_steps_sm90a.cu.
//
// What changes from step 11 (one warpgroup copies and multiplies), and why it
// is faster:
//  * Warp specialization: warpgroup 0 only copies (one thread issues the TMA
//    copies of each k-step, wgmma/mainloop.cuh: load_stage), warpgroups 1 and 2
//    only multiply (mma_stage). The copies run ahead of the products by up to
//    `stages` k-steps instead of one, hiding L2 and HBM latency.
//  * setmaxnreg: the producer gives registers back (40 a thread) and the
//    consumers take them (232), so each consumer holds a 64 x 256 accumulator
//    tile (128 fp32 a thread): the CTA's tile is 128 x 256, twice step 11's,
//    and each A and B byte read from shared memory feeds twice the products.
//  * The products stay in flight across k-steps: a consumer issues k-step kt,
//    then waits only for k-step kt - 1 (wgmma_wait<1>) before handing that
//    stage back, so the tensor cores never drain between k-steps.
//  * 4 stages of 48 KiB (wgmma/config.cuh: tile_config<256>), handed over
//    through full/empty mbarriers (arch/pipeline_sm90.cuh).
// What it leaves for step 13: each CTA loads its own A and B tiles, though the
// CTA next to it reads the same B tile, and tiles run in launch order.
// H200, bench_matmul 2026-12-02 (one run; rows timed separately, ratio to cuBLAS of the same type):
// fp16 4096^3 641 TFLOP/s (0.83), 8192^3 605 (0.88); bf16 682 (0.92), 644 (0.89).
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../arch/guards.cuh"
#include "../arch/pipeline_sm90.cuh"
#include "../arch/smem.cuh"
#include "../arch/tma_sm90.cuh"
#include "../arch/warpgroup_sm90.cuh"
#include "../common/kernel.cuh"
#include "kernelforge/epilogue.cuh"
#include "wgmma/config.cuh"
#include "wgmma/epilogue.cuh"
#include "wgmma/mainloop.cuh"

namespace kf::detail {

/// C = alpha A B + beta C for one 128 x 256 tile per CTA (tile blockIdx.x:
/// row-major over the tiles, p.cluster_tiles_n of them a row). map_a: A as
/// m x k, boxes of 128 rows x 64 k. map_b: B as k x n (n-contiguous), boxes of
/// 64 k rows x 64 n.
template <class T>
KF_KERNEL void __launch_bounds__(wgmma::threads, 1)
    wgmma_warp_specialized_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                                  const wgmma::params<T> p) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace wgmma;
  using tile = tile_config<256>;
  using loop = mainloop<T, tile, 1, /*BNMajor=*/true, false, false, false>;
  extern __shared__ unsigned char wgmma_ws_smem[];
  const std::uint32_t raw = smem_address(wgmma_ws_smem);
  const smem_layout<tile> smem((raw + swizzle_atom_bytes - 1) & ~std::uint32_t(swizzle_atom_bytes - 1));
  const stage_ring<tile::stages> ring(smem.ring);
  const int warpgroup = warpgroup_index();
  const int tid_in_warpgroup = threadIdx.x % warpgroup_threads;
  if (threadIdx.x == 0) {
    tma_prefetch_descriptor(&map_a);
    tma_prefetch_descriptor(&map_b);
    ring.init(consumer_warpgroups * warps_per_warpgroup);  // every consumer warp releases a stage
    mbar_init_fence();
  }
  __syncthreads();
  const int tile_m = static_cast<int>(blockIdx.x) / p.cluster_tiles_n;
  const int tile_n = static_cast<int>(blockIdx.x) % p.cluster_tiles_n;
  const int k_steps = (p.k + loop::stage_k - 1) / loop::stage_k;

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<producer_registers>();
    if (tid_in_warpgroup == 0) {
      ring_position<tile::stages> at;
      for (int kt = 0; kt < k_steps; ++kt) {
        const std::uint32_t full = ring.producer_acquire(at, tile::stage_bytes);
        loop::load_stage(&map_a, &map_b, smem.a + at.stage * a_tile_bytes, smem.b + at.stage * tile::b_tile_bytes, full,
                         tile_m, tile_n, kt, 0);
        at.advance();
      }
    }
    return;
  }
  // ------------------------------------------------------------------ consumers
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
    wgmma_wait<1>();  // this k-step's products stay in flight; the previous k-step's have completed
    if (previous >= 0 && lane == 0) ring.release(previous);
    previous = at.stage;
    at.advance();
  }
  wgmma_wait<0>();
  fence_operands(d);
  const long long row0 = static_cast<long long>(tile_m) * block_m + consumer * wgmma_m + warp * 16 + lane / 4;
  const long long col0 = static_cast<long long>(tile_n) * tile::block_n + 2 * (lane % 4);
  store_tile<T>(d, p, row0, col0, epilogue::identity{});
#endif
}

}  // namespace kf::detail
