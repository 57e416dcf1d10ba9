// SPDX-License-Identifier: Apache-2.0
// Warp-level tensor-core products (mma.sync, sm_80+) and the fp32 -> TF32
// rounding their operands need. Below sm_80 the bodies are empty: kernels that
// use them trap there, and the launchers never select them.
#pragma once

#include <cstdint>

#include "guards.cuh"

namespace kf::detail {

/// fp32 -> TF32, round to nearest (ties away from zero), as a 32-bit pattern:
/// the 10-bit mantissa the tensor cores read, the low 13 bits zero.
__device__ __forceinline__ std::uint32_t to_tf32(float x) {
  std::uint32_t r = __float_as_uint(x);
#if KF_ARCH_SM80
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
#endif
  return r;
}

/// to_tf32 as a float (for storing rounded operands in shared memory once).
__device__ __forceinline__ float round_to_tf32(float x) { return __uint_as_float(to_tf32(x)); }

/// d (16 x 8, fp32) += a (16 x 8, row-major) * b (8 x 8, column-major), TF32 inputs.
/// Fragments as the PTX ISA lays them out for mma.m16n8k8 .tf32.
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const std::uint32_t (&a)[4],
                                                 const std::uint32_t (&b)[2]) {
#if KF_ARCH_SM80
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

}  // namespace kf::detail
