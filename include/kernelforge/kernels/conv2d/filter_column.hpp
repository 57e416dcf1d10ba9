// SPDX-License-Identifier: Apache-2.0
// The geometry of filter-column boxes, shared by the two Hopper kernels that
// load them: the forward's A operand (step 7, 07_implicit_gemm_wgmma.cuh,
// planned by wgmma_k_steps.hpp) and the filter gradient's B operand (gradient
// step 3, backward/03_wgrad_wgmma.cuh, planned by backward/wgrad_wgmma_plan.hpp).
// Pure functions, no CUDA calls; the CPU tests check them against the pixels
// each tap reads (wgmma_cpu_test.cpp, wgrad_wgmma_cpu_test.cpp).
//
// At stride_h = dilation_h = 1 the filter taps (r, s), (r + 1, s), ... of one
// filter column s read input rows one apart. A TMA box of the NHWC input that
// is `column_width` = 8 pixels wide and `rows - 1` input rows taller than the
// output rows it serves therefore holds the operands of `rows` taps at once:
// box row (image row) j + r is what tap r reads for output row j. With 8
// pixels of 64 16-bit channels (one 128-byte swizzled row each) per image row,
// one image row of the box is exactly one 1024-byte swizzle atom, so tap r's
// operand starts r whole atoms further into the box: the same shared-memory
// layout (and descriptor) as the first tap's, advanced by r x 1024 bytes.
#pragma once

#include <cstddef>

namespace kf::detail {

/// Output (and box) columns of a filter-column box: 8 pixels, one swizzle atom of 128-byte rows an image row.
constexpr std::size_t conv2d_filter_column_width = 8;
/// Bytes of one box row (one pixel's 64 16-bit channels) in the 128-byte swizzle.
constexpr std::size_t conv2d_filter_column_row_bytes = 128;

/// Whether the taps of one filter column read input rows one apart (and so one box serves them).
constexpr bool conv2d_filter_column_rows_adjacent(std::size_t stride_h, std::size_t dilation_h) {
  return stride_h == 1 && dilation_h == 1;
}

/// Image rows of the box of `rows` taps over `output_rows` output rows (per image).
constexpr std::size_t conv2d_filter_column_box_rows(std::size_t output_rows, std::size_t rows) {
  return output_rows + rows - 1;
}

/// Bytes from the operand of the box's first tap to that of its tap r: r image rows of 8 pixels.
constexpr std::size_t conv2d_filter_column_tap_bytes(std::size_t r) {
  return r * conv2d_filter_column_width * conv2d_filter_column_row_bytes;
}

/// The box row (pixel, in TMA's order: column fastest, then image row, then
/// image) that tap r reads for pixel i of an output tile of nt images x ht
/// rows x 8 columns (i in the tile's order: column fastest, then row, then image).
constexpr std::size_t conv2d_filter_column_box_row(std::size_t i, std::size_t ht, std::size_t rows, std::size_t r) {
  const std::size_t q = i % conv2d_filter_column_width;
  const std::size_t p = i / conv2d_filter_column_width % ht;
  const std::size_t n = i / (conv2d_filter_column_width * ht);
  return (n * conv2d_filter_column_box_rows(ht, rows) + p + r) * conv2d_filter_column_width + q;
}

}  // namespace kf::detail
