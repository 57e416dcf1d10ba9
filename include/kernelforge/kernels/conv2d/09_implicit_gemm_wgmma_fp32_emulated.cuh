// SPDX-License-Identifier: Apache-2.0
// Step 9 -- implicit_gemm_wgmma_fp32_emulated: fp32 accuracy on the TF32
// tensor cores (math_mode::fp32_emulated), float NCHW and NHWC. Device code,
// compiled for sm_90a only; host side src/conv2d/wgmma_sm90a_fp32_emulated.cu,
// interface wgmma_sm90a.hpp (conv2d_fp32_emulated_try_launch).
//
// What changes from step 7 (07_implicit_gemm_wgmma.cuh, TF32: each product
// rounds its inputs to 10 bits of mantissa, ~1e-3 relative error), and why it
// is as accurate as the exact fp32 kernels while running on the tensor cores:
//  * Matmul step 15's split (matmul/split_tf32.cuh): x = hi + lo (+ ~2^-22 x),
//    and x w ~ hi hi + hi lo + lo hi, three TF32 products whose dropped lo lo
//    term is below 2^-22 of the product. A pre-pass writes x as NHWC with, per
//    32 channels, the 32 hi values then the 32 lo values (from NCHW or NHWC
//    alike, zero past C), and the filter as K x RS x (the same per 32 channels),
//    both in one launch (launch_split_tf32_pack_pair: 1.4-3.4% off each layer
//    against a launch each); a non-finite input sets a flag in device memory.
//  * The producer is step 7's, unchanged: over the split maps its channel
//    chunks simply alternate hi, lo, so a k-block (32 channels of one filter
//    tap) arrives as two consecutive ring stages, its A and B boxes each.
//  * The consumers take the pair and order and sum the products as matmul step
//    15 does (matmul/fp32_emulated_sums.cuh): a fresh tensor-core partial
//    per k-block (hi lo, lo hi, then hi hi on top: wgmma truncates as it adds),
//    promoted into fp32 registers with round-to-nearest (a window of 32
//    k-blocks, then the total); the two consumer warpgroups issue their
//    products in turn (warpgroup_turns), so that one promotes while the
//    other's products run. Inputs with an inf or a NaN run the kernel's other
//    instance (Apart), which leaves the corrections out wherever hi hi is not
//    finite: infinities and NaNs as the exact products.
//  * The persistent grid's last round split (wgmma_last_round.cuh): where the
//    last round of tiles would leave most CTAs idle (N32 C128 28x28: 196 tiles
//    on 132 CTAs), each of its tiles runs as 2 to 4 runs of k-blocks on the CTAs
//    that would wait, and the last run to finish adds the others' sums.
//  * Cooperative only (both consumer warpgroups on one 128-row tile): the sums
//    and partials of a thread take three times step 7's accumulators, so the
//    producer warpgroup gives its registers to the consumers (setmaxnreg).
//  * Strides up to 8 and any padding and dilation, in both layouts: the A map
//    of the split input steps through it as step 7's NHWC map does.
//  * Epilogue: step 7's (the bias staged in shared memory, the fused threshold
//    ReLU, NCHW or NHWC stores: wgmma_store.cuh).
// Cost: three times step 7's TF32 products and twice its operand bytes, plus
// the pre-pass (reads x once, writes it twice). Layers with fewer than 32
// channels, strides above 8 or C R S < 128 run the exact kernels instead
// (wgmma_plan.hpp: conv2d_fp32_emulated_takes).
// Figures (bench_conv, paired with cuDNN's fastest exact fp32 algorithm of the
// same process; N32 3x3 p1 C64 56x56 / C128 28x28 / C256 14x14): H200
// (2026-12-07, the bench workflow's run, results/h200/bench_conv.json) NCHW
// 1.11 / 1.20 / 1.29x, NHWC against cuDNN's NHWC 2.28 / 1.79 / 2.17x; max error
// 2.6-4.4e-8 of sum |x w| against cuDNN's 5.9e-8 to 1.6e-6. Step 13 (halo
// tiles) has since taken the stride-1 layers where it is faster (C64, C256).
// More (the profile, what was tried): benchmarks/tuning/conv2d.md#conv2d-fp32-emulation.
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../arch/guards.cuh"
#include "../arch/pipeline_sm90.cuh"
#include "../arch/smem.cuh"
#include "../arch/warpgroup_sm90.cuh"
#include "../arch/wgmma_sm90.cuh"
#include "../common/kernel.cuh"
#include "../matmul/wgmma/config.cuh"
#include "../matmul/wgmma/fp32_emulated_sums.cuh"
#include "07_implicit_gemm_wgmma.cuh"
#include "kernelforge/conv.hpp"

namespace kf::detail {

/// y = ep(conv(x, w) + bias) in fp32 accuracy. map_x: the split input (dims
/// 2 round_up(C, 32), W, H, N; box 32 x wt x ht x nt at the layer's strides);
/// map_w: the split filter (dims 2 round_up(C, 32), RS, K; box 32 x 1 x BN).
/// prm.c_chunks counts the split chunks (2 per 32 channels). Layout: y's
/// layout. Apart: the instance for inputs with an inf or a NaN (*nonfinite !=
/// 0, set by the pre-pass); the launcher enqueues both, the other returns at once.
template <conv2d_layout Layout, int BN, bool Apart, class Epilogue>
KF_KERNEL void __launch_bounds__(conv2d_wgmma::threads, 1)
    conv2d_implicit_gemm_wgmma_fp32_emulated(const __grid_constant__ CUtensorMap map_x,
                                             const __grid_constant__ CUtensorMap map_w,
                                             const conv2d_wgmma::params<float> prm, const Epilogue ep,
                                             const unsigned* nonfinite) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace conv2d_wgmma;
  constexpr int kStages = stages<BN>;
  constexpr int kAcc = accumulators<BN>;
  static_assert(kStages % 2 == 0, "a k-block's hi and lo stages never straddle the ring's wrap");
  if ((*nonfinite != 0) != Apart) return;  // the other instance computes this call
  extern __shared__ unsigned char conv2d_wgmma_smem[];
  const smem_carve<BN> smem(smem_address(conv2d_wgmma_smem));
  const stage_ring<kStages> ring(smem.ring);
  float* const bias_smem = smem.bias_in(conv2d_wgmma_smem);  // the staged bias (wgmma_store.cuh)
  const int warpgroup = threadIdx.x / warpgroup_threads;
  const int tid_in_warpgroup = threadIdx.x % warpgroup_threads;
  if (threadIdx.x == 0) {  // the producer thread below
    tma_prefetch_descriptor(&map_x);
    tma_prefetch_descriptor(&map_w);
    ring.init(consumer_warpgroups * warps_per_warpgroup);  // both warpgroups read every stage
    mbar_init_fence();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    setmaxnreg_dec<wgmma::producer_registers>();
    if (tid_in_warpgroup == 0) produce<float, BN>(prm, ring, smem.a, smem.b, &map_x, &map_w, blockIdx.x, gridDim.x);
  } else {
    // ---------------------------------------------------------------- consumers
    setmaxnreg_inc<wgmma::consumer_registers>();
    const int consumer = warpgroup - 1;
    const int lane = tid_in_warpgroup % 32;
    // A (stage a, this warpgroup's 64 rows) x B (stage b): the stage's 32 channels in 4 products, their
    // descriptors an add to the stages' low words (smem_descriptor_advance).
    const auto mma = [&](float(&d)[kAcc], int a_stage, int b_stage, bool fresh) {
      wgmma::tf32_k_block_product<BN>(
          d, smem_descriptor_sw128(smem.a + a_stage * a_tile_bytes + consumer * wgmma_m * row_bytes),
          smem_descriptor_sw128(smem.b + b_stage * b_tile_bytes<BN>), fresh);
    };
    fp32_emulated_sums<kAcc> sums;
    // A k-block's products in the tensor cores (Apart: hi x hi, and the corrections).
    wgmma::fp32_emulated_partials<Apart, kAcc> k_block;
    ring_position<kStages> at;
    // The consumers issue their k-blocks' products in turn (0, 1, 0, ...): one's sums then run
    // beside the other's products. Left to drift, the two could settle in step, both summing
    // while the tensor cores wait.
    const warpgroup_turns turns(turn_barrier, consumer);
    turns.start();
    int stores = 0;  // this warpgroup's tiles stored so far: their staged bias takes buffer stores % 2
    for (int u = blockIdx.x; u < units(prm); u += gridDim.x) {
      const work_unit unit = unit_of(prm, u);  // a tile, or in the last round a part of one
      const tile_origin w = tile_of<BN>(prm, unit.tile);
      sums.reset();
      for (int kt = unit.kt_begin; kt < unit.kt_end; kt += 2) {
        wgmma::fp32_emulated_k_block<Apart>(
            ring, at, k_block.partial, k_block.correction, sums, lane, mma, [&](int st) { ring.release(st); }, turns);
      }
      float(&total)[kAcc] = sums.finish();
      // A part: the part that arrives last stores the tile's sums, the others nothing.
      if (is_split(prm, unit) && !sum_split_tile(prm, unit, consumer, tid_in_warpgroup, total)) continue;
      stage_bias_and_store<float, Layout, 1, BN>(
          bias_smem, consumer, stores++ & 1, [&](int) -> const float(&)[kAcc] { return total; }, prm, w, consumer,
          tid_in_warpgroup, ep);
    }
    turns.finish();
  }
#endif
}

}  // namespace kf::detail
