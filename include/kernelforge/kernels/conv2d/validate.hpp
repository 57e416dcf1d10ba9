// SPDX-License-Identifier: Apache-2.0
// conv2d's argument checks and output geometry (validate.cpp), forward and
// gradients: the named first step of the launchers (validate -> plan -> dispatch).
#pragma once

#include <cstddef>

#include "kernelforge/conv.hpp"
#include "kernelforge/conv_backward.hpp"

namespace kf::detail {

struct conv2d_geometry {
  std::size_t p = 0;           ///< output height
  std::size_t q = 0;           ///< output width
  std::size_t y_elements = 0;  ///< N * K * P * Q (0: nothing to do)
};

/// The extents of a validated call (every element count below 2^31).
struct conv2d_sizes {
  std::size_t p = 0, q = 0;  ///< output height and width
  std::size_t x_elements = 0, w_elements = 0, y_elements = 0;
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

/// Every check of a conv2d_backward_data call: options (and the ReLU mask's
/// rule), layout and type, geometry as the forward's, pointers and overlaps.
conv2d_sizes validate_conv2d_backward_data(const char* what, const conv2d_params& p, const void* dy, const void* weight,
                                           const void* dx, const void* relu_y, std::size_t element_bytes,
                                           const conv2d_backward_options& options);

/// Every check of a conv2d_backward_filter call (dbias may be null).
conv2d_sizes validate_conv2d_backward_filter(const char* what, const conv2d_params& p, const void* x, const void* dy,
                                             const void* dweight, const void* dbias, const void* relu_y,
                                             std::size_t element_bytes, const conv2d_backward_options& options);

}  // namespace kf::detail
