// SPDX-License-Identifier: Apache-2.0
// Element types: the type a family computes in, and the compile-time check that
// a family ships a type. Host-only C++17 (no nvcc needed).
#pragma once

#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kf {

/// The type a family computes T in: float for the 16-bit types, T otherwise.
/// Scalars (alpha, beta, a, thresholds) are taken as compute_t<T>, so a double
/// literal, an int or a float works with any element type.
template <class T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<__half> {
  using type = float;
};
template <>
struct compute_type<__nv_bfloat16> {
  using type = float;
};
template <class T>
using compute_t = typename compute_type<T>::type;

/// T in a context that takes no part in template argument deduction (C++20's
/// std::type_identity_t): `const nondeduced_t<T>* bias` accepts a literal nullptr.
template <class T>
struct type_identity {
  using type = T;
};
template <class T>
using nondeduced_t = typename type_identity<T>::type;

/// True when T is one of Shipped (the element types a family is precompiled for).
template <class T, class... Shipped>
inline constexpr bool is_one_of_v = (std::is_same_v<T, Shipped> || ...);

}  // namespace kf
