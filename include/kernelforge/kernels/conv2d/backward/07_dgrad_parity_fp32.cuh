// SPDX-License-Identifier: Apache-2.0
// Gradient step 7 -- dx of a strided fp32 NCHW layer with few input channels
// (the RGB stem: C = 3, 7x7, stride 2) by its parity classes, on the CUDA cores.
//
// What it improves over step 2's route for these layers (dcol = dy w, an
// N P Q x C R S matrix written and read back, then a col2im that tests every
// tap of every element): the dx pixels of one parity class (h, w) = (a + sh i,
// b + sw j) see only the taps r = r0 + u sh, s = s0 + v sw (r0 = (a + ph) mod
// sh), and reach dy at (i + e_a - u, j + e_b - v) with e_a = (a + ph - r0) / sh.
// So each class is a stride-1 correlation of dy (K input channels) with a
// sub-filter of at most 4 x 4 taps (R, S <= 4 sh, 4 sw), producing C outputs:
//
//   dx[n][c][a + sh i][b + sw j] = sum over k, u, v of
//       w[k][c][r0 + u sh][s0 + v sw] * dy[n][k][i + e_a - u][j + e_b - v],
//
// the forward's multiply-adds exactly once each, and nothing written but dx.
// A CTA takes one image, one class, one group of up to 4 channels and a 16 x 64
// tile of the class's grid; K goes through shared memory 4 channels at a time
// on a ring of two slots filled by cp.async, so the next chunk's copies fly
// while this one's products run (the dy tile with its 3-row and 3-column halo,
// the chunk's sub-filter values laid out [k][u][v][c] for one 16-byte load a
// tap); a thread holds 8 consecutive columns x the group's channels and
// slides each sub-filter row over 11 dy values. dy is read through the
// forward's ReLU mask where there is one (through registers: the ring's copies
// carry no mask). Sums run in k, then u, then v order in fp32 (exact math: the
// terms of each output, as the direct sum). Host side:
// src/conv2d/backward_data.cu (dgrad_by_parity), the rule in dgrad_plan.hpp.
// H200 (2026-12-05, through torch, paired): the stem's dx 1.03-1.05 of cuDNN;
// how it got there (the ring, the classes heaviest first):
// benchmarks/tuning/conv2d.md, "Gradient step 7's ring".
#pragma once

#include <type_traits>

#include "../../arch/cp_async.cuh"
#include "../../common/kernel.cuh"
#include "../args.cuh"
#include "01_naive.cuh"
#include "dgrad_plan.hpp"  // dgrad_parity_of

namespace kf::detail {

namespace dgrad_parity {

inline constexpr int taps = dgrad_parity_max_taps;        // sub-filter taps a dimension, at most
inline constexpr int tile_i = 16;                         // class rows a CTA
inline constexpr int cols = 8;                            // class columns a thread
inline constexpr int tile_j = 8 * cols;                   // class columns a CTA (8 threads a row)
inline constexpr int threads = tile_i * (tile_j / cols);  // 128
inline constexpr int chunk = 4;                           // dy channels a pass through shared memory
inline constexpr int rows = tile_i + taps - 1;            // 19 dy rows with the halo
inline constexpr int row_stride = tile_j + taps;          // 68: 67 columns, rows 16-byte aligned

struct smem {  // a ring of two chunks: 44,416 bytes
  float dy[2][chunk][rows][row_stride];
  float w[2][chunk][taps][taps][4];  // [k][u][v][c], 0 past the group's channels or the taps
};

}  // namespace dgrad_parity

/// Grid: x = channel groups of Group (channels c_first + Group g ...) x the
/// class grid's `tiles` (ceil(rows / 16) x ceil(columns / 64), at most), y =
/// images, z = the stride_h x stride_w classes by rank, heaviest first
/// (dgrad_parity_class_of_rank), since CTAs start in the order of z, y, x.
/// Group channels each: 1 to 4. 5 CTAs an SM: 96 registers (a few spilled
/// around the copies, none in the products) and 5 rings of 44 KB in the H200's
/// 228 KB of shared memory.
template <int Group>
KF_KERNEL void __launch_bounds__(dgrad_parity::threads, 5)
    conv2d_dgrad_parity_fp32(conv2d_args<float> a, conv2d_dy_reader<float> dy, float* __restrict__ dx, int c_first,
                             int tiles, int tiles_j) {
  using namespace dgrad_parity;
  static_assert(Group >= 1 && Group <= static_cast<int>(dgrad_parity_group), "1 to 4 channels a group");
  __shared__ __align__(16) smem s;
  const int tid = static_cast<int>(threadIdx.x);
  const int cls = dgrad_parity_class_of_rank(static_cast<int>(blockIdx.z), a.stride_h, a.stride_w, a.pad_h, a.pad_w,
                                             a.r, a.s, a.h, a.w);
  const int tile = static_cast<int>(blockIdx.x) % tiles, group = static_cast<int>(blockIdx.x) / tiles;
  const int ca = cls / a.stride_w, cb = cls % a.stride_w;
  const dgrad_parity_dim dh = dgrad_parity_of(ca, a.stride_h, a.pad_h, a.r, a.h);
  const dgrad_parity_dim dw = dgrad_parity_of(cb, a.stride_w, a.pad_w, a.s, a.w);
  const int i0 = tile / tiles_j * tile_i, j0 = tile % tiles_j * tile_j;
  const int n = static_cast<int>(blockIdx.y), c0 = c_first + Group * group;
  if (i0 >= dh.size || j0 >= dw.size) return;  // the whole CTA: no barrier reached
  const int ty = tid / (tile_j / cols), tx = tid % (tile_j / cols);
  // dy's tile origin: shared row sr, column sc hold dy[p0 + sr][q0 + sc].
  const int p0 = i0 + dh.offset - (taps - 1), q0 = j0 + dw.offset - (taps - 1);
  const long long image_dy = static_cast<long long>(n) * a.k * a.pq;

  // The dy tile's positions this thread fills, the same for every channel: their
  // offsets in one channel plane of dy, -1 outside dy or in the padding column.
  constexpr int fill = rows * row_stride, fills = (fill + threads - 1) / threads;
  int offset[fills];
#pragma unroll
  for (int e = 0; e < fills; ++e) {
    const int idx = tid + e * threads, sr = idx / row_stride, sc = idx % row_stride;
    const int p = p0 + sr, q = q0 + sc;
    const bool inside = idx < fill && sc < tile_j + taps - 1 && static_cast<unsigned>(p) < static_cast<unsigned>(a.p) &&
                        static_cast<unsigned>(q) < static_cast<unsigned>(a.q);
    offset[e] = inside ? p * a.q + q : -1;
  }

  // One chunk of K into ring slot `slot`: the dy tile (0 outside dy or past K)
  // and the sub-filter values (0 past the group's channels, the taps or K). Every
  // copy reads a valid address (channel and offset clamped) and zero-fills what
  // lies outside, so no branch per value. Without the ReLU mask the copies are
  // cp.async: the next chunk lands while this one's products run. With the mask
  // a value needs dy and y, so it goes through registers (the mask's test chosen
  // once a chunk, not per value: Masked is a compile-time tag).
  auto load_chunk = [&](auto masked, int slot, int k0) {
#pragma unroll 1
    for (int kk = 0; kk < chunk; ++kk) {
      const bool k_inside = k0 + kk < a.k;
      const long long plane = image_dy + static_cast<long long>(k_inside ? k0 + kk : a.k - 1) * a.pq;
      float* const tile = &s.dy[slot][kk][0][0];
#pragma unroll
      for (int e = 0; e < fills; ++e) {
        const int idx = tid + e * threads;
        if (fill % threads != 0 && idx >= fill) continue;
        const long long at = plane + (offset[e] >= 0 ? offset[e] : 0);
        const bool live = k_inside && offset[e] >= 0;
        if constexpr (decltype(masked)::value) {
          const float v = dy(at);
          tile[idx] = live ? v : 0.0f;
        } else {
          cp_async_4(tile + idx, dy.dy + at, live ? 4 : 0);
        }
      }
    }
    for (int e = tid; e < chunk * taps * taps * 4; e += threads) {
      const int kk = e / (taps * taps * 4), u = e / (taps * 4) % taps, v = e / 4 % taps, c = e % 4;
      const int k = k0 + kk, r = dh.first + u * a.stride_h, sx = dw.first + v * a.stride_w;
      const bool live = k < a.k && c < Group && u < dh.taps && v < dw.taps;
      const long long at = live ? ((static_cast<long long>(k) * a.c + c0 + c) * a.r + r) * a.s + sx : 0;
      cp_async_4(&s.w[slot][kk][u][v][c], a.wt + at, live ? 4 : 0);
    }
    cp_async_commit();
  };

  float acc[Group][cols] = {};
  // One chunk's products from ring slot `slot`, after filling the other slot
  // with the next chunk and waiting for this one's copies. The other slot was
  // last read in the previous chunk, behind its closing barrier. One loop of
  // products for both loads (a uniform branch a chunk), so the kernel holds
  // it once.
  const bool masked = dy.relu_y != nullptr;
  auto load = [&](int slot, int k0) {
    if (masked) {
      load_chunk(std::true_type{}, slot, k0);
    } else {
      load_chunk(std::false_type{}, slot, k0);
    }
  };
  for (int k0 = 0, slot = 0; k0 < a.k; k0 += chunk, slot ^= 1) {
    if (k0 == 0) load(0, 0);  // inside the loop: K = 0 loads nothing (the channel clamp needs K > 0)
    if (k0 + chunk < a.k) {
      load(slot ^ 1, k0 + chunk);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < chunk; ++kk) {
#pragma unroll
      for (int u = 0; u < taps; ++u) {
        if (u >= dh.taps) continue;  // uniform: the class's taps
        // dy row p = i + e_a - u: shared row ty + taps - 1 - u; the thread's window
        // of columns tx cols + [0, cols + taps - 1).
        float row[cols + taps];
        const float* src = &s.dy[slot][kk][ty + taps - 1 - u][tx * cols];
#pragma unroll
        for (int e = 0; e < (cols + taps) / 4; ++e) {
          const float4 v4 = *reinterpret_cast<const float4*>(src + 4 * e);
          row[4 * e] = v4.x;
          row[4 * e + 1] = v4.y;
          row[4 * e + 2] = v4.z;
          row[4 * e + 3] = v4.w;
        }
#pragma unroll
        for (int v = 0; v < taps; ++v) {
          if (v >= dw.taps) continue;
          const float4 wv = *reinterpret_cast<const float4*>(&s.w[slot][kk][u][v][0]);
          const float wc[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
          for (int px = 0; px < cols; ++px) {
            // dy column q = j + e_b - v: shared column tx cols + px + taps - 1 - v.
            const float d = row[px + taps - 1 - v];
#pragma unroll
            for (int c = 0; c < Group; ++c) acc[c][px] = fmaf(wc[c], d, acc[c][px]);
          }
        }
      }
    }
    __syncthreads();
  }

  const int i = i0 + ty;
  if (i >= dh.size) return;
  const int h = ca + a.stride_h * i;
#pragma unroll
  for (int c = 0; c < Group; ++c) {
    float* const out = dx + ((static_cast<long long>(n) * a.c + c0 + c) * a.h + h) * a.w;
#pragma unroll
    for (int px = 0; px < cols; ++px) {
      const int j = j0 + tx * cols + px;
      if (j < dw.size) out[cb + a.stride_w * j] = acc[c][px];
    }
  }
}

}  // namespace kf::detail
