// SPDX-License-Identifier: Apache-2.0
// 16-byte vectors of any element type: one LDG.128 / STG.128 moves
// 16 / sizeof(T) elements, the widest access a thread can make.
#pragma once

#include <cstddef>

#include "alignment.hpp"

namespace kf::detail {

constexpr std::size_t vector_bytes = 16;

template <class T>
struct alignas(vector_bytes) vector16 {
  static constexpr int size = static_cast<int>(vector_bytes / sizeof(T));
  T v[size];
};

/// Bytes past the previous 16-byte boundary.
__host__ __device__ inline std::size_t misalignment(const void* p) { return misalignment(p, vector_bytes); }

}  // namespace kf::detail
