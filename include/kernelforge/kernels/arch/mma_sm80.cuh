// SPDX-License-Identifier: Apache-2.0
// Warp-level tensor-core products (mma.sync, sm_80+; FP8 sm_89+), the fp32 -> TF32
// rounding their operands need, and ldmatrix (shared memory -> fragments). Below sm_80 the bodies are empty: kernels
// that use them trap there, and the launchers never select them.
#pragma once

#include <cstdint>

#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

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

/// d (16 x 8, fp32) = a (16 x 8, row-major) * b (16 x 8, column-major), TF32
/// inputs: mma_m16n8k8_tf32 with a zero accumulator (a fresh sum, d not read).
__device__ __forceinline__ void mma_m16n8k8_tf32_fresh(float (&d)[4], const std::uint32_t (&a)[4],
                                                       const std::uint32_t (&b)[2]) {
#if KF_ARCH_SM80
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(0.0f));
#else
  d[0] = d[1] = d[2] = d[3] = 0.0f;
#endif
}

/// d (16 x 8, fp32) += a (16 x 16, row-major) * b (16 x 8, column-major), with
/// T = __half or __nv_bfloat16 inputs (two per 32-bit register) and fp32
/// accumulation. Fragments as the PTX ISA lays them out for mma.m16n8k16:
/// a[0..3] = (row g, k 2t..2t+1), (g+8, 2t), (g, 2t+8), (g+8, 2t+8);
/// b[0..1] = (k 2t..2t+1, column g), (k 2t+8.., g); g = lane / 4, t = lane % 4.
template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "mma.m16n8k16: f16 or bf16");
#if KF_ARCH_SM80
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
#endif
}

/// d (16 x 8, fp32) += a (16 x 32, row-major) * b (32 x 8, column-major), TA / TB
/// FP8 (e4m3 / e5m2; sm_89+), four per 32-bit register. The fragments hold the
/// same bytes as mma.m16n8k16's (a 16 x 32-byte block of A, a 32-byte x 8 block
/// of B), so the f16 step's ldmatrix addressing loads them: a[0..3] = (row g, k
/// 4t..4t+3), (g+8, 4t), (g, 4t+16), (g+8, 4t+16); b[0..1] = (k 4t..4t+3,
/// column g), (k 4t+16.., g). The products accumulate in fp32 at the
/// tensor cores' own precision: callers promote every 128 of k (scaled/).
template <class TA, class TB>
__device__ __forceinline__ void mma_m16n8k32_fp8(float (&d)[4], const std::uint32_t (&a)[4],
                                                 const std::uint32_t (&b)[2]) {
  constexpr bool a_e4m3 = std::is_same_v<TA, __nv_fp8_e4m3>, b_e4m3 = std::is_same_v<TB, __nv_fp8_e4m3>;
  static_assert((a_e4m3 || std::is_same_v<TA, __nv_fp8_e5m2>)&&(b_e4m3 || std::is_same_v<TB, __nv_fp8_e5m2>),
                "mma.m16n8k32: e4m3 or e5m2 operands");
#if KF_ARCH_SM89
#define KF_MMA_FP8(ta, tb)                                                              \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." ta "." tb                       \
               ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n" \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                         \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
  if constexpr (a_e4m3 && b_e4m3) {
    KF_MMA_FP8("e4m3", "e4m3");
  } else if constexpr (a_e4m3) {
    KF_MMA_FP8("e4m3", "e5m2");
  } else if constexpr (b_e4m3) {
    KF_MMA_FP8("e5m2", "e4m3");
  } else {
    KF_MMA_FP8("e5m2", "e5m2");
  }
#undef KF_MMA_FP8
#endif
}

/// Four 8 x 8 matrices of 16-bit elements from shared memory: lanes 8j..8j+7
/// give the addresses of the 8 rows (16 bytes each) of matrix j, and register j
/// of lane l receives row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1 of matrix j.
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t address) {
#if KF_ARCH_SM80
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
#else
  r[0] = r[1] = r[2] = r[3] = address;
#endif
}

/// ldmatrix_x4 transposed: register j of lane l receives column l / 4, rows
/// 2 (l % 4) and 2 (l % 4) + 1 of matrix j (for operands stored the other way).
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t address) {
#if KF_ARCH_SM80
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
#else
  r[0] = r[1] = r[2] = r[3] = address;
#endif
}

/// Two B fragments of an mma.sync (two 32-bit registers each) from one
/// ldmatrix_x4 (Trans: ldmatrix_x4_trans): registers 0-1 into b0, 2-3 into b1.
template <bool Trans = false>
__device__ __forceinline__ void ldmatrix_x4_b_pair(std::uint32_t (&b0)[2], std::uint32_t (&b1)[2],
                                                   std::uint32_t address) {
  std::uint32_t r[4];
  if constexpr (Trans) {
    ldmatrix_x4_trans(r, address);
  } else {
    ldmatrix_x4(r, address);
  }
  b0[0] = r[0];
  b0[1] = r[1];
  b1[0] = r[2];
  b1[1] = r[3];
}

}  // namespace kf::detail
