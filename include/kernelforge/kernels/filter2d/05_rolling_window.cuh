// SPDX-License-Identifier: Apache-2.0
// Step 5 -- rolling_window: register_window's float4 column per thread, but
// walking down a long strip with a fixed number of input rows always in
// flight, instead of loading a short strip's rows in one burst.
//
// What changes from register_window, and why it was expected to be faster for 5x5:
//  * register_window loads all 8 + r - 1 rows of an 8-row strip, then spends
//    the whole 8 * r * s * 4 FMAs (800 for 5x5) with no load in flight, then
//    loads again. With its 90-138 registers only 12-20 warps fit on an SM, so
//    for 5x5 the bursts of the resident warps do not overlap well enough to keep
//    the memory system busy (0.83 of the copy rate against 0.97 for 3x3, whose
//    compute phase is a third as long). Here every thread keeps
//    filter2d_rolling_depth<R> input rows in flight at all times: the row it
//    consumes at step i was requested at step i - depth, and the register slot it
//    frees is refilled at once with the request for row i + depth. Memory
//    requests are issued at a steady rate, interleaved with the FMAs, by every
//    warp; no phase of the kernel waits for a burst.
//  * Fewer registers for that: an input row is consumed the step it arrives --
//    it adds to the R output rows it belongs to (R x 4 accumulators, a ring
//    indexed by output row mod R) and is dropped -- so the live state is the
//    accumulator ring, the rows in flight and the taps: about 100 registers
//    for 5x5 (R*4 + depth * (4 + S - 1) + R*S), not the whole strip's window.
//  * Side columns as one 8-byte load per side for 5x5 (x - 2, x + 4 are 8-byte
//    aligned because x is a multiple of 4) where register_window issues four
//    4-byte loads: the same L1 hits in half the instructions and wavefronts.
//  * Strips are long (filter2d_rolling_strip_rows<R>: 36 rows for 5x5, 46 for
//    3x3): r - 1 halo rows are re-read per strip (11% for 5x5, against 50% for
//    register_window's 8-row strips), from L2, since the strip below runs at the
//    same time (blockIdx.x is the fastest-moving index).
//  * The loop over input rows is unrolled by lcm(R, depth), so every ring slot
//    (rows in flight, accumulators) is a compile-time register.
//  * Borders as in register_window: column borders only for the threads at the
//    left/right edge or in the width's scalar tail (a separate instantiation of
//    the strip, per thread), row borders only in strips that touch the top or
//    bottom (a warp-uniform branch per row).
// Requirements: those of register_window (float, 3x3 or 5x5, 16-byte aligned
// rows; the launcher runs smem_tiled otherwise).
// Measured on the H200 (bench_conv, 8192^2): the bet lost. 0.78 of the copy
// rate at 5x5 and 0.83 at 3x3, against register_window's 0.83 and 0.97, so
// `best` does not run it; it stays selectable by name as the measured
// experiment (benchmarks/tuning/filter2d.md#filter2d_rolling_depth: the knobs not yet swept).
#pragma once

#include "../common/kernel.cuh"
#include "04_register_window.cuh"
#include "args.cuh"
#include "border.cuh"

namespace kf::detail {

/// Threads per block: one row of float4s, as register_window (128).
constexpr int filter2d_rolling_threads = filter2d_window_threads;
/// Output columns per thread: one float4.
constexpr int filter2d_rolling_cols = filter2d_window_cols;

/// Input rows in flight per thread. 5 for 5x5 keeps the kernel near 100
/// registers (at most 128: 4 blocks of 128 threads per SM); with 20 resident
/// warps that is about 50 KB in flight per SM, above the ~37 KB that 4 TB/s
/// times ~1.2 us of loaded DRAM latency asks for. 3x3 rows are narrower (6
/// floats), so it affords 6.
template <int R>
constexpr int filter2d_rolling_depth = R == 3 ? 6 : 5;

__host__ __device__ constexpr int filter2d_gcd(int a, int b) { return b == 0 ? a : filter2d_gcd(b, a % b); }

/// The unroll period: every ring index is (step mod period) mod its size.
template <int R>
constexpr int filter2d_rolling_period = R / filter2d_gcd(R, filter2d_rolling_depth<R>) * filter2d_rolling_depth<R>;

/// Unrolled periods per strip: 8 gives 40 input rows for 5x5 (36 outputs).
/// Longer strips re-read fewer halo rows but leave fewer blocks (8192^2:
/// 16 x 228 blocks of 128 threads, about 7 waves at 4 blocks per SM).
constexpr int filter2d_rolling_periods = 8;

/// Input rows a strip walks and output rows it writes (host and device).
template <int R>
__host__ __device__ constexpr int filter2d_rolling_strip_inputs() {
  return filter2d_rolling_periods * filter2d_rolling_period<R>;
}
template <int R>
__host__ __device__ constexpr int filter2d_rolling_strip_rows() {
  return filter2d_rolling_strip_inputs<R>() - (R - 1);
}

/// Loads the thread's window of one input row: columns x - S/2 ... x + 3 + S/2.
/// Inside: all of them are in the image (one float4 and the sides, no border
/// test); otherwise each column goes through border_map.
template <int S, border Mode, bool Inside>
__device__ __forceinline__ void filter2d_rolling_load(const float* row, int x, int width,
                                                      float (&w)[filter2d_rolling_cols + S - 1]) {
  constexpr int cols = filter2d_rolling_cols;
  constexpr int left = S / 2;
  constexpr int right = S - 1 - S / 2;
  if constexpr (Inside) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(row + x));
    w[left + 0] = v.x;
    w[left + 1] = v.y;
    w[left + 2] = v.z;
    w[left + 3] = v.w;
    if constexpr (left == 2) {  // x - 2 is 8-byte aligned (x is a multiple of 4)
      const float2 l = __ldg(reinterpret_cast<const float2*>(row + x - 2));
      w[0] = l.x;
      w[1] = l.y;
    } else {
#pragma unroll
      for (int m = 1; m <= left; ++m) w[left - m] = __ldg(row + x - m);
    }
    if constexpr (right == 2) {  // x + 4 is 16-byte aligned
      const float2 r = __ldg(reinterpret_cast<const float2*>(row + x + cols));
      w[left + cols] = r.x;
      w[left + cols + 1] = r.y;
    } else {
#pragma unroll
      for (int m = 0; m < right; ++m) w[left + cols + m] = __ldg(row + x + cols + m);
    }
  } else {
#pragma unroll
    for (int t = 0; t < cols + S - 1; ++t) {
      const int sx = border_map(x - left + t, width, Mode);
      w[t] = sx < 0 ? 0.0f : __ldg(row + sx);
    }
  }
}

/// Requests input row `i` of the strip (image row y0 - R/2 + i) into w.
/// rows_inside: every row of the strip is in the image (no border mapping).
template <int R, int S, border Mode, bool Inside>
__device__ __forceinline__ void filter2d_rolling_request(const filter2d_args<float>& a, const float* in_plane, int x,
                                                         int y0, int i, bool rows_inside,
                                                         float (&w)[filter2d_rolling_cols + S - 1]) {
  int sy = y0 - R / 2 + i;
  if (!rows_inside) {
    sy = border_map(sy, a.height, Mode);
    if (sy < 0) {  // a zero row (border::zero only); uniform across the warp
#pragma unroll
      for (int t = 0; t < filter2d_rolling_cols + S - 1; ++t) w[t] = 0.0f;
      return;
    }
  }
  filter2d_rolling_load<S, Mode, Inside>(in_plane + sy * a.in_pitch, x, a.width, w);
}

/// One strip of one channel for one thread: output rows [y0, y0 + strip_rows)
/// of columns [x, x + 4), clipped to the image.
template <int R, int S, border Mode, bool Inside>
__device__ __forceinline__ void filter2d_rolling_strip(const filter2d_args<float>& a, const float* in_plane,
                                                       float* out_plane, int x, int y0, const float (&f)[R * S]) {
  constexpr int cols = filter2d_rolling_cols;
  constexpr int depth = filter2d_rolling_depth<R>;
  constexpr int period = filter2d_rolling_period<R>;
  constexpr int inputs = filter2d_rolling_strip_inputs<R>();
  static_assert(period % depth == 0 && period % R == 0, "ring slots must be compile-time indices");
  static_assert(depth <= inputs, "the prologue requests `depth` rows");
  const int height = a.height;
  // Rows [y0 - R/2, y0 - R/2 + inputs) all in the image: no row border test.
  const bool rows_inside = y0 - R / 2 >= 0 && y0 - R / 2 + inputs <= height;
  const bool full_store = Inside || x + cols <= a.width;

  float w[depth][cols + S - 1];  // rows in flight: slot = input row mod depth
  float acc[R][cols];            // accumulators: slot = output row mod R
#pragma unroll
  for (int q = 0; q < R; ++q) {
#pragma unroll
    for (int k = 0; k < cols; ++k) acc[q][k] = 0.0f;
  }
#pragma unroll
  for (int d = 0; d < depth; ++d)
    filter2d_rolling_request<R, S, Mode, Inside>(a, in_plane, x, y0, d, rows_inside, w[d]);

#pragma unroll 1
  for (int i0 = 0; i0 < inputs; i0 += period) {
    // Outputs completed from here on are at y0 + i0 - (R - 1) and below.
    if (y0 + i0 - (R - 1) >= height) break;
#pragma unroll
    for (int u = 0; u < period; ++u) {
      const int i = i0 + u;  // the input row consumed now
      float(&row)[cols + S - 1] = w[u % depth];
      // Input row i feeds output row i - k through filter row k.
#pragma unroll
      for (int k = 0; k < R; ++k) {
        float(&out)[cols] = acc[((u - k) % R + R) % R];
#pragma unroll
        for (int j = 0; j < S; ++j) {
#pragma unroll
          for (int c = 0; c < cols; ++c) out[c] = fmaf(f[k * S + j], row[c + j], out[c]);
        }
      }
      // Output row i - (R - 1) has had its last filter row: store it, and
      // clear its slot for output row i + 1 (the same slot mod R). Before
      // the first R - 1 steps the slots collected rows above the strip,
      // which this clearing discards.
      float(&done)[cols] = acc[(u + 1) % R];
      const int o = i - (R - 1);
      const int y = y0 + o;
      if (o >= 0 && y < height) {
        float* dst = out_plane + y * a.out_pitch + x;
        if (full_store) {
          *reinterpret_cast<float4*>(dst) = make_float4(done[0], done[1], done[2], done[3]);
        } else {
#pragma unroll
          for (int c = 0; c < cols; ++c) {
            if (x + c < a.width) dst[c] = done[c];
          }
        }
      }
#pragma unroll
      for (int c = 0; c < cols; ++c) done[c] = 0.0f;
      // The slot of row i is free: request row i + depth into it.
      if (i + depth < inputs)
        filter2d_rolling_request<R, S, Mode, Inside>(a, in_plane, x, y0, i + depth, rows_inside, row);
    }
  }
}

/// Grid: x = float4 columns / filter2d_rolling_threads, y = strips of
/// filter2d_rolling_strip_rows<R>() rows (grid-stride up to `strips`),
/// z = channels (grid-stride).
template <int R, int S, border Mode>
KF_KERNEL void __launch_bounds__(filter2d_rolling_threads) filter2d_rolling_window(filter2d_args<float> a, int strips) {
  constexpr int cols = filter2d_rolling_cols;
  constexpr int strip_rows = filter2d_rolling_strip_rows<R>();
  const int x = (blockIdx.x * filter2d_rolling_threads + threadIdx.x) * cols;
  if (x >= a.width) return;  // no barrier or shuffle below: idle lanes may leave
  const bool inside = x - S / 2 >= 0 && x + cols + (S - 1 - S / 2) <= a.width;

  float f[R * S];
#pragma unroll
  for (int t = 0; t < R * S; ++t) f[t] = __ldg(a.filter + t);

  for (int c = blockIdx.z; c < a.channels; c += gridDim.z) {
    const float* in_plane = a.in + c * a.in_plane;
    float* out_plane = a.out + c * a.out_plane;
    for (int strip = blockIdx.y; strip < strips; strip += gridDim.y) {
      const int y0 = strip * strip_rows;
      if (inside) {
        filter2d_rolling_strip<R, S, Mode, true>(a, in_plane, out_plane, x, y0, f);
      } else {
        filter2d_rolling_strip<R, S, Mode, false>(a, in_plane, out_plane, x, y0, f);
      }
    }
  }
}

}  // namespace kf::detail
