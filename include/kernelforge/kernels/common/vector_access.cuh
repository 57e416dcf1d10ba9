// SPDX-License-Identifier: Apache-2.0
// 16-byte vectors of any element type: one LDG.128 / STG.128 moves
// 16 / sizeof(T) elements, the widest access a thread can make.
#pragma once

#include <cstddef>
#include <cstring>

#include "alignment.hpp"

namespace kf::detail {

constexpr std::size_t vector_bytes = 16;

template <class T>
struct alignas(vector_bytes) vector16 {
  static constexpr int size = static_cast<int>(vector_bytes / sizeof(T));
  T v[size];
};

/// One 16-byte load of a chunk, whatever its element type (ld .v4 through uint4);
/// `p` 16-byte aligned.
template <class T>
__device__ __forceinline__ vector16<T> load16(const T* p) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  vector16<T> c;
  std::memcpy(&c, &u, sizeof c);
  return c;
}

/// One 16-byte store of a chunk to global memory; `p` 16-byte aligned. In PTX
/// because a chunk built element by element (guarded loads at a matrix's edge)
/// reaches the store as four words that nvcc 13.0 stores one by one, even
/// through a uint4 (seen in the PTX of pack_k_major_kernel).
template <class T>
__device__ __forceinline__ void store16_global(T* p, const vector16<T>& c) {
  unsigned w[4];
  std::memcpy(w, &c, sizeof w);
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
               : "memory");
}

/// Bytes past the previous 16-byte boundary.
__host__ __device__ inline std::size_t misalignment(const void* p) { return misalignment(p, vector_bytes); }

}  // namespace kf::detail
