// SPDX-License-Identifier: Apache-2.0
// Warpgroup tensor-core products (wgmma.mma_async, sm_90a): four warps issue one
// asynchronous product whose operands come straight from shared memory through
// matrix descriptors. fence / commit / wait order them against the accumulator
// registers; fence_operands keeps the compiler from moving accumulator accesses
// across them.
#pragma once

#include <cstdint>

#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "guards.cuh"

namespace kf::detail {

/// Accumulators per thread of a 64 x N fp32 product (the warpgroup's 128 threads).
template <int N>
inline constexpr int wgmma_accumulators = 64 * N / 128;

#if KF_ARCH_SM90A
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
/// Keeps the compiler from moving accumulator accesses across the asynchronous products.
template <int N>
__device__ __forceinline__ void fence_operands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/// Shared-memory matrix descriptor of a tile in the 128-byte swizzle (rows of
/// 128 bytes, 8-row atoms of 1024 bytes; tiles start 1024-aligned, so the base
/// offset is 0). Bits: [0,14) address >> 4, [16,30) leading byte offset >> 4,
/// [32,46) stride byte offset >> 4, [62,64) layout: 1 = 128-byte swizzle.
///  * K-major (k contiguous; the defaults): each row holds 128 bytes of k for
///    one m / n; atoms along m / n are `stride_byte_offset` = 1024 apart; the
///    leading byte offset is unused (1 by convention, i.e. 16 bytes).
///  * MN-major (m / n contiguous, 16-bit types; wgmma's transpose bit set): the
///    canonical layout ((8,8,mn),(8,k)) : ((1,8,LBO),(64,SBO)) in elements --
///    each row holds 64 consecutive m / n of one k; 8-row atoms along k are
///    `stride_byte_offset` apart, 64-element blocks along m / n
///    `leading_byte_offset` apart.
__device__ __forceinline__ std::uint64_t smem_descriptor_sw128(std::uint32_t address,
                                                               std::uint32_t leading_byte_offset = 16,
                                                               std::uint32_t stride_byte_offset = 1024) {
  constexpr std::uint64_t swizzle_128b = 1;
  const auto field = [](std::uint32_t bytes) { return static_cast<std::uint64_t>((bytes & 0x3FFFF) >> 4); };
  return field(address) | (field(leading_byte_offset) << 16) | (field(stride_byte_offset) << 32) | (swizzle_128b << 62);
}

/// The descriptor of the tile `bytes` further on in shared memory: only the
/// start-address field (bits 0-13, address >> 4) changes, and no shared-memory
/// address (< 228 KiB) carries out of it. For a stage's or a product's
/// descriptor from a base computed once. The add is on the low 32-bit word
/// alone (as CUTLASS's descriptor iterator): a 64-bit add costs a carry chain
/// and register-pair moves per product.
__device__ __forceinline__ std::uint64_t smem_descriptor_advance(std::uint64_t descriptor, std::uint32_t bytes) {
  const std::uint32_t low = static_cast<std::uint32_t>(descriptor) + (bytes >> 4);
  return (descriptor & 0xFFFFFFFF00000000ull) | low;
}

// ---- the products: wgmma.m64nNk8 (TF32), m64nNk16 (f16 / bf16), N in {64, 128, (192,) 256}; m64nNk32 (FP8)
// A thread holds N / 2 fp32 accumulators; inline PTX needs one operand per
// register, so the lists below are spelled out by N (32 operands per line).
#define KF_WGMMA_REGS_0                                                    \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define KF_WGMMA_REGS_32                                                               \
  ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define KF_WGMMA_REGS_64_95                                                            \
  ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define KF_WGMMA_REGS_64                                                                         \
  ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "           \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "             \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define KF_WGMMA_D4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define KF_WGMMA_D16(i) KF_WGMMA_D4(i), KF_WGMMA_D4(i + 4), KF_WGMMA_D4(i + 8), KF_WGMMA_D4(i + 12)
#define KF_WGMMA_D32(i) KF_WGMMA_D16(i), KF_WGMMA_D16(i + 16)
// n: the shape's N; regs: its accumulator list; a, b, p: the operand numbers of
// the descriptors and the scale-d flag after it; ta, tb: the element types of A
// and B (tf32, f16, bf16, e4m3, e5m2); k: 8, 16 or 32; tail: ", imm-trans-a,
// imm-trans-b" (16-bit only); ...: the output operands then the inputs.
#define KF_WGMMA_ASM(n, k, ta, tb, regs, a, b, p, tail, ...)                                            \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" p                                                   \
               ", 0;\n"                                                                                 \
               "wgmma.mma_async.sync.aligned.m64n" n "k" k ".f32." ta "." tb " {" regs "}, %" a ", %" b \
               ", p, 1, 1" tail ";\n}\n"                                                                \
               : __VA_ARGS__)

/// d (64 x N, fp32) += A (64 x 8) * B (8 x N), both TF32 read from shared memory
/// (k-major: TF32 has no transpose bits). N: 64, 128 or 256.
template <int N>
__device__ __forceinline__ void wgmma_m64nNk8_tf32(float (&d)[wgmma_accumulators<N>], std::uint64_t desc_a,
                                                   std::uint64_t desc_b) {
  static_assert(N == 64 || N == 128 || N == 256, "wgmma TF32 here: N of 64, 128 or 256");
  if constexpr (N == 256) {
    KF_WGMMA_ASM("256", "8", "tf32", "tf32", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32 KF_WGMMA_REGS_64, "128", "129", "130", "",
                 KF_WGMMA_D32(0), KF_WGMMA_D32(32), KF_WGMMA_D32(64), KF_WGMMA_D32(96)
                 : "l"(desc_a), "l"(desc_b), "n"(1));
  } else if constexpr (N == 128) {
    KF_WGMMA_ASM("128", "8", "tf32", "tf32", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32, "64", "65", "66", "", KF_WGMMA_D32(0),
                 KF_WGMMA_D32(32)
                 : "l"(desc_a), "l"(desc_b), "n"(1));
  } else {
    KF_WGMMA_ASM("64", "8", "tf32", "tf32", KF_WGMMA_REGS_0, "32", "33", "34", "", KF_WGMMA_D32(0)
                 : "l"(desc_a), "l"(desc_b), "n"(1));
  }
}

/// d (64 x N, fp32) = A (64 x 8) * B (8 x N) + (scale_d ? d : 0), TF32 from
/// shared memory (k-major): scale_d == 0 starts a fresh partial sum without
/// zeroing the registers first (the fp32-emulation step's per-k-block partials,
/// 15_wgmma_fp32_emulated.cuh). N: 64 or 128.
template <int N>
__device__ __forceinline__ void wgmma_m64nNk8_tf32(float (&d)[wgmma_accumulators<N>], std::uint64_t desc_a,
                                                   std::uint64_t desc_b, std::uint32_t scale_d) {
  static_assert(N == 64 || N == 128, "wgmma TF32 with scale-d here: N of 64 or 128");
  if constexpr (N == 128) {
    KF_WGMMA_ASM("128", "8", "tf32", "tf32", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32, "64", "65", "66", "", KF_WGMMA_D32(0),
                 KF_WGMMA_D32(32)
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  } else {
    KF_WGMMA_ASM("64", "8", "tf32", "tf32", KF_WGMMA_REGS_0, "32", "33", "34", "", KF_WGMMA_D32(0)
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
}

// The register-sourced TF32 form: a: the operand list of A's four registers
// ("%32, %33, %34, %35"), b, p: the operand numbers of B's descriptor and the
// scale-d flag; ...: the accumulators, then the inputs.
#define KF_WGMMA_TF32_RS_ASM(n, regs, a, b, p, ...)                                                                \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" p                                                              \
               ", 0;\n"                                                                                            \
               "wgmma.mma_async.sync.aligned.m64n" n "k8.f32.tf32.tf32 {" regs "}, {" a "}, %" b ", p, 1, 1;\n}\n" \
               : __VA_ARGS__)
#define KF_WGMMA_A_REGS "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3])

/// d (64 x N, fp32) += A (64 x 8) * B (8 x N), TF32, A from registers (wgmma's
/// register-sourced form): a[0..3] hold A's elements (row 16 * warp + lane / 4
/// (+ 8 for a[1], a[3]), k lane % 4 (+ 4 for a[2], a[3])) of the warp's 16 rows;
/// B is read from shared memory, k-major. A may then come from any layout the
/// threads can load, e.g. M-major, which TF32 wgmma cannot read from shared memory.
/// a[] must not change until the product completes (wgmma_wait).
template <int N>
__device__ __forceinline__ void wgmma_m64nNk8_tf32_rs(float (&d)[wgmma_accumulators<N>], const std::uint32_t (&a)[4],
                                                      std::uint64_t desc_b) {
  static_assert(N == 64 || N == 128 || N == 256, "wgmma TF32 here: N of 64, 128 or 256");
  if constexpr (N == 256) {
    KF_WGMMA_TF32_RS_ASM("256", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32 KF_WGMMA_REGS_64, "%128, %129, %130, %131", "132",
                         "133", KF_WGMMA_D32(0), KF_WGMMA_D32(32), KF_WGMMA_D32(64), KF_WGMMA_D32(96)
                         : KF_WGMMA_A_REGS, "l"(desc_b), "n"(1));
  } else if constexpr (N == 128) {
    KF_WGMMA_TF32_RS_ASM("128", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32, "%64, %65, %66, %67", "68", "69", KF_WGMMA_D32(0),
                         KF_WGMMA_D32(32)
                         : KF_WGMMA_A_REGS, "l"(desc_b), "n"(1));
  } else {
    KF_WGMMA_TF32_RS_ASM("64", KF_WGMMA_REGS_0, "%32, %33, %34, %35", "36", "37", KF_WGMMA_D32(0)
                         : KF_WGMMA_A_REGS, "l"(desc_b), "n"(1));
  }
}

/// The register-sourced form with scale-d: d = A * B + (scale_d ? d : 0), so
/// scale_d == 0 starts a fresh partial sum without zeroing the registers first
/// (the skinny fp32-emulation step's per-k-block partials,
/// 17_wgmma_fp32_emulated_skinny.cuh). N: 64 or 128.
template <int N>
__device__ __forceinline__ void wgmma_m64nNk8_tf32_rs(float (&d)[wgmma_accumulators<N>], const std::uint32_t (&a)[4],
                                                      std::uint64_t desc_b, std::uint32_t scale_d) {
  static_assert(N == 64 || N == 128, "wgmma TF32 from registers with scale-d here: N of 64 or 128");
  if constexpr (N == 128) {
    KF_WGMMA_TF32_RS_ASM("128", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32, "%64, %65, %66, %67", "68", "69", KF_WGMMA_D32(0),
                         KF_WGMMA_D32(32)
                         : KF_WGMMA_A_REGS, "l"(desc_b), "r"(scale_d));
  } else {
    KF_WGMMA_TF32_RS_ASM("64", KF_WGMMA_REGS_0, "%32, %33, %34, %35", "36", "37", KF_WGMMA_D32(0)
                         : KF_WGMMA_A_REGS, "l"(desc_b), "r"(scale_d));
  }
}
#undef KF_WGMMA_A_REGS
#undef KF_WGMMA_TF32_RS_ASM

/// d (64 x N, fp32) += A (64 x 16) * B (16 x N), T = __half or __nv_bfloat16,
/// both read from shared memory: A k-major (TransA = 0) or M-major (TransA = 1,
/// imm-trans-a: the wgrad's dy^T, 03_wgrad_wgmma.cuh), B k-major (TransB = 0)
/// or N-major (TransB = 1, imm-trans-b): the 16-bit types allow both.
template <class T, int N, int TransB = 0, int TransA = 0>
__device__ __forceinline__ void wgmma_m64nNk16(float (&d)[wgmma_accumulators<N>], std::uint64_t desc_a,
                                               std::uint64_t desc_b) {
  static_assert(TransB == 0 || TransB == 1, "imm-trans-b is 0 or 1");
  static_assert(TransA == 0 || TransA == 1, "imm-trans-a is 0 or 1");
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "wgmma m64nNk16: f16 or bf16");
  static_assert(N == 64 || N == 128 || N == 192 || N == 256, "wgmma 16-bit here: N of 64, 128, 192 or 256");
  constexpr bool f16 = std::is_same_v<T, __half>;
  if constexpr (N == 192) {  // the wgrad's filter-column tiles (03_wgrad_wgmma.cuh)
    if constexpr (f16) {
      KF_WGMMA_ASM("192", "16", "f16", "f16", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32 KF_WGMMA_REGS_64_95, "96", "97", "98",
                   ", %100, %99", KF_WGMMA_D32(0), KF_WGMMA_D32(32), KF_WGMMA_D32(64)
                   : "l"(desc_a), "l"(desc_b), "n"(1), "n"(TransB), "n"(TransA));
    } else {
      KF_WGMMA_ASM("192", "16", "bf16", "bf16", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32 KF_WGMMA_REGS_64_95, "96", "97", "98",
                   ", %100, %99", KF_WGMMA_D32(0), KF_WGMMA_D32(32), KF_WGMMA_D32(64)
                   : "l"(desc_a), "l"(desc_b), "n"(1), "n"(TransB), "n"(TransA));
    }
  } else if constexpr (N == 256 && f16) {
    KF_WGMMA_ASM("256", "16", "f16", "f16", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32 KF_WGMMA_REGS_64, "128", "129", "130",
                 ", %132, %131", KF_WGMMA_D32(0), KF_WGMMA_D32(32), KF_WGMMA_D32(64), KF_WGMMA_D32(96)
                 : "l"(desc_a), "l"(desc_b), "n"(1), "n"(TransB), "n"(TransA));
  } else if constexpr (N == 256) {
    KF_WGMMA_ASM("256", "16", "bf16", "bf16", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32 KF_WGMMA_REGS_64, "128", "129", "130",
                 ", %132, %131", KF_WGMMA_D32(0), KF_WGMMA_D32(32), KF_WGMMA_D32(64), KF_WGMMA_D32(96)
                 : "l"(desc_a), "l"(desc_b), "n"(1), "n"(TransB), "n"(TransA));
  } else if constexpr (N == 128 && f16) {
    KF_WGMMA_ASM("128", "16", "f16", "f16", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32, "64", "65", "66", ", %68, %67",
                 KF_WGMMA_D32(0), KF_WGMMA_D32(32)
                 : "l"(desc_a), "l"(desc_b), "n"(1), "n"(TransB), "n"(TransA));
  } else if constexpr (N == 128) {
    KF_WGMMA_ASM("128", "16", "bf16", "bf16", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32, "64", "65", "66", ", %68, %67",
                 KF_WGMMA_D32(0), KF_WGMMA_D32(32)
                 : "l"(desc_a), "l"(desc_b), "n"(1), "n"(TransB), "n"(TransA));
  } else if constexpr (f16) {
    KF_WGMMA_ASM("64", "16", "f16", "f16", KF_WGMMA_REGS_0, "32", "33", "34", ", %36, %35", KF_WGMMA_D32(0)
                 : "l"(desc_a), "l"(desc_b), "n"(1), "n"(TransB), "n"(TransA));
  } else {
    KF_WGMMA_ASM("64", "16", "bf16", "bf16", KF_WGMMA_REGS_0, "32", "33", "34", ", %36, %35", KF_WGMMA_D32(0)
                 : "l"(desc_a), "l"(desc_b), "n"(1), "n"(TransB), "n"(TransA));
  }
}

/// FP8 operand pairs of wgmma.m64nNk32 (e5m2 x e5m2 exists in PTX, but the library ships the three below).
template <class TA, class TB>
inline constexpr bool is_wgmma_fp8_pair_v =
    (std::is_same_v<TA, __nv_fp8_e4m3> && (std::is_same_v<TB, __nv_fp8_e4m3> || std::is_same_v<TB, __nv_fp8_e5m2>)) ||
    (std::is_same_v<TA, __nv_fp8_e5m2> && std::is_same_v<TB, __nv_fp8_e4m3>);

// The type pair of an FP8 product as PTX names it: one asm per pair (the types are part of the opcode).
#define KF_WGMMA_FP8_ASM(n, regs, a, b, p, ...)                            \
  if constexpr (a_e4m3 && b_e4m3) {                                        \
    KF_WGMMA_ASM(n, "32", "e4m3", "e4m3", regs, a, b, p, "", __VA_ARGS__); \
  } else if constexpr (a_e4m3) {                                           \
    KF_WGMMA_ASM(n, "32", "e4m3", "e5m2", regs, a, b, p, "", __VA_ARGS__); \
  } else {                                                                 \
    KF_WGMMA_ASM(n, "32", "e5m2", "e4m3", regs, a, b, p, "", __VA_ARGS__); \
  }

/// d (64 x N, fp32) = A (64 x 32) * B (32 x N) + (scale_d ? d : 0), TA / TB FP8
/// (e4m3 / e5m2), both read from shared memory k-major (FP8 wgmma has no
/// transpose bits). scale_d == 0 starts a fresh sum (the first product of a
/// promotion block) without zeroing the registers first. The tensor cores keep
/// only about 14 bits of these sums: callers promote them into fp32 registers
/// every 128 of k (kernels/matmul/scaled/03_wgmma.cuh). N: 64, 128 or 192.
template <class TA, class TB, int N>
__device__ __forceinline__ void wgmma_m64nNk32_fp8(float (&d)[wgmma_accumulators<N>], std::uint64_t desc_a,
                                                   std::uint64_t desc_b, std::uint32_t scale_d) {
  static_assert(is_wgmma_fp8_pair_v<TA, TB>, "wgmma FP8 here: e4m3 x e4m3, e4m3 x e5m2, e5m2 x e4m3");
  static_assert(N == 64 || N == 128 || N == 192, "wgmma FP8 here: N of 64, 128 or 192");
  constexpr bool a_e4m3 = std::is_same_v<TA, __nv_fp8_e4m3>, b_e4m3 = std::is_same_v<TB, __nv_fp8_e4m3>;
  if constexpr (N == 192) {
    KF_WGMMA_FP8_ASM("192", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32 KF_WGMMA_REGS_64_95, "96", "97", "98", KF_WGMMA_D32(0),
                     KF_WGMMA_D32(32), KF_WGMMA_D32(64)
                     : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  } else if constexpr (N == 128) {
    KF_WGMMA_FP8_ASM("128", KF_WGMMA_REGS_0 KF_WGMMA_REGS_32, "64", "65", "66", KF_WGMMA_D32(0), KF_WGMMA_D32(32)
                     : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  } else {
    KF_WGMMA_FP8_ASM("64", KF_WGMMA_REGS_0, "32", "33", "34", KF_WGMMA_D32(0) : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
}

#undef KF_WGMMA_FP8_ASM
#undef KF_WGMMA_ASM
#undef KF_WGMMA_D32
#undef KF_WGMMA_D16
#undef KF_WGMMA_D4
#undef KF_WGMMA_REGS_64
#undef KF_WGMMA_REGS_64_95
#undef KF_WGMMA_REGS_32
#undef KF_WGMMA_REGS_0
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail
