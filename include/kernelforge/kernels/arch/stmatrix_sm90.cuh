// SPDX-License-Identifier: Apache-2.0
// stmatrix (sm_90): a warp stores four 8 x 8 matrices of 16-bit elements from
// registers in the mma fragment layout into shared memory -- the inverse of
// ldmatrix (mma_sm80.cuh). Register i of lane t holds row t / 4, elements
// 2 (t % 4) (low half) and 2 (t % 4) + 1 (high half) of matrix i; lane t gives
// the shared address of row t % 8 of matrix t / 8 (16 contiguous bytes, 16-byte
// aligned). One instruction writes 512 bytes for the warp, where 32-bit stores
// of the same fragments take four.
#pragma once

#include <cstdint>

#include "guards.cuh"

namespace kf::detail {

#if KF_ARCH_SM90
/// Matrices 0-3 from r0-r3 (each a pair of 16-bit elements), rows at this lane's `address`.
__device__ __forceinline__ void stmatrix_x4(std::uint32_t address, std::uint32_t r0, std::uint32_t r1, std::uint32_t r2,
                                            std::uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(address), "r"(r0), "r"(r1),
               "r"(r2), "r"(r3)
               : "memory");
}
#endif  // KF_ARCH_SM90

}  // namespace kf::detail
