// SPDX-License-Identifier: Apache-2.0
// Step 12 -- wgmma_f16, device code: the Hopper wgmma kernel for __half and
// __nv_bfloat16 (fp32 accumulation). Compiled for sm_90a only
// (tensor_core_sources.cmake); host side wgmma_f16.cu, host interface
// wgmma_f16_launch.cuh.
//
// What changes from tensor_core_f16 (mma.sync, step 11), and why it is faster:
// the kernel of step 10 (10_wgmma_tf32.cuh: wgmma_kernel), instantiated for
// 16-bit operands through wgmma_element<T> below.
//  * wgmma.m64n256k16 reads both operands from shared memory through matrix
//    descriptors: one instruction per warpgroup does 64 x 256 x 16, with no
//    ldmatrix and no fragment registers; mma.sync on Hopper reaches only a
//    fraction of the tensor cores' rate.
//  * TMA loads (one thread, 128-byte swizzle, zero fill outside the matrix):
//    a stage is A 128 x 64 and B 256 x 64 elements (64 halves = 128 bytes = one
//    swizzled row), 48 KiB, the same bytes as step 10's 32-float stage.
//  * Warp specialization (one producer, two consumer warpgroups), 4 stages with
//    "full" and "empty" mbarriers, clusters of 2 CTAs with TMA multicast of B,
//    persistent CTAs, 128 x 128 or 128 x 64 tiles and split-k for products
//    with few tiles: as step 10.
//  * B read in place when it is n-contiguous (the row-major product): wgmma's
//    transpose bit for 16-bit B (imm-trans-b = 1) takes an N-major tile, loaded
//    by TMA as 64 n (128 bytes) x 64 k boxes, four per stage. TF32 has no such
//    bit, so step 10 repacks B; here that pass (a read and a write of B) is gone.
//  * Epilogue: alpha * acc + beta * C in fp32, rounded once to T, two adjacent
//    columns per 32-bit store when C allows; C not read when beta == 0, and
//    then (16-byte aligned rows) staged through shared memory and stored by
//    TMA in 64 x 64 boxes, as step 10: each pair of accumulators is one
//    cvt.rn.f16x2.f32 (bf16x2), and they already lie in the m8n8 fragment
//    layout, so stmatrix.x4 writes four 8 x 8 matrices at once (4 instructions
//    per 64 x 64 chunk and thread instead of 16 32-bit stores).
// A is read k-major (imm-trans-a = 0); an m-contiguous A, and any operand whose
// rows are not 16-byte aligned, is repacked first by pack_k_major.cuh's
// pack_k_major_kernel (instantiated for T).
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../arch/guards.cuh"
#include "../arch/wgmma_sm90.cuh"
#include "10_wgmma_tf32.cuh"

namespace kf::detail {
/// The 16-bit elements of step 12: wgmma.m64nNk16, B k-major or N-major.
template <class T>
struct wgmma_element_16bit {
  static constexpr int bytes = 2;
  static constexpr int stage_k = wgmma_tf32::swizzle_row_bytes / bytes;  ///< 64: one swizzled row
  static constexpr int wgmma_k = 16;                                     ///< wgmma.m64nNk16 (f16 / bf16)
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
struct wgmma_element<__half> : wgmma_element_16bit<__half> {};
template <>
struct wgmma_element<__nv_bfloat16> : wgmma_element_16bit<__nv_bfloat16> {};

}  // namespace kf::detail
