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
// What it leaves on the table: a CTA loads its patch and filter, then computes,
// with no overlap inside it (step 11 loads the next band meanwhile); C = 1 or 2
// multiply zero channels; K < 64 computes the rest as zeros. The parts steps 10
// and 11 share: few_channels_band.cuh. sm_80 and newer (below, a trap the
// launcher never reaches). Measured: benchmarks/tuning/conv2d.md#conv2d_few_channels.
#pragma once

#include <cstdint>

#include "../arch/guards.cuh"
#include "../common/kernel.cuh"
#include "args.cuh"
#include "few_channels_band.cuh"

namespace kf::detail {
namespace few_channels {

/// Pixels a thread has in flight while loading the filter and the patch (the
/// stem: 15 filter and 10 patch pixels a thread, so two round trips each).
inline constexpr int load_unroll = 8;

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
  const band_origin o = origin_of(static_cast<int>(blockIdx.x), a, t);
  const int k0 = blockIdx.y * block_n;
  const auto* const x = reinterpret_cast<const unsigned short*>(a.x);
  const auto* const w = reinterpret_cast<const unsigned short*>(a.wt);

  // The filter, then the patch (few_channels_band.cuh), read pixel by pixel from global memory.
  write_filter<load_unroll>(filter, a, t, k0, tid, threads,
                            [&](int j, int tap) { return load_pixel(w + ((k0 + j) * a.rs + tap) * a.c, a.c); });
  write_tap_table(taps, a, t, tid, threads);
  write_patch<load_unroll>(
      patch, o, a, t, tid, threads, [&](int e) { return e / t.patch_cols; },
      [&](int, int h, int wc) { return load_pixel(x + ((o.n * a.h + h) * a.w + wc) * a.c, a.c); });
  __syncthreads();

  const int lane = tid % 32;
  fragment_rows base, out;
  patch_rows(base, a, t, tid / 32, lane);
  output_rows(out, o, a, t, tid / 32, lane);
  float acc[frags_m][frags_n][4] = {};
  accumulate<T>(acc, patch, taps, b_lane_address(filter, t, lane), base, t, lane);
  store_pairs(a, t, acc, out, k0, lane, ep);
#endif
}

}  // namespace kf::detail
