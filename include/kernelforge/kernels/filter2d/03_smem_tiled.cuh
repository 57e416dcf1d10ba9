// SPDX-License-Identifier: Apache-2.0
// Step 3 -- smem_tiled: an input tile plus its halo in shared memory, 32
// outputs per thread.
//
// What changes from constant_memory, and why it is faster:
//  * A block loads a 128 x 32 output tile's input -- (32 + r - 1) rows of
//    (128 + halo) columns -- into shared memory once, with 16-byte loads where
//    the rows are aligned (tile.cuh), applying the border rule as it
//    loads. Every tap then reads shared memory instead of issuing a global
//    load: global traffic drops from r*s loads per pixel to about one (the
//    halo is re-read from L2 by neighbouring tiles only).
//  * Each thread computes 8 rows x 4 columns. It walks down its column strip
//    once: an input row it reads is used by every one of its 8 outputs that
//    needs it, so shared-memory reads per output fall from r*s to about
//    s * (8 + r - 1) / 8. Its 4 columns are 32 apart, so a warp reads 32
//    consecutive floats per instruction: no bank conflicts.
//  * The filter is staged in shared memory too (fp32), and for the common
//    3x3 and 5x5 it is a template constant size: the loops unroll completely
//    and the taps live in registers.
// Result: the kernel is bound by the one read and one write of the image --
// the memory floor a device-to-device copy sets.
//
// Separable filters (used by filter2d_variant::best for large filters): the
// same kernel with Separable = true first tests, per block, whether the staged
// filter is rank one (filter[i][j] = u[i] * v[j] within 8 units of roundoff of
// T relative to each entry; the pivot is the largest |entry|). If so it runs a
// row pass over the tile, in place (each warp owns whole rows), then a column
// pass: r + s multiply-adds per output instead of r * s. If not, it falls back
// to the 2D loop above. The test is repeated by every block because the filter
// is a device pointer: deciding on the host would need a copy back and a
// synchronization.
// Its measured speed: the docs site's learning path (docs/build_site.py) and
// benchmarks/tuning/filter2d.md#filter2d_smem_tiled (bench_conv).
#pragma once

#include "../common/kernel.cuh"
#include "../common/numeric.cuh"
#include "args.cuh"
#include "tile.cuh"

namespace kf::detail {

constexpr int filter2d_rows = filter2d_rows_per_thread;
constexpr int filter2d_cols = filter2d_cols_per_thread;
using filter2d_accumulators = float[filter2d_rows][filter2d_cols];

/// acc[ry][k] += sum_ij f[i][j] * tile[ty*8 + ry + i][tx + 32k + shift + j].
/// R, S > 0: compile-time filter size (fully unrolled, filter in registers).
template <int R, int S>
__device__ __forceinline__ void filter2d_tile_2d(const float* tile, const filter2d_tile_geometry& g,
                                                 const float* filter, int r, int s, filter2d_accumulators& acc) {
  const float* base = tile + threadIdx.y * filter2d_rows * g.pitch + threadIdx.x + g.shift;
  if constexpr (R > 0 && S > 0) {
    float f[R * S];
#pragma unroll
    for (int t = 0; t < R * S; ++t) f[t] = filter[t];
#pragma unroll
    for (int ir = 0; ir < filter2d_rows + R - 1; ++ir) {
#pragma unroll
      for (int j = 0; j < S; ++j) {
        float v[filter2d_cols];
#pragma unroll
        for (int k = 0; k < filter2d_cols; ++k) v[k] = base[ir * g.pitch + j + k * filter2d_tile_threads_x];
#pragma unroll
        for (int ry = 0; ry < filter2d_rows; ++ry) {
          const int i = ir - ry;
          if (i >= 0 && i < R) {
#pragma unroll
            for (int k = 0; k < filter2d_cols; ++k) acc[ry][k] = fmaf(f[i * S + j], v[k], acc[ry][k]);
          }
        }
      }
    }
  } else {
    for (int ir = 0; ir < filter2d_rows + r - 1; ++ir) {
      const float* row = base + ir * g.pitch;
      for (int j = 0; j < s; ++j) {
        float v[filter2d_cols];
#pragma unroll
        for (int k = 0; k < filter2d_cols; ++k) v[k] = row[j + k * filter2d_tile_threads_x];
#pragma unroll
        for (int ry = 0; ry < filter2d_rows; ++ry) {
          const int i = ir - ry;
          if (i >= 0 && i < r) {
            const float fv = filter[i * s + j];
#pragma unroll
            for (int k = 0; k < filter2d_cols; ++k) acc[ry][k] = fmaf(fv, v[k], acc[ry][k]);
          }
        }
      }
    }
  }
}

/// Tolerance of the rank-one test: 8 units of roundoff of the filter's type.
template <class T>
__device__ constexpr float filter2d_rank_one_tolerance() {
  return sizeof(T) == 2 ? 8.0f / 2048.0f : 8.0f / 16777216.0f;  // 8 * 2^-11 (half), 8 * 2^-24 (float)
}

/// Block-wide: is filter (r x s, fp32 in smem) rank one? Writes the factors
/// u (r) and v (s) with filter[i][j] ~= u[i] * v[j]. All threads get the answer.
template <class T>
__device__ bool filter2d_rank_one(const float* filter, int r, int s, float* u, float* v, float* scratch) {
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x, warp = threadIdx.y;
  const int n = r * s;
  // The pivot: the largest |entry|, first one on ties (NaN never wins a comparison).
  float best = -1.0f;
  int best_index = 0;
  for (int t = tid; t < n; t += filter2d_tile_threads) {
    const float m = fabsf(filter[t]);
    if (m > best) {
      best = m;
      best_index = t;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_down_sync(0xffffffffu, best, offset);
    const int other_index = __shfl_down_sync(0xffffffffu, best_index, offset);
    if (other > best || (other == best && other_index < best_index)) {
      best = other;
      best_index = other_index;
    }
  }
  constexpr int warps = filter2d_tile_threads / 32;
  int* scratch_index = reinterpret_cast<int*>(scratch + warps);
  if (lane == 0) {
    scratch[warp] = best;
    scratch_index[warp] = best_index;
  }
  __syncthreads();
  float pivot_abs = scratch[0];
  int pivot = scratch_index[0];
  for (int w = 1; w < warps; ++w) {
    if (scratch[w] > pivot_abs || (scratch[w] == pivot_abs && scratch_index[w] < pivot)) {
      pivot_abs = scratch[w];
      pivot = scratch_index[w];
    }
  }
  const int p = pivot / s, q = pivot - (pivot / s) * s;
  const float fpq = filter[pivot];
  for (int i = tid; i < r; i += filter2d_tile_threads) u[i] = filter[i * s + q];
  for (int j = tid; j < s; j += filter2d_tile_threads) v[j] = fpq != 0.0f ? filter[p * s + j] / fpq : 0.0f;
  __syncthreads();
  const float tolerance = filter2d_rank_one_tolerance<T>();
  int bad = 0;
  for (int t = tid; t < n; t += filter2d_tile_threads) {
    const int i = t / s, j = t - (t / s) * s;
    const float error = fabsf(filter[t] - u[i] * v[j]);
    if (!(error <= tolerance * fabsf(filter[t]))) bad = 1;
  }
  return __syncthreads_or(bad) == 0;
}

/// Separable step 1, in place: tile[row][c] = sum_j v[j] * tile[row][c + shift + j]
/// for c in [0, 128). Each warp owns whole rows, so reading a row completely
/// before overwriting it only needs the warp to agree (__syncwarp).
__device__ __forceinline__ void filter2d_row_pass(float* tile, const filter2d_tile_geometry& g, const float* v, int s) {
  for (int row = threadIdx.y; row < g.rows; row += filter2d_tile_threads_y) {
    float* p = tile + row * g.pitch;
    float out[filter2d_cols] = {};
    for (int j = 0; j < s; ++j) {
      const float vj = v[j];
#pragma unroll
      for (int k = 0; k < filter2d_cols; ++k) {
        out[k] = fmaf(vj, p[threadIdx.x + k * filter2d_tile_threads_x + g.shift + j], out[k]);
      }
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < filter2d_cols; ++k) p[threadIdx.x + k * filter2d_tile_threads_x] = out[k];
  }
}

/// Separable step 2: acc[ry][k] = sum_i u[i] * tile[ty*8 + ry + i][tx + 32k].
__device__ __forceinline__ void filter2d_column_pass(const float* tile, const filter2d_tile_geometry& g, const float* u,
                                                     int r, filter2d_accumulators& acc) {
  const float* base = tile + threadIdx.y * filter2d_rows * g.pitch + threadIdx.x;
  for (int ir = 0; ir < filter2d_rows + r - 1; ++ir) {
    float v[filter2d_cols];
#pragma unroll
    for (int k = 0; k < filter2d_cols; ++k) v[k] = base[ir * g.pitch + k * filter2d_tile_threads_x];
#pragma unroll
    for (int ry = 0; ry < filter2d_rows; ++ry) {
      const int i = ir - ry;
      if (i >= 0 && i < r) {
        const float ui = u[i];
#pragma unroll
        for (int k = 0; k < filter2d_cols; ++k) acc[ry][k] = fmaf(ui, v[k], acc[ry][k]);
      }
    }
  }
}

/// Grid: x = column tiles, y = row tiles (grid-stride), z = channels (grid-stride).
/// Dynamic shared memory: filter2d_tile_smem_bytes<T>(r, s, Separable).
template <class T, int R, int S, bool Separable>
KF_KERNEL void __launch_bounds__(filter2d_tile_threads)
    filter2d_smem_tiled(filter2d_args<T> a, bool vector_loads, int tiles_y) {
  static_assert(!(Separable && R > 0), "the separable path is compiled for run-time filter sizes");
  extern __shared__ float4 filter2d_smem_tiled_storage[];
  const int r = R > 0 ? R : a.r;
  const int s = S > 0 ? S : a.s;
  const filter2d_tile_geometry g = filter2d_tile_shape<T>(r, s);
  float* tile = reinterpret_cast<float*>(filter2d_smem_tiled_storage);
  float* filter = tile + g.rows * g.pitch;
  float* u = filter + r * s;
  float* v = u + r;
  float* scratch = v + s;

  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int t = tid; t < r * s; t += filter2d_tile_threads) filter[t] = to_compute(a.filter[t]);
  bool separable = false;
  if constexpr (Separable) {
    __syncthreads();
    separable = filter2d_rank_one<T>(filter, r, s, u, v, scratch);
  }

  const int x0 = blockIdx.x * filter2d_tile_width;
  for (int c = blockIdx.z; c < a.channels; c += gridDim.z) {
    const T* in_plane = a.in + c * a.in_plane;
    T* out_plane = a.out + c * a.out_plane;
    for (int ty = blockIdx.y; ty < tiles_y; ty += gridDim.y) {
      const int y0 = ty * filter2d_tile_height;
      __syncthreads();  // the previous tile's readers are done (and the filter is staged)
      filter2d_load_tile(a, in_plane, y0 - r / 2, x0 - g.left, g, vector_loads, tile);
      __syncthreads();
      float acc[filter2d_rows][filter2d_cols] = {};
      if (Separable && separable) {
        filter2d_row_pass(tile, g, v, s);
        __syncthreads();
        filter2d_column_pass(tile, g, u, r, acc);
      } else {
        filter2d_tile_2d<R, S>(tile, g, filter, r, s, acc);
      }
      filter2d_store_tile(a, out_plane, y0, x0, acc);
    }
  }
}

}  // namespace kf::detail
