// SPDX-License-Identifier: Apache-2.0
// filter2d's argument checks (validate.cpp): the named first step of the
// launcher (validate -> plan -> dispatch).
#pragma once

#include <cstddef>

#include "kernelforge/conv.hpp"

namespace kf::detail {

/// Every check of a filter2d call, before anything is enqueued. The pointers
/// are checked for null and overlap only (elements of element_bytes each).
void validate_filter2d(const char* what, std::size_t channels, std::size_t height, std::size_t width, const void* in,
                       std::size_t in_pitch, const void* filter, std::size_t r, std::size_t s, const void* out,
                       std::size_t out_pitch, std::size_t element_bytes, const filter2d_options& options);

}  // namespace kf::detail
