// SPDX-License-Identifier: Apache-2.0
// Gradient step 6 -- the filter gradient (wgrad) of an exact-fp32 NCHW 3x3
// stride-1 layer by Winograd F(2x2, 3x3), the forward's transforms transposed
// (winograd_transforms.hpp):
//
//   dw[k][c] = G^T [ sum over tiles t of (A dy_t A^T) (.) (B^T x_t B) ] G,
//
// t running over the 2 x 2 blocks of outputs of every image, x_t the 4 x 4
// input tile the forward reads for block t, dy_t the block's output gradients
// (0 past P x Q). Host side: the plan (wgrad_simt_plan.hpp) and the launch
// (src/conv2d/backward_filter.cu).
//
// What changes from step 5 (the direct implicit GEMM), and why it should be
// faster where the channels are many: per (k, c) pair and block, 16 products
// of transformed values instead of 36 of direct ones (2.25x fewer), at the
// price of three passes' traffic:
//  1. x's transform V[b][c][t], the forward's own pass (06_winograd.cuh:
//     conv2d_winograd_input);
//  2. dy's transform U[b][k][t] = (A dy_t A^T)[b] (conv2d_wgrad_winograd_dy,
//     through the ReLU mask where the forward fused one);
//  3. the 16 products M[b] (K x C) = U[b] V[b]^T, reduced over t: step 5's tile
//     core (tile_product: 64 x 128 tiles, 16 tiles t a step), its operands
//     plain t-contiguous rows, grid z = the position and the slice of t
//     (plan_conv2d_wgrad_winograd), each slice's 16 K x C sums to a slab;
//  4. the slabs summed in order and dw = G^T M G (conv2d_wgrad_winograd_output).
// Accuracy: the transforms only add, subtract and halve (G's 1/2 is exact), so
// each U, V and dw entry carries a few roundings beside the t-long fp32 sums;
// the error is bounded by the Winograd error scale of the transposed
// transforms, E = |G^T| (sum over t of (|A| |dy_t| |A^T|) (.) (|B^T| |x_t| |B|)) |G|.
// Not yet run on a GPU: kept out of main until it has (a patch series of 2026-12-04).
#pragma once

#include "../06_winograd.cuh"
#include "../winograd_transforms.hpp"
#include "05_wgrad_simt_fp32.cuh"

namespace kf::detail {

/// U[b][k][t] = (A dy_t A^T)[b] for every (n, k, th, tw), tw fastest; dy_t the
/// 2 x 2 block at (2 th, 2 tw) of image n, channel k, read through the mask.
template <int Unused = 0>  // a template: compiled where a launcher instantiates it
KF_KERNEL void __launch_bounds__(winograd_transform_block)
    conv2d_wgrad_winograd_dy(conv2d_winograd_args wa, conv2d_dy_reader<float> dy, float* __restrict__ u_dy) {
  const conv2d_args<float>& a = wa.a;
  const int total = a.n * a.k * wa.tiles_h * wa.tiles_w;  // < tiles * K < 2^31: checked by the launcher
  const std::size_t plane = static_cast<std::size_t>(a.k) * wa.tiles_ld;
  for (int idx = blockIdx.x * winograd_transform_block + threadIdx.x; idx < total;
       idx += gridDim.x * winograd_transform_block) {
    int rest, tw, th, n, k;
    wa.div_tiles_w.divmod(idx, rest, tw);
    wa.div_tiles_h.divmod(rest, rest, th);
    wa.div_k.divmod(rest, n, k);
    const long long channel = (static_cast<long long>(n) * a.k + k) * a.pq;
    float g[2][2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int p = th * winograd_tile + i, q = tw * winograd_tile + j;
        g[i][j] = p < a.p && q < a.q ? dy(channel + static_cast<long long>(p) * a.q + q) : 0.0f;
      }
    }
    float u[winograd_positions];
    winograd_dy_transform(g, u);
    const int t = (n * wa.tiles_h + th) * wa.tiles_w + tw;
    float* out = u_dy + static_cast<std::size_t>(k) * wa.tiles_ld + t;
#pragma unroll
    for (int b = 0; b < winograd_positions; ++b) out[b * plane] = u[b];
  }
}

/// One CTA: position b's K x C tile (blockIdx.y: 64 output channels, blockIdx.x:
/// 128 input channels) over tiles [slice slice_tiles, + slice_tiles), b =
/// blockIdx.z % 16, slice = blockIdx.z / 16; to slabs + (slice 16 + b) K C.
KF_KERNEL void __launch_bounds__(conv2d_wgrad_simt_threads, conv2d_wgrad_simt_blocks_per_sm)
    conv2d_wgrad_winograd_gemm(conv2d_winograd_args wa, const float* __restrict__ u_dy, float* __restrict__ slabs,
                               int slice_tiles) {
  using namespace wgrad_simt;
  __shared__ __align__(16) smem s;
  const int tid = static_cast<int>(threadIdx.x);
  const int b = static_cast<int>(blockIdx.z) % winograd_positions;
  const int slice = static_cast<int>(blockIdx.z) / winograd_positions;
  const int k0 = static_cast<int>(blockIdx.y) * bk, c0 = static_cast<int>(blockIdx.x) * bt;
  const int begin = slice * slice_tiles;
  const int end = static_cast<int>(min(static_cast<long long>(wa.tiles), static_cast<long long>(begin) + slice_tiles));
  struct loader_t {
    float a[k_loads], b[t_loads];
    const float* u_rows;                 // U[b] from row k0 + row: rows 16 apart
    const float* v_rows;                 // V[b] from row c0 + row
    int ld, end, pixel, k_left, c_left;  // rows of A / B left from row `row` on (0 or less: none)
    __device__ __forceinline__ void load(int step_begin) {
      const int t = step_begin + pixel;
      const bool live = t < end;
#pragma unroll
      for (int u = 0; u < k_loads; ++u) {
        a[u] = live && 16 * u < k_left ? __ldg(u_rows + static_cast<long long>(16 * u) * ld + t) : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < t_loads; ++u) {
        this->b[u] = live && 16 * u < c_left ? __ldg(v_rows + static_cast<long long>(16 * u) * ld + t) : 0.0f;
      }
    }
  } loader;
  const int row = tid / bp;
  loader.ld = wa.tiles_ld;
  loader.end = end;
  loader.pixel = tid % bp;
  loader.k_left = wa.a.k - (k0 + row);
  loader.c_left = wa.a.c - (c0 + row);
  loader.u_rows = u_dy + (static_cast<long long>(b) * wa.a.k + k0 + row) * wa.tiles_ld;
  loader.v_rows = wa.v + (static_cast<long long>(b) * wa.a.c + c0 + row) * wa.tiles_ld;

  float acc[4][8] = {};
  tile_product(loader, s, begin, end, acc);
  const long long plane = static_cast<long long>(wa.a.k) * wa.a.c;
  store_tile(acc, slabs + (static_cast<long long>(slice) * winograd_positions + b) * plane, wa.a.k, wa.a.c, wa.a.c, k0,
             c0);
}

/// dw[k][c] = G^T M G, M[b] the sum of the `split` slabs' position-b values in
/// slab order (one thread per (k, c), c fastest); dw is K x C x 3 x 3.
template <int Unused = 0>
KF_KERNEL void __launch_bounds__(winograd_transform_block)
    conv2d_wgrad_winograd_output(int k_channels, int c_channels, const float* __restrict__ slabs, int split,
                                 float* __restrict__ dw) {
  const int total = k_channels * c_channels;  // < 2^31: checked by the launcher
  const long long plane = static_cast<long long>(total);
  for (int idx = blockIdx.x * winograd_transform_block + threadIdx.x; idx < total;
       idx += gridDim.x * winograd_transform_block) {
    float m[winograd_positions];
#pragma unroll
    for (int b = 0; b < winograd_positions; ++b) {
      float sum = 0.0f;
      for (int slice = 0; slice < split; ++slice) sum += slabs[(slice * winograd_positions + b) * plane + idx];
      m[b] = sum;
    }
    float g[3][3];
    winograd_filter_gradient_transform(m, g);
    float* out = dw + static_cast<long long>(idx) * 9;
#pragma unroll
    for (int r = 0; r < 3; ++r) {
#pragma unroll
      for (int s = 0; s < 3; ++s) out[3 * r + s] = g[r][s];
    }
  }
}

}  // namespace kf::detail
