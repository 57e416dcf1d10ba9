// SPDX-License-Identifier: Apache-2.0
// Step 1 -- naive: one thread per output pixel, image and filter read from
// global memory.
//
//   out[c][y][x] = sum_ij filter[i][j] * in[c][y + i - r/2][x + j - s/2]
//
// A 32 x 8 block covers a 32 x 8 patch of one channel; blockIdx.z walks the
// channels. Neighbouring threads read neighbouring pixels (coalesced), and the
// r*s loads of each pixel mostly hit L1 because the 8 rows of a block share
// them -- but every tap is still a load instruction for the image *and* one for
// the filter, and the filter load competes with the image for the same load
// path. Pixels whose window lies inside the image skip the border logic.
// Its measured speed: the docs site's learning path (docs/build_site.py) and benchmarks/tuning/filter2d.md
// (bench_conv).
#pragma once

#include "../common/kernel.cuh"
#include "../common/numeric.cuh"
#include "border.cuh"
#include "args.cuh"

namespace kf::detail {

/// Block shape of the one-pixel-per-thread kernels (naive, constant_memory):
/// a warp spans 32 consecutive pixels of a row (one 128-byte line for fp32).
constexpr int filter2d_pixel_block_x = 32;
constexpr int filter2d_pixel_block_y = 8;

/// sum_ij f(i, j) * in[y + i - r/2][x + j - s/2], in compute precision.
/// `tap(i, j)` returns filter[i][j] from wherever the variant keeps it.
template <class T, class Tap>
__device__ __forceinline__ compute_t<T> filter2d_pixel(const filter2d_args<T>& a, const T* plane, int y, int x,
                                                       Tap tap) {
  using C = compute_t<T>;
  const int y0 = y - a.r / 2, x0 = x - a.s / 2;
  C sum = 0;
  if (y0 >= 0 && x0 >= 0 && y0 + a.r <= a.height && x0 + a.s <= a.width) {
    const T* p = plane + y0 * a.in_pitch + x0;
    for (int i = 0; i < a.r; ++i, p += a.in_pitch) {
      for (int j = 0; j < a.s; ++j) sum += tap(i, j) * to_compute(p[j]);
    }
    return sum;
  }
  for (int i = 0; i < a.r; ++i) {
    const int yy = border_map(y0 + i, a.height, a.mode);
    if (yy < 0) continue;
    for (int j = 0; j < a.s; ++j) {
      const int xx = border_map(x0 + j, a.width, a.mode);
      if (xx < 0) continue;
      sum += tap(i, j) * to_compute(plane[yy * a.in_pitch + xx]);
    }
  }
  return sum;
}

/// Runs pixel(c, y, x) for every pixel; grid-stride in y and z so any image
/// size and channel count fits the grid limits.
template <class Pixel>
__device__ __forceinline__ void for_each_pixel(int channels, int height, int width, Pixel pixel) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= width) return;
  for (int c = blockIdx.z; c < channels; c += gridDim.z) {
    for (int y = blockIdx.y * blockDim.y + threadIdx.y; y < height; y += gridDim.y * blockDim.y) pixel(c, y, x);
  }
}

template <class T>
KF_KERNEL void filter2d_naive(filter2d_args<T> a) {
  for_each_pixel(a.channels, a.height, a.width, [&](int c, int y, int x) {
    const T* plane = a.in + c * a.in_plane;
    const T* filter = a.filter;
    const int s = a.s;
    const auto v = filter2d_pixel(a, plane, y, x, [=](int i, int j) { return to_compute(filter[i * s + j]); });
    a.out[c * a.out_plane + y * a.out_pitch + x] = from_compute<T>(v);
  });
}

}  // namespace kf::detail
