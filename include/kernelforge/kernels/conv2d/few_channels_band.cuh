// SPDX-License-Identifier: Apache-2.0
// One band of conv2d steps 10 and 11 (10_few_channels_mma.cuh,
// 11_few_channels_persistent.cuh), the parts both compute it with: the shape
// constants and the plan as the kernels read it, a pixel's C <= 4 channels
// padded to 4, the filter rows, the tap-offset table, the band's origin, its
// patch and each thread's fragment rows, the k-loop of A loads from the patch,
// ldmatrix from the filter and mma.sync.m16n8k16, and the store of channel
// pairs (32 bits) or single channels after the bias and the epilogue functor.
// Where the pixels come from is the caller's (step 10: global memory, pixel by
// pixel; step 11: its staged rows). Step 10's header says how the band, the
// patch and the fragments fit together.
#pragma once

#include <cstdint>

#include "../arch/mma_sm80.cuh"
#include "../arch/smem.cuh"
#include "../common/numeric.cuh"
#include "args.cuh"

namespace kf::detail::few_channels {

inline constexpr int channels = 4;  ///< C padded to 4 in shared memory: a pixel is 8 bytes
inline constexpr int pixel_bytes = 8;
inline constexpr int taps_per_step = 4;                         ///< mma.m16n8k16: k = 16 = 4 taps x 4 channels
inline constexpr int step_bytes = taps_per_step * pixel_bytes;  ///< one k-step of a filter row
inline constexpr int block_n = 64;                              ///< output channels per CTA
inline constexpr int frags_m = 2;                               ///< m16 fragments per warp: 32 output pixels
inline constexpr int frags_n = block_n / 8;
inline constexpr int warp_pixels = 16 * frags_m;
inline constexpr int max_threads = 256;  ///< conv2d_few_channels_max_pixels / warp_pixels warps
/// Two CTAs an SM: at most 128 registers a thread, and one CTA's loads overlap
/// the other's products.
inline constexpr int min_blocks_per_sm = 2;

/// The launch's plan (few_channels_plan.hpp's conv2d_few_channels_plan) as the kernels read it.
struct tile {
  int tile_p = 0, tile_q = 0, tiles_p = 0, tiles_q = 0;
  int patch_rows = 0, patch_cols = 0;
  int k_steps = 0;
  int filter_row_bytes = 0, table_offset = 0, patch_offset = 0;  ///< shared-memory layout
  bool y_pairs = false;  ///< y 4-byte aligned and K even: channel pairs stored as 32 bits
};

/// The C <= 4 16-bit channels of one pixel (or one filter tap), at(i) giving
/// channel i, padded with zeros to 4, as two 32-bit words (the order in memory).
template <class At>
__device__ __forceinline__ uint2 gather_pixel(const At& at, int c) {
  const unsigned e0 = at(0);
  const unsigned e1 = c > 1 ? at(1) : 0u;
  const unsigned e2 = c > 2 ? at(2) : 0u;
  const unsigned e3 = c > 3 ? at(3) : 0u;
  return make_uint2(e0 | (e1 << 16), e2 | (e3 << 16));
}

/// gather_pixel from global memory at `src` (read-only for the kernel's life).
__device__ __forceinline__ uint2 load_pixel(const unsigned short* __restrict__ src, int c) {
  return gather_pixel([src](int i) -> unsigned { return __ldg(src + i); }, c);
}

/// Byte offset of tap `tap` (r = tap / S, s = tap % S) in a patch row-major in
/// pixels, patch_cols a row; -1 past the filter's R*S taps.
__device__ __forceinline__ int tap_offset(int tap, int rs, int s, int dilation_h, int dilation_w, int patch_cols) {
  if (tap >= rs) return -1;
  const int r = tap / s;
  return ((r * dilation_h) * patch_cols + (tap - r * s) * dilation_w) * pixel_bytes;
}

/// One 32-bit A register: 2 channels of a tap of a pixel, or 0 for a padding tap.
__device__ __forceinline__ std::uint32_t a_word(const unsigned char* patch, int row_base, int offset) {
  return offset >= 0 ? *reinterpret_cast<const std::uint32_t*>(patch + row_base + offset) : 0u;
}

/// The tap table, written by threads tid, tid + threads, ...: entry (step, u)
/// holds the offsets of taps 4 step + u (A registers 0, 1) and 4 step + 2 + u
/// (registers 2, 3), u = lane % 4 / 2.
template <class T>
__device__ __forceinline__ void write_tap_table(int2* taps, const conv2d_args<T>& a, const tile& t, int tid,
                                                int threads) {
  for (int e = tid; e < 2 * t.k_steps; e += threads) {
    const int tap = (e >> 1) * taps_per_step + (e & 1);
    taps[e] = make_int2(tap_offset(tap, a.rs, a.s, a.dilation_h, a.dilation_w, t.patch_cols),
                        tap_offset(tap + 2, a.rs, a.s, a.dilation_h, a.dilation_w, t.patch_cols));
  }
}

/// The filter rows: row j (output channel k0 + j), 4 channels for each of the
/// k_steps * 4 taps, pixel(j, tap) giving a tap of the filter (gather_pixel);
/// zeros past K, past R*S and past C. Threads tid, tid + threads, ...; Unroll:
/// taps a thread has in flight.
template <int Unroll, class T, class Pixel>
__device__ __forceinline__ void write_filter(unsigned char* filter, const conv2d_args<T>& a, const tile& t, int k0,
                                             int tid, int threads, const Pixel& pixel) {
  const int step_taps = t.k_steps * taps_per_step;
#pragma unroll Unroll
  for (int e = tid; e < block_n * step_taps; e += threads) {
    const int j = e / step_taps;
    const int tap = e - j * step_taps;
    uint2 v = make_uint2(0u, 0u);
    if (k0 + j < a.k && tap < a.rs) v = pixel(j, tap);
    *reinterpret_cast<uint2*>(filter + j * t.filter_row_bytes + tap * pixel_bytes) = v;
  }
}

/// A band's first output pixel (n, p0, q0) and its patch's first input pixel (h0, w0).
struct band_origin {
  int n, p0, q0, h0, w0;
};

template <class T>
__device__ __forceinline__ band_origin origin_of(int band, const conv2d_args<T>& a, const tile& t) {
  band_origin o;
  o.q0 = (band % t.tiles_q) * t.tile_q;
  band /= t.tiles_q;
  o.p0 = (band % t.tiles_p) * t.tile_p;
  o.n = band / t.tiles_p;
  o.h0 = o.p0 * a.stride_h - a.pad_h;
  o.w0 = o.q0 * a.stride_w - a.pad_w;
  return o;
}

/// The patch: pixel (row, col) is input pixel (h0 + row, w0 + col) of image n,
/// pixel(row, h, w) giving one inside the image (gather_pixel), zeros outside
/// it. row_of(e): e / patch_cols. Threads tid, tid + threads, ...; Unroll:
/// pixels a thread has in flight.
template <int Unroll, class T, class RowOf, class Pixel>
__device__ __forceinline__ void write_patch(unsigned char* patch, const band_origin& o, const conv2d_args<T>& a,
                                            const tile& t, int tid, int threads, const RowOf& row_of,
                                            const Pixel& pixel) {
  const int patch_pixels = t.patch_rows * t.patch_cols;
#pragma unroll Unroll
  for (int e = tid; e < patch_pixels; e += threads) {
    const int row = row_of(e);
    const int h = o.h0 + row;
    const int wc = o.w0 + e - row * t.patch_cols;
    uint2 v = make_uint2(0u, 0u);
    if (h >= 0 && h < a.h && wc >= 0 && wc < a.w) v = pixel(row, h, wc);
    *reinterpret_cast<uint2*>(patch + e * pixel_bytes) = v;
  }
}

/// A thread's four fragment rows of a band (fragment i, half h: pixel m = warp
/// * 32 + 16 i + 8 h + lane / 4 of the band), as where their patch pixels lie
/// (patch_rows) and where their outputs go (output_rows).
using fragment_rows = int[frags_m][2];

/// Fragment row (i, h)'s pixel in the band, calling at(i, h, pp, qq, in_band)
/// (pp, qq: the pixel's row and column in the band).
template <class At>
__device__ __forceinline__ void for_fragment_rows(const tile& t, int warp, int lane, const At& at) {
#pragma unroll
  for (int i = 0; i < frags_m; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = warp * warp_pixels + 16 * i + 8 * h + lane / 4;
      const int pp = m / t.tile_q;
      at(i, h, pp, m - pp * t.tile_q, m < t.tile_p * t.tile_q);
    }
  }
}

/// The byte offset of each row's tap (0, 0) in the patch, plus its channel pair (lane % 2).
template <class T>
__device__ __forceinline__ void patch_rows(fragment_rows& base, const conv2d_args<T>& a, const tile& t, int warp,
                                           int lane) {
  for_fragment_rows(t, warp, lane, [&](int i, int h, int pp, int qq, bool in_band) {
    base[i][h] = (in_band ? (pp * a.stride_h * t.patch_cols + qq * a.stride_w) * pixel_bytes : 0) + (lane & 1) * 4;
  });
}

/// Each row's output row (n P + p) Q + q, or -1 past the band or the image (computed, never stored).
template <class T>
__device__ __forceinline__ void output_rows(fragment_rows& out, const band_origin& o, const conv2d_args<T>& a,
                                            const tile& t, int warp, int lane) {
  for_fragment_rows(t, warp, lane, [&](int i, int h, int pp, int qq, bool in_band) {
    out[i][h] = in_band && o.p0 + pp < a.p && o.q0 + qq < a.q ? (o.n * a.p + o.p0 + pp) * a.q + o.q0 + qq : -1;
  });
}

/// ldmatrix.x4 lane addresses for two n8 fragments (mma_sm80.cuh's
/// ldmatrix_x4_b_pair) of k-step 0: matrices (n 0-7, k 0-7), (n 0-7, k 8-15),
/// (n 8-15, k 0-7), (n 8-15, k 8-15).
__device__ __forceinline__ std::uint32_t b_lane_address(const unsigned char* filter, const tile& t, int lane) {
  const int j8 = lane / 8;
  return smem_address(filter) + (8 * (j8 / 2) + lane % 8) * t.filter_row_bytes + (j8 % 2) * 16;
}

/// The band's products: acc (zeroed by the caller) += the patch's pixels x the
/// filter, over the table's k-steps.
template <class T>
__device__ __forceinline__ void accumulate(float (&acc)[frags_m][frags_n][4], const unsigned char* patch,
                                           const int2* taps, std::uint32_t b_lane, const fragment_rows& base,
                                           const tile& t, int lane) {
  const int u = lane % 4;  // fragment column pair
#pragma unroll 2
  for (int step = 0; step < t.k_steps; ++step) {
    const int2 offset = taps[2 * step + (u >> 1)];
    std::uint32_t af[frags_m][4];
#pragma unroll
    for (int i = 0; i < frags_m; ++i) {
      af[i][0] = a_word(patch, base[i][0], offset.x);  // (row g, k 2u..2u+1)
      af[i][1] = a_word(patch, base[i][1], offset.x);  // (row g + 8, k 2u..)
      af[i][2] = a_word(patch, base[i][0], offset.y);  // (row g, k 2u + 8..)
      af[i][3] = a_word(patch, base[i][1], offset.y);  // (row g + 8, k 2u + 8..)
    }
    std::uint32_t bf[frags_n][2];
#pragma unroll
    for (int f = 0; f < frags_n; f += 2) {
      ldmatrix_x4_b_pair(bf[f], bf[f + 1], b_lane + 8 * f * t.filter_row_bytes + step * step_bytes);
    }
#pragma unroll
    for (int i = 0; i < frags_m; ++i)
#pragma unroll
      for (int f = 0; f < frags_n; ++f) mma_m16n8k16<T>(acc[i][f], af[i], bf[f]);
  }
}

/// bias[k], or 0 without a bias or past K.
template <class T>
__device__ __forceinline__ float bias_at(const conv2d_args<T>& a, int k) {
  return a.bias != nullptr && k < a.k ? to_compute(a.bias[k]) : 0.0f;
}

/// The epilogue straight from the accumulators: accumulator 2 h + e of (i, f)
/// is row (i, h), output channel k0 + 8 f + 2 u + e; + bias[k], the functor,
/// one rounding to T, stored as channel pairs (32 bits) where t.y_pairs, else
/// one by one.
template <class T, class Epilogue>
__device__ __forceinline__ void store_pairs(const conv2d_args<T>& a, const tile& t,
                                            const float (&acc)[frags_m][frags_n][4], const fragment_rows& out, int k0,
                                            int lane, const Epilogue& ep) {
  const int u = lane % 4;
#pragma unroll
  for (int f = 0; f < frags_n; ++f) {
    const int k = k0 + 8 * f + 2 * u;
    if (k >= a.k) break;
    const bool second = k + 1 < a.k;
    const float bias0 = bias_at(a, k);
    const float bias1 = bias_at(a, k + 1);
#pragma unroll
    for (int i = 0; i < frags_m; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = out[i][h];
        if (row < 0) continue;
        T* const y = a.y + static_cast<std::int64_t>(row) * a.k + k;
        const float v0 = static_cast<float>(ep(acc[i][f][2 * h] + bias0, std::int64_t{row}, std::int64_t{k}));
        if (t.y_pairs) {  // K even: the pair is whole
          const float v1 = static_cast<float>(ep(acc[i][f][2 * h + 1] + bias1, std::int64_t{row}, std::int64_t{k + 1}));
          *reinterpret_cast<std::uint32_t*>(y) = from_compute_pair<T>(v0, v1);
        } else {
          y[0] = from_compute<T>(v0);
          if (second)
            y[1] = from_compute<T>(
                static_cast<float>(ep(acc[i][f][2 * h + 1] + bias1, std::int64_t{row}, std::int64_t{k + 1})));
        }
      }
    }
  }
}

}  // namespace kf::detail::few_channels
