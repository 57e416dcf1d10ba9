// SPDX-License-Identifier: Apache-2.0
// Argument checks shared by every family, thrown before anything is enqueued:
// null pointers, alignment, block sizes, overlapping arrays, enum values. Each
// names the argument and says what to pass instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace kf::detail {

[[noreturn]] void throw_invalid_argument(const char* what, const std::string& message);
[[noreturn]] void throw_unsupported(const char* what, const std::string& message);

/// errc::invalid_argument naming `name` when `p` is null while n > 0.
void require_pointer(const char* what, const char* name, const void* p, std::size_t n);

/// errc::invalid_argument naming `name` when `p` is not aligned to `alignment`
/// bytes (a T* must be aligned to alignof(T); anything else faults on the GPU).
void require_aligned(const char* what, const char* name, const void* p, std::size_t alignment);

/// errc::invalid_argument unless block is 0 (launcher decides) or a multiple of 32 in [32, 1024].
void require_block_size(const char* what, int block);

/// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte (empty or null ranges never do).
inline bool ranges_overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  if (a == nullptr || b == nullptr || a_bytes == 0 || b_bytes == 0) return false;
  const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

/// An output may be the very same array as an input (in place: same address and
/// element size) or disjoint from it; a partial overlap would race between
/// threads: errc::invalid_argument naming both.
void require_same_or_disjoint(const char* what, const char* out_name, const void* out, std::size_t out_bytes,
                              const char* in_name, const void* in, std::size_t in_bytes);

/// count * element_bytes, or errc::out_of_memory naming `what` when it overflows size_t.
std::size_t allocation_bytes(const char* what, std::size_t count, std::size_t element_bytes);

/// Arrays of a_n and b_n elements of T overlap.
template <class T>
bool arrays_overlap(const T* a, std::size_t a_n, const T* b, std::size_t b_n) {
  return ranges_overlap(a, a_n * sizeof(T), b, b_n * sizeof(T));
}

/// errc::invalid_argument unless `value` is one of `valid`; the message gives the
/// number it got and the valid names (by the enum's kf::to_string).
template <class Enum>
void require_one_of(const char* what, const char* name, Enum value, std::initializer_list<Enum> valid) {
  for (Enum v : valid) {
    if (v == value) return;  // the call path builds no string
  }
  std::string names;
  for (Enum v : valid) names += (names.empty() ? "" : ", ") + std::string(to_string(v));
  throw_invalid_argument(
      what, std::string(name) + " = " + std::to_string(static_cast<int>(value)) + " is not one of: " + names);
}

}  // namespace kf::detail
