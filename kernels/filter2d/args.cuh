// SPDX-License-Identifier: Apache-2.0
// The arguments every filter2d kernel takes, already validated by the launcher
// (kernels/filter2d/filter2d.cu): 1 <= r, s <= 31; width, height >= 1 and below
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

}  // namespace kf::detail
