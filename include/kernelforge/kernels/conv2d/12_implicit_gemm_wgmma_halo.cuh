// SPDX-License-Identifier: Apache-2.0
// Step 12 -- implicit_gemm_wgmma_halo: step 7 (07_implicit_gemm_wgmma.cuh)
// loading each channel block's pixels once for every filter tap. NHWC, TF32 or
// f16 / bf16, stride 1 and dilation 1, filters up to 3 x 3 (the ResNet 3x3
// layers); sm_90a only. Host side: wgmma_sm90a_nhwc.cuh; tiles: wgmma_k_steps.hpp
// (plan_conv2d_nhwc_wgmma_halo); the carve: wgmma_config.cuh.
//
// What changes from step 7, and why it is faster:
//  * Step 7 lands one pixel box a tap (128 pixel rows) or, with filter-column
//    tiles, one 8 x (ht + 2) box a filter column (its three taps). Measured on
//    the TF32 C128 layer, those pixel boxes set the kernel's time: their
//    128-byte pieces, one a pixel, land far slower than the filter's.
//  * Here a tile of 8 output columns x 16 rows (or 8 x 8 of two images) loads
//    its (8 + S - 1) x (16 + R - 1) input halo once a channel block: 180 pixel
//    rows for all nine taps of a 3 x 3 filter, where one-tap k-steps load 1,152
//    and filter-column ones 432.
//  * Tap (r, s) of m64 block b reads 8 output rows of 8 pixels: box rows
//    (row_b + r) W + s .. + 7 of each, W = 8 + S - 1 the box's width. That is one
//    wgmma descriptor: start address r W + s rows into the block's part of the
//    box (an add to the slots' descriptor), 8-row groups W x 128 bytes apart
//    (the stride byte offset). The
//    128-byte swizzle is a function of the address bits, so a start off the
//    1024-byte atom and a stride that is no multiple of it read the rows TMA
//    wrote (wip/probes/desc_shift.cu, H100: 22 starts and strides).
//  * The box outlives nine stages of filter, so it has a ring of its own (3
//    slots); the filter slices -- one tap, block_c x BN -- fill the B ring (9
//    stages at BN = 128, 12 at 64). A consumer waits for the box once a channel
//    block and for each tap's slice, and releases the box when its last tap's
//    products have completed.
//  * At BN = 128 the producer warpgroup hands its registers to the consumers
//    (setmaxnreg, 40 and 232 as the matrix product's steps): two 64 x 128
//    accumulators a thread and the fused epilogue then fit without the 16-byte
//    stack the fused instance had (H200: fused C128 / C256 rows 1.6-2.5%
//    faster). At BN = 64 it did not pay (the C64 rows 0.7-1.6% slower).
//  * Everything else is step 7's: the persistent ping-pong schedule, the turn
//    barriers, the B operand (forward or dx's unturned filter,
//    wgmma_filter_operand.cuh) and the epilogue (wgmma_store.cuh).
// Figures (cuDNN's NHWC time / ours, same run; N32 3x3 p1 C64 56x56 / C128
// 28x28 / C256 14x14): H200 (2026-12-07, results/h200/bench_conv.json) TF32
// 1.36 / 1.03 / 1.02, fp16 1.19 / 0.99 / 1.03, bf16 1.21 / 1.00 / 0.98; fused
// bias + ReLU against cuDNN's fused 1.07-1.29 / 0.94-1.00 / 0.94-0.98. Step 7
// on the same layers (H100, one process): TF32 0.97 / 0.89 / 0.99, fp16 1.11 /
// 0.91 / 0.94. More: benchmarks/tuning/conv2d.md, "conv2d_nhwc_wgmma_halo".
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../arch/guards.cuh"
#include "../arch/mbarrier_sm90.cuh"
#include "../arch/pipeline_sm90.cuh"
#include "../arch/smem.cuh"
#include "../arch/tma_sm90.cuh"
#include "../arch/warpgroup_sm90.cuh"
#include "../arch/wgmma_sm90.cuh"
#include "../common/kernel.cuh"
#include "../matmul/wgmma/element.cuh"
#include "07_implicit_gemm_wgmma.cuh"
#include "kernelforge/conv.hpp"
#include "kernelforge/epilogue.cuh"
#include "wgmma_config.cuh"
#include "wgmma_filter_operand.cuh"
#include "wgmma_plan.hpp"
#include "wgmma_store.cuh"

namespace kf::detail {
namespace conv2d_wgmma {

#if KF_ARCH_SM90A
/// The producer thread: for each of its tiles (first, + step, ...) and channel
/// blocks, the halo box (Parts boxes: step 13's hi and lo parts, the split map's
/// chunks 2 b and 2 b + 1) into the A ring, then every tap's filter slice (its
/// Parts slices, in consecutive stages) into the B ring.
template <class T, int BN, conv2d_wgmma_filter Filter, int Parts = 1>
__device__ __forceinline__ void produce_halo(const params<T>& prm, const stage_ring<halo_a_stages<Parts>>& a_ring,
                                             const stage_ring<halo_b_stages<BN, Parts>>& b_ring, std::uint32_t a_smem,
                                             std::uint32_t b_smem, const CUtensorMap* map_x, const CUtensorMap* map_w,
                                             int first, int step) {
  ring_position<halo_a_stages<Parts>> at_a;
  ring_position<halo_b_stages<BN, Parts>> at_b;
  const int taps = prm.k_steps / prm.c_chunks;  // R S
  const int unturned_taps = Filter == conv2d_wgmma_filter::forward ? 0 : taps;
  const int blocks = prm.c_chunks / Parts;
  for (int t = first; t < prm.tiles; t += step) {
    const tile_origin w = tile_of<BN>(prm, t);
    for (int block = 0; block < blocks; ++block) {
      const std::uint32_t a_full = a_ring.producer_acquire(at_a, static_cast<unsigned>(Parts * prm.a_box_bytes));
#pragma unroll
      for (int part = 0; part < Parts; ++part) {
        tma_load_4d(a_smem + at_a.stage * halo_a_slot_bytes<Parts> + part * halo_box_bytes, map_x,
                    (block * Parts + part) * block_c<T>, w.q0 - prm.pad_w, w.p0 - prm.pad_h, w.n0, a_full);
      }
      at_a.advance();
      for (int tap = 0; tap < taps; ++tap) {
#pragma unroll
        for (int part = 0; part < Parts; ++part) {
          const std::uint32_t b_full = b_ring.producer_acquire(at_b, static_cast<unsigned>(b_tile_bytes<BN>));
          load_filter_slice<T, BN, Filter>(b_smem + at_b.stage * b_tile_bytes<BN>, map_w, tap, unturned_taps,
                                           (block * Parts + part) * block_c<T>, w.k0, b_full);
          at_b.advance();
        }
      }
    }
  }
}
#endif  // KF_ARCH_SM90A

}  // namespace conv2d_wgmma

/// y = ep(conv(x, w) + bias) for an NHWC layer at stride 1 and dilation 1 with
/// halo tiles (wgmma_k_steps.hpp, conv2d_nhwc_wgmma_halo_fit), on the ping-pong
/// schedule: T = float (TF32 products), __half or __nv_bfloat16. map_x: the NHWC
/// input (dims c, w, h, n; box block_c x halo_width x (ht + R - 1) x nt);
/// map_w, Filter: as step 7's. Tile t is step 7's (tile_of).
template <class T, int BN, class Epilogue, conv2d_wgmma_filter Filter = conv2d_wgmma_filter::forward>
KF_KERNEL void __launch_bounds__(conv2d_wgmma::threads, 1)
    conv2d_implicit_gemm_wgmma_halo(const __grid_constant__ CUtensorMap map_x,
                                    const __grid_constant__ CUtensorMap map_w, const conv2d_wgmma::params<T> prm,
                                    const Epilogue ep) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace conv2d_wgmma;
  constexpr int kBStages = halo_b_stages<BN>;
  constexpr int kAcc = accumulators<BN>;
  constexpr int kBlocks = 2;  // ping-pong: a warpgroup's tile is both m64 row blocks
  extern __shared__ unsigned char conv2d_wgmma_halo_smem[];
  const halo_smem_carve<BN> smem(smem_address(conv2d_wgmma_halo_smem));
  const stage_ring<halo_a_stages<>> a_ring(smem.a_ring);
  const stage_ring<kBStages> b_ring(smem.b_ring);
  const pingpong_order turns{smem.mainloop_done};  // ping-pong's order of the two mainloops (step 7's)
  float* const bias_smem = smem.bias_in(conv2d_wgmma_halo_smem);

  const int warpgroup = threadIdx.x / warpgroup_threads;
  const int tid_in_warpgroup = threadIdx.x % warpgroup_threads;

  if (threadIdx.x == 0) {
    tma_prefetch_descriptor(&map_x);
    tma_prefetch_descriptor(&map_w);
    a_ring.init(warps_per_warpgroup);  // the warps of the warpgroup whose tile it holds
    b_ring.init(warps_per_warpgroup);
    turns.init();
    mbar_init_fence();
  }
  __syncthreads();

  // BN = 128: the producer's registers to the consumers (as matmul's steps), so two m64 x 128
  // accumulators and the fused epilogue fit without spills; at BN = 64 it did not pay.
  constexpr bool kRegistersToConsumers = BN == 128;
  if (warpgroup == 0) {
    if constexpr (kRegistersToConsumers) setmaxnreg_dec<wgmma::producer_registers>();
    if (tid_in_warpgroup == 0) {
      produce_halo<T, BN, Filter>(prm, a_ring, b_ring, smem.a, smem.b, &map_x, &map_w, blockIdx.x, gridDim.x);
    }
    return;
  }
  // ------------------------------------------------------------------ consumers
  if constexpr (kRegistersToConsumers) setmaxnreg_inc<wgmma::consumer_registers>();
  // Ping-pong as step 7's: warpgroup c takes the CTA's c-th, (c + 2)-th, ... tiles,
  // both m64 blocks of each, in turns with the other; it skips the other's stages in both rings.
  const int consumer = warpgroup - 1;
  const int lane = tid_in_warpgroup % 32;
  const int taps = prm.k_steps / prm.c_chunks;
  const int box_width = prm.halo_width;
  // The A slots' descriptor: 8-row groups one box row (box_width pixels) apart. An operand's is
  // an add to its low word (smem_descriptor_advance): a start off the 1024-byte swizzle atom
  // needs nothing else -- the base-offset field stays 0, as the hardware takes the swizzle from
  // the address bits (wip/probes/desc_shift.cu, H100: with the field set to the start's row in
  // its atom, the products read wrong rows).
  const std::uint64_t a_slots = smem_descriptor_sw128(smem.a, 16, static_cast<std::uint32_t>(box_width * row_bytes));
  // Where m64 block 1 starts in the box (block 0 at its start).
  const std::uint32_t block_bytes[kBlocks] = {0u, static_cast<std::uint32_t>(prm.a_block_bytes)};
  ring_position<halo_a_stages<>> at_a;
  ring_position<kBStages> at_b;
  if (consumer == 1) {
    at_a.advance(prm.c_chunks);
    at_b.advance(prm.k_steps);
  }
  int own_tiles = 0;
  for (int t = blockIdx.x + consumer * gridDim.x; t < prm.tiles; t += 2 * gridDim.x, ++own_tiles) {
    const tile_origin w = tile_of<BN>(prm, t);
    turns.wait_turn(consumer, own_tiles);
    float d[kBlocks][kAcc];
#pragma unroll
    for (int m = 0; m < kBlocks; ++m) {
#pragma unroll
      for (int i = 0; i < kAcc; ++i) d[m][i] = 0.0f;
      fence_operands(d[m]);
    }
    int previous_b = -1;  // the B stage whose products may still run
    int held_a = -1;      // the A slot of the previous channel block, released once its last products completed
    for (int chunk = 0; chunk < prm.c_chunks; ++chunk) {
      a_ring.consumer_wait(at_a);
      const std::uint32_t box = at_a.stage * halo_a_slot_bytes<>;  // from the first slot
      halo_tap at_tap;
      for (int tap = 0; tap < taps; ++tap, at_tap.next(prm.s)) {
        b_ring.consumer_wait(at_b);
        const std::uint64_t b_stage = filter_descriptor<T, Filter>(smem.b + at_b.stage * b_tile_bytes<BN>);
        const std::uint32_t tap_bytes = at_tap.box_bytes(box_width);
        wgmma_fence();
#pragma unroll
        for (int m = 0; m < kBlocks; ++m) {
          const std::uint32_t a_offset = box + block_bytes[m] + tap_bytes;
#pragma unroll
          for (int kk = 0; kk < row_bytes / product_bytes<T>; ++kk) {
            wgmma::element<T>::template mma<filter_trans_b<Filter>, kAcc>(
                d[m], smem_descriptor_advance(a_slots, a_offset + kk * product_bytes<T>),
                smem_descriptor_advance(b_stage, filter_product_offset<T, Filter>(kk)));
          }
        }
        wgmma_commit();
        wgmma_wait<1>();  // the previous tap's products have completed
        if (previous_b >= 0 && lane == 0) b_ring.release(previous_b);
        previous_b = at_b.stage;
        at_b.advance();
        if (tap == 0 && held_a >= 0) {  // the previous block's last products were the ones just waited for
          if (lane == 0) a_ring.release(held_a);
          held_a = -1;
        }
      }
      held_a = at_a.stage;
      at_a.advance();
    }
    turns.pass(consumer);  // the other's turn
    wgmma_wait<0>();
#pragma unroll
    for (int m = 0; m < kBlocks; ++m) fence_operands(d[m]);
    if (lane == 0) {
      if (previous_b >= 0) b_ring.release(previous_b);
      if (held_a >= 0) a_ring.release(held_a);
    }
    at_a.advance(prm.c_chunks);  // the other warpgroup's next tile
    at_b.advance(prm.k_steps);
    stage_bias_and_store<T, conv2d_layout::nhwc, kBlocks, BN>(
        bias_smem, consumer, own_tiles & 1, [&](int m) -> const float(&)[kAcc] { return d[m]; }, prm, w, 0,
        tid_in_warpgroup, ep);
  }
#endif
}

}  // namespace kf::detail
