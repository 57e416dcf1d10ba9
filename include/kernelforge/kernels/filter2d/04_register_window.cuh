// SPDX-License-Identifier: Apache-2.0
// Step 4 -- register_window: the filter in registers, a float4 of columns and
// a strip of rows per thread, sliding down the image; no shared memory.
//
// What changes from smem_tiled, and why it is faster:
//  * No shared-memory tile. Each thread owns 4 adjacent output columns (one
//    float4) and a strip of filter2d_window_rows output rows. It walks down
//    filter2d_window_rows + r - 1 input rows; for each it issues one 16-byte
//    load of its 4 columns plus s - 1 scalar loads of the side columns. The
//    side columns are the neighbouring lanes' float4s, so they hit L1 (or L2
//    at a block edge): the halo is re-read from cache instead of being staged
//    through shared memory, and there is no __syncthreads anywhere.
//  * Each input row, once in registers, feeds the r outputs of the strip that
//    need it, and each output row is stored as one float4 as soon as its last
//    input row has arrived: only r rows of accumulators are live at a time in
//    the fully unrolled loop (R, S and the border rule are template constants).
//  * Threads whose window lies inside the image (all but the first and last
//    of each row) take the fast path with no border test per column; edge
//    threads map every window column through border_map (border.cuh), which
//    also covers a width that is not a multiple of 4 (a scalar tail).
//  * The filter is read from global memory (r*s __ldg per thread, L1
//    broadcasts), as smem_tiled reads it: correct for every launch on any
//    stream, no staging and no synchronization.
// Tunable: the strip height, the columns per thread (2: a float2,
// 4: a float4, 8: two float4s) and the __launch_bounds__ minimum of resident
// blocks per SM (which caps the registers) are the kernel's Config
// (filter2d_window_config). The library ships filter2d_window_default;
// tuning.hpp holds both and lists the candidates bench_conv compares with it. Every
// configuration adds the same products in the same order to each output, so
// all of them give bit-identical results.
// Requirements (checked by the launcher, which otherwise runs smem_tiled):
// float, an instantiated filter size (3x3, 5x5), in and out 16-byte aligned
// with pitches a multiple of 4 elements, so every row start is aligned.
// Its measured speed: the docs site's learning path (docs/build_site.py) and
// benchmarks/tuning/filter2d.md#filter2d_register_window (bench_conv).
#pragma once

#include "../common/kernel.cuh"
#include "border.cuh"
#include "args.cuh"
#include "tuning.hpp"

namespace kf::detail {

/// Does register_window have an instantiation for an r x s filter?
inline bool filter2d_window_has_size(int r, int s) { return (r == 3 && s == 3) || (r == 5 && s == 5); }

/// Cols consecutive floats from p (aligned to min(Cols, 4) floats) into v[0, Cols).
template <int Cols>
__device__ __forceinline__ void filter2d_window_load(const float* p, float* v) {
  if constexpr (Cols == 2) {
    const float2 q = __ldg(reinterpret_cast<const float2*>(p));
    v[0] = q.x;
    v[1] = q.y;
  } else {
#pragma unroll
    for (int e = 0; e < Cols; e += 4) {
      const float4 q = __ldg(reinterpret_cast<const float4*>(p + e));
      v[e + 0] = q.x;
      v[e + 1] = q.y;
      v[e + 2] = q.z;
      v[e + 3] = q.w;
    }
  }
}

/// v[0, Cols) to p (aligned as for filter2d_window_load) in vector stores.
template <int Cols>
__device__ __forceinline__ void filter2d_window_store(float* p, const float* v) {
  if constexpr (Cols == 2) {
    *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
  } else {
#pragma unroll
    for (int e = 0; e < Cols; e += 4) {
      *reinterpret_cast<float4*>(p + e) = make_float4(v[e + 0], v[e + 1], v[e + 2], v[e + 3]);
    }
  }
}

/// Grid: x = groups of Config::cols columns / filter2d_window_threads, y = row
/// strips of Config::rows (grid-stride up to `strips`), z = channels
/// (grid-stride); window_launch.cuh computes it.
/// MinBlocks 0 gives __launch_bounds__(threads, 0), which sets no minimum:
/// the same code as __launch_bounds__(threads) (checked on the SASS).
template <int R, int S, border Mode, class Config = filter2d_window_default>
KF_KERNEL void __launch_bounds__(filter2d_window_threads, Config::min_blocks)
    filter2d_register_window(filter2d_args<float> a, int strips) {
  constexpr int rows = Config::rows;
  constexpr int cols = Config::cols;
  constexpr int top = R / 2;            // input rows above an output row
  constexpr int left = S / 2;           // input columns left of an output column
  constexpr int right = S - 1 - S / 2;  // and right of it
  constexpr int window = cols + S - 1;  // input columns one thread reads per row

  const int x = (blockIdx.x * filter2d_window_threads + threadIdx.x) * cols;
  if (x >= a.width) return;  // no barrier or shuffle below: idle lanes may leave
  const int height = a.height, width = a.width;
  const bool inside = x - left >= 0 && x + cols + right <= width;
  const bool full_store = x + cols <= width;

  float f[R * S];
#pragma unroll
  for (int t = 0; t < R * S; ++t) f[t] = __ldg(a.filter + t);

  for (int c = blockIdx.z; c < a.channels; c += gridDim.z) {
    const float* in_plane = a.in + c * a.in_plane;
    float* out_plane = a.out + c * a.out_plane;
    for (int strip = blockIdx.y; strip < strips; strip += gridDim.y) {
      const int y0 = strip * rows;
      float acc[rows][cols];
#pragma unroll
      for (int ry = 0; ry < rows; ++ry) {
#pragma unroll
        for (int k = 0; k < cols; ++k) acc[ry][k] = 0.0f;
      }
      // Phase 1: every input row this strip needs, loaded before any is used,
      // so all rows + R - 1 of a thread's loads are in flight at once (the
      // branches below are per thread and uniform across most warps; a branch
      // does not wait for earlier loads, only a use does).
      float w[rows + R - 1][window];
#pragma unroll
      for (int ir = 0; ir < rows + R - 1; ++ir) {
        const int sy = border_map(y0 - top + ir, height, Mode);  // -1: a zero row
        if (sy < 0) {
#pragma unroll
          for (int t = 0; t < window; ++t) w[ir][t] = 0.0f;
        } else {
          const float* row = in_plane + sy * a.in_pitch;
          if (inside) {
            filter2d_window_load<cols>(row + x, &w[ir][left]);
#pragma unroll
            for (int m = 1; m <= left; ++m) w[ir][left - m] = __ldg(row + x - m);
#pragma unroll
            for (int m = 0; m < right; ++m) w[ir][left + cols + m] = __ldg(row + x + cols + m);
          } else {
#pragma unroll
            for (int t = 0; t < window; ++t) {
              const int sx = border_map(x - left + t, width, Mode);
              w[ir][t] = sx < 0 ? 0.0f : __ldg(row + sx);
            }
          }
        }
      }
      // Phase 2: slide the filter down the loaded rows; store each output row
      // as soon as its last input row has been used.
#pragma unroll
      for (int ir = 0; ir < rows + R - 1; ++ir) {
        // Input row ir contributes to output row ry through filter row ir - ry.
#pragma unroll
        for (int i = 0; i < R; ++i) {
          const int ry = ir - i;
          if (ry >= 0 && ry < rows) {
#pragma unroll
            for (int j = 0; j < S; ++j) {
#pragma unroll
              for (int k = 0; k < cols; ++k) acc[ry][k] = fmaf(f[i * S + j], w[ir][k + j], acc[ry][k]);
            }
          }
        }
        const int done = ir - (R - 1);  // the output row this input row completes
        if (done >= 0 && y0 + done < height) {
          float* out = out_plane + (y0 + done) * a.out_pitch + x;
          if (full_store) {
            filter2d_window_store<cols>(out, acc[done]);
          } else {
#pragma unroll
            for (int k = 0; k < cols; ++k) {
              if (x + k < width) out[k] = acc[done][k];
            }
          }
        }
      }
    }
  }
}

}  // namespace kf::detail
