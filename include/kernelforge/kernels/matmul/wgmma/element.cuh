// SPDX-License-Identifier: Apache-2.0
// What the element type changes in the Hopper GEMM (14_wgmma.cuh): bytes per
// element (a stage's k is one 128-byte swizzled row: 32 floats, 64 halves), the
// k of one product, the pair type of the two-element stores, and the product
// itself. float runs TF32 (wgmma.m64nNk8: B k-major only; an n-contiguous B
// takes the swapped product, swap_ab.cuh); __half and __nv_bfloat16 run
// wgmma.m64nNk16, whose transpose bit (TransB = 1) reads an N-major B in place;
// the FP8 pairs (fp8_operands<TA, TB>, the scaled GEMM: scaled/03_wgmma.cuh) run
// wgmma.m64nNk32, k-major only, a stage's k (128) being one promotion block.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "../../arch/guards.cuh"
#include "../../arch/wgmma_sm90.cuh"
#include "config.cuh"

namespace kf::detail::wgmma {

template <class T>
struct element;

template <>
struct element<float> {
  static constexpr int bytes = 4;
  static constexpr int stage_k = swizzle_row_bytes / bytes;  ///< 32: one swizzled row
  static constexpr int wgmma_k = 8;                          ///< wgmma.m64nNk8 (TF32)
  using pair = float2;
#if KF_ARCH_SM90A
  /// One m64nNk8 product; N = 2 * Accumulators (the block tile's width).
  template <int TransB, int Accumulators>
  __device__ static __forceinline__ void mma(float (&d)[Accumulators], std::uint64_t a, std::uint64_t b) {
    static_assert(TransB == 0, "TF32 wgmma reads B k-major only");
    wgmma_m64nNk8_tf32<2 * Accumulators>(d, a, b);
  }
#endif
};

/// __half and __nv_bfloat16: wgmma.m64nNk16, B k-major or N-major.
template <class T>
struct element_16bit {
  static constexpr int bytes = 2;
  static constexpr int stage_k = swizzle_row_bytes / bytes;  ///< 64: one swizzled row
  static constexpr int wgmma_k = 16;                         ///< wgmma.m64nNk16 (f16 / bf16)
  using pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
#if KF_ARCH_SM90A
  /// One m64nNk16 product; N = 2 * Accumulators (the block tile's width).
  template <int TransB, int Accumulators>
  __device__ static __forceinline__ void mma(float (&d)[Accumulators], std::uint64_t a, std::uint64_t b) {
    wgmma_m64nNk16<T, 2 * Accumulators, TransB>(d, a, b);
  }
#endif
};

template <>
struct element<__half> : element_16bit<__half> {};
template <>
struct element<__nv_bfloat16> : element_16bit<__nv_bfloat16> {};

/// The operands of an FP8 product: A's and B's types may differ (e4m3 x e5m2), so
/// the mainloop's element names the pair.
template <class TA, class TB>
struct fp8_operands {};

/// FP8: wgmma.m64nNk32, A and B k-major. A stage's k, 128, is the span over
/// which the tensor cores' partial sums are trusted before their promotion
/// into fp32 (scaled/args.cuh: fp8_promotion_k).
template <class TA, class TB>
struct element<fp8_operands<TA, TB>> {
  static constexpr int bytes = 1;
  static constexpr int stage_k = swizzle_row_bytes / bytes;  ///< 128: one swizzled row, one promotion block
  static constexpr int wgmma_k = 32;                         ///< wgmma.m64nNk32 (e4m3 / e5m2)
#if KF_ARCH_SM90A
  /// One m64nNk32 product, added to d (scale_d = 1) or replacing it (0); N = 2 * Accumulators.
  template <int TransB, int Accumulators>
  __device__ static __forceinline__ void mma(float (&d)[Accumulators], std::uint64_t a, std::uint64_t b,
                                             std::uint32_t scale_d = 1) {
    static_assert(TransB == 0, "FP8 wgmma reads B k-major only");
    wgmma_m64nNk32_fp8<TA, TB, 2 * Accumulators>(d, a, b, scale_d);
  }
#endif
};

}  // namespace kf::detail::wgmma
