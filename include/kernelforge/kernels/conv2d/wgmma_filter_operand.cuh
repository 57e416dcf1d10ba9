// SPDX-License-Identifier: Apache-2.0
// Step 7's B operand (07_implicit_gemm_wgmma.cuh), by where it comes from
// (conv2d_wgmma_filter, wgmma_plan.hpp): the producer's copies of one tap's
// filter slice (block_c channels of the reduction x BN output channels) into a
// stage, and the descriptor each product reads it through.
//  * forward: the filter K x RS x C, one 3-D box of block_c x 1 tap x BN: BN
//    rows of 128 bytes, the reduction along each (wgmma's k-major B).
//  * dgrad_unturned: dx's forward reads the layer's filter w[k][r][s][c] where it
//    lies instead of a copy turned by 180 degrees with K and C swapped (the
//    turn was a launch of its own and a workspace): its tap t is the layer's
//    tap RS - 1 - t, and that tap's K x C matrix is the B operand as it is --
//    rows k (dx's reduction), C (dx's output channels) contiguous. Boxes of 64
//    channels of C (one 128-byte swizzled row) x 1 tap x block_c rows of K, one
//    per 64 output channels of the tile: the N-major layout the 16-bit wgmma
//    reads with its transpose bit, as the matmul's N-major B
//    (matmul/wgmma/mainloop.cuh): 8-row atoms along k 1024 bytes apart (the
//    stride byte offset), 64-channel blocks along N a box apart (the leading
//    byte offset). The same bytes a stage as the forward's slice, and TMA
//    zero-fills past C and past K as it does there.
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../arch/guards.cuh"
#include "../arch/tma_sm90.cuh"
#include "../arch/wgmma_sm90.cuh"
#include "wgmma_config.cuh"
#include "wgmma_plan.hpp"

namespace kf::detail::conv2d_wgmma {

/// dgrad_unturned: output channels of one box (a 128-byte swizzled row of 16-bit values).
inline constexpr int n_major_box_channels = 64;
/// dgrad_unturned: bytes of one box, block_c (64) rows of the reduction x 128 bytes.
inline constexpr int n_major_box_bytes = 64 * row_bytes;

/// wgmma's imm-trans-b for the filter source: 1 (N-major) for the unturned filter.
template <conv2d_wgmma_filter Filter>
inline constexpr int filter_trans_b = Filter == conv2d_wgmma_filter::dgrad_unturned ? 1 : 0;

template <class T, int BN, conv2d_wgmma_filter Filter>
inline constexpr bool filter_source_fits = Filter == conv2d_wgmma_filter::forward ||
                                           (sizeof(T) == 2 && block_c<T> * row_bytes == n_major_box_bytes &&
                                            BN % n_major_box_channels == 0 &&
                                            (BN / n_major_box_channels) * n_major_box_bytes == b_tile_bytes<BN>);

#if KF_ARCH_SM90A
/// The producer: tap `tap`'s slice of the filter (reduction channels c0 ..,
/// output channels k0 ..) into `b_tile`, completing `full`. taps: R S.
template <class T, int BN, conv2d_wgmma_filter Filter>
__device__ __forceinline__ void load_filter_slice(std::uint32_t b_tile, const CUtensorMap* map_w, int tap, int taps,
                                                  int c0, int k0, std::uint32_t full) {
  static_assert(filter_source_fits<T, BN, Filter>, "the unturned filter: 16-bit, 64-channel boxes fill the B slot");
  if constexpr (Filter == conv2d_wgmma_filter::forward) {
    tma_load_3d(b_tile, map_w, c0, tap, k0, full);
  } else {
    const int layer_tap = taps - 1 - tap;  // the 180-degree turn
#pragma unroll
    for (int j = 0; j < BN / n_major_box_channels; ++j) {
      tma_load_3d(b_tile + j * n_major_box_bytes, map_w, k0 + j * n_major_box_channels, layer_tap, c0, full);
    }
  }
}

/// A consumer: how far product kk's B (reduction channels kk wgmma_k ..) lies
/// from its slice's start: kk products along the swizzled rows (forward), or kk
/// wgmma_k rows further (the unturned filter).
template <class T, conv2d_wgmma_filter Filter>
__device__ __forceinline__ std::uint32_t filter_product_offset(int kk) {
  if constexpr (Filter == conv2d_wgmma_filter::forward) {
    return static_cast<std::uint32_t>(kk * product_bytes<T>);
  } else {
    return static_cast<std::uint32_t>(kk * wgmma::element<T>::wgmma_k * row_bytes);
  }
}

/// A consumer: the descriptor of the B slice at `b_tile` (its first product;
/// product kk's is smem_descriptor_advance(it, filter_product_offset(kk))).
template <class T, conv2d_wgmma_filter Filter>
__device__ __forceinline__ std::uint64_t filter_descriptor(std::uint32_t b_tile) {
  if constexpr (Filter == conv2d_wgmma_filter::forward) {
    return smem_descriptor_sw128(b_tile);
  } else {
    return smem_descriptor_sw128(b_tile, n_major_box_bytes, swizzle_atom_bytes);
  }
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::conv2d_wgmma
