// SPDX-License-Identifier: Apache-2.0
// Border handling for filter2d: which input index a tap outside the image reads.
// Host and device (the CPU tests check it against the reference's definition).
//
//   zero:    outside -> no pixel (the caller adds 0)
//   clamp:   -1 -> 0, n -> n-1 (replicate the edge pixel)
//   reflect: reflect-101, -1 -> 1, n -> n-2; the mirror repeats with period
//            2(n-1) when the filter reaches past the far edge of a tiny image;
//            n == 1 maps everything to 0.
// Only pixels near an edge pay for this: interior tiles never call it.
#pragma once

#include <cuda_runtime.h>

#include "kernelforge/conv.hpp"

namespace kf::detail {

/// The index to read for i in a dimension of n >= 1 pixels, or -1 for "zero".
__host__ __device__ inline int border_map(int i, int n, border mode) {
  if (static_cast<unsigned>(i) < static_cast<unsigned>(n)) return i;
  if (mode == border::zero) return -1;
  if (mode == border::clamp) return i < 0 ? 0 : n - 1;
  if (n == 1) return 0;
  const int period = 2 * (n - 1);
  int m = i % period;  // C++ remainder has the sign of i
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

}  // namespace kf::detail
