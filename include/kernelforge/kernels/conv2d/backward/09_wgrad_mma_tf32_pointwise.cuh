// SPDX-License-Identifier: Apache-2.0
// Gradient step 9 -- the TF32 filter gradient of a pointwise NHWC float layer
// (1x1, stride 1, no padding) on mma.sync, each operand read once. Device code,
// sm_90a only (TMA and the stage ring). Host side: src/conv2d/backward_pointwise_sm90a.cu;
// plan: wgrad_pointwise_plan.hpp.
//
//   dw (K x C) = dy^T (K x NPQ) * x (NPQ x C), reduced over the N P Q pixels.
//
// What changes from steps 2 and 4 and why it is faster: in NHWC both operands
// hold the reduction's index -- the pixel -- as their slow one ([pixel][K],
// [pixel][C]), and TF32 wgmma reads only k-major operands from shared memory
// (no transpose bit for 32-bit types). So step 2 (kf::matmul) repacks both
// into k-major copies, and step 4 transposes dy in a pre-pass: each moves an
// operand through DRAM once more than the product needs (the 1x1 C256 K64
// layer's dw: 0.74 and 0.57 of cuDNN). mma.sync takes its fragments from
// registers, which the threads load from any layout, so here:
//  * TMA lands 32 pixels of dy (two 32-channel boxes) and x (eight) a stage,
//    128-byte swizzled, and 8 consumer warps multiply them where they lie:
//    each warp owns 32 output channels x 64 input channels of the 64 x 256
//    tile, 16 mma.m16n8k8 a k-step of 8 pixels.
//  * The fragments come in 16-byte loads, conflict-free: the product's k order
//    (which pixel is k-index t) and its rows' and columns' order (which
//    channel is fragment row g) are the kernel's to choose, as long as both
//    operands agree and the stores undo them. With k-index t = pixel 2t and
//    t + 4 = pixel 2t + 1, and channel 4g + i for row g of the i-th fragment,
//    lane (g, t)'s four values of a fragment set are one 16-byte chunk
//    (channels 4g..4g+3) of pixel row 2t or 2t + 1, and the 8 lanes of a
//    quarter warp read chunks g ^ 2t: 8 distinct chunks of the 128-byte swizzle.
//    6 loads a k-step feed 16 products (a warp's 32 x 64).
//  * The pixels are split over the SMs (a grid of one wave) and the slices'
//    fp32 slabs summed by the CTAs themselves (wgrad_wgmma/slab_sum.cuh,
//    sum_tile_slabs with 8 lanes a quad), or by the split-k reduction where the launch
//    cannot be cooperative.
//  * Under the forward's ReLU the mask is read beside dy (relu_y's boxes, the
//    same offsets) and applied to the fragments: no masked copy of dy.
// Operands go to the tensor cores as loaded, truncated to TF32 by them (as
// wgmma's shared-memory operands are: load_chunk says why not rounded). Bound:
// the stream of x and dy (128 MB for N32 C256 56x56 K64), not the products.
// Figures: benchmarks/tuning/conv2d.md, "Gradient step 9".
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../../arch/guards.cuh"
#include "../../arch/mma_sm80.cuh"  // mma_m16n8k8_tf32
#include "../../arch/pipeline_sm90.cuh"
#include "../../arch/smem.cuh"
#include "../../arch/tma_sm90.cuh"
#include "../../common/kernel.cuh"
#include "wgrad_pointwise_plan.hpp"
#include "wgrad_wgmma/cta.cuh"       // geometry, cta_tile, cta_start: steps 3 and 4's
#include "wgrad_wgmma/slab_sum.cuh"  // sum_tile_slabs with 8 lanes a quad

namespace kf::detail {
namespace conv2d_wgrad_pointwise {

inline constexpr int box_channels = 32;  ///< one 128-byte swizzled row of floats
inline constexpr int step_pixels = static_cast<int>(conv2d_wgrad_pointwise_step_pixels);
inline constexpr int box_bytes = step_pixels * box_channels * 4;        ///< 4 KiB: 32 pixel rows of 128 bytes
inline constexpr int bm = static_cast<int>(conv2d_wgrad_pointwise_bm);  ///< output channels a tile
inline constexpr int bn = static_cast<int>(conv2d_wgrad_pointwise_bn);  ///< input channels a tile
inline constexpr int dy_boxes = bm / box_channels;                      // 2
inline constexpr int x_boxes = bn / box_channels;                       // 8
inline constexpr int consumer_warps = 8;                                ///< 2 along K x 4 along C, 32 x 64 outputs each
inline constexpr int consumer_threads = consumer_warps * 32;
inline constexpr int threads = consumer_threads + 32;  ///< and one producer warp (its lane 0 issues the copies)
inline constexpr int warp_m = bm / 2, warp_n = bn / 4;
inline constexpr int m_frags = warp_m / 16, n_frags = warp_n / 8;  // 2 x 8 mma.m16n8k8 a k-step
inline constexpr int k_steps = step_pixels / 8;
inline constexpr int ring_bytes = 200 * 1024;  ///< the stages' shared memory
/// The named barrier of the consumers' slab sums (0 is __syncthreads').
inline constexpr int consumers_barrier = 1;
/// Threads that share a quad when the slabs are summed (sum_tile_slabs' Lanes).
inline constexpr int slab_lanes = 8;
static_assert(m_frags == 2 && n_frags == 8, "a lane's 16-byte chunk: 2 m-fragments x 2 rows, 4 n-fragments");
static_assert(warp_m == box_channels && warp_n == 2 * box_channels, "a warp reads one dy box and two x boxes");

/// A stage: dy's boxes, x's boxes, and -- masked -- relu_y's boxes of dy's channels.
template <bool Masked>
struct shape {
  static constexpr int dy_bytes = dy_boxes * box_bytes;
  static constexpr int x_bytes = x_boxes * box_bytes;
  static constexpr int stage_bytes = dy_bytes + x_bytes + (Masked ? dy_bytes : 0);
  static constexpr int stages = ring_bytes / stage_bytes;
  /// Stages from the first 1024-byte boundary (the swizzle is a function of the address bits).
  static constexpr int smem_bytes = 1024 + stages * stage_bytes + stage_ring_barrier_bytes(stages);
  static_assert(stages >= 4, "a ring of at least 4 stages");
  static_assert(smem_bytes <= 227 * 1024, "the stages fit the shared-memory opt-in");
};

/// What the kernel needs besides the tensor maps (filled by backward_pointwise_sm90a.cu): the
/// layer and plan as steps 3 and 4 read them (k, c, rsc = c, tiles_k, tiles_c, patches, patches_per_split), and:
struct params : conv2d_wgrad::geometry {
  float* dw = nullptr;           ///< K x C, written where unsplit or the slabs are summed here
  float* partial = nullptr;      ///< split: slab z (K x C fp32) at partial + z K C; else nullptr
  unsigned* arrivals = nullptr;  ///< split and cooperative: a zeroed counter a tile; else nullptr
  float threshold = 0.0f;        ///< masked: dy counts where relu_y > threshold
};

#if KF_ARCH_SM90A
/// 16 bytes of a swizzled box: 4 consecutive channels of one pixel row, as the
/// tensor cores read them -- fp32 bits whose low 13 the TF32 product ignores
/// (truncation, as wgmma reads TF32 from shared memory). Rounding them first
/// (cvt.rna.tf32.f32) costs ~5 instructions a value on sm_90: 480 of a k-loop
/// stage's 616 instructions a warp, which then ran the kernel at 2.27 TB/s.
__device__ __forceinline__ uint4 load_chunk(std::uint32_t address) {
  const float4 v = load_shared_v4(address);
  return make_uint4(__float_as_uint(v.x), __float_as_uint(v.y), __float_as_uint(v.z), __float_as_uint(v.w));
}

/// load_chunk of dy with relu_y's chunk at the same offset: 0 where relu_y <= threshold (the reader's mask).
__device__ __forceinline__ uint4 load_masked_chunk(std::uint32_t dy, std::uint32_t y, float threshold) {
  const float4 v = load_shared_v4(dy);
  const float4 m = load_shared_v4(y);
  return make_uint4(m.x <= threshold ? 0u : __float_as_uint(v.x), m.y <= threshold ? 0u : __float_as_uint(v.y),
                    m.z <= threshold ? 0u : __float_as_uint(v.z), m.w <= threshold ? 0u : __float_as_uint(v.w));
}
#endif  // KF_ARCH_SM90A

}  // namespace conv2d_wgrad_pointwise

/// dw = dy^T x of a pointwise layer for one 64 x 256 output tile and one slice
/// of the pixels per CTA: blockIdx.x the tile (K tile fastest, then C tile),
/// blockIdx.y the slice (32-pixel patches [y pps, min((y + 1) pps, patches))).
/// map_dy: dy as (k, pixel), map_x: x as (c, pixel), map_y: relu_y as dy
/// (Masked; else unused): boxes of 32 channels x 32 pixels, 128-byte swizzled,
/// zero fill past the tensors.
template <bool Masked>
KF_KERNEL void __launch_bounds__(conv2d_wgrad_pointwise::threads, 1)
    conv2d_wgrad_pointwise_kernel(const __grid_constant__ CUtensorMap map_dy, const __grid_constant__ CUtensorMap map_x,
                                  const __grid_constant__ CUtensorMap map_y, const conv2d_wgrad_pointwise::params prm) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // TMA and the ring: this file is compiled for sm_90a alone
#elif KF_ARCH_SM90A
  using namespace conv2d_wgrad_pointwise;
  using sh = shape<Masked>;
  constexpr int kStages = sh::stages;
  extern __shared__ unsigned char conv2d_wgrad_pointwise_smem[];
  // The stages from a 1024-byte boundary, the ring after them; every consumer warp releases each stage.
  const conv2d_wgrad::cta_start<kStages, sh::stage_bytes, threads> cta(conv2d_wgrad_pointwise_smem, false, &map_dy,
                                                                       &map_x, consumer_warps);
  const std::uint32_t base = cta.base;
  const stage_ring<kStages>& ring = cta.ring;
  const conv2d_wgrad::cta_tile tile = conv2d_wgrad::cta_tile::of<bm, bn, 1>(prm);
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;

  if (warp == consumer_warps) {
    // ---------------------------------------------------------------- producer
    if (lane == 0) {
      if constexpr (Masked) tma_prefetch_descriptor(&map_y);
      // Boxes wholly past K or C are not loaded: the rows and columns they
      // would feed are never stored. The rest land whole (TMA zero-fills
      // channels past K or C and pixels past N P Q).
      const int dy_live = min(dy_boxes, (prm.k - tile.k0 + box_channels - 1) / box_channels);
      const int x_live = min(x_boxes, (prm.c - tile.c0 + box_channels - 1) / box_channels);
      const unsigned stage_tx = static_cast<unsigned>(((Masked ? 2 : 1) * dy_live + x_live) * box_bytes);
      ring_position<kStages> at;
      for (int g = tile.first; g < tile.end; ++g) {
        const int pixel = g * step_pixels;
        const std::uint32_t full = ring.producer_acquire(at, stage_tx);
        const std::uint32_t stage = base + at.stage * sh::stage_bytes;
        for (int j = 0; j < dy_live; ++j) {
          tma_load_2d(stage + j * box_bytes, &map_dy, tile.k0 + j * box_channels, pixel, full);
        }
        for (int j = 0; j < x_live; ++j) {
          tma_load_2d(stage + sh::dy_bytes + j * box_bytes, &map_x, tile.c0 + j * box_channels, pixel, full);
        }
        if constexpr (Masked) {
          for (int j = 0; j < dy_live; ++j) {
            tma_load_2d(stage + sh::dy_bytes + sh::x_bytes + j * box_bytes, &map_y, tile.k0 + j * box_channels, pixel,
                        full);
          }
        }
        at.advance();
      }
    }
    return;
  }

  // ---------------------------------------------------------------- consumers
  // Warp (wm, wn): output channels 32 wm.. (dy box wm) x input channels 64 wn.. (x boxes 2 wn, 2 wn + 1).
  const int wm = warp % 2, wn = warp / 2;
  const int g = lane / 4, t = lane % 4;
  // Lane (g, t)'s chunk g of pixel rows 2t and 2t + 1 of a k-step's 8 (k-step kk: 1024 bytes further; the
  // swizzle, chunk ^ row % 8, is the same in each).
  const std::uint32_t row0 = static_cast<std::uint32_t>(2 * t * 128 + ((g ^ (2 * t)) << 4));
  const std::uint32_t row1 = static_cast<std::uint32_t>((2 * t + 1) * 128 + ((g ^ (2 * t + 1)) << 4));
  const std::uint32_t a_box = static_cast<std::uint32_t>(wm * box_bytes);
  const std::uint32_t b_box = static_cast<std::uint32_t>(sh::dy_bytes + 2 * wn * box_bytes);
  float d[m_frags][n_frags][4];
#pragma unroll
  for (int mf = 0; mf < m_frags; ++mf) {
#pragma unroll
    for (int nf = 0; nf < n_frags; ++nf) {
#pragma unroll
      for (int i = 0; i < 4; ++i) d[mf][nf][i] = 0.0f;
    }
  }
  ring_position<kStages> at;
  for (int step = tile.first; step < tile.end; ++step) {
    ring.consumer_wait(at);
    const std::uint32_t stage = base + at.stage * sh::stage_bytes;
#pragma unroll
    for (int kk = 0; kk < k_steps; ++kk) {
      const std::uint32_t a = stage + a_box + kk * 1024, b = stage + b_box + kk * 1024;
      // A = dy^T: chunk (x, y, z, w) = rows (g, g + 8) of m-fragment 0, then of m-fragment 1.
      uint4 a0, a1;
      if constexpr (Masked) {
        const float threshold = prm.threshold;
        a0 = load_masked_chunk(a + row0, a + sh::dy_bytes + sh::x_bytes + row0, threshold);
        a1 = load_masked_chunk(a + row1, a + sh::dy_bytes + sh::x_bytes + row1, threshold);
      } else {
        a0 = load_chunk(a + row0);
        a1 = load_chunk(a + row1);
      }
      const std::uint32_t af[m_frags][4] = {{a0.x, a0.y, a1.x, a1.y}, {a0.z, a0.w, a1.z, a1.w}};
      // B = x: chunk element f = column g of n-fragment 4 h + f (h: the warp's first or second x box).
      std::uint32_t bf[n_frags][2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint4 b0 = load_chunk(b + h * box_bytes + row0);
        const uint4 b1 = load_chunk(b + h * box_bytes + row1);
        bf[4 * h][0] = b0.x, bf[4 * h][1] = b1.x;
        bf[4 * h + 1][0] = b0.y, bf[4 * h + 1][1] = b1.y;
        bf[4 * h + 2][0] = b0.z, bf[4 * h + 2][1] = b1.z;
        bf[4 * h + 3][0] = b0.w, bf[4 * h + 3][1] = b1.w;
      }
#pragma unroll
      for (int mf = 0; mf < m_frags; ++mf) {
#pragma unroll
        for (int nf = 0; nf < n_frags; ++nf) mma_m16n8k8_tf32(d[mf][nf], af[mf], bf[nf]);
      }
    }
    __syncwarp();
    if (lane == 0) ring.release(at.stage);
    at.advance();
  }

  // Accumulator i of (mf, nf): row g + 8 (i / 2) -> output channel 32 wm + 4 g + 2 mf + i / 2; column
  // 2 t + i % 2 of n-fragment 4 h + f -> input channel 64 wn + 32 h + 4 (2 t + i % 2) + f. So the four
  // n-fragments f of one (mf, i, h) are 4 consecutive channels: one 16-byte store.
  const bool split = prm.partial != nullptr;
  float* const out = split ? prm.partial + static_cast<long long>(blockIdx.y) * prm.k * prm.c : prm.dw;
#pragma unroll
  for (int mf = 0; mf < m_frags; ++mf) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int k = tile.k0 + warp_m * wm + 4 * g + 2 * mf + i / 2;
      if (k >= prm.k) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int c = tile.c0 + warp_n * wn + box_channels * h + 4 * (2 * t + i % 2);
        if (c >= prm.c) continue;  // C is a multiple of 4: the quad is whole
        float* const o = out + static_cast<long long>(k) * prm.c + c;
        const float4 v = make_float4(d[mf][4 * h][i], d[mf][4 * h + 1][i], d[mf][4 * h + 2][i], d[mf][4 * h + 3][i]);
        if (split) {
          *reinterpret_cast<float4*>(o) = v;  // the slabs: 16-byte aligned
        } else {
          o[0] = v.x, o[1] = v.y, o[2] = v.z, o[3] = v.w;  // dw: 4-byte aligned
        }
      }
    }
  }
  if (prm.arrivals != nullptr) {  // the split's slabs, summed by the tile's slices together
    conv2d_wgrad::sum_tile_slabs<float, bm, bn, 1, slab_lanes>(prm, tile, prm.partial, prm.arrivals + blockIdx.x,
                                                               prm.dw, false, static_cast<int>(threadIdx.x),
                                                               consumer_threads, consumers_barrier);
  }
#endif
}

}  // namespace kf::detail
