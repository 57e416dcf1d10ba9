// SPDX-License-Identifier: Apache-2.0
// The test hook of register_window's candidate configurations
// (include/kernelforge/kernels/filter2d/tuning.hpp), for filter2d_gpu_test.cpp: plain C++
// declarations, defined by window_candidates.cu, which instantiates the kernels.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kernelforge/conv.hpp"

namespace kf::test {

/// The candidates' names, the library's default configuration first.
std::vector<std::string> filter2d_window_candidate_names();

/// Runs candidate `name` as kf::filter2d would run register_window (same
/// arguments; r x s 3x3 or 5x5, rows 16-byte aligned) on the legacy default
/// stream, without kf::filter2d's validation.
void filter2d_window_candidate(const std::string& name, std::size_t channels, std::size_t height, std::size_t width,
                               const float* in, std::size_t in_pitch, const float* filter, std::size_t r, std::size_t s,
                               float* out, std::size_t out_pitch, kf::border mode);

}  // namespace kf::test
