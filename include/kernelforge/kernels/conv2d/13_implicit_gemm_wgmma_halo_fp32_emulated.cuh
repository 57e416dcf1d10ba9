// SPDX-License-Identifier: Apache-2.0
// Step 13 -- implicit_gemm_wgmma_halo_fp32_emulated: step 9's fp32 accuracy
// on the TF32 tensor cores (09_implicit_gemm_wgmma_fp32_emulated.cuh) with
// step 12's halo tiles (12_implicit_gemm_wgmma_halo.cuh). Float NCHW and NHWC
// at stride 1 and dilation 1, filters up to 3 x 3; sm_90a only. Host side:
// src/conv2d/wgmma_sm90a_fp32_emulated.cu.
//
// What changes from step 9, and why it is faster:
//  * Step 9 lands, for every tap and 32 channels, one pixel box of the split
//    input's hi part and one of its lo part (128 pixel rows each), like step 7
//    lands its boxes: on the TF32 layers those pixel loads set the time, and
//    step 9 loads twice step 7's operand bytes.
//  * Here a tile of 8 x 16 output pixels (or 8 x 8 of two images) loads its
//    input halo once a 32-channel block, hi and lo box side by side in one slot
//    of the A ring (step 12's producer with two parts), and every tap reads both
//    through step 12's descriptors; each tap's hi and lo filter slices are two
//    consecutive B stages, so a k-block (one tap, 32 channels) is a pair of B
//    stages as step 9's is a pair of ring stages, and the consumers run step
//    9's k-block unchanged (matmul/wgmma/fp32_emulated_sums.cuh: three products
//    a fresh tensor-core partial, promoted into fp32 sums, the two warpgroups'
//    products in turns).
//  * Cooperative (both warpgroups on one tile, a row block each), the producer's
//    registers given to the consumers (setmaxnreg), inf / NaN inputs on the
//    Apart instance -- all as step 9. No last-round split.
//  * Where 8-wide tiles waste too much, step 9 keeps the layer: the 28x28
//    layer's 196 tiles become 256, two rounds of 132 CTAs against step 9's one
//    and a split half (wgmma_k_steps.hpp: conv2d_fp32_emulated_prefers_halo).
// Figures (bench_conv best_vs_cudnn, H200, 2026-12-07, step 13 against step 9
// alternated twice in one session, N32 3x3 p1): C64 56x56 103 against 123 us
// NCHW (1.19x), 100 against 121 NHWC (1.21x); C256 14x14 92 against 102 NCHW
// (1.10x), 85 against 86 NHWC; C128 28x28 97 against 94 NCHW, 92 against 84
// NHWC (step 9 keeps it). Against cuDNN's fastest exact fp32 of the same run:
// NCHW 1.49-1.63x on C64, 1.58-1.66x on C256.
// More: benchmarks/tuning/conv2d.md#conv2d-fp32-emulation-on-halo-tiles.
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
#include "12_implicit_gemm_wgmma_halo.cuh"
#include "kernelforge/conv.hpp"

namespace kf::detail {

/// y = ep(conv(x, w) + bias) in fp32 accuracy with halo tiles. map_x: the split
/// input (dims 2 round_up(C, 32), W, H, N; box 32 x halo_width x (ht + R - 1) x
/// nt); map_w: the split filter (dims 2 round_up(C, 32), RS, K; box 32 x 1 x
/// BN). prm.c_chunks counts the split chunks (2 per 32 channels), prm.k_steps
/// is R S c_chunks. Layout, Apart, nonfinite: as step 9's.
template <conv2d_layout Layout, int BN, bool Apart, class Epilogue>
KF_KERNEL void __launch_bounds__(conv2d_wgmma::threads, 1)
    conv2d_implicit_gemm_wgmma_halo_fp32_emulated(const __grid_constant__ CUtensorMap map_x,
                                                  const __grid_constant__ CUtensorMap map_w,
                                                  const conv2d_wgmma::params<float> prm, const Epilogue ep,
                                                  const unsigned* nonfinite) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace conv2d_wgmma;
  constexpr int kParts = 2;  // hi, lo
  constexpr int kAStages = halo_a_stages<kParts>;
  constexpr int kBStages = halo_b_stages<BN, kParts>;
  constexpr int kAcc = accumulators<BN>;
  if ((*nonfinite != 0) != Apart) return;  // the other instance computes this call
  extern __shared__ unsigned char conv2d_wgmma_halo_fp32e_smem[];
  const halo_smem_carve<BN, kParts> smem(smem_address(conv2d_wgmma_halo_fp32e_smem));
  const stage_ring<kAStages> a_ring(smem.a_ring);
  const stage_ring<kBStages> b_ring(smem.b_ring);
  float* const bias_smem = smem.bias_in(conv2d_wgmma_halo_fp32e_smem);
  const int warpgroup = threadIdx.x / warpgroup_threads;
  const int tid_in_warpgroup = threadIdx.x % warpgroup_threads;
  if (threadIdx.x == 0) {
    tma_prefetch_descriptor(&map_x);
    tma_prefetch_descriptor(&map_w);
    a_ring.init(consumer_warpgroups * warps_per_warpgroup);  // both warpgroups read every stage
    b_ring.init(consumer_warpgroups * warps_per_warpgroup);
    mbar_init_fence();
  }
  __syncthreads();

  if (warpgroup == 0) {
    setmaxnreg_dec<wgmma::producer_registers>();
    if (tid_in_warpgroup == 0) {
      produce_halo<float, BN, conv2d_wgmma_filter::forward, kParts>(prm, a_ring, b_ring, smem.a, smem.b, &map_x, &map_w,
                                                                    blockIdx.x, gridDim.x);
    }
    return;
  }
  // ------------------------------------------------------------------ consumers
  setmaxnreg_inc<wgmma::consumer_registers>();
  const int consumer = warpgroup - 1;
  const int lane = tid_in_warpgroup % 32;
  const int taps = prm.k_steps / prm.c_chunks;
  const int blocks = prm.c_chunks / kParts;
  const int box_width = prm.halo_width;
  // The A slots' descriptor (step 12's): an operand's is an add to its low word.
  const std::uint64_t a_slots = smem_descriptor_sw128(smem.a, 16, static_cast<std::uint32_t>(box_width * row_bytes));
  // This warpgroup's m64 row block starts here in each box.
  const std::uint32_t block_bytes = static_cast<std::uint32_t>(consumer * prm.a_block_bytes);
  std::uint32_t box = 0;        // the current A slot, from the first
  std::uint32_t tap_bytes = 0;  // the current tap's first row in the box: r W + s rows
  // Product over the k-block's 32 channels: `a_part` and `b_part` are B stages (fp32_emulated_k_block's
  // hi and lo); a k-block's pair starts on an even stage (kBStages is even), so an even stage is the hi
  // part: the A slot's first box, else its second.
  const auto mma = [&](float(&d)[kAcc], int a_part, int b_part, bool fresh) {
    const std::uint32_t a_box = box + static_cast<std::uint32_t>(a_part % kParts) * halo_box_bytes;
    wgmma::tf32_k_block_product<BN>(d, smem_descriptor_advance(a_slots, a_box + block_bytes + tap_bytes),
                                    smem_descriptor_sw128(smem.b + b_part * b_tile_bytes<BN>), fresh);
  };
  fp32_emulated_sums<kAcc> sums;
  wgmma::fp32_emulated_partials<Apart, kAcc> k_block;  // a k-block's products (Apart: hi x hi, the corrections)
  ring_position<kAStages> at_a;
  ring_position<kBStages> at_b;
  const warpgroup_turns turns(turn_barrier, consumer);
  turns.start();
  int stores = 0;
  for (int t = blockIdx.x; t < prm.tiles; t += gridDim.x) {
    const tile_origin w = tile_of<BN>(prm, t);
    sums.reset();
    for (int block = 0; block < blocks; ++block) {
      a_ring.consumer_wait(at_a);
      box = at_a.stage * halo_a_slot_bytes<kParts>;
      halo_tap at_tap;
      for (int tap = 0; tap < taps; ++tap, at_tap.next(prm.s)) {
        tap_bytes = at_tap.box_bytes(box_width);
        // The k-block's products have completed when it returns: its B pair goes back there.
        wgmma::fp32_emulated_k_block<Apart>(
            b_ring, at_b, k_block.partial, k_block.correction, sums, lane, mma, [&](int st) { b_ring.release(st); },
            turns);
      }
      if (lane == 0) a_ring.release(at_a.stage);  // every tap's products of this block have completed
      at_a.advance();
    }
    float(&total)[kAcc] = sums.finish();
    stage_bias_and_store<float, Layout, 1, BN>(
        bias_smem, consumer, stores++ & 1, [&](int) -> const float(&)[kAcc] { return total; }, prm, w, consumer,
        tid_in_warpgroup, ep);
  }
  turns.finish();
#endif
}

}  // namespace kf::detail
