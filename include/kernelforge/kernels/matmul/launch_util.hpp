// SPDX-License-Identifier: Apache-2.0
// Host helpers the matrix-product launchers share: the row-alignment test for
// 16-byte copies, the dispatch of the four transpose combinations to
// compile-time kernel parameters, and the tutorial steps' 2D grid.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "../common/alignment.hpp"
#include "../common/grid.hpp"
#include "../common/vector_access.cuh"  // vector_bytes
#include "kernelforge/error.hpp"

namespace kf::detail {

/// True when every row of a stored matrix starts on a 16-byte boundary (the
/// pointer is aligned and the leading dimension is a whole number of 16-byte
/// chunks): the condition for 16-byte loads anywhere in it.
template <class T>
inline bool rows_16b_aligned(const T* p, std::size_t ld) {
  return rows_aligned(p, ld, sizeof(T), vector_bytes);
}

template <bool B>
using bool_constant = std::integral_constant<bool, B>;

/// Calls launch(bool_constant<trans_a>{}, bool_constant<trans_b>{}): one
/// kernel instantiation per transpose combination, so no kernel branches on
/// the layout in its inner loop.
template <class Launch>
void dispatch_transposes(bool trans_a, bool trans_b, Launch&& launch) {
  if (trans_a) {
    if (trans_b)
      launch(bool_constant<true>{}, bool_constant<true>{});
    else
      launch(bool_constant<true>{}, bool_constant<false>{});
  } else {
    if (trans_b)
      launch(bool_constant<false>{}, bool_constant<true>{});
    else
      launch(bool_constant<false>{}, bool_constant<false>{});
  }
}

/// A 2D grid of x_blocks x y_blocks for the tutorial steps, which keep the
/// textbook blockIdx.x / blockIdx.y mapping; errc::unsupported (naming the
/// variant and the numbers) when y_blocks exceeds the hardware limit.
inline dim3 grid_2d(std::size_t x_blocks, std::size_t y_blocks, const char* variant) {
  if (y_blocks > max_grid_yz || x_blocks > 0x7FFFFFFFu) {
    throw error(errc::unsupported, std::string("kf::matmul: variant ") + variant + " needs a grid of " +
                                       std::to_string(x_blocks) + " x " + std::to_string(y_blocks) +
                                       " blocks, beyond the limit of 2^31-1 x 65535; use variant warp_tiled "
                                       "(or best), whose 1D grid covers any shape");
  }
  return dim3(static_cast<unsigned>(x_blocks), static_cast<unsigned>(y_blocks));
}

}  // namespace kf::detail
