// SPDX-License-Identifier: Apache-2.0
// Step 15 -- fp32 accuracy on the TF32 tensor cores (math_mode::fp32_emulated):
// each fp32 operand split into two TF32 parts (split_tf32.cuh), three TF32
// products per k-block, promoted into fp32 registers every 32 of k. Compiled
// for sm_90a only; host side fp32_emulated_launch.cuh, declaration
// wgmma_sm90a.hpp (wgmma_fp32_emulated_try_launch).
//
// What changes from step 14 (TF32: each product rounds its inputs to 10 bits of
// mantissa, ~1e-3 relative error), and why it is as accurate as the exact fp32
// steps while running on the tensor cores:
//  * a b = (a_hi + a_lo)(b_hi + b_lo) ~ a_hi b_hi + a_hi b_lo + a_lo b_hi: the
//    three products are exact in fp32 and the dropped a_lo b_lo is below 2^-22
//    of a b. The pre-pass writes each operand k-major as, per 32 of k, 32 hi
//    values then 32 lo values; the producer loads them as two consecutive
//    stages of the ring (the same TMA producer, tile scheduler, epilogue,
//    split-k and clusters sharing B as step 14), and a consumer takes the pair.
//  * The order of the sums. wgmma adds each group of 8 products into its fp32
//    accumulator with truncation: a long sum in the tensor cores drifts toward
//    zero by up to an ulp per instruction (~k / 16 ulps at k = 65536, against
//    SGEMM's random walk of ~sqrt(k) / 3). So each k-block's products start a
//    fresh partial (scale-d = 0): the small hi x lo and lo x hi first (their
//    truncation stays relative to their own size), then hi x hi on top. The
//    completed partial is added on the CUDA cores with round-to-nearest into
//    a `window` of 32 k-blocks, and the window into the total: two levels, as
//    one running total's error grows with the count of its additions times its
//    size (on the H200 the single total was the largest error at large k). The
//    two consumer warpgroups issue their products in turn (warpgroup_turns):
//    one promotes while the other's products run; left to drift, they could
//    settle in step, both summing while the tensor cores wait (8192^3 on an
//    H100: 9.8 -> 8.4 ms with the turns). (fp32_emulated_sums.cuh, shared with
//    step 16 and conv2d's step 9; the k-block around it:
//    wgmma/fp32_emulated_sums.cuh.)
//  * Infinities and NaNs: an inf times a zero lo part makes a NaN no exact
//    product makes, so where the pre-pass saw any (a flag in device memory)
//    the corrections go into a partial of their own, left out wherever hi x hi
//    is not finite (hi keeps every zero, sign, inf and NaN of x). That loop is
//    its own instance (Apart = true), so the common loop keeps its registers.
//  * Cost: three times step 14's products, twice its operand bytes, and a
//    pre-pass that reads each operand once and writes it twice. Ceiling: 495 /
//    3 = 165 TFLOP/s of fp32 work on the H200, against SGEMM's 66.9 FMA peak.
//    Short k (< fp32_emulated_min_k) runs the exact steps.
// H200, bench_matmul 2026-12-03, paired with cuBLAS SGEMM: 2048^3 1.86x,
// 4096^3 2.37x, 8192^3 2.37x, 8192x8192x1024 2.53x, 1024^3 1.60x; 128 x 8192 x
// 8192 0.86x (the pre-pass's B traffic). Accuracy and the rest:
// benchmarks/tuning/matmul.md#fp32-emulation-on-tf32-tensor-cores-step-15-math_modefp32_emulated.
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../arch/cluster_sm90.cuh"
#include "../arch/guards.cuh"
#include "../arch/pipeline_sm90.cuh"
#include "../arch/smem.cuh"
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

namespace kf::detail {
/// C = fused(alpha * (A B) + beta * C) in fp32 accuracy, tiles of 128 x BlockN.
/// map_a: A's split (m x 2 k', split_tf32.cuh) in boxes of 128 rows x 32; map_b:
/// op(B)^T's split (n x 2 k') in boxes of BlockN / 2 rows; map_c: C in boxes of
/// 64 rows x 32, for the staged epilogue (p.staged). p.k is the packed k (2 k').
/// Apart: the instance for inputs with an inf or a NaN (*nonfinite != 0, set by
/// the pre-pass); the launcher enqueues both, and the other one returns at once.
template <int Cluster, int BlockN, bool Apart>
KF_KERNEL void __launch_bounds__(wgmma::threads, 1)
    wgmma_fp32_emulated_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                               const __grid_constant__ CUtensorMap map_c, const wgmma::params<float> p,
                               const epilogue::bias_relu_threshold<float> fused, const unsigned* nonfinite) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace wgmma;
  using tile = tile_config<BlockN>;
  using loop = mainloop<float, tile, Cluster, false, false, false, false>;
  static_assert(Cluster == 1 || Cluster == max_cluster, "clusters of 1 or 2 CTAs (sharing B)");
  static_assert(BlockN == 64 || BlockN == 128, "the sums and the partials of 64 x BlockN must fit a thread");
  static_assert(tile::stages % 2 == 0, "a k-block's hi and lo stages never straddle the ring's wrap");
  // Every CTA of a cluster reads the same flag: all of them return, before any barrier.
  if ((*nonfinite != 0) != Apart) return;
  extern __shared__ unsigned char wgmma_smem[];
  const cta_context<tile, Cluster> cta(smem_address(wgmma_smem));
  const auto& smem = cta.smem;
  const auto& ring = cta.ring;
  const int warpgroup = cta.warpgroup, tid_in_warpgroup = cta.tid_in_warpgroup;
  const std::uint32_t rank = cta.rank;
  // Every consumer warp of every CTA whose products read a stage (B is multicast) releases it.
  cta.init_barriers(&map_a, &map_b, &map_c, p.staged, consumer_warpgroups * warps_per_warpgroup * loop::stage_readers);
  barriers_ready_arrive<Cluster>();
  // k-steps of the packed operands: 2 per k-block (hi, then lo).
  const tile_scheduler<float, Cluster, false, false> schedule{p, p.k / loop::stage_k, static_cast<int>(rank)};
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
    const auto operands = loop::consumer_operands(smem.a, smem.b, consumer, warp_in_warpgroup, lane);
    ring_position<tile::stages> at;
    int c_buffer = 0;  // the staged epilogue's next C buffer
    const std::uint32_t c_smem = smem.c + consumer * c_buffers * c_buffer_bytes;
    const int c_barrier = 1 + consumer;
    // A (stage a) x B (stage b): the stage's 32 of k in 4 products.
    const auto mma = [&](float(&d)[tile::accumulators], int a_stage, int b_stage, bool fresh) {
      constexpr int k_bytes = loop::elem::wgmma_k * loop::elem::bytes;  // 32 bytes along the swizzled row
#pragma unroll
      for (int kk = 0; kk < loop::products; ++kk) {
        const std::uint64_t a = smem_descriptor_advance(operands.a_desc0, a_stage * a_tile_bytes + kk * k_bytes);
        const std::uint64_t b = smem_descriptor_advance(operands.b_desc0, b_stage * tile::b_tile_bytes + kk * k_bytes);
        wgmma_m64nNk8_tf32<tile::block_n>(d, a, b, fresh && kk == 0 ? 0u : 1u);
      }
    };
    fp32_emulated_sums<tile::accumulators> sums;
    // A k-block's products in the tensor cores (and, Apart, its corrections).
    fp32_emulated_partials<Apart, tile::accumulators> k_block;
    // The consumers issue their k-blocks' products in turn (warpgroup_turns; conv2d step 9 does too).
    const warpgroup_turns turns(turn_barrier, consumer);
    turns.start();
    for (int item = schedule.first(); item < items; item += schedule.stride()) {
      const work_item w = schedule(item);
      const int row_base = w.tile_m * block_m + consumer * wgmma_m, col_base = w.tile_n * BlockN;
      sums.reset();
      for (int kt = w.kt_begin; kt < w.kt_end; kt += 2) {
        fp32_emulated_k_block<Apart>(
            ring, at, k_block.partial, k_block.correction, sums, lane, mma, [&](int st) { loop::release(ring, st); },
            turns);
      }
      float(&total)[tile::accumulators] = sums.finish();
      const long long row0 = row_base + warp_in_warpgroup * 16 + lane / 4;
      const long long col0 = static_cast<long long>(col_base) + 2 * (lane % 4);
      if (p.partial != nullptr) {  // split-k: the slice's sums, unscaled, for the reduction (split_k.cuh)
        store_tile<float>(total, partial_slice(p, w.slice, p.n), row0, col0, epilogue::identity{});
      } else if (p.staged) {
        store_tile_staged<float>(total, p, &map_c, c_smem, row_base, col_base, c_barrier, c_buffer, fused);
      } else {
        store_tile<float>(total, p, row0, col0, fused);
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
