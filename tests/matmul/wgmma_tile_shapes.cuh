// SPDX-License-Identifier: Apache-2.0
// The wgmma kernel's tiles (14_wgmma.cuh; wgmma/config.cuh: tile_config,
// element.cuh: element<T>::stage_k) as tile_shapes.hpp's tile_shape, for the
// tensor-core tests' boundary shapes.
#pragma once

#include "kernelforge/kernels/matmul/wgmma/config.cuh"
#include "kernelforge/kernels/matmul/wgmma/element.cuh"
#include "tile_shapes.hpp"

namespace kf::test {

/// The wgmma tile for element type T at width block_n (0: by shape,
/// tuning.hpp's choose_wgmma_block_n, which gives the small boundary shapes
/// 128 x 64), or the cluster split-k's 128 x 128 (cluster_split_k).
template <class T>
tile_shape wgmma_tile(int block_n, bool cluster_split_k) {
  namespace wg = kf::detail::wgmma;
  constexpr std::size_t k = wg::element<T>::stage_k;
  using splitk = wg::tile_config<128, true>;
  if (cluster_split_k) return {wg::block_m, splitk::block_n, k, splitk::stages};
  if (block_n == 256) return {wg::block_m, 256, k, wg::tile_config<256>::stages};
  if (block_n == 128) return {wg::block_m, 128, k, wg::tile_config<128>::stages};
  return {wg::block_m, 64, k, wg::tile_config<64>::stages};
}

}  // namespace kf::test
