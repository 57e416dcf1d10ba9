// SPDX-License-Identifier: Apache-2.0
// The shared-memory tile of filter2d's tiled kernels: its geometry (host and
// device agree on it through these functions) and the cooperative load of an
// input tile plus halo, with 16-byte loads where the rows allow them and the
// border rule applied on the way in -- so the compute loops never branch on
// borders.
//
// Tile layout (fp32, whatever T is): `rows` = tile_height + r - 1 image rows,
// starting at image row y0 - r/2; each smem row holds image columns
// [x0 - left, x0 + tile_width + right), where left and right are the filter's
// reach to each side rounded up to a whole 16-byte vector of T, so every
// vector the tile needs starts on a vector boundary of the image row.
#pragma once

#include <cstddef>

#include "../common/numeric.cuh"
#include "../common/vector_access.cuh"
#include "border.cuh"
#include "args.cuh"

namespace kf::detail {

/// 32 x 4 threads; each computes 4 columns (strided by 32: conflict-free
/// shared-memory reads) x 8 consecutive rows (each input row it loads feeds up
/// to 8 outputs), so a block produces a 128 x 32 tile.
constexpr int filter2d_tile_threads_x = 32;
constexpr int filter2d_tile_threads_y = 4;
constexpr int filter2d_tile_threads = filter2d_tile_threads_x * filter2d_tile_threads_y;
constexpr int filter2d_cols_per_thread = 4;
constexpr int filter2d_rows_per_thread = 8;
constexpr int filter2d_tile_width = filter2d_tile_threads_x * filter2d_cols_per_thread;   // 128
constexpr int filter2d_tile_height = filter2d_tile_threads_y * filter2d_rows_per_thread;  // 32

/// Elements of T in one 16-byte load (4 floats, 8 halves).
template <class T>
constexpr int filter2d_vector_elements = static_cast<int>(vector_bytes / sizeof(T));

__host__ __device__ constexpr int round_up_to(int v, int m) { return (v + m - 1) / m * m; }

struct filter2d_tile_geometry {
  int left = 0;   ///< image columns left of the tile, a multiple of the vector width
  int right = 0;  ///< image columns right of the tile, likewise
  int pitch = 0;  ///< floats per smem row
  int rows = 0;   ///< smem rows
  int shift = 0;  ///< smem column of output column 0's first tap: left - s/2
};

template <class T>
__host__ __device__ constexpr filter2d_tile_geometry filter2d_tile_shape(int r, int s) {
  constexpr int V = filter2d_vector_elements<T>;
  filter2d_tile_geometry g;
  g.left = round_up_to(s / 2, V);
  g.right = round_up_to(s - 1 - s / 2, V);
  g.pitch = filter2d_tile_width + g.left + g.right;
  g.rows = filter2d_tile_height + r - 1;
  g.shift = g.left - s / 2;
  return g;
}

/// Scratch for the rank-one test: 4 values and 4 indices (one per warp).
constexpr int filter2d_reduction_floats = 2 * filter2d_tile_threads / 32;

/// Dynamic shared memory of the tiled kernels: the tile, the filter (fp32),
/// and for the separable path its two factors plus reduction scratch.
template <class T>
__host__ __device__ constexpr std::size_t filter2d_tile_smem_bytes(int r, int s, bool separable) {
  const filter2d_tile_geometry g = filter2d_tile_shape<T>(r, s);
  std::size_t floats = static_cast<std::size_t>(g.rows) * g.pitch + r * s;
  if (separable) floats += r + s + filter2d_reduction_floats;
  return floats * sizeof(float);
}

/// Loads the tile whose top-left image pixel is (gy0, gx0) into `tile`.
/// vector_loads: `plane` is 16-byte aligned and the row pitch a multiple of the
/// vector width, so in-image vectors can be read with one 16-byte load.
template <class T>
__device__ __forceinline__ void filter2d_load_tile(const filter2d_args<T>& a, const T* plane, int gy0, int gx0,
                                                   const filter2d_tile_geometry& g, bool vector_loads, float* tile) {
  constexpr int V = filter2d_vector_elements<T>;
  const int vectors_per_row = g.pitch / V;
  const int total = g.rows * vectors_per_row;
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int idx = tid; idx < total; idx += filter2d_tile_threads) {
    const int row = idx / vectors_per_row;
    const int vcol = idx - row * vectors_per_row;
    const int gy = gy0 + row;
    const int gx = gx0 + vcol * V;
    float* dst = tile + row * g.pitch + vcol * V;
    if (vector_loads && gy >= 0 && gy < a.height && gx >= 0 && gx + V <= a.width) {
      const vector16<T> v = *reinterpret_cast<const vector16<T>*>(plane + gy * a.in_pitch + gx);
#pragma unroll
      for (int e = 0; e < V; e += 4) {
        *reinterpret_cast<float4*>(dst + e) =
            make_float4(to_compute(v.v[e]), to_compute(v.v[e + 1]), to_compute(v.v[e + 2]), to_compute(v.v[e + 3]));
      }
    } else {
      const int yy = border_map(gy, a.height, a.mode);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const int xx = border_map(gx + e, a.width, a.mode);
        dst[e] = (yy < 0 || xx < 0) ? 0.0f : static_cast<float>(to_compute(plane[yy * a.in_pitch + xx]));
      }
    }
  }
}

/// Writes the thread's 8 x 4 outputs of the tile at (y0, x0), clipped to the image.
template <class T>
__device__ __forceinline__ void filter2d_store_tile(
    const filter2d_args<T>& a, T* plane, int y0, int x0,
    const float (&acc)[filter2d_rows_per_thread][filter2d_cols_per_thread]) {
#pragma unroll
  for (int ry = 0; ry < filter2d_rows_per_thread; ++ry) {
    const int y = y0 + threadIdx.y * filter2d_rows_per_thread + ry;
    if (y >= a.height) break;
#pragma unroll
    for (int k = 0; k < filter2d_cols_per_thread; ++k) {
      const int x = x0 + threadIdx.x + k * filter2d_tile_threads_x;
      if (x < a.width) plane[y * a.out_pitch + x] = from_compute<T>(acc[ry][k]);
    }
  }
}

}  // namespace kf::detail
