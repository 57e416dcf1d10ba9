// SPDX-License-Identifier: Apache-2.0
// Host code that the wgmma conv2d steps' sm_90a translation units share (step
// 7, src/conv2d/wgmma_sm90a.cu; step 9, src/conv2d/wgmma_sm90a_fp32_emulated.cu):
// the kernel's parameters for a layer and its tile plan, the tensor maps (the
// input's; the filter's, forward or -- dx -- unturned), and the grid of the
// repacking passes. No kernels here (each translation unit instantiates its
// own, once).
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include <cuda.h>

#include "../common/grid.hpp"
#include "../runtime/device_facts.hpp"
#include "../runtime/tensor_map.hpp"
#include "07_implicit_gemm_wgmma.cuh"
#include "args.cuh"
#include "wgmma_plan.hpp"

namespace kf::detail {

/// Grid-stride blocks per SM of the repacking passes.
inline constexpr std::size_t conv2d_wgmma_repack_blocks_per_sm = 8;

/// The kernel's parameters for layer `a` and tile plan `plan`; false when a
/// count overflows the kernel's ints.
template <class T>
bool make_conv2d_wgmma_params(const conv2d_args<T>& a, const conv2d_wgmma_tile& plan, conv2d_wgmma::params<T>& prm) {
  using z = std::size_t;
  const z c_chunks = ceil_div(static_cast<z>(a.c), static_cast<z>(conv2d_wgmma::block_c<T>));
  if (static_cast<z>(a.r) % plan.filter_rows != 0) return false;  // the plan's filter-column k-steps tile R
  if (plan.tiles() > static_cast<z>(INT_MAX) || static_cast<z>(a.rs) * c_chunks > static_cast<z>(INT_MAX)) {
    return false;  // the kernel walks tiles and k-steps with ints
  }
  prm.y = a.y;
  prm.bias = a.bias;
  prm.k = a.k;
  prm.p = a.p;
  prm.q = a.q;
  prm.pq = a.pq;
  prm.n = a.n;
  prm.pad_h = a.pad_h;
  prm.pad_w = a.pad_w;
  prm.dilation_h = a.dilation_h;
  prm.dilation_w = a.dilation_w;
  prm.stride_h = a.stride_h;
  prm.stride_w = a.stride_w;
  prm.s = a.s;
  prm.c_chunks = static_cast<int>(c_chunks);
  prm.k_steps = static_cast<int>(static_cast<z>(a.rs) / plan.taps_per_k_step() * c_chunks);
  prm.halo_width = static_cast<int>(plan.halo_width);
  prm.wt = static_cast<int>(plan.wt);
  prm.ht = static_cast<int>(plan.ht);
  prm.nt = static_cast<int>(plan.nt);
  prm.box_pixels = static_cast<int>(plan.box_pixels());
  prm.tiles_q = static_cast<int>(plan.tiles_q);
  prm.tiles_p = static_cast<int>(plan.tiles_p);
  prm.tiles_k = static_cast<int>(plan.tiles_k);
  prm.tiles = static_cast<int>(plan.tiles());
  prm.a_box_bytes = static_cast<int>(plan.a_box_pixels()) * conv2d_wgmma::row_bytes;
  prm.a_block_bytes = static_cast<int>(plan.a_block_row(1)) * conv2d_wgmma::row_bytes;
  prm.pair_stores = a.k % 2 == 0 && reinterpret_cast<std::uintptr_t>(a.y) % (2 * sizeof(T)) == 0;
  return true;
}

/// The map of an NHWC input (c_stride elements per pixel) of T: boxes of
/// block_c channels x the plan's pixel box (filter-column tiles: filter_rows -
/// 1 rows taller). 128-byte swizzle, zero fill outside (padding, past C).
template <class T>
bool encode_conv2d_wgmma_x_map(CUtensorMap& map_x, const T* x, const conv2d_args<T>& a, std::size_t c_stride,
                               const conv2d_wgmma_tile& plan) {
  using z = std::size_t;
  const z C = static_cast<z>(a.c), H = static_cast<z>(a.h), W = static_cast<z>(a.w), N = static_cast<z>(a.n);
  const auto block_c = static_cast<cuuint32_t>(conv2d_wgmma::block_c<T>);
  const cuuint64_t x_dims[4] = {C, W, H, N};
  const cuuint64_t x_strides[3] = {c_stride * sizeof(T), W * c_stride * sizeof(T), H * W * c_stride * sizeof(T)};
  // A box of wt x ht output pixels visits every stride-th input pixel under it: box extents
  // of stride x pixels, element strides of stride (TMA loads extent / stride elements).
  const auto sw = static_cast<cuuint32_t>(a.stride_w), sh = static_cast<cuuint32_t>(a.stride_h);
  // Halo tiles (stride 1): the box is halo_width wide, the tile's columns and the filter's.
  const auto box_w =
      plan.halo_width != 0 ? static_cast<cuuint32_t>(plan.halo_width) : static_cast<cuuint32_t>(plan.wt) * sw;
  const cuuint32_t x_box[4] = {block_c, box_w, static_cast<cuuint32_t>(plan.box_rows()) * sh,
                               static_cast<cuuint32_t>(plan.nt)};
  const cuuint32_t x_steps[4] = {1, sw, sh, 1};
  return encode_sw128_tiled(map_x, x, 4, x_dims, x_strides, x_box, x_steps);
}

/// The two maps of an NHWC input (encode_conv2d_wgmma_x_map) and a K x RS x C
/// filter (c_filter elements per tap) of T: boxes of block_c x 1 tap x bn
/// output channels, zero fill past C and K (conv2d_wgmma_filter::forward).
template <class T>
bool encode_conv2d_wgmma_maps(CUtensorMap& map_x, CUtensorMap& map_w, const T* x, const T* w, const conv2d_args<T>& a,
                              std::size_t c_stride, std::size_t c_filter, const conv2d_wgmma_tile& plan) {
  using z = std::size_t;
  const z K = static_cast<z>(a.k), RS = static_cast<z>(a.rs);
  const auto block_c = static_cast<cuuint32_t>(conv2d_wgmma::block_c<T>);
  const cuuint64_t w_dims[3] = {c_filter, RS, K};
  const cuuint64_t w_strides[2] = {c_filter * sizeof(T), RS * c_filter * sizeof(T)};
  const cuuint32_t w_box[3] = {block_c, 1, static_cast<cuuint32_t>(plan.bn)};
  return encode_conv2d_wgmma_x_map(map_x, x, a, c_stride, plan) &&
         encode_sw128_tiled(map_w, w, 3, w_dims, w_strides, w_box);
}

/// The map of conv2d_wgmma_filter::dgrad_unturned: `a` is dx's forward (a.c =
/// the layer's K, a.k = the layer's C) and w the layer's filter K x RS x C
/// (16-bit, C a multiple of 8: TMA's 16-byte strides): dims C, tap, K; boxes
/// of 64 channels of C (one swizzled row) x 1 tap x block_c rows of K, zero
/// fill past C and K (wgmma_filter_operand.cuh).
template <class T>
bool encode_conv2d_wgmma_unturned_filter_map(CUtensorMap& map_w, const T* w, const conv2d_args<T>& a) {
  using z = std::size_t;
  const z layer_c = static_cast<z>(a.k), layer_k = static_cast<z>(a.c), RS = static_cast<z>(a.rs);
  const cuuint64_t w_dims[3] = {layer_c, RS, layer_k};
  const cuuint64_t w_strides[2] = {layer_c * sizeof(T), RS * layer_c * sizeof(T)};
  const cuuint32_t w_box[3] = {static_cast<cuuint32_t>(conv2d_wgmma::n_major_box_channels), 1,
                               static_cast<cuuint32_t>(conv2d_wgmma::block_c<T>)};
  return encode_sw128_tiled(map_w, w, 3, w_dims, w_strides, w_box);
}

/// Blocks of a grid-stride repacking pass over `items` elements: enough to
/// cover them, at most filter_blocks_per_sm per SM.
inline unsigned conv2d_wgmma_repack_blocks(int device, std::size_t items) {
  const int sms = limits_for(device).sm_count;
  const std::size_t cap = static_cast<std::size_t>(sms > 0 ? sms : 1) * conv2d_wgmma_repack_blocks_per_sm;
  const std::size_t needed = ceil_div(items, static_cast<std::size_t>(conv2d_wgmma::filter_block));
  return static_cast<unsigned>(needed < cap ? needed : cap);
}

}  // namespace kf::detail
