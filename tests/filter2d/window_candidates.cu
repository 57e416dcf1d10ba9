// SPDX-License-Identifier: Apache-2.0
// Defines the hook of window_candidates.hpp over the candidates of tuning.hpp
// and their launch (window_candidates.cuh).
#include "window_candidates.hpp"

#include "kernelforge/kernels/filter2d/window_candidates.cuh"

namespace kf::test {

std::vector<std::string> filter2d_window_candidate_names() {
  std::vector<std::string> names;
  kf::detail::for_each_filter2d_window_candidate([&](const char* name, auto) { names.emplace_back(name); });
  return names;
}

void filter2d_window_candidate(const std::string& name, std::size_t channels, std::size_t height, std::size_t width,
                               const float* in, std::size_t in_pitch, const float* filter, std::size_t r, std::size_t s,
                               float* out, std::size_t out_pitch, kf::border mode) {
  const auto a =
      kf::detail::make_filter2d_args(channels, height, width, in, in_pitch, filter, r, s, out, out_pitch, mode);
  kf::detail::launch_filter2d_window_candidate(name, a, nullptr);
}

}  // namespace kf::test
