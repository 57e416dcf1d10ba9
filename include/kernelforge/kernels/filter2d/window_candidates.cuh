// SPDX-License-Identifier: Apache-2.0
// The register_window candidates (tuning.hpp's for_each_filter2d_window_candidate)
// launched by name, for bench_conv's rows and the GPU tests. Not included by the
// library: each translation unit that includes it compiles every candidate (8
// configurations x 2 filter sizes x 3 borders) for its own architectures, so only
// the tests' and the benchmark's do. Host code for .cu files.
#pragma once

#include <string>

#include "window_launch.cuh"

namespace kf::detail {

/// Enqueues the candidate `name` on `a` (a 3x3 or 5x5 filter, 16-byte
/// aligned rows: filter2d_window_kernels_apply) and checks the launch.
/// errc::invalid_argument for an unknown name or arguments it cannot run.
inline void launch_filter2d_window_candidate(const std::string& name, const filter2d_args<float>& a,
                                             cudaStream_t stream) {
  const char* what = "kf::detail::launch_filter2d_window_candidate";
  if (!filter2d_window_has_size(a.r, a.s)) {
    throw error(errc::invalid_argument, std::string(what) + ": register_window candidates are compiled for 3x3 and " +
                                            "5x5 filters only, not " + std::to_string(a.r) + "x" + std::to_string(a.s) +
                                            "; call kf::filter2d");
  }
  if (!filter2d_window_kernels_apply(a)) {
    throw error(errc::invalid_argument, std::string(what) +
                                            ": register_window candidates need in, out, in_pitch and out_pitch "
                                            "16-byte aligned (their rows are read and written as float2 / float4); "
                                            "align the rows, or call kf::filter2d");
  }
  bool found = false;
  for_each_filter2d_window_candidate([&](const char* candidate, auto config) {
    if (found || name != candidate) return;
    found = true;
    using C = decltype(config);
    if (a.r == 3) {
      launch_filter2d_register_window<3, 3, C>(what, a, stream);
    } else {
      launch_filter2d_register_window<5, 5, C>(what, a, stream);
    }
  });
  if (!found) {
    throw error(errc::invalid_argument,
                std::string(what) + ": no register_window candidate is named '" + name +
                    "'; the names are listed in include/kernelforge/kernels/filter2d/tuning.hpp");
  }
}

}  // namespace kf::detail
