// SPDX-License-Identifier: Apache-2.0
// Step 10 -- few_channels_mma: NHWC __half / __nv_bfloat16 layers with at most
// 4 input channels and up to 64 filter taps (the RGB stem: C = 3, 7x7, stride
// 2), on mma.sync.m16n8k16 (sm_80+), fp32 sums rounded once to T.
//
// What it improves over step 7 for these layers, and why it is faster: step 7
// reads x with TMA in 16-byte channel runs, which a 6-byte RGB pixel is not,
// so such layers first went through its column fold -- a pass that writes x
// again with the filter's S columns folded into channels (7 x 3 -> 24 for the
// stem, 4x the bytes of x), then a GEMM whose reduction per tile is short.
// Here the padding happens where the data lands:
//  * One CTA computes a band of output pixels (whole output rows where a row
//    fits, up to conv2d_few_channels_max_pixels) x 64 output channels. It loads
//    the band's input patch -- the rows and columns the band's taps reach,
//    zeros outside the image -- into shared memory once, each pixel's C <= 4
//    channels padded to 4 (8 bytes), and the 64 filters beside it as rows of
//    R*S taps x 4 channels (zeros past C, past R*S and past K). Every input
//    pixel is then read from shared memory by every tap that covers it: x
//    leaves HBM once and y is written once, with no workspace and no second pass.
//  * The GEMM view: M = the band's pixels, N = 64 channels, reduction = the
//    taps x 4 channels in k-steps of 16 = 4 taps. Row g of an A fragment is an
//    output pixel, so its 32-bit register (2 channels of one tap) is one load
//    from the patch at row_base(pixel) + tap_offset(tap) -- the pixel's corner
//    plus the tap's place in the patch, the same for every pixel: a table of
//    tap offsets (one 8-byte load a k-step) and four row bases a thread make
//    the whole im2col. At stride 2 the 8 rows of a fragment read 8 consecutive
//    16-byte pixel pairs (no bank conflicts). B fragments come from the filter
//    by ldmatrix (rows of an odd number of 16-byte chunks: conflict-free).
//  * Warps take 32 pixels each (two m16 fragments) x all 64 channels (eight n8
//    fragments): 64 fp32 accumulators a thread, 16 products per k-step against
//    8 A loads and 4 ldmatrix. The CTA has one warp per 32 pixels of its band
//    (the stem: 2 rows x 112 = 224 pixels, 7 warps, none idle).
//  * Taps past R*S (the last k-step's padding) read nothing: their A values are
//    zero, so a NaN or infinity in x cannot meet a padding zero of the filter.
//  * Epilogue: + bias[k], the functor, one rounding to T, stored as channel
//    pairs (32 bits) where y is 4-byte aligned and K even, else one by one.
// What it leaves on the table: each CTA loads its patch and filter, then
// computes, with no overlap inside the CTA (two CTAs an SM overlap each other);
// C = 1 or 2 multiply 3 or 2 zero channels; K < 64 computes the rest as zeros.
// Device code for sm_80 and newer; below that the kernel is a trap (the
// launcher checks the device and the image's architecture first).
// Its measured speed: benchmarks/tuning/conv2d.md#conv2d_few_channels (bench_conv).
#pragma once

#include <cstdint>

#include "../arch/guards.cuh"
#include "../arch/mma_sm80.cuh"
#include "../arch/smem.cuh"
#include "../common/kernel.cuh"
#include "../common/numeric.cuh"
#include "args.cuh"

namespace kf::detail {
namespace few_channels {

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
/// Pixels a thread has in flight while loading the filter and the patch (the
/// stem: 15 filter and 10 patch pixels a thread, so two round trips each).
inline constexpr int load_unroll = 8;

/// The launch's plan (plan.hpp's conv2d_few_channels_plan) as the kernel reads it.
struct tile {
  int tile_p = 0, tile_q = 0, tiles_p = 0, tiles_q = 0;
  int patch_rows = 0, patch_cols = 0;
  int k_steps = 0;
  int filter_row_bytes = 0, table_offset = 0, patch_offset = 0;  ///< shared-memory layout
  bool y_pairs = false;  ///< y 4-byte aligned and K even: channel pairs stored as 32 bits
};

/// The C <= 4 channels of one pixel (or one filter tap) at `src`, padded with
/// zeros to 4, as two 32-bit words (the order in memory).
__device__ __forceinline__ uint2 load_pixel(const unsigned short* __restrict__ src, int c) {
  const unsigned e0 = __ldg(src);
  const unsigned e1 = c > 1 ? __ldg(src + 1) : 0u;
  const unsigned e2 = c > 2 ? __ldg(src + 2) : 0u;
  const unsigned e3 = c > 3 ? __ldg(src + 3) : 0u;
  return make_uint2(e0 | (e1 << 16), e2 | (e3 << 16));
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

}  // namespace few_channels

/// y = ep(conv(x, w) + bias) for the NHWC layer `a` (C <= 4, R*S <= 64; T
/// __half or __nv_bfloat16): grid (bands, ceil(K / 64)), 32 threads per 32
/// pixels of a band, t.patch_offset + patch bytes of dynamic shared memory.
template <class T, class Epilogue>
KF_KERNEL void __launch_bounds__(few_channels::max_threads, few_channels::min_blocks_per_sm)
    conv2d_few_channels_mma(const conv2d_args<T> a, const few_channels::tile t, Epilogue ep) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM80
  __trap();  // mma.sync f16 / bf16 with fp32 sums needs sm_80; the launcher never selects it below
#else
  using namespace few_channels;
  extern __shared__ uint4 few_channels_smem[];  // uint4: 16-byte aligned for ldmatrix
  unsigned char* const filter = reinterpret_cast<unsigned char*>(few_channels_smem);  // [64][filter_row_bytes]
  int2* const taps = reinterpret_cast<int2*>(filter + t.table_offset);                // [k_steps][2]
  unsigned char* const patch = filter + t.patch_offset;                               // [patch_rows][patch_cols][4]

  const int tid = threadIdx.x;
  const int threads = blockDim.x;
  int band = blockIdx.x;
  const int q0 = (band % t.tiles_q) * t.tile_q;
  band /= t.tiles_q;
  const int p0 = (band % t.tiles_p) * t.tile_p;
  const int n = band / t.tiles_p;
  const int k0 = blockIdx.y * block_n;
  const auto* const x = reinterpret_cast<const unsigned short*>(a.x);
  const auto* const w = reinterpret_cast<const unsigned short*>(a.wt);

  // The filter: row j (output channel k0 + j), 4 channels for each of the
  // k_steps * 4 taps; zeros past K, past R*S and past C.
  const int step_taps = t.k_steps * taps_per_step;
#pragma unroll load_unroll
  for (int e = tid; e < block_n * step_taps; e += threads) {
    const int j = e / step_taps;
    const int tap = e - j * step_taps;
    const int k = k0 + j;
    uint2 v = make_uint2(0u, 0u);
    if (k < a.k && tap < a.rs) v = load_pixel(w + (k * a.rs + tap) * a.c, a.c);
    *reinterpret_cast<uint2*>(filter + j * t.filter_row_bytes + tap * pixel_bytes) = v;
  }
  // The tap table: entry (step, u) holds the offsets of taps 4 step + u (A
  // registers 0, 1) and 4 step + 2 + u (registers 2, 3), u = lane % 4 / 2.
  for (int e = tid; e < 2 * t.k_steps; e += threads) {
    const int tap = (e >> 1) * taps_per_step + (e & 1);
    taps[e] = make_int2(tap_offset(tap, a.rs, a.s, a.dilation_h, a.dilation_w, t.patch_cols),
                        tap_offset(tap + 2, a.rs, a.s, a.dilation_h, a.dilation_w, t.patch_cols));
  }
  // The patch: input pixel (h0 + row, w0 + col) of image n, zeros outside the image.
  const int h0 = p0 * a.stride_h - a.pad_h;
  const int w0 = q0 * a.stride_w - a.pad_w;
  const int patch_pixels = t.patch_rows * t.patch_cols;
#pragma unroll load_unroll
  for (int e = tid; e < patch_pixels; e += threads) {
    const int row = e / t.patch_cols;
    const int h = h0 + row;
    const int wc = w0 + e - row * t.patch_cols;
    uint2 v = make_uint2(0u, 0u);
    if (h >= 0 && h < a.h && wc >= 0 && wc < a.w) v = load_pixel(x + ((n * a.h + h) * a.w + wc) * a.c, a.c);
    *reinterpret_cast<uint2*>(patch + e * pixel_bytes) = v;
  }
  __syncthreads();

  const int warp = tid / 32;
  const int lane = tid % 32;
  const int g = lane / 4;  // fragment row (and B column)
  const int u = lane % 4;  // fragment column pair
  const int band_pixels = t.tile_p * t.tile_q;
  // The thread's four rows (fragment i, half h: pixel warp * 32 + 16 i + 8 h + g
  // of the band): the byte offset of the pixel's tap (0, 0) in the patch, plus
  // its channel pair (u % 2); and the output row (n P + p) Q + q, or -1 past the
  // band or the image (computed, never stored).
  int row_base[frags_m][2];
  int out_row[frags_m][2];
#pragma unroll
  for (int i = 0; i < frags_m; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = warp * warp_pixels + 16 * i + 8 * h + g;
      const int pp = m / t.tile_q;
      const int qq = m - pp * t.tile_q;
      const bool in_band = m < band_pixels;
      row_base[i][h] = (in_band ? (pp * a.stride_h * t.patch_cols + qq * a.stride_w) * pixel_bytes : 0) + (u & 1) * 4;
      out_row[i][h] = in_band && p0 + pp < a.p && q0 + qq < a.q ? (n * a.p + p0 + pp) * a.q + q0 + qq : -1;
    }
  }

  float acc[frags_m][frags_n][4] = {};

  // ldmatrix.x4 lane addresses for two n8 fragments (mma_sm80.cuh's
  // ldmatrix_x4_b_pair): matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7),
  // (n 8-15, k 8-15) of a k-step.
  const int j8 = lane / 8;
  const std::uint32_t b_lane = smem_address(filter) + (8 * (j8 / 2) + lane % 8) * t.filter_row_bytes + (j8 % 2) * 16;
#pragma unroll 2
  for (int step = 0; step < t.k_steps; ++step) {
    const int2 offset = taps[2 * step + (u >> 1)];
    std::uint32_t af[frags_m][4];
#pragma unroll
    for (int i = 0; i < frags_m; ++i) {
      af[i][0] = a_word(patch, row_base[i][0], offset.x);  // (row g, k 2u..2u+1)
      af[i][1] = a_word(patch, row_base[i][1], offset.x);  // (row g + 8, k 2u..)
      af[i][2] = a_word(patch, row_base[i][0], offset.y);  // (row g, k 2u + 8..)
      af[i][3] = a_word(patch, row_base[i][1], offset.y);  // (row g + 8, k 2u + 8..)
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

  // Accumulator 2 h + e of (i, f): row (i, h), output channel k0 + 8 f + 2 u + e.
#pragma unroll
  for (int f = 0; f < frags_n; ++f) {
    const int k = k0 + 8 * f + 2 * u;
    if (k >= a.k) break;
    const bool second = k + 1 < a.k;
    const float bias0 = a.bias != nullptr ? to_compute(a.bias[k]) : 0.0f;
    const float bias1 = a.bias != nullptr && second ? to_compute(a.bias[k + 1]) : 0.0f;
#pragma unroll
    for (int i = 0; i < frags_m; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = out_row[i][h];
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
#endif
}

}  // namespace kf::detail
