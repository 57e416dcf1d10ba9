// SPDX-License-Identifier: Apache-2.0
// Which path computes conv2d's data gradient dx (src/conv2d/backward_data.cu,
// whose top of file describes the paths), and the filter its forward reads, as
// pure functions the CPU tests cover (tests/conv2d/dgrad_plan_cpu_test.cpp). No
// CUDA calls.
#pragma once

#include <cstddef>

#include "../../common/grid.hpp"
#include "../../common/host_device.hpp"
#include "../wgmma_plan.hpp"
#include "kernelforge/conv.hpp"

namespace kf::detail {

/// How dx is computed (the variants other than naive). A path that finds no
/// workspace falls to the next: gemm_col2im to the forward, the forward to naive.
enum class conv2d_dgrad_path {
  naive,        ///< padding past the filter's reach: the gradient's own naive kernel
  matmul,       ///< NHWC 1x1 at stride 1, unmasked: dx (NHW x C) = dy (NHW x K) * w (K x C), kf::matmul
  gemm_col2im,  ///< strided, few input channels (the RGB stem): dcol = dy * w, then its col2im sum
  forward,      ///< the forward convolution of dy (spread over a zero grid, masked) with the turned filter
};

/// Whether the forward that computes dx reads dy spread over a zero grid (and
/// masked) in a workspace: at stride > 1, or with the forward's ReLU mask.
inline bool conv2d_dgrad_spreads(const conv2d_params& p, bool relu) { return relu || p.stride_h > 1 || p.stride_w > 1; }

/// Whether dx takes gemm_col2im: a strided layer with few input channels (the
/// RGB stem), whose spread forward would multiply stride^2 zeros into a tile of
/// K = C outputs that is mostly padding. NHWC: C * element_bytes not a multiple
/// of 16 bytes (the wgmma forward's tiles read in place otherwise); NCHW: C <
/// 16 (the stem's fp32 dx took 8.9 ms through the spread forward on the H200,
/// against cuDNN's 0.26).
inline bool conv2d_dgrad_prefers_col2im(const conv2d_params& p, std::size_t element_bytes) {
  constexpr std::size_t few_nchw_channels = 16;
  if (p.stride_h == 1 && p.stride_w == 1) return false;
  return p.layout == conv2d_layout::nhwc ? (p.in_channels * element_bytes) % 16 != 0
                                         : p.in_channels < few_nchw_channels;
}

/// The most taps a parity class's sub-filter has along one dimension in
/// gradient steps 7 and 8 (their shared tiles hold 4 x 4), and the input
/// channels one CTA of each computes (step 7: up to 4, a float4 of the filter;
/// step 8: an n8 product).
inline constexpr int dgrad_parity_max_taps = 4;
inline constexpr std::size_t dgrad_parity_group = 4;
inline constexpr int dgrad_parity_mma_group = 8;

/// The layers steps 7 and 8 can split into parity classes: no dilation, R <= 4
/// stride_h and S <= 4 stride_w (sub-filters of at most 4 x 4 taps). Each rule
/// below adds its own grid's bounds.
inline bool conv2d_dgrad_parity_geometry_fits(const conv2d_params& p) {
  constexpr std::size_t taps = dgrad_parity_max_taps;
  return p.dilation_h == 1 && p.dilation_w == 1 && p.filter_height <= taps * p.stride_h &&
         p.filter_width <= taps * p.stride_w;
}

/// Whether step 8's grid, with `channels_per_group` input channels a CTA, fits:
/// at most 65,535 images (its z) and 65,535 classes x groups (its y: stride_h
/// stride_w classes times the groups).
inline bool conv2d_dgrad_parity_grid_fits(const conv2d_params& p, std::size_t channels_per_group) {
  return p.batch <= max_grid_yz && p.stride_h * p.stride_w * ceil_div(p.in_channels, channels_per_group) <= max_grid_yz;
}

/// Whether best's float NCHW dx of a gemm_col2im layer runs gradient step 7
/// instead (07_dgrad_parity_fp32.cuh: each parity class a stride-1 correlation
/// of dy with a small sub-filter, on the CUDA cores). Its grid: images on y
/// (at most 65,535), the classes on z heaviest first (at most 65,535), the
/// channel groups in x with the tiles.
inline bool conv2d_dgrad_parity_fits(const conv2d_params& p) {
  return p.layout == conv2d_layout::nchw && conv2d_dgrad_parity_geometry_fits(p) && p.batch <= max_grid_yz &&
         p.stride_h * p.stride_w <= max_grid_yz;
}

/// Whether best's NHWC dx of a gemm_col2im layer runs gradient step 8 instead
/// (08_dgrad_parity_mma.cuh: step 7's parity classes as mma.sync products; the
/// device must run sm_80 code, which the launcher checks): 16-bit elements, or
/// float under math_mode::tf32.
inline bool conv2d_dgrad_parity_mma_fits(const conv2d_params& p, std::size_t element_bytes, math_mode math) {
  const bool tensor_cores = element_bytes == 2 || (element_bytes == 4 && math == math_mode::tf32);
  return p.layout == conv2d_layout::nhwc && tensor_cores && conv2d_dgrad_parity_geometry_fits(p) &&
         conv2d_dgrad_parity_grid_fits(p, dgrad_parity_mma_group);
}

/// The geometry of one parity class along one dimension (host and device).
struct dgrad_parity_dim {
  int first = 0;   ///< r0 (or s0): the class's first tap
  int taps = 0;    ///< its taps, r0 + u stride < R (0: the class receives nothing)
  int offset = 0;  ///< e: dy index = class index + e - u
  int size = 0;    ///< the class's pixels along the dimension, ceil((H - a) / stride)
};

KF_HOST_DEVICE inline dgrad_parity_dim dgrad_parity_of(int a, int stride, int pad, int filter, int in) {
  dgrad_parity_dim d;
  d.first = (a + pad) % stride;
  d.taps = d.first < filter ? (filter - d.first + stride - 1) / stride : 0;
  d.offset = (a + pad - d.first) / stride;
  d.size = a < in ? (in - a + stride - 1) / stride : 0;
  return d;
}

/// Step 7's grid runs the classes heaviest first, so that a partial last wave
/// holds the shortest CTAs (a class's CTAs take time in proportion to its taps,
/// 16, 12, 12 and 9 on the stem; as a list schedule of 896 CTAs on the H200's
/// 660 slots that is 24 time units against 28 in the classes' own order): the
/// class of rank `rank` when classes are sorted by taps (dh.taps x dw.taps, 0
/// for a class with no pixels) descending, ties by class index (a stride_w +
/// b). Above 16 classes the classes' own order (the sort is O(classes^2)).
KF_HOST_DEVICE inline int dgrad_parity_class_of_rank(int rank, int stride_h, int stride_w, int pad_h, int pad_w, int r,
                                                     int s, int h, int w) {
  constexpr int sorted_classes = 16;
  const int classes = stride_h * stride_w;
  if (classes > sorted_classes) return rank;
  auto weight = [&](int cls) {
    const dgrad_parity_dim dh = dgrad_parity_of(cls / stride_w, stride_h, pad_h, r, h);
    const dgrad_parity_dim dw = dgrad_parity_of(cls % stride_w, stride_w, pad_w, s, w);
    return dh.size > 0 && dw.size > 0 ? dh.taps * dw.taps : 0;
  };
  for (int cls = 0; cls < classes; ++cls) {
    const int mine = weight(cls);
    int ahead = 0;  // classes sorted before cls
    for (int other = 0; other < classes; ++other) {
      const int theirs = weight(other);
      ahead += theirs > mine || (theirs == mine && other < cls) ? 1 : 0;
    }
    if (ahead == rank) return cls;
  }
  return rank;  // not reached: the ranks are a permutation of the classes
}

/// The path of dx for the validated layer p (element_bytes: sizeof(T); relu:
/// the options' mask).
inline conv2d_dgrad_path plan_conv2d_dgrad(const conv2d_params& p, std::size_t element_bytes, bool relu) {
  const std::size_t reach_h = p.dilation_h * (p.filter_height - 1), reach_w = p.dilation_w * (p.filter_width - 1);
  if (p.pad_h > reach_h || p.pad_w > reach_w) return conv2d_dgrad_path::naive;
  const bool nhwc = p.layout == conv2d_layout::nhwc;
  if (nhwc && reach_h + reach_w == 0 && p.stride_h == 1 && p.stride_w == 1 && !relu) return conv2d_dgrad_path::matmul;
  if (conv2d_dgrad_prefers_col2im(p, element_bytes)) return conv2d_dgrad_path::gemm_col2im;
  return conv2d_dgrad_path::forward;
}

/// The filter dx's forward reads: the layer's own where it lies, on step 7
/// (conv2d_wgmma_filter::dgrad_unturned: 16-bit NHWC on a device that runs
/// sm_90a code, TMA reading dy_source and w in place --
/// conv2d_dgrad_wgmma_reads_in_place), else a copy turned by 180 degrees with K
/// and C swapped, which conv2d_forward reads as its filter
/// (conv2d_wgmma_filter::forward). dy_source: what the forward reads, dy or
/// its spread (conv2d_dgrad_spreads: a workspace).
inline conv2d_wgmma_filter conv2d_dgrad_filter(const conv2d_params& p, std::size_t element_bytes, bool wgmma_available,
                                               const void* dy_source, const void* w) {
  const bool unturned = p.layout == conv2d_layout::nhwc && wgmma_available &&
                        conv2d_dgrad_wgmma_reads_in_place(p.out_channels, p.in_channels, element_bytes, dy_source, w);
  return unturned ? conv2d_wgmma_filter::dgrad_unturned : conv2d_wgmma_filter::forward;
}

}  // namespace kf::detail
