// SPDX-License-Identifier: Apache-2.0
// The 32-bit shared-memory address of a generic pointer: what every PTX
// instruction with a .shared operand (cp.async, ldmatrix, mbarrier, TMA, wgmma
// descriptors) takes; and 4- and 16-byte loads and 4- and 8-byte stores by such an address.
#pragma once

#include <cstdint>

namespace kf::detail {

__device__ __forceinline__ std::uint32_t smem_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// `address` as a value the compiler keeps rather than recomputes. A shared-memory
/// address derived from the dynamic allocation is otherwise rematerialized where it
/// is used: in a k-loop, a read of the CTA's cluster rank (S2UR) and a chain of
/// uniform-datapath arithmetic every k-step, on the path from one stage's products
/// to the next (the FP8 wgmma step: benchmarks/tuning/matmul.md#fp8).
__device__ __forceinline__ std::uint32_t pinned(std::uint32_t address) {
  asm volatile("mov.b32 %0, %0;\n" : "+r"(address));
  return address;
}

/// 16 bytes from this CTA's shared memory (`address` 16-byte aligned).
__device__ __forceinline__ float4 load_shared_v4(std::uint32_t address) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(address)
               : "memory");
  return v;
}

/// 4 bytes from this CTA's shared memory (`address` 4-byte aligned), as raw bits.
__device__ __forceinline__ std::uint32_t load_shared_b32(std::uint32_t address) {
  std::uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(address) : "memory");
  return v;
}

/// 4 bytes into this CTA's shared memory (`address` 4-byte aligned).
__device__ __forceinline__ void store_shared_f32(std::uint32_t address, float v) {
  asm volatile("st.shared.f32 [%0], %1;\n" ::"r"(address), "f"(v) : "memory");
}

/// 8 bytes into this CTA's shared memory (`address` 8-byte aligned).
__device__ __forceinline__ void store_shared_v2(std::uint32_t address, float2 v) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(address), "f"(v.x), "f"(v.y) : "memory");
}

}  // namespace kf::detail
