// SPDX-License-Identifier: Apache-2.0
// Step 7 -- implicit_gemm_wgmma: the implicit GEMM on Hopper's warpgroup
// tensor-core products (wgmma, sm_90a), fed by TMA: TF32 for float NCHW and
// NHWC, f16 / bf16 for NHWC (channels_last). Device code; compiled for
// sm_90a only (src/conv2d/sources.cmake). Host side: wgmma_sm90a.cu; host
// interface: wgmma_sm90a.hpp; tile planning: wgmma_plan.hpp; its shape (roles,
// stages, shared-memory carve, parameters): wgmma_config.cuh.
//
// What changes from implicit_gemm_tf32 (step 4, mma.sync) and the pipelined
// step 5, and why it is faster on Hopper:
//  * mma.sync runs Hopper's tensor cores at a fraction of their rate, and every
//    operand passes through registers (fragment loads, TF32 conversion). A
//    warpgroup's wgmma.m64nNk8 reads both operands from shared memory itself:
//    two consumer warpgroups compute a 128 x BN tile (BN = 64 or 128).
//  * No im2col address arithmetic per element: the input is first copied to
//    NHWC (one pass, conv2d_nchw_to_nhwc_tf32 in wgmma_nchw_repack.cuh, into a pooled workspace; TF32
//    wgmma reads both operands k-contiguous, and k here is the channel), and
//    the A tile of one filter tap (r, s) and 32 channels is then ONE 4-D TMA
//    box of the NHWC tensor: 32 channels x wt columns x ht rows x nt images
//    (<= 128 pixels, planned by wgmma_plan.hpp), at (c0, q0 - pad_w + s dil_w,
//    p0 - pad_h + r dil_h, n0). TMA zero-fills what lies outside the image (the
//    padding) and past C, and writes each pixel's 32 channels as one 128-byte
//    row in the 128-byte swizzle: wgmma's K-major layout, as in the matmul's
//    step 14. The filter (KCRS -> K x R x S x C padded to 32 with zeros,
//    conv2d_kcrs_to_krsc_tf32) is a 3-D map (c, tap, k) read in boxes of
//    32 x 1 x BN: TMA zero-fills past C there too.
//  * Both copies round to TF32 (cvt.rna) as they write, so the products see
//    rounded inputs as in step 4 (wgmma itself would truncate the fp32 bits).
//  * Warp specialization and a persistent grid, as the matmul's step 14: one
//    producer warp issues the TMA copies into a ring of stages (full / empty
//    mbarriers), two consumer warpgroups issue the products and keep one stage's
//    products in flight; the ring runs on into the next tile while the
//    consumers store the last one.
//  * Epilogue (wgmma_store.cuh): sum + bias[k], the functor, and a masked store
//    straight into NCHW y (for a fixed k, a tile's consecutive rows are
//    consecutive q); the tile's bias staged in shared memory after its main
//    loop (one load a thread and a named barrier), read there by the stores.
//
// channels_last (NHWC x, KRSC filter, NPQK y; T = float, __half, __nv_bfloat16):
//  * Strides up to 8: the A map steps through the input at the layer's stride
//    (TMA element strides), so a box of wt x ht output pixels is one copy of
//    the stride-th input pixels under them, for each filter tap.
//  * No copies at all: the two maps read the caller's x and filter where they
//    are (C * sizeof(T) a multiple of 16 bytes, 16-byte aligned), a stage's
//    128-byte row being 32 floats or 64 16-bit channels; wgmma::element<T>
//    (the matmul's) picks m64nNk8 TF32 or m64nNk16 f16 / bf16. TF32 here reads
//    the float bits as they are (the tensor cores drop the low 13), so float
//    NHWC errs up to 2^-10 per input where NCHW's rounding copy errs 2^-11.
//  * y[pixel][k]: a thread's two neighbouring accumulators are neighbouring
//    channels, stored as one pair (float2, or two 16-bit values rounded at
//    once) when K is even and y aligned to a pair.
//  * Ping-pong (wgmma_plan.hpp: layers of 9 or more k-steps): each consumer
//    warpgroup takes its own tile, all 128 rows (two m64 products per k slice),
//    the two in turn, so that one stores its tile while the other multiplies;
//    cooperative (both on one tile, 64 rows each) stores with the tensor cores
//    idle. The turns are two mbarriers (mainloop_done), as CUTLASS's ping-pong
//    kernel orders its math warpgroups. Measured on the H200: up to 10% on 3x3
//    layers, 1-7% slower on a 4-k-step 1x1 layer (benchmarks/tuning/conv2d.md).
//  * Filter-column tiles (Rows = 3; 16-bit NHWC at stride_h = dilation_h = 1, R
//    a multiple of 3; wgmma_plan.hpp picks them where they load fewer rows):
//    the kernel is bound by its operand loads, and one-tap k-steps load a
//    128-pixel A box per tap although taps (r, s), (r + 1, s), (r + 2, s) read
//    input rows one apart. With tiles 8 output columns wide (8 x 16 pixels of
//    one image, or 8 x 8 of two), one A box of 8 x (ht + 2) input pixels per
//    image holds all three taps' operands, tap j's starting j image rows --
//    j x 1024 bytes, one whole swizzle atom -- further in (filter_column.hpp):
//    the descriptor of the first tap's, advanced. A k-step then loads that box
//    and the three taps' filter slices and issues three taps' products: 144 or
//    160 + 3 BN rows for three taps where one-tap steps load 3 x (128 + BN).
//    Q need not be a multiple of 8: the last tile column overhangs the output
//    as one-tap boxes do (TMA's zero fill, or pixels whose outputs are not stored).
//  * dx reads the filter where it lies (Filter = dgrad_unturned, 16-bit NHWC;
//    src/conv2d/backward_data.cu): dx is this kernel's convolution of dy with
//    the filter turned by 180 degrees, K and C swapped, whose B slice for tap t
//    is the layer's w[:, tap RS - 1 - t, :] unchanged -- K rows (the
//    reduction), C contiguous (the outputs): an N-major B, loaded as boxes of
//    64 channels x 64 rows and read with wgmma's transpose bit
//    (wgmma_filter_operand.cuh). This drops the turn pass (a launch of one
//    uncoalesced thread an element) and its workspace; one-tap and
//    filter-column k-steps, either schedule. float keeps the turn (TF32 wgmma
//    has no transpose bit); the forward's own instances are unchanged.
// Stride 1 only (wgmma_plan.hpp); dilation and any padding are free (TMA).
// Its measured speed: the docs site's learning path (docs/build_site.py) and
// benchmarks/tuning/conv2d.md#conv2d_wgmma_best_min_channels (bench_conv).
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
#include "kernelforge/conv.hpp"
#include "kernelforge/epilogue.cuh"
#include "wgmma_config.cuh"
#include "wgmma_filter_operand.cuh"
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
/// The producer thread: for tiles first, first + step, ... every k-step's A box
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
                                        int first, int step) {
  ring_position<Stages> at;  // runs on across tiles
  const unsigned stage_tx = static_cast<unsigned>(prm.a_box_bytes + b_tile_bytes<BN, Rows>);
  // R S, for the unturned filter's 180-degree turn (k_steps = R / Rows * S * c_chunks).
  const int taps = Filter == conv2d_wgmma_filter::forward ? 0 : prm.k_steps / prm.c_chunks * Rows;
  for (int t = first; t < prm.tiles; t += step) {
    const tile_origin w = tile_of<BN>(prm, t);
    int group = 0, chunk = 0;  // k-step = group * c_chunks + chunk; group = g * S + s
    for (int kt = 0; kt < prm.k_steps; ++kt) {
      const std::uint32_t full = ring.producer_acquire(at, stage_tx);
      const int g = group / prm.s, s = group - g * prm.s;
      const int r0 = g * Rows;
      const int c0 = chunk * block_c<T>;
      tma_load_4d(a_smem + at.stage * a_slot_bytes<Rows>, map_x, c0,
                  w.q0 * prm.stride_w - prm.pad_w + s * prm.dilation_w,
                  w.p0 * prm.stride_h - prm.pad_h + r0 * prm.dilation_h, w.n0, full);
#pragma unroll
      for (int j = 0; j < Rows; ++j) {
        load_filter_slice<T, BN, Filter>(b_smem + at.stage * b_tile_bytes<BN, Rows> + j * b_tile_bytes<BN>, map_w,
                                         (r0 + j) * prm.s + s, taps, c0, w.k0, full);
      }
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
                               const conv2d_wgmma::params<T> prm, const Epilogue ep) {
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
  extern __shared__ unsigned char conv2d_wgmma_smem[];
  const smem_carve<BN, Rows> smem(smem_address(conv2d_wgmma_smem));
  const std::uint32_t a_smem = smem.a, b_smem = smem.b;
  const stage_ring<kStages> ring(smem.ring);
  // Ping-pong: mainloop_done[c] completes a phase each time consumer c has issued a tile's products.
  const std::uint32_t mainloop_done = smem.mainloop_done;
  float* const bias_smem = smem.bias_in(conv2d_wgmma_smem);  // the staged bias (wgmma_store.cuh)

  const int warpgroup = threadIdx.x / warpgroup_threads;
  const int tid_in_warpgroup = threadIdx.x % warpgroup_threads;

  if (threadIdx.x == 0) {  // the producer thread below
    tma_prefetch_descriptor(&map_x);
    tma_prefetch_descriptor(&map_w);
    // Every consumer warp that reads a stage releases it: both warpgroups, or (ping-pong) the one whose tile it holds.
    ring.init((PingPong ? 1 : consumer_warpgroups) * warps_per_warpgroup);
    if constexpr (PingPong) {
      mbar_init(mainloop_done, warpgroup_threads);
      mbar_init(mainloop_done + 8, warpgroup_threads);
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---------------------------------------------------------------- producer
    if (tid_in_warpgroup == 0) {
      produce<T, BN, kStages, Rows, Filter>(prm, ring, a_smem, b_smem, &map_x, &map_w, blockIdx.x, gridDim.x);
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
    int own_tiles = 0;  // tiles this warpgroup has taken so far
    for (int t = first; t < prm.tiles; t += step, ++own_tiles) {
      const tile_origin w = tile_of<BN>(prm, t);
      if constexpr (PingPong) {
        if (consumer == 1) mbar_wait(mainloop_done, static_cast<std::uint32_t>(own_tiles & 1));
        if (consumer == 0 && own_tiles > 0)
          mbar_wait(mainloop_done + 8, static_cast<std::uint32_t>((own_tiles - 1) & 1));
      }
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
        const std::uint32_t b_stage = b_smem + at.stage * kBTile;
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < Rows; ++j) {  // tap (r0 + j, s): its A rows one swizzle atom a tap further in
          const std::uint32_t b_tile = b_stage + j * b_tile_bytes<BN>;
#pragma unroll
          for (int m = 0; m < kBlocks; ++m) {
            const int block = PingPong ? m : consumer;
            const std::uint32_t a_tile =
                a_smem + at.stage * a_slot_bytes<Rows> + block * block_bytes + j * column_tap_bytes;
#pragma unroll
            for (int kk = 0; kk < row_bytes / product_bytes<T>; ++kk) {
              const std::uint32_t k_bytes = kk * product_bytes<T>;  // along the swizzled row
              wgmma::element<T>::template mma<filter_trans_b<Filter>, kAcc>(
                  d[m], smem_descriptor_sw128(a_tile + k_bytes), filter_descriptor<T, Filter>(b_tile, kk));
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
      if constexpr (PingPong) mbar_arrive(mainloop_done + 8 * consumer);  // the other's turn
      wgmma_wait<0>();
#pragma unroll
      for (int m = 0; m < kBlocks; ++m) fence_operands(d[m]);
      if (previous >= 0) release(previous);             // the tile's last stage, before the stores
      if constexpr (PingPong) at.advance(prm.k_steps);  // the other warpgroup's next tile

      // Ping-pong: the warpgroup's two row blocks; cooperative: its own.
      stage_bias_and_store<T, Layout, kBlocks, BN>(
          bias_smem, consumer, own_tiles & 1, [&](int m) -> const float(&)[kAcc] { return d[m]; }, prm, w,
          PingPong ? 0 : consumer, tid_in_warpgroup, ep);
    }
  }
#endif
}

}  // namespace kf::detail
