// SPDX-License-Identifier: Apache-2.0
// The parameter block of the fp32 tile kernels (steps 7 warp_tiled and 8
// large_tile), beyond the GEMM arguments, and the one function their launchers
// fill it with (split-k then sets k_slice and workspace: split_k.cuh).
#pragma once

#include <cstddef>

#include "../common/grid.hpp"
#include "gemm_args.cuh"
#include "launch_util.hpp"

namespace kf::detail {

/// Per-launch values a tile kernel needs beyond the GEMM arguments.
struct tile_params {
  std::size_t tiles_m = 0, tiles_n = 0;  ///< block tiles along m and n
  std::size_t k_slice = 0;               ///< k-range per blockIdx.z (a multiple of block_k)
  float* workspace = nullptr;            ///< split-k: partial tiles [blockIdx.z][m][n]; else nullptr
  bool c_aligned = false;                ///< C 16-byte aligned with ldc % 4 == 0: 16-byte epilogue
};

/// The tiles of configuration Config (block_m x block_n) over C and C's
/// alignment; k_slice and workspace are left unsplit (0, nullptr).
template <class Config>
tile_params make_tile_params(const gemm_args<float>& g) {
  tile_params x;
  x.tiles_m = ceil_div(g.m, Config::block_m);
  x.tiles_n = ceil_div(g.n, Config::block_n);
  x.c_aligned = rows_16b_aligned(g.C, g.ldc);
  return x;
}

}  // namespace kf::detail
