// SPDX-License-Identifier: Apache-2.0
// A channels_last case's 16-bit wgmma launch as the host plans it, for the CPU
// tests that check what the cases cover (conv2d_nhwc_cases_test.cpp,
// conv2d_nhwc_wgmma_forms_test.cpp): the tile plan, the layer the kernel reads
// (in place or its column fold), the k-steps, the ring and the resident filter.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <cuda_fp16.h>

#include "conv2d_nhwc_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/wgmma_k_steps.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"

namespace {

/// The plan the wgmma kernel runs case `c` with in 16-bit (conv2d_nhwc_wgmma_try_launch's:
/// the layer -- a pointwise one as one row of pixels -- where TMA reads it in place, else
/// its column fold).
inline kf::detail::conv2d_wgmma_tile half_plan_of(const nhwc_case& c) {
  alignas(16) static const __half base[64] = {};
  const __half* x = base + c.x_offset;
  const __half* w = base + c.w_offset;
  const std::size_t P = kf::conv2d_output_height(c.p), Q = kf::conv2d_output_width(c.p);
  kf::detail::conv2d_args<__half> a = kf::detail::make_conv2d_args<__half>(c.p, P, Q, x, w, nullptr, nullptr);
  a = kf::detail::conv2d_one_row_if_pointwise(a);
  if (!kf::detail::conv2d_nhwc_wgmma_reads_in_place(c.p.in_channels, sizeof(__half), x, w)) {
    const std::size_t folded =
        kf::detail::conv2d_nhwc_folded_channels(c.p.filter_width, c.p.in_channels, sizeof(__half));
    a = kf::detail::conv2d_nhwc_column_fold_of(a, static_cast<int>(folded), x);
  }
  return kf::detail::plan_conv2d_nhwc_wgmma_of(a);
}

/// The layer the wgmma kernel computes for case `c` in 16-bit: read in place,
/// or its column fold (the filter's S columns folded into channels).
struct half_layer {
  bool in_place;
  std::size_t channels, taps, c_chunks;  ///< c_chunks: 64-channel blocks
  /// Its schedule (plan_nhwc_launch's: by taps x channel blocks).
  [[nodiscard]] bool pingpong() const { return kf::detail::conv2d_wgmma_pingpong(taps * c_chunks); }
};

inline half_layer half_layer_of(const nhwc_case& c) {
  const kf::conv2d_params& p = c.p;
  half_layer l{};
  l.in_place = c.x_offset == 0 && c.w_offset == 0 && p.in_channels * sizeof(__half) % 16 == 0;
  l.channels = l.in_place ? p.in_channels : kf::detail::conv2d_nhwc_folded_channels(p.filter_width, p.in_channels, 2);
  l.taps = p.filter_height * (l.in_place ? p.filter_width : 1);
  l.c_chunks = (l.channels + 63) / 64;
  return l;
}

/// Case `c`'s 16-bit launch as the host plans it: the tile, the layer, the k-steps, the ring's
/// stages (wgmma_config.cuh's ring_stages: 8 and 6 for one-tap tiles 64 and 128 wide, 5 and 3 for
/// filter-column ones) and whether the filter is resident (conv2d_wgmma_resident_filter).
struct half_launch {
  kf::detail::conv2d_wgmma_tile tile;
  half_layer layer;
  std::size_t steps, ring;
  bool resident;
};

inline half_launch half_launch_of(const nhwc_case& c) {
  const kf::conv2d_params& p = c.p;
  half_launch h{half_plan_of(c), half_layer_of(c), 0, 0, false};
  const kf::detail::conv2d_wgmma_tile& t = h.tile;
  h.steps = kf::detail::conv2d_nhwc_wgmma_k_steps(t, h.layer.channels, p.filter_height,
                                                  h.layer.in_place ? p.filter_width : 1, sizeof(__half));
  h.ring = t.filter_rows > 1 ? (t.bn == 64 ? 5 : 3) : (t.bn == 64 ? 8 : 6);
  h.resident = kf::detail::conv2d_wgmma_resident_filter(t.tiles_k, h.layer.pingpong(), h.steps, h.ring);
  return h;
}

/// The cases the wgmma kernel takes (its strides), each with its 16-bit launch.
inline std::vector<std::pair<nhwc_case, half_launch>> wgmma_half_launches() {
  std::vector<std::pair<nhwc_case, half_launch>> out;
  for (const nhwc_case& c : nhwc_cases()) {
    if (kf::detail::conv2d_nhwc_wgmma_unsupported_reason(c.p.stride_h, c.p.stride_w) != nullptr) continue;
    out.emplace_back(c, half_launch_of(c));
  }
  return out;
}

}  // namespace
