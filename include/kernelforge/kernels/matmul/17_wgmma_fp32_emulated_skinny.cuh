// SPDX-License-Identifier: Apache-2.0
// Step 17 -- fp32 emulation for skinny products (math_mode::fp32_emulated where
// one side of C is small: m or n <= 256, plan.hpp's choose_fp32_emulated_large),
// with the large operand split into TF32 parts in the consumers' registers.
// Compiled for sm_90a only; host side fp32_emulated_skinny_launch.cuh,
// declaration wgmma_sm90a.hpp (wgmma_fp32_emulated_skinny_try_launch).
//  * Bytes. Step 15's pre-pass reads each operand once and writes its hi and
//    lo parts, which its kernel reads: 20 bytes of HBM traffic an element, in
//    two passes. At 128 x 8192 x 8192 that is 1.3 GB (~0.28 ms at 4.8 TB/s)
//    against ~0.1 ms of products. Here the large operand X is read once, as
//    plain fp32, by TMA (268 MB there), and split in registers into the
//    pre-pass's parts, bit for bit (wgmma/split_in_registers.cuh: a thread's
//    16 values a k-block split unguarded, 7 instructions each, and again with
//    the pre-pass's guarded split_tf32 only where one is inf, NaN or rounds
//    past FLT_MAX); only the small operand Y is pre-split.
//  * X must be wgmma's A, the operand it takes from registers: where m is
//    small the kernel computes C^T = op(B)^T op(A)^T (step 14's swapped TF32
//    product and its epilogues, wgmma/swap_ab.cuh), where n is small C = op(A)
//    op(B). X is read k-major or M-major in place (wgmma/split_in_registers.cuh).
//  * A stage is one k-block: 32 of k of X's 128 rows and Y's hi and lo parts,
//    64 rows each (64-wide tiles: the sums, the partial and two sets of 48
//    fragment registers fit a thread). Small sides above 64 run clusters of 2
//    sharing X (TMA multicast); a single tile column splits k (as step 14).
//  * The same accuracy as step 15: the same parts, products, order and sums
//    (fp32_emulated_sums.cuh, via wgmma/fp32_emulated_sums.cuh).
//  * Infinities and NaNs: X's are met in registers (the hi that hi x lo reads
//    is zeroed, so no inf meets a zero correction part); Y's are flagged by
//    its pre-pass and run the Apart instance (both are launched; the other
//    returns at once).
//  * Split ahead (SplitAhead): a warpgroup issues k-block i's products, then
//    loads and splits k-block i + 1 (16 values a thread) into its second
//    fragment set while they run, then waits for them, releases stage i and
//    sums. The sets are taken in turn by a loop unrolled over two k-blocks,
//    so each has fixed registers: a rewritten fragment register would make
//    ptxas wait for the products reading it.
//    The partial is read before the next products overwrite it, so one
//    k-block's products are in flight a warpgroup (the other's beside them).
//    SplitAhead false splits after the products complete (the same bits; the
//    paired bench row), as does Apart, whose corrections take 32 registers.
//  * Turns: the two consumer warpgroups issue each k-block's products in turn
//    (warpgroup_turns, as step 15), so one's sums always run beside the
//    other's products: 128 x 8192 x 8192 1.633 -> 1.704x SGEMM (H100,
//    2026-12-07, same run), and the serial schedule then as fast as split ahead.
// 128 x 8192 x 8192, paired in one run: H200 (2026-12-04, the guarded split)
// 60.4 TFLOP/s against step 15's 41.7 (1.45x; 1.29x with the serial
// schedule), 1.19x cuBLAS SGEMM; H100 (2026-12-06) guarded 59.9 TFLOP/s,
// 1.17x SGEMM, unguarded 82.5, 1.63x SGEMM; H200 (2026-12-06) unguarded 83.7,
// 1.66x SGEMM; the same error (4.7e-9). `best`
// runs it on skinny shapes (tuning.hpp: best_uses_fp32_emulated_skinny):
// benchmarks/tuning/matmul.md#fp32-emulation-for-skinny-products-step-17.
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../arch/cluster_sm90.cuh"
#include "../arch/guards.cuh"
#include "../arch/pipeline_sm90.cuh"
#include "../arch/smem.cuh"
#include "../arch/tma_sm90.cuh"
#include "../arch/warpgroup_sm90.cuh"
#include "../arch/wgmma_sm90.cuh"
#include "../common/kernel.cuh"
#include "kernelforge/epilogue.cuh"
#include "wgmma/config.cuh"
#include "wgmma/cta.cuh"
#include "wgmma/epilogue.cuh"
#include "wgmma/fp32_emulated_sums.cuh"
#include "wgmma/mainloop.cuh"
#include "wgmma/producer.cuh"
#include "wgmma/scheduler.cuh"
#include "wgmma/split_in_registers.cuh"
#include "wgmma/swap_ab.cuh"

namespace kf::detail {

/// The skinny step's tile width (the small side's block): 64 (see the top of this file).
inline constexpr int skinny_block_n = 64;

/// C = fused(alpha * op(A) op(B) + beta * C) in fp32 accuracy from X (p.m x
/// p.k, the large operand, plain fp32) and Y (p.n x p.k, the small one,
/// pre-split: split_tf32.cuh), tiles of 128 rows of X x 64 of Y.
/// map_x: X k-major (x_k_major: boxes of 128 rows x 32 of k, 64 rows where a
/// cluster shares X) or M-major (boxes of 32 rows x 32 of k). map_y: Y's split
/// in boxes of 64 rows x 32. Swap: X is op(B)^T and Y op(A), C^T is computed
/// (p.m = n, p.n = m) and map_c is C in boxes of 64 rows x 32 (p.staged);
/// else X is op(A), Y op(B)^T (C stored from registers). Apart: the instance
/// for a Y with an inf or a NaN (*nonfinite != 0, set by Y's pre-pass); the
/// launcher enqueues both, and the other one returns at once. SplitAhead: the
/// k-loop's schedule (the top of this file; false: each k-block loaded and split
/// after the previous one's products complete, the same bits, for the paired
/// bench row and the tests); the Apart instance has no registers for it.
template <int Cluster, bool Swap, bool Apart, bool SplitAhead>
KF_KERNEL void __launch_bounds__(wgmma::threads, 1)
    wgmma_fp32_emulated_skinny_kernel(const __grid_constant__ CUtensorMap map_x,
                                      const __grid_constant__ CUtensorMap map_y,
                                      const __grid_constant__ CUtensorMap map_c, const wgmma::params<float> p,
                                      const epilogue::bias_relu_threshold<float> fused, const unsigned* nonfinite,
                                      bool x_k_major) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace wgmma;
  constexpr int block_n = skinny_block_n;
  using tile = tile_config<block_n, false, 2>;  // a stage: X's 128 rows, Y's hi and lo parts
  constexpr bool share_x = Cluster > 1;         // a cluster's CTAs take adjacent tiles of Y: X is shared
  // Step 14's copies of its A, k-major (loop) or M-major as the swapped product loads it, and its release.
  using loop = mainloop<float, tile, Cluster, false, share_x, false, false>;
  using m_major_loop = mainloop<float, tile, Cluster, false, share_x, false, true>;
  static_assert(Cluster == 1 || Cluster == max_cluster, "clusters of 1 or 2 CTAs (sharing X)");
  static_assert(!(Apart && SplitAhead), "Apart's corrections leave no registers for a second fragment set");
  constexpr int k_block = loop::stage_k;  // 32: a stage is one k-block, as the pre-pass blocks Y
  static_assert(k_block == split_k_steps * loop::elem::wgmma_k, "a k-block is split_k_steps products");
  // Every CTA of a cluster reads the same flag: all of them return, before any barrier.
  if ((*nonfinite != 0) != Apart) return;
  extern __shared__ unsigned char wgmma_smem[];
  const cta_context<tile, Cluster> cta(smem_address(wgmma_smem));
  const auto& smem = cta.smem;
  const auto& ring = cta.ring;
  const int warpgroup = cta.warpgroup, tid_in_warpgroup = cta.tid_in_warpgroup;
  const std::uint32_t rank = cta.rank;
  // Every consumer warp of every CTA whose products read a stage (X is multicast) releases it.
  cta.init_barriers(&map_x, &map_y, &map_c, p.staged, consumer_warpgroups * warps_per_warpgroup * loop::stage_readers);
  barriers_ready_arrive<Cluster>();
  const tile_scheduler<float, Cluster, share_x, false> schedule{p, (p.k + k_block - 1) / k_block,
                                                                static_cast<int>(rank)};
  const int items = schedule.items();
  barriers_ready_wait<Cluster>();

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<producer_registers>();
    if (tid_in_warpgroup == 0) {
      produce_stages<tile>(
          schedule, ring, smem,
          [&](std::uint32_t x_stage, std::uint32_t y_stage, std::uint32_t full, const work_item& w, int kt) {
            if (x_k_major) {
              loop::load_a(&map_x, x_stage, full, w.tile_m, kt, rank);
            } else {
              m_major_loop::load_a(&map_x, x_stage, full, w.tile_m, kt, rank);
            }
            // Y's hi and lo parts of k-block kt: its packed columns 64 kt and 64 kt + 32.
            const int y_row = w.tile_n * block_n;
            tma_load_2d(y_stage, &map_y, 2 * kt * k_block, y_row, full);
            tma_load_2d(y_stage + tile::b_part_bytes, &map_y, (2 * kt + 1) * k_block, y_row, full);
          });
    }
  } else {
    // ---------------------------------------------------------------- consumers
    setmaxnreg_inc<consumer_registers>();
    const int consumer = warpgroup - 1;
    const int lane = tid_in_warpgroup % 32;
    const int warp = tid_in_warpgroup / 32;
    // The thread's X fragments in a stage (k-step 0), and the XOR to each next k-step.
    std::uint32_t x_offset[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      x_offset[r] = static_cast<std::uint32_t>(x_k_major ? k_major_fragment_offset(consumer, warp, lane, r)
                                                         : swap_fragment_offset(consumer, warp, lane, r));
    }
    const std::uint32_t k_step_xor = x_k_major ? k_major_k_step_xor : m_major_k_step_xor;
    const std::uint64_t y_desc0 = smem_descriptor_sw128(smem.b);
    ring_position<tile::stages> at;
    const std::uint32_t c_smem = smem.c + consumer * c_buffers * c_buffer_bytes;
    const int c_barrier = 1 + consumer;
    // The parts as the products name them (fp32_emulated_products: mma(d, X's part, Y's part, fresh)).
    constexpr int hi = 0, lo = 1;
    int stage = 0;
    // X's part (registers: the k-block's fragments f) x Y's part (the stage's hi or lo) over the
    // k-block: 4 products. hi x lo reads hi_c: an inf or a NaN of X contributes no correction.
    const auto mma_with = [&](const split_fragments& f) {
      return [&](float(&d)[tile::accumulators], int x_part, int y_part, bool fresh) {
        constexpr int k_bytes = loop::elem::wgmma_k * loop::elem::bytes;  // 32 bytes along Y's swizzled row
#pragma unroll
        for (int kk = 0; kk < split_k_steps; ++kk) {
          const std::uint64_t b =
              smem_descriptor_advance(y_desc0, stage * tile::b_tile_bytes + y_part * tile::b_part_bytes + kk * k_bytes);
          const std::uint32_t(&a)[4] = x_part == lo ? f.lo[kk] : y_part == lo ? f.hi_c[kk] : f.hi[kk];
          wgmma_m64nNk8_tf32_rs<block_n>(d, a, b, fresh && kk == 0 ? 0u : 1u);
        }
      };
    };
    fp32_emulated_sums<tile::accumulators> sums;
    // A k-block's products in the tensor cores (and, Apart, its corrections).
    fp32_emulated_partials<Apart, tile::accumulators> k_block;
    // Split ahead: k-block kt's products run while the next k-block's X fragments are loaded and split
    // into the other set (two sets, taken in turn: the k-loop runs two k-blocks a turn, so each set's
    // registers are fixed), so the split's CUDA-core work hides behind the tensor cores. Serial (and
    // the Apart instance, whose corrections take 32 more registers): one set, split after the products.
    split_fragments x[SplitAhead ? 2 : 1];
    // One k-block on fragments `cur` (loaded); `next`: where the next k-block's go, if there is one.
    // The consumers issue their k-blocks' products in turn (warpgroup_turns, as step 15).
    const warpgroup_turns turns(turn_barrier, consumer);
    turns.start();
    const auto k_block_step = [&](split_fragments& cur, split_fragments& next, bool has_next) {
      stage = at.stage;
      const int this_stage = stage;
      turns.take();
      fp32_emulated_k_block_issue<Apart>(k_block.partial, k_block.correction, hi, lo, mma_with(cur));
      turns.pass();
      at.advance();
      if (has_next) {
        ring.consumer_wait(at);
        next.load(smem.a + at.stage * a_tile_bytes, x_offset, k_step_xor);
      }
      fp32_emulated_k_block_wait<Apart>(k_block.partial, k_block.correction);
      if (lane == 0) loop::release(ring, this_stage);  // its products have completed
      fp32_emulated_k_block_sum<Apart>(sums, k_block.partial, k_block.correction);
    };
    for (int item = schedule.first(); item < items; item += schedule.stride()) {
      const work_item w = schedule(item);
      sums.reset();
      if constexpr (SplitAhead) {
        ring.consumer_wait(at);
        x[0].load(smem.a + at.stage * a_tile_bytes, x_offset, k_step_xor);
        for (int kt = w.kt_begin; kt < w.kt_end; kt += 2) {
          k_block_step(x[0], x[1], kt + 1 < w.kt_end);
          if (kt + 1 < w.kt_end) k_block_step(x[1], x[0], kt + 2 < w.kt_end);
        }
      } else {
        for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
          ring.consumer_wait(at);
          x[0].load(smem.a + at.stage * a_tile_bytes, x_offset, k_step_xor);
          k_block_step(x[0], x[0], false);
        }
      }
      float(&total)[tile::accumulators] = sums.finish();
      // The X rows of the thread's accumulators (swap_row: the fragments' rows).
      const int x_row0 = w.tile_m * block_m + consumer * wgmma_m;
      if constexpr (Swap) {
        // C^T's tile: its rows (C's columns) are X's, its columns (C's rows) Y's.
        const int c_row0 = w.tile_n * block_n;
        if (p.partial != nullptr) {  // split-k: the slice's sums, unscaled, for the reduction (split_k.cuh)
          store_tile_swapped(total, partial_slice(p, w.slice, p.m), c_row0, x_row0, epilogue::identity{});
        } else if (p.staged) {
          store_tile_staged_swapped(total, p, &map_c, c_smem, c_row0, x_row0, c_barrier, fused);
        } else {
          store_tile_swapped(total, p, c_row0, x_row0, fused);
        }
      } else {
        const long long rows[2] = {x_row0 + swap_row(warp, lane / 4), x_row0 + swap_row(warp, lane / 4 + 8)};
        const long long col0 = static_cast<long long>(w.tile_n) * block_n + 2 * (lane % 4);
        if (p.partial != nullptr) {
          store_tile<float>(total, partial_slice(p, w.slice, p.n), rows, col0, epilogue::identity{});
        } else {
          store_tile<float>(total, p, rows, col0, fused);
        }
      }
    }
    turns.finish();
    // The last C buffers are read before the CTA's shared memory goes.
    if (p.staged && tid_in_warpgroup == 0) tma_store_wait_read<0>();
  }

  // No CTA may exit while its peer can still arrive on its barriers.
  if constexpr (Cluster > 1) cluster_sync();
#endif
}

}  // namespace kf::detail
