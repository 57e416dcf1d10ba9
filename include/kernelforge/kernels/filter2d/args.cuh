// SPDX-License-Identifier: Apache-2.0
// The arguments every filter2d kernel takes, already validated by the launcher
// (src/filter2d/filter2d.cu): 1 <= r, s <= 31; width, height >= 1 and below
// 2^31 - 64 (so that every tap index fits in an int); pitches >= width;
// in and out disjoint. Channel c of the input starts at in + c * in_plane.
#pragma once

#include <cstddef>

#include "kernelforge/conv.hpp"

namespace kf::detail {

template <class T>
struct filter2d_args {
  int channels = 0, height = 0, width = 0;
  const T* in = nullptr;
  long long in_pitch = 0, in_plane = 0;  // elements per row, per channel
  const T* filter = nullptr;             // r x s, row-major (global memory)
  int r = 0, s = 0;
  T* out = nullptr;
  long long out_pitch = 0, out_plane = 0;
  border mode = border::zero;
};

/// The kernel arguments of a validated call (sizes as the launcher received them).
template <class T>
filter2d_args<T> make_filter2d_args(std::size_t channels, std::size_t height, std::size_t width, const T* in,
                                    std::size_t in_pitch, const T* filter, std::size_t r, std::size_t s, T* out,
                                    std::size_t out_pitch, border mode) {
  filter2d_args<T> a;
  a.channels = static_cast<int>(channels);
  a.height = static_cast<int>(height);
  a.width = static_cast<int>(width);
  a.in = in;
  a.in_pitch = static_cast<long long>(in_pitch);
  a.in_plane = static_cast<long long>(in_pitch * height);
  a.filter = filter;
  a.r = static_cast<int>(r);
  a.s = static_cast<int>(s);
  a.out = out;
  a.out_pitch = static_cast<long long>(out_pitch);
  a.out_plane = static_cast<long long>(out_pitch * height);
  a.mode = mode;
  return a;
}

}  // namespace kf::detail
