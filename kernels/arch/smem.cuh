// SPDX-License-Identifier: Apache-2.0
// The 32-bit shared-memory address of a generic pointer: what every PTX
// instruction with a .shared operand (cp.async, ldmatrix, mbarrier, TMA, wgmma
// descriptors) takes.
#pragma once

#include <cstdint>

namespace kf::detail {

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

}  // namespace kf::detail
