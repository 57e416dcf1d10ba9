// SPDX-License-Identifier: Apache-2.0
// Gradient step 6 -- the filter gradient (wgrad) of an exact-fp32 NCHW 3x3
// stride-1 layer by Winograd F(M x M, 3 x 3), M = 2 (the forward's transforms
// transposed) or 4 (36 positions; winograd_transforms.hpp):
//
//   dw[k][c] = G^T [ sum over tiles t of (A dy_t A^T) (.) (B^T x_t B) ] G,
//
// t running over the M x M blocks of outputs of every image, x_t the
// (M + 2) x (M + 2) input tile of block t, dy_t the block's output gradients
// (0 past P x Q); wgrad_simt_plan.hpp's conv2d_wgrad_winograd_m picks M. Host
// side: the plan (wgrad_simt_plan.hpp) and the launch (src/conv2d/backward_filter_fp32.cu).
//
// What changes from step 5 (the direct implicit GEMM), and why it should be
// faster where the channels are many: per (k, c) pair and block, (M + 2)^2
// products of transformed values instead of 9 M^2 direct ones (2.25x fewer at
// M = 2, 4x at M = 4), at the price of three passes' traffic:
//  1. x's transform V[b][c][t] (conv2d_wgrad_winograd_input);
//  2. dy's transform U[b][k][t] = (A dy_t A^T)[b] (conv2d_wgrad_winograd_dy,
//     through the ReLU mask where the forward fused one);
//  3. the products M[b] (K x C) = U[b] V[b]^T, reduced over t: step 5's tile
//     core (buffer_product: 64 x 128 tiles, 16 tiles t a step) on a 3-stage
//     cp.async ring (U and V need no work on the way to shared memory), its operands
//     plain t-contiguous rows, grid z = the position and the slice of t
//     (plan_conv2d_wgrad_winograd), each slice's K x C sums of every position
//     to a slab;
//  4. the slabs summed in order and dw = G^T M G (conv2d_wgrad_winograd_output,
//     64 (k, c) pairs a block).
// Accuracy: at M = 2 the transforms only add, subtract and halve (exactly), at
// M = 4 they also scale by up to 8 and by 1/6, 1/12, 1/24 (rounded), so each
// U, V and dw entry carries a few roundings beside the t-long fp32 sums (on
// random data F(2x2) is as accurate as the direct sum, F(4x4) about 3x worse:
// benchmarks/tuning/winograd_dw/accuracy.cpp);
// the error is bounded by the Winograd error scale of the transposed
// transforms, E = |G^T| (sum over t of (|A| |dy_t| |A^T|) (.) (|B^T| |x_t| |B|)) |G|.
// H200 (2026-12-05, dw through torch, paired, M = 4): 0.94 of cuDNN at N32 C128
// 28x28 (step 5: 0.49), 0.78 at N32 C256 14x14 (step 2: 0.37); where the time
// goes and what is next: benchmarks/tuning/conv2d.md, "Gradient step 6" and
// "Gradient steps 6 and 7 on the H200".
#pragma once

#include "../../arch/cp_async.cuh"
#include "../06_winograd.cuh"
#include "../winograd_transforms.hpp"
#include "05_wgrad_simt_fp32.cuh"

namespace kf::detail {

/// V[b][c][t] = (B^T x_t B)[b] for every (n, c, th, tw), tw fastest; x_t the
/// tile at (M th - ph, M tw - pw) of image n, channel c, 0 outside the image.
template <int M>
KF_KERNEL void __launch_bounds__(winograd_transform_block) conv2d_wgrad_winograd_input(conv2d_winograd_args wa) {
  using block = winograd_dw_transforms<M>;
  const conv2d_args<float>& a = wa.a;
  const int total = a.n * a.c * wa.tiles_h * wa.tiles_w;  // < tiles * C < 2^31: checked by the launcher
  const std::size_t plane = static_cast<std::size_t>(a.c) * wa.tiles_ld;
  for (int idx = blockIdx.x * winograd_transform_block + threadIdx.x; idx < total;
       idx += gridDim.x * winograd_transform_block) {
    const winograd_tile_item item = winograd_tile_item_of(wa, wa.div_c, idx);
    const int n = item.n, c = item.ch, th = item.th, tw = item.tw, t = item.t;
    const int ih0 = th * M - a.pad_h, iw0 = tw * M - a.pad_w;
    const float* image = a.x + (static_cast<std::size_t>(n) * a.c + c) * a.hw;
    float d[block::n][block::n];
#pragma unroll
    for (int i = 0; i < block::n; ++i) {
#pragma unroll
      for (int j = 0; j < block::n; ++j) {
        const int ih = ih0 + i, iw = iw0 + j;
        const bool inside = static_cast<unsigned>(ih) < static_cast<unsigned>(a.h) &&
                            static_cast<unsigned>(iw) < static_cast<unsigned>(a.w);
        d[i][j] = inside ? __ldg(image + ih * a.w + iw) : 0.0f;
      }
    }
    float v[block::positions];
    block::input(d, v);
    float* out = wa.v + static_cast<std::size_t>(c) * wa.tiles_ld + t;
#pragma unroll
    for (int b = 0; b < block::positions; ++b) out[b * plane] = v[b];
  }
}

/// U[b][k][t] = (A dy_t A^T)[b] for every (n, k, th, tw), tw fastest; dy_t the
/// M x M block at (M th, M tw) of image n, channel k (0 past P x Q), read through the mask.
template <int M>
KF_KERNEL void __launch_bounds__(winograd_transform_block)
    conv2d_wgrad_winograd_dy(conv2d_winograd_args wa, conv2d_dy_reader<float> dy, float* __restrict__ u_dy) {
  using block = winograd_dw_transforms<M>;
  const conv2d_args<float>& a = wa.a;
  const int total = a.n * a.k * wa.tiles_h * wa.tiles_w;  // < tiles * K < 2^31: checked by the launcher
  const std::size_t plane = static_cast<std::size_t>(a.k) * wa.tiles_ld;
  for (int idx = blockIdx.x * winograd_transform_block + threadIdx.x; idx < total;
       idx += gridDim.x * winograd_transform_block) {
    const winograd_tile_item item = winograd_tile_item_of(wa, wa.div_k, idx);
    const int n = item.n, k = item.ch, th = item.th, tw = item.tw, t = item.t;
    const long long channel = (static_cast<long long>(n) * a.k + k) * a.pq;
    float g[M][M];
#pragma unroll
    for (int i = 0; i < M; ++i) {
#pragma unroll
      for (int j = 0; j < M; ++j) {
        const int p = th * M + i, q = tw * M + j;
        g[i][j] = p < a.p && q < a.q ? dy(channel + static_cast<long long>(p) * a.q + q) : 0.0f;
      }
    }
    float u[block::positions];
    block::dy(g, u);
    float* out = u_dy + static_cast<std::size_t>(k) * wa.tiles_ld + t;
#pragma unroll
    for (int b = 0; b < block::positions; ++b) out[b * plane] = u[b];
  }
}

/// Stages of step 6's products ring: 16 blocks t a stage, 12.8 KB each (38.4
/// KB of static shared memory; on the H200 three CTAs an SM, by its 79 registers).
inline constexpr int wgrad_winograd_stages = 3;

struct wgrad_winograd_ring {
  float u[wgrad_winograd_stages][wgrad_simt::bp][wgrad_simt::k_stride];  // [stage][block t][output channel]
  float v[wgrad_winograd_stages][wgrad_simt::bp][wgrad_simt::t_stride];  // [stage][block t][input channel]
};

/// One CTA: position b's K x C tile (blockIdx.y: 64 output channels, blockIdx.x:
/// 128 input channels) over tiles [slice slice_tiles, + slice_tiles), b =
/// blockIdx.z % Positions, slice = blockIdx.z / Positions; to slabs + (slice
/// Positions + b) K C. Step 5's products (buffer_product) on a ring of
/// wgrad_winograd_stages buffers that cp.async fills straight from U and V
/// (plain rows: no mask or im2col to apply on the way, unlike step 5), so the
/// loads of two steps ahead are in flight during a step's products and no
/// registers stage them; one barrier a step.
template <int Positions>
KF_KERNEL void __launch_bounds__(conv2d_wgrad_simt_threads, conv2d_wgrad_simt_blocks_per_sm)
    conv2d_wgrad_winograd_gemm(conv2d_winograd_args wa, const float* __restrict__ u_dy, float* __restrict__ slabs,
                               int slice_tiles) {
  constexpr int positions = Positions, stages = wgrad_winograd_stages;
  using namespace wgrad_simt;
  __shared__ __align__(16) wgrad_winograd_ring ring;
  const int tid = static_cast<int>(threadIdx.x);
  const int b = static_cast<int>(blockIdx.z) % positions;
  const int slice = static_cast<int>(blockIdx.z) / positions;
  const int k0 = static_cast<int>(blockIdx.y) * bk, c0 = static_cast<int>(blockIdx.x) * bt;
  const int begin = slice * slice_tiles;
  const int end = static_cast<int>(min(static_cast<long long>(wa.tiles), static_cast<long long>(begin) + slice_tiles));
  const int steps = end > begin ? (end - begin + bp - 1) / bp : 0;
  const int pixel = tid % bp, row = tid / bp;
  const int ld = wa.tiles_ld;
  const int k_left = wa.a.k - (k0 + row), c_left = wa.a.c - (c0 + row);                     // rows left from `row` on
  const float* const u_rows = u_dy + (static_cast<long long>(b) * wa.a.k + k0 + row) * ld;  // U[b], rows 16 apart
  const float* const v_rows = wa.v + (static_cast<long long>(b) * wa.a.c + c0 + row) * ld;  // V[b]
  // Step `step`'s copies into its stage (this thread: block t = begin + 16 step +
  // pixel of rows row + 16 u; zero-filled past end or the rows), one commit group
  // a step, empty past the last step so that the waits count the same.
  auto issue = [&](int step) {
    if (step < steps) {
      const int stage = step % stages, step_begin = begin + step * bp;
      const bool live = pixel < end - step_begin;  // t < end
      const int t = live ? step_begin + pixel : 0;
#pragma unroll
      for (int u = 0; u < k_loads; ++u) {
        const bool in = live && 16 * u < k_left;
        cp_async_4(&ring.u[stage][pixel][row + 16 * u], in ? u_rows + static_cast<long long>(16 * u) * ld + t : u_dy,
                   in ? 4 : 0);
      }
#pragma unroll
      for (int u = 0; u < t_loads; ++u) {
        const bool in = live && 16 * u < c_left;
        cp_async_4(&ring.v[stage][pixel][row + 16 * u], in ? v_rows + static_cast<long long>(16 * u) * ld + t : u_dy,
                   in ? 4 : 0);
      }
    }
    cp_async_commit();
  };

  float acc[4][8] = {};
#pragma unroll
  for (int step = 0; step < stages - 1; ++step) issue(step);
  for (int step = 0; step < steps; ++step) {
    cp_async_wait<stages - 2>();  // this step's group has landed (for this thread)
    __syncthreads();              // ... for every thread; and the stage refilled next was read by all
    issue(step + stages - 1);
    buffer_product(ring.u[step % stages], ring.v[step % stages], acc);
  }
  cp_async_wait<0>();
  const long long plane = static_cast<long long>(wa.a.k) * wa.a.c;
  store_tile(acc, slabs + (static_cast<long long>(slice) * positions + b) * plane, wa.a.k, wa.a.c, wa.a.c, k0, c0);
}

/// (k, c) pairs a block of the output pass takes at a time.
inline constexpr int wgrad_winograd_output_pairs = 64;

/// dw[k][c] = G^T M G, M[b] the sum of the `split` slabs' position-b values in
/// slab order; dw is K x C x 3 x 3. A block takes 64 pairs (k, c) at a time, c
/// fastest: its 256 threads first sum the 64 x (M + 2)^2 slab values (each
/// thread (M + 2)^2 / 4 of them, a slice's loads in flight together) into shared
/// memory, then 64 threads apply G^T . G and the block writes the 64 x 9 values
/// of dw in one coalesced run. One thread per pair doing all of it had only
/// K C threads (16,384 at C128: 4 warps an SM) waiting on loads.
template <int M>
KF_KERNEL void __launch_bounds__(winograd_transform_block)
    conv2d_wgrad_winograd_output(int k_channels, int c_channels, const float* __restrict__ slabs, int split,
                                 float* __restrict__ dw) {
  using block = winograd_dw_transforms<M>;
  constexpr int positions = block::positions, pairs = wgrad_winograd_output_pairs;
  constexpr int threads = winograd_transform_block, sums = positions * pairs / threads;
  static_assert(positions * pairs % threads == 0 && threads % pairs == 0, "whole positions a thread");
  __shared__ float m_s[positions][pairs];  // the summed slabs, [position][pair]
  __shared__ float w_s[pairs * 9];         // dw of the block's pairs, in dw's order
  const int tid = static_cast<int>(threadIdx.x);
  const int total = k_channels * c_channels;  // < 2^31: checked by the launcher
  const long long plane = static_cast<long long>(total);
  const int pair = tid % pairs, b0 = tid / pairs;  // this thread's positions: b0 + (threads / pairs) j
  for (long long first = static_cast<long long>(blockIdx.x) * pairs; first < total;
       first += static_cast<long long>(gridDim.x) * pairs) {
    const long long idx = first + pair;
    float m[sums] = {};
    if (idx < total) {
      for (int slice = 0; slice < split; ++slice) {  // slab order: each sum as the serial one
        const float* slab = slabs + static_cast<long long>(slice) * positions * plane + idx;
#pragma unroll
        for (int j = 0; j < sums; ++j) m[j] += slab[(b0 + threads / pairs * j) * plane];
      }
    }
#pragma unroll
    for (int j = 0; j < sums; ++j) m_s[b0 + threads / pairs * j][pair] = m[j];
    __syncthreads();
    if (tid < pairs) {
      float mb[positions];
#pragma unroll
      for (int b = 0; b < positions; ++b) mb[b] = m_s[b][tid];
      float g[3][3];
      block::output(mb, g);
#pragma unroll
      for (int r = 0; r < 3; ++r) {
#pragma unroll
        for (int s = 0; s < 3; ++s) w_s[tid * 9 + 3 * r + s] = g[r][s];
      }
    }
    __syncthreads();
    const int count = static_cast<int>(min(static_cast<long long>(pairs), total - first)) * 9;
    float* const out = dw + static_cast<long long>(first) * 9;
    for (int e = tid; e < count; e += threads) out[e] = w_s[e];
    __syncthreads();  // m_s and w_s are refilled by the next pairs
  }
}

}  // namespace kf::detail
