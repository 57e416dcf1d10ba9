// SPDX-License-Identifier: Apache-2.0
// conv2d_forward's argument checks and output geometry (validate.cpp): the
// named first step of the launcher (validate -> plan -> dispatch).
#pragma once

#include <cstddef>

#include "kernelforge/conv.hpp"

namespace kf::detail {

struct conv2d_geometry {
  std::size_t p = 0;           ///< output height
  std::size_t q = 0;           ///< output width
  std::size_t y_elements = 0;  ///< N * K * P * Q (0: nothing to do)
};

/// errc::invalid_argument for bad options (variant, math, a TF32 variant with
/// exact math on float data: element_bytes 4).
void validate_conv2d_options(const char* what, const conv2d_options& options, std::size_t element_bytes);

/// Every check of a conv2d_forward call, before anything is enqueued: options,
/// layout and element type, geometry (with the numbers), 32-bit indexing
/// limits, null pointers, overlaps.
conv2d_geometry validate_conv2d(const char* what, const conv2d_params& p, const void* x, const void* weight,
                                const void* bias, const void* y, std::size_t element_bytes,
                                const conv2d_options& options);

}  // namespace kf::detail
