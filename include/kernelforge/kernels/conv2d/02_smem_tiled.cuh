// SPDX-License-Identifier: Apache-2.0
// Step 2 -- smem_tiled: direct convolution with the input patch and the filters
// staged in shared memory.
//
// What changes from naive, and why it is faster: a block computes an 8 x 16
// patch of output positions for 16 output channels of one image (one position
// per thread, 16 accumulators each). For each group of input channels it loads
// once into shared memory
//   * the input patch those 128 positions read -- (8-1)*stride_h +
//     (R-1)*dilation_h + 1 rows by (16-1)*stride_w + (S-1)*dilation_w + 1
//     columns, zero-padded at the borders -- instead of every thread fetching
//     its R*S taps from global memory, and
//   * the 16 filters' taps for those channels, laid out [c][r][s][k] so a
//     thread gets the 16 weights of a tap with four 16-byte broadcasts.
// Each input value read from shared memory now feeds 16 multiply-adds (one
// per output channel) instead of one, and each weight is shared by the 128
// positions of the block. Still missing (the next step's job): a thread
// computes only one position, so its 16 multiply-adds per tap cost 5 shared
// loads, and input channels are processed a few at a time.
// Epilogue as in naive: ep(sum + bias[k], m, k) right before the store.
// Its measured speed: the docs site's learning path (docs/build_site.py) and benchmarks/tuning/conv2d.md (bench_conv).
#pragma once

#include <cstdint>

#include "../common/kernel.cuh"
#include "../common/numeric.cuh"
#include "args.cuh"
#include "kernelforge/epilogue.cuh"

namespace kf::detail {

constexpr int conv2d_direct_tile_p = 8;   // output rows per block
constexpr int conv2d_direct_tile_q = 16;  // output columns per block (a half warp of consecutive q)
constexpr int conv2d_direct_tile_k = 16;  // output channels per block (4 float4 broadcasts)
constexpr int conv2d_direct_threads = conv2d_direct_tile_p * conv2d_direct_tile_q;  // 128
constexpr int conv2d_direct_max_channels_per_stage = 4;

/// Shared-memory extents of one input channel's patch.
struct conv2d_direct_patch {
  int rows = 0, cols = 0;
};

__host__ __device__ inline conv2d_direct_patch conv2d_direct_patch_shape(int r, int s, int stride_h, int stride_w,
                                                                         int dilation_h, int dilation_w) {
  conv2d_direct_patch p;
  p.rows = (conv2d_direct_tile_p - 1) * stride_h + (r - 1) * dilation_h + 1;
  p.cols = (conv2d_direct_tile_q - 1) * stride_w + (s - 1) * dilation_w + 1;
  return p;
}

/// Floats of shared memory for `channels` input channels per stage; the
/// patch part is rounded up to a float4 so the weights start 16-byte aligned.
__host__ __device__ inline long long conv2d_direct_smem_floats(const conv2d_direct_patch& p, int channels, int rs) {
  const long long patch = (static_cast<long long>(channels) * p.rows * p.cols + 3) / 4 * 4;
  return patch + static_cast<long long>(channels) * rs * conv2d_direct_tile_k;
}

/// Grid: x = spatial tiles (tiles_q per row of tiles), y = K / 16, z = images (grid-stride).
template <class T, class Epilogue = epilogue::identity>
KF_KERNEL void __launch_bounds__(conv2d_direct_threads)
    conv2d_smem_tiled(conv2d_args<T> a, int channels_per_stage, int tiles_q, Epilogue ep) {
  extern __shared__ float4 conv2d_smem_tiled_storage[];
  const conv2d_direct_patch shape =
      conv2d_direct_patch_shape(a.r, a.s, a.stride_h, a.stride_w, a.dilation_h, a.dilation_w);
  const int patch_size = shape.rows * shape.cols;
  float* patch = reinterpret_cast<float*>(conv2d_smem_tiled_storage);
  float* weights = patch + (channels_per_stage * patch_size + 3) / 4 * 4;

  const int tid = threadIdx.x;
  const int tile_p = blockIdx.x / tiles_q, tile_q = blockIdx.x - tile_p * tiles_q;
  const int p0 = tile_p * conv2d_direct_tile_p, q0 = tile_q * conv2d_direct_tile_q;
  const int k0 = blockIdx.y * conv2d_direct_tile_k;
  const int pl = tid / conv2d_direct_tile_q, ql = tid % conv2d_direct_tile_q;
  const int ih0 = p0 * a.stride_h - a.pad_h, iw0 = q0 * a.stride_w - a.pad_w;

  for (int n = blockIdx.z; n < a.n; n += gridDim.z) {
    float acc[conv2d_direct_tile_k] = {};
    for (int c0 = 0; c0 < a.c; c0 += channels_per_stage) {
      const int cn = min(channels_per_stage, a.c - c0);
      __syncthreads();  // everyone is done with the previous stage
      for (int idx = tid; idx < cn * patch_size; idx += conv2d_direct_threads) {
        const int ci = idx / patch_size;
        const int rem = idx - ci * patch_size;
        const int i = rem / shape.cols, j = rem - (rem / shape.cols) * shape.cols;
        const int ih = ih0 + i, iw = iw0 + j;
        const bool inside = ih >= 0 && ih < a.h && iw >= 0 && iw < a.w;
        patch[idx] = inside ? to_compute(a.x[((n * a.c + c0 + ci) * a.h + ih) * a.w + iw]) : 0.0f;
      }
      for (int idx = tid; idx < cn * a.rs * conv2d_direct_tile_k; idx += conv2d_direct_threads) {
        const int kk = idx % conv2d_direct_tile_k;
        const int t = idx / conv2d_direct_tile_k;  // ci * RS + rs
        const int ci = t / a.rs, rs = t - (t / a.rs) * a.rs;
        const int k = k0 + kk;
        weights[idx] = k < a.k ? to_compute(a.wt[(k * a.c + c0 + ci) * a.rs + rs]) : 0.0f;
      }
      __syncthreads();
      for (int ci = 0; ci < cn; ++ci) {
        const float* in = patch + ci * patch_size + pl * a.stride_h * shape.cols + ql * a.stride_w;
        const float4* wt = reinterpret_cast<const float4*>(weights + ci * a.rs * conv2d_direct_tile_k);
        for (int r = 0; r < a.r; ++r) {
          for (int s = 0; s < a.s; ++s) {
            const float v = in[r * a.dilation_h * shape.cols + s * a.dilation_w];
            const float4* wv = wt + (r * a.s + s) * (conv2d_direct_tile_k / 4);
#pragma unroll
            for (int k4 = 0; k4 < conv2d_direct_tile_k / 4; ++k4) {
              const float4 w4 = wv[k4];
              acc[4 * k4 + 0] = fmaf(v, w4.x, acc[4 * k4 + 0]);
              acc[4 * k4 + 1] = fmaf(v, w4.y, acc[4 * k4 + 1]);
              acc[4 * k4 + 2] = fmaf(v, w4.z, acc[4 * k4 + 2]);
              acc[4 * k4 + 3] = fmaf(v, w4.w, acc[4 * k4 + 3]);
            }
          }
        }
      }
    }
    const int oh = p0 + pl, ow = q0 + ql;
    if (oh < a.p && ow < a.q) {
      const std::int64_t row = (static_cast<std::int64_t>(n) * a.p + oh) * a.q + ow;
#pragma unroll
      for (int kk = 0; kk < conv2d_direct_tile_k; ++kk) {
        const int k = k0 + kk;
        if (k < a.k) {
          const float b = a.bias ? to_compute(a.bias[k]) : 0.0f;
          a.y[((n * a.k + k) * a.p + oh) * a.q + ow] = from_compute<T>(ep(acc[kk] + b, row, std::int64_t{k}));
        }
      }
    }
  }
}

}  // namespace kf::detail
