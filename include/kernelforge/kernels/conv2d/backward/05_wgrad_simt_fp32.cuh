// SPDX-License-Identifier: Apache-2.0
// Gradient step 5 -- the filter gradient (wgrad) of an exact-fp32 NCHW layer
// as an implicit GEMM on the CUDA cores (every architecture; fp32 FFMA, so the
// result is exact fp32 sums like step 2's, in another order). Host side: the
// plan (wgrad_simt_plan.hpp) and the launch (src/conv2d/backward_filter_fp32.cu).
//
//   dw (K x CRS, KCRS order) = dy (K x NPQ) * im2col(x)^T (NPQ x CRS),
//   reduced over the N P Q output pixels.
//
// What changes from step 2 (dy transposed into a K x NPQ copy, x's im2col
// written to memory as a CRS x NPQ matrix, then kf::matmul) and why it is
// faster, on the N32 C64 56x56 3x3 layer (K = 64, CRS = 576, NPQ = 100,352):
//  * No copies. Both operands are read where they lie: dy's rows (one output
//    channel, pixels contiguous within an image) and x's im2col rows, whose
//    element (c r s, pixel n p q) is x[n][c][p sh + r dh - ph][q sw + s dw - pw]
//    or 0 in the padding. Step 2 wrote and read back 231 MB of im2col and
//    26 MB of dy^T for 7.4 GFLOP.
//  * A tile that fits dw. dw is small (64 x 576) and its reduction long:
//    kf::matmul's fp32 tiles are 128 x 256, half empty on K = 64, and its split
//    stops at 64 slices. Here a CTA owns 64 output channels x 128 taps, and the
//    pixels are cut into slices (blockIdx.z) so that the grid fills the GPU
//    (plan_conv2d_wgrad_simt): 5 tiles x 52 slices on that layer. Each slice
//    writes its fp32 tile to a slab; the shared deterministic reduction
//    (common/split_k_reduce.cuh) sums the slabs in order.
//  * Per step of 16 pixels, each thread loads 4 values of dy and 8 of x's
//    im2col (its pixel's (n, p, q) found once a step; its 8 taps' offsets into
//    x and their (r, s) reach found once a CTA), stores them to shared memory
//    (two buffers: one barrier a step, the next step's loads in flight during
//    this one's products) and multiplies a 4 x 8 outer product per pixel: 512
//    FFMAs against 48 shared loads of 16 bytes (SASS, sm_90: the step's loop is
//    806 instructions, 512 of them FFMA; 121 registers, no spills).
// H200 (2026-12-04, through torch, paired with cuDNN without TF32): N32 C64
// 56x56 3x3 1.12x cuDNN, the 7x7 stem 1.02x, the 1x1 C256 -> K64 2.80x, C128
// 28x28 0.48x (cuDNN's Winograd: 62 TFLOP/s of direct-convolution flops, past
// what FMA reaches); at K = 256 step 2 is faster, so best keeps it there
// (wgrad_simt_plan.hpp). The steps before: benchmarks/tuning/conv2d.md,
// "Gradient step 5".
#pragma once

#include "../../common/kernel.cuh"
#include "../args.cuh"
#include "01_naive.cuh"
#include "wgrad_simt_plan.hpp"

namespace kf::detail {

namespace wgrad_simt {

inline constexpr int bk = static_cast<int>(conv2d_wgrad_simt_block_k);      // 64 output channels
inline constexpr int bt = static_cast<int>(conv2d_wgrad_simt_block_taps);   // 128 taps (c, r, s)
inline constexpr int bp = static_cast<int>(conv2d_wgrad_simt_step_pixels);  // 16 pixels a step
inline constexpr int threads = conv2d_wgrad_simt_threads;
static_assert(threads == bp * 16, "256 threads: 16 pixels x 16 groups of rows");
inline constexpr int k_loads = bk / 16;  // dy values a thread loads a step (4)
inline constexpr int t_loads = bt / 16;  // x values (8)
// Shared rows padded to 4 floats more than a multiple of 32: the 16 pixels of
// a warp's stores fall 2 to a bank, and every row stays 16-byte aligned for
// the float4 loads of the products.
inline constexpr int k_stride = bk + 4;
inline constexpr int t_stride = bt + 4;

struct smem {
  float dy[2][bp][k_stride];  // [buffer][pixel][output channel]
  float x[2][bp][t_stride];   // [buffer][pixel][tap]
};

/// One buffer's products: acc[r][c] += A[i][4 tm + r] B[i][...] over its 16
/// pixels i, B columns 4 tn + c (c < 4) and 64 + 4 tn + c - 4; tm = tid / 16,
/// tn = tid % 16. Step 5's and step 6's main loops share it.
__device__ __forceinline__ void buffer_product(const float (&a)[bp][k_stride], const float (&b)[bp][t_stride],
                                               float (&acc)[4][8]) {
  const int tid = static_cast<int>(threadIdx.x);
  const int tm = tid / 16, tn = tid % 16;
#pragma unroll
  for (int i = 0; i < bp; ++i) {
    const float4 d = *reinterpret_cast<const float4*>(&a[i][4 * tm]);
    const float4 x0 = *reinterpret_cast<const float4*>(&b[i][4 * tn]);
    const float4 x1 = *reinterpret_cast<const float4*>(&b[i][64 + 4 * tn]);
    const float dv[4] = {d.x, d.y, d.z, d.w};
    const float xv[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
      for (int c = 0; c < 8; ++c) acc[r][c] = fmaf(dv[r], xv[c], acc[r][c]);
    }
  }
}

/// The reduction of one CTA's 64 x 128 tile over the pixels [begin, end), 16 a
/// step: `load(step_begin, a, b)` (step_begin <= end) fills a (the 4 values of the tile's A rows
/// `row + 16 u` at pixel `step_begin + pixel`, row = tid / 16, pixel = tid % 16)
/// and b (8 values of its B rows), 0 past `end` or the rows; they go to shared
/// memory through two buffers (one barrier a step, the next step's loads in
/// flight during this one's products); each thread sums a 4 x 8 outer product
/// per pixel into acc (A rows 4 tm + i, B rows 4 tn + j and 64 + 4 tn + j).
/// Shared by step 5 (A = dy, B = x's im2col, read in place) and step 6
/// (Winograd: A and B the transformed dy and x of one position).
template <class Load>
__device__ __forceinline__ void tile_product(const Load& load, smem& s, int begin, int end, float (&acc)[4][8]) {
  const int tid = static_cast<int>(threadIdx.x);
  const int pixel = tid % bp, row = tid / bp;
  float a_next[k_loads], b_next[t_loads];
  auto store = [&](int buffer) {
#pragma unroll
    for (int u = 0; u < k_loads; ++u) s.dy[buffer][pixel][row + 16 * u] = a_next[u];
#pragma unroll
    for (int u = 0; u < t_loads; ++u) s.x[buffer][pixel][row + 16 * u] = b_next[u];
  };
  const int steps = end > begin ? (end - begin + bp - 1) / bp : 0;
  if (steps > 0) {
    load(begin, a_next, b_next);
    store(0);
  }
  __syncthreads();
  for (int step = 0; step < steps; ++step) {
    const int buffer = step & 1;
    // The next step's loads with no branch around them (after the last step they
    // start at `end` and read nothing), so that the compiler cannot sink them
    // below the products; likewise the store to the idle buffer.
    load(step + 1 < steps ? begin + (step + 1) * bp : end, a_next, b_next);
    buffer_product(s.dy[buffer], s.x[buffer], acc);
    store(buffer ^ 1);
    __syncthreads();
  }
}

/// acc (tile_product's) to out[i * ld + j] for the tile's rows i = a0 + 4 tm + r
/// below rows_a and columns j below rows_b: rows of 16 threads store 4
/// consecutive columns each.
__device__ __forceinline__ void store_tile(const float (&acc)[4][8], float* out, int rows_a, int rows_b, long long ld,
                                           int a0, int b0) {
  const int tid = static_cast<int>(threadIdx.x);
  const int tm = tid / 16, tn = tid % 16;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int i = a0 + 4 * tm + r;
    if (i >= rows_a) continue;
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const int j = b0 + (c < 4 ? 4 * tn + c : 64 + 4 * tn + c - 4);
      if (j < rows_b) out[static_cast<long long>(i) * ld + j] = acc[r][c];
    }
  }
}

}  // namespace wgrad_simt

/// One CTA: dw's tile (blockIdx.y: 64 output channels, blockIdx.x: 128 taps)
/// over the pixels [blockIdx.z slice_pixels, + slice_pixels) of the N P Q; to
/// out + blockIdx.z K CRS (a split's slab, or dw itself unsplit).
KF_KERNEL void __launch_bounds__(conv2d_wgrad_simt_threads, conv2d_wgrad_simt_blocks_per_sm)
    conv2d_wgrad_simt_fp32(conv2d_args<float> a, conv2d_dy_reader<float> dy, float* __restrict__ out,
                           int slice_pixels) {
  using namespace wgrad_simt;
  __shared__ __align__(16) smem s;
  const int tid = static_cast<int>(threadIdx.x);
  const int k0 = static_cast<int>(blockIdx.y) * bk, t0 = static_cast<int>(blockIdx.x) * bt;
  const int begin = static_cast<int>(blockIdx.z) * slice_pixels;
  const int end = static_cast<int>(min(static_cast<long long>(a.m), static_cast<long long>(begin) + slice_pixels));

  // ---- the loads: this thread's pixel of a step and rows of the tile
  const int pixel = tid % bp, row = tid / bp;  // rows row + 16 u
  // Its taps' offsets into an image of x and their reach (dh r - ph, dw s - pw);
  // taps past C R S reach nowhere (h_reach far below 0).
  int x_offset[t_loads], h_reach[t_loads], w_reach[t_loads];
#pragma unroll
  for (int u = 0; u < t_loads; ++u) {
    const int tap = t0 + row + 16 * u;
    h_reach[u] = -(1 << 29);
    w_reach[u] = 0;
    x_offset[u] = 0;
    if (tap < a.crs) {
      int c = 0, rs = 0, r = 0, sc = 0;
      a.div_rs.divmod(tap, c, rs);
      a.div_s.divmod(rs, r, sc);
      h_reach[u] = r * a.dilation_h - a.pad_h;
      w_reach[u] = sc * a.dilation_w - a.pad_w;
      x_offset[u] = c * a.hw + h_reach[u] * a.w + w_reach[u];  // within one image: the launcher's check
    }
  }
  const long long image_x = static_cast<long long>(a.c) * a.hw;
  const long long image_dy = static_cast<long long>(a.k) * a.pq;
  auto load = [&](int step_begin, float(&dy_next)[k_loads], float(&x_next)[t_loads]) {
    const int t = step_begin + pixel;
    const bool live = pixel < end - step_begin;  // t < end, without overflow at step_begin = end
    int n = 0, pq = 0, p = 0, q = 0;
    a.div_pq.divmod(live ? t : 0, n, pq);
    a.div_q.divmod(pq, p, q);
    const long long dy_at = n * image_dy + pq;
#pragma unroll
    for (int u = 0; u < k_loads; ++u) {
      const int k = k0 + row + 16 * u;
      dy_next[u] = live && k < a.k ? dy(dy_at + static_cast<long long>(k) * a.pq) : 0.0f;
    }
    const int hp = p * a.stride_h, wq = q * a.stride_w;
    const float* x_image = a.x + n * image_x + hp * a.w + wq;
#pragma unroll
    for (int u = 0; u < t_loads; ++u) {
      const int h = hp + h_reach[u], w = wq + w_reach[u];
      const bool inside = live && static_cast<unsigned>(h) < static_cast<unsigned>(a.h) &&
                          static_cast<unsigned>(w) < static_cast<unsigned>(a.w);
      x_next[u] = inside ? __ldg(x_image + x_offset[u]) : 0.0f;
    }
  };

  float acc[4][8] = {};
  tile_product(load, s, begin, end, acc);
  store_tile(acc, out + static_cast<long long>(blockIdx.z) * a.k * a.crs, a.k, a.crs, a.crs, k0, t0);
}

}  // namespace kf::detail
