// SPDX-License-Identifier: Apache-2.0
// Grid arithmetic shared by every launcher: tile counts and the hardware's grid
// limits. Host and device code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "host_device.hpp"

namespace kf::detail {

/// ceil(a / b), b > 0: tiles, blocks or slices that cover an extent a (no overflow near SIZE_MAX).
KF_HOST_DEVICE constexpr std::size_t ceil_div(std::size_t a, std::size_t b) { return a / b + (a % b != 0); }

/// a rounded up to a multiple of b, b > 0 (pitches, workspace offsets).
KF_HOST_DEVICE constexpr std::size_t round_up(std::size_t a, std::size_t b) { return ceil_div(a, b) * b; }

/// gridDim.y and gridDim.z are limited to 65535 on every CUDA GPU (gridDim.x to 2^31 - 1,
/// which device_limits::max_grid_x carries per device).
constexpr std::size_t max_grid_yz = 65535;

/// min(v, cap) as a grid dimension (kernels then stride over the rest).
constexpr std::uint32_t capped_grid_dim(std::size_t v, std::size_t cap = max_grid_yz) {
  return static_cast<std::uint32_t>(v < cap ? v : cap);
}

}  // namespace kf::detail
