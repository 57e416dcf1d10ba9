// SPDX-License-Identifier: Apache-2.0
// Step 7 -- implicit_gemm_wgmma: the implicit GEMM on Hopper's warpgroup
// tensor-core products (wgmma, sm_90a), fed by TMA: TF32 for float NCHW and
// NHWC, f16 / bf16 for NHWC (channels_last). Device code, compiled for sm_90a
// only (src/conv2d/sources.cmake). Host side: wgmma_sm90a.cu (float NCHW),
// wgmma_sm90a_nhwc.cuh (NHWC, a unit per type), wgmma_sm90a.hpp; tiles:
// wgmma_plan.hpp; roles, stages and the shared-memory carve: wgmma_config.cuh.
//
// What changes from steps 4 and 5 (mma.sync), and why it is faster on Hopper:
//  * wgmma.m64nNk8 (TF32) / k16 (16-bit) reads both operands from shared
//    memory: no fragment loads or per-element conversion in registers; two
//    consumer warpgroups compute a 128 x BN tile (BN = 64 or 128).
//  * No im2col arithmetic: the A tile of one filter tap (32 floats or 64
//    16-bit channels, at most 128 output pixels) is ONE 4-D TMA box of the
//    NHWC input at the tap's offset, zero-filled outside the image and past C,
//    written in wgmma's 128-byte swizzle (as matmul step 14); the filter is a
//    3-D map (c, tap, k) read a tap's channels x BN at a time. Float NCHW is first copied
//    to NHWC and the filter to K x R x S x C (wgmma_nchw_repack.cuh), both
//    rounding to TF32; NHWC is read where it lies (C * sizeof(T) a multiple of
//    16 bytes), at strides up to 8 (TMA element strides; NCHW: stride 1).
//  * Pointwise layers (1 x 1, stride 1, no padding) run as one row of N H W
//    pixels (conv2d_one_row_if_pointwise): a tile is 128 consecutive pixels,
//    its four 64-channel k-steps the quarters of one 64 KiB run of x.
//  * Warp specialization on a persistent grid: one producer warp fills a ring
//    of stages (full / empty mbarriers), the consumers keep one stage's
//    products in flight, and the ring runs on into the next tile while the
//    last one is stored.
//  * Ping-pong (NHWC layers of 9 or more k-steps): each consumer warpgroup takes a
//    tile of its own and the two alternate on two mbarriers, so one stores
//    while the other multiplies (CUTLASS's ping-pong order).
//  * Filter-column tiles (16-bit NHWC, stride_h = dilation_h = 1, R a multiple
//    of 3): taps (r, s), (r + 1, s), (r + 2, s) read input rows one apart, so
//    one A box of 8 x (ht + 2) pixels holds all three, tap j a 1024-byte swizzle
//    atom further in (filter_column.hpp): fewer operand rows a product where
//    the kernel is bound by its loads.
//  * dx (16-bit NHWC, backward_data.cu) reads the layer's filter unturned: the
//    turned filter's slice for a tap is w[:, RS - 1 - t, :] as stored, an
//    N-major B read with wgmma's transpose bit (wgmma_filter_operand.cuh).
//  * A resident filter: where one channel tile covers K and the cooperative
//    schedule's k-steps fit the ring (the 1x1 layer; the TF32 stem's column
//    fold), the producer loads the filter's slices once a CTA into the stages'
//    B slots, and a stage carries only its A box (conv2d_wgmma_resident_filter);
//    where a tile's k-steps fill at most half the ring, it takes them all before
//    asking for any box: its channel blocks reach DRAM together
//    (conv2d_wgmma_tile_loads_together).
//  * Epilogue (wgmma_store.cuh): sum + bias (staged in shared memory once a
//    tile), the functor, a masked store (NHWC: neighbouring channels in pairs);
//    16-bit pointwise y goes through shared memory and TMA stores in whole
//    128-byte rows (conv2d_wgmma_staged_y).
// Rounding: NCHW's copies round to TF32 (2^-11 a value); NHWC float is read as
// stored and the tensor cores drop its low 13 bits (2^-10). Dilation and any
// padding are free (TMA). Measured speed and the evidence for each choice:
// benchmarks/tuning/conv2d.md.
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../arch/guards.cuh"
#include "../arch/mbarrier_sm90.cuh"
#include "../arch/mma_sm80.cuh"
#include "../arch/pipeline_sm90.cuh"
#include "../arch/smem.cuh"
#include "../arch/tma_sm90.cuh"
#include "../arch/warpgroup_sm90.cuh"
#include "../arch/wgmma_sm90.cuh"
#include "../common/kernel.cuh"
#include "../common/numeric.cuh"
#include "../matmul/wgmma/element.cuh"
#include "../matmul/wgmma/config.cuh"
#include "kernelforge/conv.hpp"
#include "kernelforge/epilogue.cuh"
#include "wgmma_config.cuh"
#include "wgmma_filter_operand.cuh"
#include "wgmma_last_round.cuh"
#include "wgmma_plan.hpp"
#include "wgmma_store.cuh"

namespace kf::detail {
namespace conv2d_wgmma {

/// Tile t: channel tile t % tiles_k (BN channels each) of pixel box t / tiles_k (q fastest, then p, then n).
template <int BN, class T>
__device__ __forceinline__ tile_origin tile_of(const params<T>& prm, int t) {
  tile_origin w;
  w.k0 = (t % prm.tiles_k) * BN;
  int m = t / prm.tiles_k;
  w.q0 = (m % prm.tiles_q) * prm.wt;
  m /= prm.tiles_q;
  w.p0 = (m % prm.tiles_p) * prm.ht;
  w.n0 = (m / prm.tiles_p) * prm.nt;
  return w;
}

#if KF_ARCH_SM90A
/// The producer thread: for units first, first + step, ... (wgmma_last_round.cuh:
/// tiles, and in step 9's split last round parts of tiles) every k-step's A box
/// (the shifted pixels of Rows taps (r0, s) .. (r0 + Rows - 1, s), block_c
/// channels: one tap's pixels, or -- Rows > 1 -- the filter-column box) and
/// its Rows B slices (each tap's block_c x BN filter slice, read as Filter
/// says: wgmma_filter_operand.cuh) into the ring's next stage. k-step =
/// (g * S + s) * c_chunks + chunk, r0 = g * Rows (Rows = 1: g * S + s is the
/// tap); the channel offset is chunk * block_c along the map's first dimension
/// (the fp32-emulation step's maps interleave each 32 channels' hi and lo parts
/// there, so its chunks alternate hi, lo).
template <class T, int BN, int Stages, int Rows = 1, conv2d_wgmma_filter Filter = conv2d_wgmma_filter::forward>
__device__ __forceinline__ void produce(const params<T>& prm, const stage_ring<Stages>& ring, std::uint32_t a_smem,
                                        std::uint32_t b_smem, const CUtensorMap* map_x, const CUtensorMap* map_w,
                                        int first, int step, std::uint32_t filter_ready = 0) {
  ring_position<Stages> at;  // runs on across tiles
  // R S, for the unturned filter's 180-degree turn (k_steps = R / Rows * S * c_chunks).
  const int taps = Filter == conv2d_wgmma_filter::forward ? 0 : prm.k_steps / prm.c_chunks * Rows;
  // k-step (group, chunk)'s Rows filter slices of channel tile k0 into the B slot at b_slot.
  const auto load_filter = [&](int group, int chunk, int k0, std::uint32_t b_slot, std::uint32_t bar) {
    const int g = group / prm.s, s = group - g * prm.s;
#pragma unroll
    for (int j = 0; j < Rows; ++j) {
      load_filter_slice<T, BN, Filter>(b_slot + j * b_tile_bytes<BN>, map_w, (g * Rows + j) * prm.s + s, taps,
                                       chunk * block_c<T>, k0, bar);
    }
  };
  // A resident filter (params::resident_filter): every k-step's slices once, k-step kt's in stage kt's B slot.
  if (prm.resident_filter) {
    mbar_arrive_expect_tx(filter_ready, static_cast<unsigned>(prm.k_steps * b_tile_bytes<BN, Rows>));
    for (int kt = 0; kt < prm.k_steps; ++kt) {
      load_filter(kt / prm.c_chunks, kt % prm.c_chunks, 0, b_smem + kt * b_tile_bytes<BN, Rows>, filter_ready);
    }
  }
  const unsigned stage_tx = static_cast<unsigned>(prm.a_box_bytes + (prm.resident_filter ? 0 : b_tile_bytes<BN, Rows>));
  // params::tile_loads_together (a resident filter, a tile's k-steps in at most half the ring: the 16-bit 1x1
  // layer's 4 of 8): a tile's stages are taken before any of its boxes is asked for, so its channel blocks --
  // quarters of the same pixels -- reach DRAM together rather than a stage's landing apart.
  const bool together = prm.tile_loads_together;
  for (int u = first; u < units(prm); u += step) {
    const work_unit unit = unit_of(prm, u);  // a tile, or (step 9's last round) a part of one
    const tile_origin w = tile_of<BN>(prm, unit.tile);
    // k-step = group * c_chunks + chunk; group = g * S + s
    int group = unit.kt_begin / prm.c_chunks, chunk = unit.kt_begin - group * prm.c_chunks;
    if (together) {
      ring_position<Stages> ahead = at;
      for (int kt = unit.kt_begin; kt < unit.kt_end; ++kt, ahead.advance()) ring.producer_acquire(ahead, stage_tx);
    }
    for (int kt = unit.kt_begin; kt < unit.kt_end; ++kt) {
      const std::uint32_t full = together ? ring.full(at.stage) : ring.producer_acquire(at, stage_tx);
      const int g = group / prm.s, s = group - g * prm.s;
      const int r0 = g * Rows;
      tma_load_4d(a_smem + at.stage * a_slot_bytes<Rows>, map_x, chunk * block_c<T>,
                  w.q0 * prm.stride_w - prm.pad_w + s * prm.dilation_w,
                  w.p0 * prm.stride_h - prm.pad_h + r0 * prm.dilation_h, w.n0, full);
      if (!prm.resident_filter) load_filter(group, chunk, w.k0, b_smem + at.stage * b_tile_bytes<BN, Rows>, full);
      if (++chunk == prm.c_chunks) {
        chunk = 0;
        ++group;
      }
      at.advance();
    }
  }
}
#endif  // KF_ARCH_SM90A

}  // namespace conv2d_wgmma

/// y = ep(conv(x, w) + bias) for stride-1 layers: T = float (TF32 products),
/// __half or __nv_bfloat16 (fp32 sums, rounded once at the store). Persistent:
/// each CTA walks tiles blockIdx.x, + gridDim.x, ...; tile t is channel tile t %
/// tiles_k of pixel box t / tiles_k (q fastest, then p, then n), so the CTAs
/// that run at once share their boxes' input rows and halos in L2.
/// map_x: the NHWC input (dims c, w, h, n; box block_c x wt x ht x nt;
/// filter-column tiles, Rows > 1: block_c x 8 x (ht + Rows - 1) x nt).
/// map_w: the filter as K x RS x C (dims c, tap, k; box block_c x 1 x BN), or
/// -- Filter = dgrad_unturned -- the layer's filter whose dx this is, unturned
/// (dims C, tap, K of that layer; box 64 x 1 x block_c: wgmma_filter_operand.cuh).
/// Layout: where y goes -- NCHW (NKPQ) or NHWC (NPQK); the inputs are NHWC either way.
/// Rows: the taps of one filter column a k-step covers (1, or 3: filter-column tiles, 16-bit NHWC).
template <class T, conv2d_layout Layout, int BN, bool PingPong, class Epilogue, int Rows = 1,
          conv2d_wgmma_filter Filter = conv2d_wgmma_filter::forward>
KF_KERNEL void __launch_bounds__(conv2d_wgmma::threads, 1)
    conv2d_implicit_gemm_wgmma(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                               const __grid_constant__ CUtensorMap map_y, const conv2d_wgmma::params<T> prm,
                               const Epilogue ep) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // wgmma needs sm_90a; this file is compiled for nothing else
#elif KF_ARCH_SM90A
  using namespace conv2d_wgmma;
  static_assert(Rows == 1 || (sizeof(T) == 2 && Layout == conv2d_layout::nhwc),
                "filter-column tiles: 16-bit NHWC (8 pixels of 64 channels are one swizzle atom)");
  static_assert(Filter == conv2d_wgmma_filter::forward || (sizeof(T) == 2 && Layout == conv2d_layout::nhwc),
                "the unturned filter (dx): 16-bit NHWC (TF32 wgmma has no transpose bit)");
  constexpr int kStages = stages<BN, Rows>;
  constexpr int kBTile = b_tile_bytes<BN, Rows>;
  constexpr int kAcc = accumulators<BN>;
  // params::staged_y: 16-bit y through shared memory and TMA (the host asks it of these instances alone).
  constexpr bool kMayStageY = Layout == conv2d_layout::nhwc && sizeof(T) == 2 && !PingPong && BN == 64 && Rows == 1 &&
                              Filter == conv2d_wgmma_filter::forward;
  static_assert(!kMayStageY || kBTile == wgmma::c_buffer_bytes, "a y chunk fills one B slot");
  extern __shared__ unsigned char conv2d_wgmma_smem[];
  const smem_carve<BN, Rows> smem(smem_address(conv2d_wgmma_smem));
  const std::uint32_t a_smem = smem.a, b_smem = smem.b;
  const stage_ring<kStages> ring(smem.ring);
  const pingpong_order turns{smem.mainloop_done};  // ping-pong's order of the two mainloops
  // A resident filter (cooperative tiles only; the host never asks ping-pong for one): its barrier
  // takes ping-pong's first turn barrier's place.
  const bool resident_filter = !PingPong && prm.resident_filter;
  const std::uint32_t filter_ready = smem.mainloop_done;
  float* const bias_smem = smem.bias_in(conv2d_wgmma_smem);  // the staged bias (wgmma_store.cuh)

  const int warpgroup = threadIdx.x / warpgroup_threads;
  const int tid_in_warpgroup = threadIdx.x % warpgroup_threads;

  if (threadIdx.x == 0) {  // the producer thread below
    tma_prefetch_descriptor(&map_x);
    tma_prefetch_descriptor(&map_w);
    // Every consumer warp that reads a stage releases it: both warpgroups, or (ping-pong) the one whose tile it holds.
    ring.init((PingPong ? 1 : consumer_warpgroups) * warps_per_warpgroup);
    if constexpr (PingPong) {
      turns.init();
    } else {
      if (resident_filter) mbar_init(filter_ready, 1);
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    if (tid_in_warpgroup == 0) {
      produce<T, BN, kStages, Rows, Filter>(prm, ring, a_smem, b_smem, &map_x, &map_w, blockIdx.x, gridDim.x,
                                            filter_ready);
    }
  } else {
    // ---------------------------------------------------------------- consumers
    const int consumer = warpgroup - 1;
    const int lane = tid_in_warpgroup % 32;
    const auto release = [&](int st) {
      if (lane == 0) ring.release(st);
    };
    // Cooperative: both warpgroups take every tile of the CTA, rows 64 c .. 64 c + 63 each.
    // Ping-pong: warpgroup c takes every other tile of the CTA (the c-th, (c + 2)-th, ...),
    // all 128 rows (two m64 products per k slice), so that one warpgroup's stores
    // overlap the other's products; it skips the other's stages in the ring.
    // The two take turns at their mainloops (consumer 0's tile j after consumer
    // 1's tile j - 1, consumer 1's tile j after consumer 0's tile j), as the
    // ring delivers them. The turns also keep a warpgroup that skips ahead from
    // waiting on a stage more than one round beyond the producer: a parity wait
    // cannot tell that round from the one before it.
    constexpr int kBlocks = PingPong ? 2 : 1;  // m64 row blocks per warpgroup
    // Where m64 block 1 starts in a stage's A box: 64 rows on, or its row of the filter-column box.
    const std::uint32_t block_bytes = Rows == 1 ? wgmma_m * row_bytes : prm.a_block_bytes;
    ring_position<kStages> at;
    int first = blockIdx.x, step = gridDim.x;
    if constexpr (PingPong) {
      first += consumer * gridDim.x;
      step *= 2;
      if (consumer == 1) at.advance(prm.k_steps);
    }
    if (resident_filter) mbar_wait(filter_ready, 0);  // the filter, once
    int own_tiles = 0;                                // tiles this warpgroup has taken so far
    [[maybe_unused]] int y_buffer = 0;                // params::staged_y: this warpgroup's next C buffer
    [[maybe_unused]] const std::uint32_t y_smem =
        b_smem + (kStages - y_buffers * (consumer_warpgroups - consumer)) * kBTile;
    for (int t = first; t < prm.tiles; t += step, ++own_tiles) {
      const tile_origin w = tile_of<BN>(prm, t);
      if constexpr (PingPong) turns.wait_turn(consumer, own_tiles);
      float d[kBlocks][kAcc];
#pragma unroll
      for (int m = 0; m < kBlocks; ++m) {
#pragma unroll
        for (int i = 0; i < kAcc; ++i) d[m][i] = 0.0f;
        fence_operands(d[m]);
      }

      int previous = -1;
      for (int kt = 0; kt < prm.k_steps; ++kt) {
        ring.consumer_wait(at);
        // The stage's two descriptors, once a k-step; each product's is an add to their low words.
        const std::uint64_t a_stage = smem_descriptor_sw128(a_smem + at.stage * a_slot_bytes<Rows>);
        const std::uint64_t b_stage = filter_descriptor<T, Filter>(b_smem + (resident_filter ? kt : at.stage) * kBTile);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < Rows; ++j) {  // tap (r0 + j, s): its A rows one swizzle atom a tap further in
#pragma unroll
          for (int m = 0; m < kBlocks; ++m) {
            const int block = PingPong ? m : consumer;
            const std::uint32_t a_offset = block * block_bytes + j * column_tap_bytes;  // in the stage's A box
#pragma unroll
            for (int kk = 0; kk < row_bytes / product_bytes<T>; ++kk) {
              const std::uint32_t k_bytes = kk * product_bytes<T>;  // along the swizzled row
              wgmma::element<T>::template mma<filter_trans_b<Filter>, kAcc>(
                  d[m], smem_descriptor_advance(a_stage, a_offset + k_bytes),
                  smem_descriptor_advance(b_stage, j * b_tile_bytes<BN> + filter_product_offset<T, Filter>(kk)));
            }
          }
        }
        wgmma_commit();
        // Keep this stage's products in flight; the previous stage's have completed.
        wgmma_wait<1>();
        if (previous >= 0) release(previous);
        previous = at.stage;
        at.advance();
      }
      if constexpr (PingPong) turns.pass(consumer);  // the other's turn
      wgmma_wait<0>();
#pragma unroll
      for (int m = 0; m < kBlocks; ++m) fence_operands(d[m]);
      if (previous >= 0) release(previous);             // the tile's last stage, before the stores
      if constexpr (PingPong) at.advance(prm.k_steps);  // the other warpgroup's next tile

      if constexpr (kMayStageY) {
        if (prm.staged_y) {
          store_y_staged<T, BN>(d[0], bias_smem, consumer, own_tiles & 1, prm, w, tid_in_warpgroup, ep, &map_y, y_smem,
                                y_buffer);
          continue;
        }
      }
      // Ping-pong: the warpgroup's two row blocks; cooperative: its own.
      stage_bias_and_store<T, Layout, kBlocks, BN>(
          bias_smem, consumer, own_tiles & 1, [&](int m) -> const float(&)[kAcc] { return d[m]; }, prm, w,
          PingPong ? 0 : consumer, tid_in_warpgroup, ep);
    }
    if constexpr (kMayStageY) {  // the last C buffers are read before the CTA's shared memory goes
      if (prm.staged_y && tid_in_warpgroup == 0) tma_store_wait_read<0>();
    }
  }
#endif
}

}  // namespace kf::detail
