// SPDX-License-Identifier: Apache-2.0
// Step 8 -- winograd_fused: Winograd F(2x2,3x3) in one kernel (plus the small
// filter transform), exact fp32 arithmetic, 3x3 filters at stride 1 and dilation 1.
//
// What changes from step 6 (06_winograd.cuh), and why it is faster: step 6
// writes V = B^T d B and M = U V through HBM, each 16 C T (or 16 K T) floats,
// 4x the input and the output. For N32 C64 56x56 K64 (T = 25088 tiles) that is
// ~103 MB each, ~460 MB of traffic in all (~115 us at 4 TB/s), against 3.3
// GFLOP of products (~70 us of FMA at a realistic 48 TFLOP/s): the passes, not
// the FMAs, held it. Here the input is transformed inside the GEMM's load (no V
// in HBM) and A^T M A applied in its epilogue (no M either): the call reads x
// (~26 MB, its 4x4 patches overlap through L1/L2) and U, and writes y (~26 MB):
// ~13 us of HBM time under ~70 us of FMAs. The cost is that one block must
// hold all 16 positions b of its (k, t) products until the last channel: here
// 64 filters x 32 tiles x 16 positions = 32768 accumulators on 512 threads (64
// each, under the 128 registers a 512-thread block may use at one block per SM).
//
// The block (conv2d_winograd_fused_layout in plan.hpp: 64 filters x 32 tiles):
//  * warp b (16 warps) computes position b's 64 x 32 product M[b] = U[b] V[b]
//    with 8 x 8 outputs per lane (4 tile groups x 8 filter groups of lanes);
//    per channel a lane reads 2 float4 of V and 2 float4 of U for 64 FMAs
//    (step 5's ratio), each a conflict-free row of shared memory;
//  * channels come 8 at a time through a 3-stage cp.async pipeline: U[b][c][k]
//    (16-byte copies, gemm_pipeline.cuh's column copier, one warp per b) and the
//    raw 4 x 4 input patches of the 32 tiles (4-byte copies, zero-filled
//    outside the image: padding, partial tiles, channels past C);
//  * half the threads turn the patches into V = B^T d B in shared memory
//    (winograd_transforms.hpp), the same formulas as step 6;
//  * at the end the accumulators go through shared memory (M[b][k][t]) so each
//    thread gathers the 16 b of 4 (k, t) pairs, applies y = A^T M A + bias and
//    the epilogue, and stores the 2 x 2 outputs inside P x Q.
// Shared memory: 3 x (U 34 KB + patches 16 KB) + V 18 KB = 168 KB (the M
// staging, 144 KB, reuses it): sm_90 and sm_100 grant it, smaller devices
// refuse the variant (errc::unsupported) and `best` keeps step 6 there.
// The workspace is U only: 16 C round_up(K, 4) floats.
//
// Accuracy: the same transforms and the same C-long fp32 sums as step 6 (only
// the order of the channel sum within a chunk differs), so step 6's bound holds:
// about (C + 16) 2^-24 E at worst, E the Winograd error scale (tests/conv2d).
// Its measured speed: benchmarks/tuning/conv2d.md#conv2d_winograd_fused_fills_waves and the README (bench_conv).
#pragma once

#include <cstddef>
#include <cstdint>

#include "../arch/cp_async.cuh"
#include "../common/fast_divmod.cuh"
#include "../common/kernel.cuh"
#include "06_winograd.cuh"
#include "args.cuh"
#include "gemm_pipeline.cuh"
#include "plan.hpp"
#include "winograd_transforms.hpp"
#include "kernelforge/epilogue.cuh"

namespace kf::detail {

constexpr int wfused_filters = static_cast<int>(conv2d_winograd_fused_layout::filters);        // K per block
constexpr int wfused_tiles = static_cast<int>(conv2d_winograd_fused_layout::tiles_per_block);  // tiles per block
constexpr int wfused_chunk = 8;   // input channels per pipeline stage
constexpr int wfused_stages = 3;  // two chunks in flight while one is computed
constexpr int wfused_warp = 32;
constexpr int wfused_threads = winograd_positions * wfused_warp;  // one warp per position b
constexpr int wfused_patch = 16;                                  // 4 x 4 input pixels per tile
/// Threads that copy and transform the patches: one (channel, tile) pair each for
/// the transform; the copy splits each patch's rows between two threads.
constexpr int wfused_pairs = wfused_chunk * wfused_tiles;
constexpr int wfused_patch_rows_per_thread = 4 * wfused_pairs / wfused_threads;  // 2
static_assert(wfused_threads % wfused_pairs == 0 && wfused_pairs % wfused_warp == 0, "whole warps of pairs");
static_assert(wfused_tiles == wfused_warp, "a warp's lanes are the block's 32 tiles (coalesced patch reads)");

// Per lane of warp b: 8 tiles (2 groups of 4) x 8 filters (2 groups of 4).
constexpr int wfused_lanes_t = wfused_tiles / conv2d_pipe_thread_tile;    // 4 lanes along the tiles
constexpr int wfused_lanes_k = wfused_filters / conv2d_pipe_thread_tile;  // 8 lanes along the filters
static_assert(wfused_lanes_t * wfused_lanes_k == wfused_warp, "a warp covers one position's 64 x 32 product");

// Shared memory (floats). Row pitches +4 (conv2d_pipe_pad): rows stay 16-byte
// aligned, and the accumulator stores (float4 rows 4 filters apart, pitch 36)
// land in distinct banks.
constexpr int wfused_u_pitch = wfused_filters + conv2d_pipe_pad;  // Us[b][c][k], the column copier's pitch
constexpr int wfused_v_pitch = wfused_tiles + conv2d_pipe_pad;    // Vs[b][c][t]
constexpr int wfused_m_pitch = wfused_tiles + conv2d_pipe_pad;    // Ms[b][k][t]
constexpr int wfused_u_floats = winograd_positions * wfused_chunk * wfused_u_pitch;
constexpr int wfused_d_floats = wfused_chunk * wfused_patch * wfused_tiles;  // Ds[c][e][t], e = 4 i + j
constexpr int wfused_stage_floats = wfused_u_floats + wfused_d_floats;
constexpr int wfused_v_floats = winograd_positions * wfused_chunk * wfused_v_pitch;
constexpr int wfused_pipe_floats = wfused_stages * wfused_stage_floats + wfused_v_floats;
constexpr int wfused_m_floats = winograd_positions * wfused_filters * wfused_m_pitch;
static_assert(wfused_m_floats <= wfused_pipe_floats, "the accumulators' staging reuses the pipeline's buffers");
/// Dynamic shared memory of conv2d_winograd_fused (172032 bytes).
constexpr int wfused_smem_bytes = wfused_pipe_floats * static_cast<int>(sizeof(float));
static_assert(wfused_smem_bytes == static_cast<int>(conv2d_winograd_fused_layout::smem_bytes),
              "plan.hpp states the shared memory the host side and the tests check devices against");

/// The launcher's view of one fused Winograd call.
struct conv2d_winograd_fused_args {
  conv2d_args<float> a;
  int tiles_h = 0, tiles_w = 0;  // ceil(P / 2), ceil(Q / 2)
  int tiles = 0;                 // N * tiles_h * tiles_w
  int k_ld = 0;                  // round_up(K, 4): row pitch of U
  fast_divmod div_tiles_w, div_tiles_h;
  const float* u = nullptr;  // [16][C][k_ld], from conv2d_winograd_filter
};

/// The filter transform's arguments for step 8's layout: U[b][c][k_ld] at `u`
/// (the launcher and the CPU emulation test build them here).
inline conv2d_winograd_filter_args make_conv2d_winograd_fused_filter_args(const conv2d_args<float>& a,
                                                                          const conv2d_winograd_fused_layout& l,
                                                                          float* u) {
  return make_conv2d_winograd_filter_args(a, u, 1, static_cast<int>(l.k_ld), static_cast<std::size_t>(a.c) * l.k_ld);
}

/// The kernel's arguments for layer `a` in layout `l` with transformed filters
/// `u` (the launcher and the CPU emulation test build them here).
inline conv2d_winograd_fused_args make_conv2d_winograd_fused_args(const conv2d_args<float>& a,
                                                                  const conv2d_winograd_fused_layout& l,
                                                                  const float* u) {
  conv2d_winograd_fused_args wa;
  wa.a = a;
  wa.tiles_h = static_cast<int>(l.tiles_h);
  wa.tiles_w = static_cast<int>(l.tiles_w);
  wa.tiles = static_cast<int>(l.tiles);
  wa.k_ld = static_cast<int>(l.k_ld);
  wa.div_tiles_w = fast_divmod(static_cast<unsigned>(l.tiles_w));
  wa.div_tiles_h = fast_divmod(static_cast<unsigned>(l.tiles_h));
  wa.u = u;
  return wa;
}

/// y = A^T (sum over c of U (.) V) A + bias, then the epilogue, for 64 filters
/// x 32 tiles per block. Grid: x = ceil(tiles / 32), y = ceil(K / 64); block
/// wfused_threads; dynamic shared memory wfused_smem_bytes. One block per SM.
template <class Epilogue = kf::epilogue::identity>
KF_KERNEL void __launch_bounds__(wfused_threads, 1)
    conv2d_winograd_fused(conv2d_winograd_fused_args wa, Epilogue epilogue) {
  extern __shared__ __align__(16) float wfused_smem[];
  const conv2d_args<float>& a = wa.a;
  const int tid = threadIdx.x;
  const int b = tid / wfused_warp, lane = tid % wfused_warp;  // b: this warp's position
  const int k0 = blockIdx.y * wfused_filters;
  float* const vs = wfused_smem + wfused_stages * wfused_stage_floats;

  // This thread's tile (the same in the patch copy, the transform and the
  // output: all index tiles by tid % 32) and its patch rows.
  const int t_local = tid % wfused_tiles;
  const int c_local = (tid % wfused_pairs) / wfused_tiles;
  const int row0 = (tid / wfused_pairs) * wfused_patch_rows_per_thread;
  const int t = blockIdx.x * wfused_tiles + t_local;
  const bool tile_valid = t < wa.tiles;
  int n = 0, th = 0, tw = 0;
  if (tile_valid) {
    int rest;
    wa.div_tiles_w.divmod(t, rest, tw);
    wa.div_tiles_h.divmod(rest, n, th);
  }
  // Element (row0 + i, j) of the patch of channel c: x[offset + c * H * W + i * W + j],
  // inside the image where bit i * 4 + j of `inside` is set.
  const int ih0 = th * winograd_tile - a.pad_h + row0, iw0 = tw * winograd_tile - a.pad_w;
  const int offset = n * a.c * a.hw + ih0 * a.w + iw0;
  unsigned inside = 0;
#pragma unroll
  for (int i = 0; i < wfused_patch_rows_per_thread; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const bool in = tile_valid && static_cast<unsigned>(ih0 + i) < static_cast<unsigned>(a.h) &&
                      static_cast<unsigned>(iw0 + j) < static_cast<unsigned>(a.w);
      inside |= (in ? 1u : 0u) << (i * 4 + j);
    }
  }

  conv2d_col_tile_copier<wfused_filters, wfused_chunk, wfused_warp> u_copier;  // warp b: U[b], C rows of k_ld
  u_copier.init(wa.u + static_cast<std::size_t>(b) * a.c * wa.k_ld, wa.k_ld, k0, a.k, lane);

  // Issues the copies of channel chunk `chunk` into pipeline stage `stage`.
  const auto copy_chunk = [&](int chunk, int stage) {
    float* const st = wfused_smem + stage * wfused_stage_floats;
    const int c0 = chunk * wfused_chunk;
    u_copier.copy(c0, a.c, st + b * wfused_chunk * wfused_u_pitch);
    const int c = c0 + c_local;
    const bool channel_valid = c < a.c;
    float* const ds = st + wfused_u_floats + (c_local * wfused_patch + row0 * 4) * wfused_tiles + t_local;
#pragma unroll
    for (int i = 0; i < wfused_patch_rows_per_thread; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const bool in = channel_valid && ((inside >> (i * 4 + j)) & 1u) != 0;
        const float* src = in ? a.x + (offset + c * a.hw + i * a.w + j) : a.x;
        cp_async_4(ds + (i * 4 + j) * wfused_tiles, src, in ? 4 : 0);
      }
    }
  };

  const int lt = lane % wfused_lanes_t, lk = lane / wfused_lanes_t;
  float acc[8][8] = {};  // [tile tile_of(i)][filter filter_of(j)], see the stores below
  const int chunks = (a.c + wfused_chunk - 1) / wfused_chunk;

#pragma unroll
  for (int s = 0; s < wfused_stages - 1; ++s) {
    if (s < chunks) copy_chunk(s, s);
    cp_async_commit();
  }
  int read = 0, write = wfused_stages - 1;
  for (int chunk = 0; chunk < chunks; ++chunk) {
    // Committed groups: stages - 1 + chunk; this chunk's is done when at most
    // stages - 2 remain. The barrier publishes every thread's copies and says
    // that every warp is done with the previous chunk (its stage and Vs are free).
    cp_async_wait<wfused_stages - 2>();
    __syncthreads();
    if (chunk + wfused_stages - 1 < chunks) copy_chunk(chunk + wfused_stages - 1, write);
    cp_async_commit();
    write = write + 1 == wfused_stages ? 0 : write + 1;
    const float* const st = wfused_smem + read * wfused_stage_floats;
    read = read + 1 == wfused_stages ? 0 : read + 1;

    if (tid < wfused_pairs) {  // V[b][c][t] = (B^T d B)[b] of this thread's (channel, tile)
      const float* ds = st + wfused_u_floats + c_local * wfused_patch * wfused_tiles + t_local;
      float d[4][4], v[winograd_positions];
#pragma unroll
      for (int e = 0; e < wfused_patch; ++e) d[e / 4][e % 4] = ds[e * wfused_tiles];
      winograd_input_transform(d, v);
#pragma unroll
      for (int p = 0; p < winograd_positions; ++p) {
        vs[(p * wfused_chunk + c_local) * wfused_v_pitch + t_local] = v[p];
      }
    }
    __syncthreads();

    const float* const us_b = st + b * wfused_chunk * wfused_u_pitch;
    const float* const vs_b = vs + b * wfused_chunk * wfused_v_pitch;
#pragma unroll
    for (int cc = 0; cc < wfused_chunk; ++cc) {
      const float4 v0 = *reinterpret_cast<const float4*>(vs_b + cc * wfused_v_pitch + lt * 4);
      const float4 v1 = *reinterpret_cast<const float4*>(vs_b + cc * wfused_v_pitch + wfused_tiles / 2 + lt * 4);
      const float4 u0 = *reinterpret_cast<const float4*>(us_b + cc * wfused_u_pitch + lk * 4);
      const float4 u1 = *reinterpret_cast<const float4*>(us_b + cc * wfused_u_pitch + wfused_filters / 2 + lk * 4);
      const float vv[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
      const float uu[8] = {u0.x, u0.y, u0.z, u0.w, u1.x, u1.y, u1.z, u1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(vv[i], uu[j], acc[i][j]);
      }
    }
  }
  cp_async_wait<0>();  // no copy (all empty by now) outlives the pipeline's buffers
  __syncthreads();     // every warp is done reading them: Ms reuses them

  // Ms[b][k][t] = acc: tile (i / 4) * 16 + lt * 4 + i % 4, filter (j / 4) * 32 + lk * 4 + j % 4.
  float* const ms = wfused_smem;
#pragma unroll
  for (int gi = 0; gi < 2; ++gi) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int kl = (j / 4) * (wfused_filters / 2) + lk * 4 + j % 4;
      *reinterpret_cast<float4*>(ms + (b * wfused_filters + kl) * wfused_m_pitch + gi * (wfused_tiles / 2) + lt * 4) =
          make_float4(acc[gi * 4 + 0][j], acc[gi * 4 + 1][j], acc[gi * 4 + 2][j], acc[gi * 4 + 3][j]);
    }
  }
  __syncthreads();

  // Output transform: thread tid takes tile t_local of filters tid / 32 + 16 r.
  if (!tile_valid) return;  // no barrier follows
#pragma unroll 1
  for (int kl = tid / wfused_tiles; kl < wfused_filters; kl += wfused_threads / wfused_tiles) {
    const int k = k0 + kl;
    if (k >= a.k) break;  // kl only grows
    float m[winograd_positions];
#pragma unroll
    for (int p = 0; p < winograd_positions; ++p) m[p] = ms[(p * wfused_filters + kl) * wfused_m_pitch + t_local];
    winograd_store_tile(a, m, n, k, th, tw, epilogue);
  }
}

}  // namespace kf::detail
