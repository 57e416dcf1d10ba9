// SPDX-License-Identifier: Apache-2.0
// The one alignment predicate: is a pointer (and optionally every row of a
// matrix) aligned to `bytes`? Host and device code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "host_device.hpp"

namespace kf::detail {

/// Bytes past the previous `bytes` boundary.
KF_HOST_DEVICE inline std::size_t misalignment(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes;
}

KF_HOST_DEVICE inline bool is_aligned(const void* p, std::size_t bytes) { return misalignment(p, bytes) == 0; }

/// Every row start of a matrix with row stride `ld` elements of `element_bytes` is aligned to `bytes`.
KF_HOST_DEVICE inline bool rows_aligned(const void* p, std::size_t ld, std::size_t element_bytes, std::size_t bytes) {
  return is_aligned(p, bytes) && (ld * element_bytes) % bytes == 0;
}

}  // namespace kf::detail
