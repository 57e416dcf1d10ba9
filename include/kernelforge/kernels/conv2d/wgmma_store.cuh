// SPDX-License-Identifier: Apache-2.0
// The store of conv2d step 7's tiles (07_implicit_gemm_wgmma.cuh; also step 9's):
// a consumer warpgroup's sums + bias[k], the functor (fp32), the one rounding
// to T, and the masked store into y, NCHW or NHWC.
//
// Where the bias is read. y may not overlap the bias (validate.cpp), but the
// compiler cannot know, so a bias read placed beside its store waits for the
// store before it: two reads a pair of stores, one after the other, and a
// branch on the bias pointer per value. store_tile reads the bias of 4 column
// groups (8 values a thread) ahead of their stores, the test of the pointer
// hoisted. Same run on the H200 (bench_conv, NHWC 3x3 layers, ours with the
// read ahead / ours reading in place): plain calls 1.03-1.12 (fp16, bf16) and
// 1.02-1.04 (TF32); with bias + ReLU, TF32 1.04-1.07 and 16-bit 64-channel
// tiles 1.03-1.04, but 16-bit 128-channel tiles with the functor 0.91-0.94,
// unexplained -- so those keep the read in place (bias_read_ahead).
// benchmarks/tuning/conv2d.md#conv2d_wgmma_bias_read_ahead.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../common/numeric.cuh"
#include "kernelforge/conv.hpp"
#include "kernelforge/epilogue.cuh"
#include "wgmma_config.cuh"

namespace kf::detail::conv2d_wgmma {

/// A tile's first output channel and the origin of its pixel box.
struct tile_origin {
  int k0, n0, p0, q0;
};

/// Whether store_tile reads the bias ahead of its stores (see the top of this
/// file): everywhere but 16-bit 128-channel tiles with a functor, as measured.
template <class T, int Acc, class Epilogue>
inline constexpr bool bias_read_ahead = !(sizeof(T) == 2 && Acc == 64 && !std::is_same_v<Epilogue, epilogue::identity>);

/// store_tile with each bias value read beside its store (what store_tile does
/// where bias_read_ahead is false).
template <class T, conv2d_layout Layout, int Acc, class Epilogue>
__device__ __forceinline__ void store_tile_reading_bias_in_place(const float (&d)[Acc], const params<T>& prm,
                                                                 const tile_origin& w, int block, int warp_in_warpgroup,
                                                                 int lane, const Epilogue& ep) {
  // Accumulator i of a thread: row 16 * warp + lane / 4 + 8 * ((i % 4) / 2),
  // column 8 * (i / 4) + 2 * (lane % 4) + i % 2. Row -> pixel of the box.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = block * wgmma_m + warp_in_warpgroup * 16 + lane / 4 + 8 * h;
    if (row >= prm.box_pixels) continue;  // past the box: stale shared memory, never stored
    const int bq = row % prm.wt;
    const int bp = (row / prm.wt) % prm.ht;
    const int bn = row / (prm.wt * prm.ht);
    const int n = w.n0 + bn, p = w.p0 + bp, q = w.q0 + bq;
    if (n >= prm.n || p >= prm.p || q >= prm.q) continue;  // the box overhangs the output
    const int pixel = p * prm.q + q;
    const long long gemm_row = static_cast<long long>(n) * prm.pq + pixel;
    // Accumulator i at output channel k: + bias, the functor (fp32), the one rounding to T.
    const auto out = [&](int i, int k) {
      float v = d[i];
      if (prm.bias != nullptr) v += to_compute(prm.bias[k]);
      return static_cast<float>(ep(v, gemm_row, k));
    };
    if constexpr (Layout == conv2d_layout::nchw) {
      T* const y_pixel = prm.y + static_cast<long long>(n) * prm.k * prm.pq + pixel;
#pragma unroll
      for (int c = 0; c < Acc / 4; ++c) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int k = w.k0 + 8 * c + 2 * (lane % 4) + j;
          if (k < prm.k) y_pixel[static_cast<long long>(k) * prm.pq] = from_compute<T>(out(4 * c + 2 * h + j, k));
        }
      }
    } else {  // NPQK: a thread's two neighbouring channels are neighbours in y
      T* const y_row = prm.y + gemm_row * prm.k;
#pragma unroll
      for (int c = 0; c < Acc / 4; ++c) {
        const int k = w.k0 + 8 * c + 2 * (lane % 4);
        const int i = 4 * c + 2 * h;
        if (prm.pair_stores && k < prm.k) {  // K even: k + 1 < K too
          if constexpr (sizeof(T) == 4) {
            *reinterpret_cast<float2*>(y_row + k) = make_float2(out(i, k), out(i + 1, k + 1));
          } else {
            *reinterpret_cast<std::uint32_t*>(y_row + k) = from_compute_pair<T>(out(i, k), out(i + 1, k + 1));
          }
        } else {
          if (k < prm.k) y_row[k] = from_compute<T>(out(i, k));
          if (k + 1 < prm.k) y_row[k + 1] = from_compute<T>(out(i + 1, k + 1));
        }
      }
    }
  }
}

/// store_tile reading the bias ahead of its stores (where bias_read_ahead is true).
template <class T, conv2d_layout Layout, int Acc, class Epilogue>
__device__ __forceinline__ void store_tile_reading_bias_ahead(const float (&d)[Acc], const params<T>& prm,
                                                              const tile_origin& w, int block, int warp_in_warpgroup,
                                                              int lane, const Epilogue& ep) {
  // Accumulator i of a thread: row 16 * warp + lane / 4 + 8 * ((i % 4) / 2),
  // column 8 * (i / 4) + 2 * (lane % 4) + i % 2. Row -> pixel of the box.
  bool stored[2];         // the row is in the box and in the output
  long long gemm_row[2];  // n P Q + p Q + q
  long long y_offset[2];  // where the row's channel 0 lies in y
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = block * wgmma_m + warp_in_warpgroup * 16 + lane / 4 + 8 * h;
    const int bq = row % prm.wt;
    const int bp = (row / prm.wt) % prm.ht;
    const int bn = row / (prm.wt * prm.ht);
    const int n = w.n0 + bn, p = w.p0 + bp, q = w.q0 + bq;
    // Past the box: stale shared memory; or the box overhangs the output. Never stored.
    stored[h] = row < prm.box_pixels && n < prm.n && p < prm.p && q < prm.q;
    const int pixel = p * prm.q + q;
    gemm_row[h] = static_cast<long long>(n) * prm.pq + pixel;
    y_offset[h] =
        Layout == conv2d_layout::nchw ? static_cast<long long>(n) * prm.k * prm.pq + pixel : gemm_row[h] * prm.k;
  }
  // The bias is read in chunks of 4 column groups (8 values a thread), each
  // chunk before its stores. Read inside the store loop, each read waited for
  // the store before it (y may not overlap the bias, validate.cpp, but the
  // compiler cannot know): 2 reads a pair of stores, one after the other. The
  // whole tile's bias at once (Acc / 2 registers) spilled 72-80 bytes beside
  // the ping-pong kernel's two tiles of sums, chunks of 8 groups 4-8 bytes.
  constexpr int groups = Acc / 4;  // 8 channels each
  constexpr int chunk = groups < 4 ? groups : 4;
  const bool has_bias = prm.bias != nullptr;
#pragma unroll
  for (int g0 = 0; g0 < groups; g0 += chunk) {
    float bias_of[chunk][2];
#pragma unroll
    for (int c = 0; c < chunk; ++c) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int k = w.k0 + 8 * (g0 + c) + 2 * (lane % 4) + j;
        bias_of[c][j] = has_bias && k < prm.k ? to_compute(prm.bias[k]) : 0.0f;
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!stored[h]) continue;
      // Accumulator 4 c + 2 h + j at output channel k: + bias, the functor (fp32), the one rounding to T.
      const auto out = [&](int c, int j, int k) {
        float v = d[4 * c + 2 * h + j];
        if (has_bias) v += bias_of[c - g0][j];
        return static_cast<float>(ep(v, gemm_row[h], k));
      };
      T* const y_at = prm.y + y_offset[h];
      if constexpr (Layout == conv2d_layout::nchw) {
#pragma unroll
        for (int c = g0; c < g0 + chunk; ++c) {
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int k = w.k0 + 8 * c + 2 * (lane % 4) + j;
            if (k < prm.k) y_at[static_cast<long long>(k) * prm.pq] = from_compute<T>(out(c, j, k));
          }
        }
      } else {  // NPQK: a thread's two neighbouring channels are neighbours in y
#pragma unroll
        for (int c = g0; c < g0 + chunk; ++c) {
          const int k = w.k0 + 8 * c + 2 * (lane % 4);
          if (prm.pair_stores && k < prm.k) {  // K even: k + 1 < K too
            if constexpr (sizeof(T) == 4) {
              *reinterpret_cast<float2*>(y_at + k) = make_float2(out(c, 0, k), out(c, 1, k + 1));
            } else {
              *reinterpret_cast<std::uint32_t*>(y_at + k) = from_compute_pair<T>(out(c, 0, k), out(c, 1, k + 1));
            }
          } else {
            if (k < prm.k) y_at[k] = from_compute<T>(out(c, 0, k));
            if (k + 1 < prm.k) y_at[k + 1] = from_compute<T>(out(c, 1, k + 1));
          }
        }
      }
    }
  }
}

/// One consumer warpgroup's 64 rows (row block `block` of the 128-row tile w)
/// of a tile's sums d: + bias[k], the functor (fp32), the one rounding to T,
/// and the masked store into y -- NCHW (NKPQ) or NHWC (NPQK). Rows past the
/// box or outside the output are not stored.
template <class T, conv2d_layout Layout, int Acc, class Epilogue>
__device__ __forceinline__ void store_tile(const float (&d)[Acc], const params<T>& prm, const tile_origin& w, int block,
                                           int warp_in_warpgroup, int lane, const Epilogue& ep) {
  if constexpr (bias_read_ahead<T, Acc, Epilogue>) {
    store_tile_reading_bias_ahead<T, Layout>(d, prm, w, block, warp_in_warpgroup, lane, ep);
  } else {
    store_tile_reading_bias_in_place<T, Layout>(d, prm, w, block, warp_in_warpgroup, lane, ep);
  }
}

}  // namespace kf::detail::conv2d_wgmma
