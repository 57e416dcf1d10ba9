// SPDX-License-Identifier: Apache-2.0
// filter2d's argument checks, host code only: filter and image extents,
// pitches, null pointers and overlaps, each message naming the argument and the
// fix. Compiled by the host compiler.
#include "kernelforge/kernels/filter2d/validate.hpp"

#include <climits>
#include <cstdint>
#include <string>

#include "kernelforge/kernels/runtime/validate.hpp"

namespace kf::detail {
namespace {

/// Image extents the kernels index with int, with room for the widest halo.
constexpr std::size_t filter2d_max_image_extent = static_cast<std::size_t>(INT_MAX) - 64;

void validate_filter2d_options(const char* what, const filter2d_options& options) {
  using v = filter2d_variant;
  require_one_of(
      what, "options.variant", options.variant,
      {v::best, v::naive, v::constant_memory, v::smem_tiled, v::register_window, v::rolling_window, v::tma_pipeline});
  require_one_of(what, "options.mode", options.mode, {border::zero, border::clamp, border::reflect});
}

/// Elements from the first to one past the last element the call touches.
std::size_t image_span(std::size_t channels, std::size_t height, std::size_t width, std::size_t pitch) {
  if (channels == 0 || height == 0 || width == 0) return 0;
  return (channels * height - 1) * pitch + width;
}

}  // namespace

void validate_filter2d(const char* what, std::size_t channels, std::size_t height, std::size_t width, const void* in,
                       std::size_t in_pitch, const void* filter, std::size_t r, std::size_t s, const void* out,
                       std::size_t out_pitch, std::size_t element_bytes, const filter2d_options& options) {
  validate_filter2d_options(what, options);
  if (r == 0 || s == 0 || r > filter2d_max_extent || s > filter2d_max_extent) {
    throw_invalid_argument(what, "the filter is " + std::to_string(r) + " x " + std::to_string(s) +
                                     "; filter2d supports 1 x 1 to " + std::to_string(filter2d_max_extent) + " x " +
                                     std::to_string(filter2d_max_extent) +
                                     " (r and s are the filter's rows and columns)");
  }
  require_pointer(what, "filter", filter, r * s);
  if (height > filter2d_max_image_extent || width > filter2d_max_image_extent) {
    throw_invalid_argument(what, "the image is " + std::to_string(height) + " x " + std::to_string(width) +
                                     "; height and width must each be at most " +
                                     std::to_string(filter2d_max_image_extent));
  }
  if (channels > static_cast<std::size_t>(INT_MAX)) {
    throw_invalid_argument(
        what, "channels = " + std::to_string(channels) + "; at most " + std::to_string(INT_MAX) + " are supported");
  }
  if (width > 0 && in_pitch < width) {
    throw_invalid_argument(what, "in_pitch = " + std::to_string(in_pitch) +
                                     " is less than width = " + std::to_string(width) +
                                     "; the pitch is the distance between rows in elements, at least the width");
  }
  if (width > 0 && out_pitch < width) {
    throw_invalid_argument(what, "out_pitch = " + std::to_string(out_pitch) +
                                     " is less than width = " + std::to_string(width) +
                                     "; the pitch is the distance between rows in elements, at least the width");
  }
  const std::size_t rows = channels * height;
  if ((height != 0 && channels > SIZE_MAX / height) ||
      (rows != 0 && (in_pitch > LLONG_MAX / rows || out_pitch > LLONG_MAX / rows))) {
    throw_invalid_argument(what, "channels x height x pitch overflows a 64-bit element count");
  }
  const std::size_t in_n = image_span(channels, height, width, in_pitch);
  const std::size_t out_n = image_span(channels, height, width, out_pitch);
  require_pointer(what, "in", in, in_n);
  require_pointer(what, "out", out, out_n);
  const auto bytes = [element_bytes](std::size_t n) { return n * element_bytes; };
  if (ranges_overlap(in, bytes(in_n), out, bytes(out_n))) {
    throw_invalid_argument(what,
                           "'in' and 'out' overlap; filter2d cannot run in place (every output reads its neighbours): "
                           "pass a separate output image");
  }
  if (ranges_overlap(filter, bytes(r * s), out, bytes(out_n)))
    throw_invalid_argument(what, "'filter' and 'out' overlap; pass disjoint arrays");
}

}  // namespace kf::detail
