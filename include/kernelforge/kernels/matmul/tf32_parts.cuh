// SPDX-License-Identifier: Apache-2.0
// An fp32 value's two TF32 parts, the one definition every fp32-emulation
// kernel uses: the pre-pass (split_tf32.cuh, which writes both parts to a
// workspace for steps 15 and 16 and conv2d's step 9) and the skinny step 17
// (17_wgmma_fp32_emulated_skinny.cuh, which splits its large operand in
// registers), so the two give the same parts bit for bit.
//
//   x = hi + lo + e,  hi = tf32(x),  lo = tf32(x - hi)   (both rounded to nearest)
//
// x - hi is exact in fp32, |lo| <= 2^-11 |x| and |e| <= 2^-11 |lo| <= 2^-22 |x|,
// so hi*hi + hi*lo + lo*hi carries fp32-level accuracy (the dropped lo*lo is
// below 2^-22 of the product). hi and lo are fp32 bit patterns whose low 13
// mantissa bits are zero, which TF32 wgmma and mma.sync read without loss.
#pragma once

#include <cstdint>

#include "../arch/mma_sm80.cuh"  // round_to_tf32

namespace kf::detail {

/// x's two TF32 parts. Non-finite x: hi = x, lo = 0 (x - hi would be NaN). A
/// finite x that rounds up past the largest TF32 value keeps a finite hi
/// (truncated: the low 13 bits dropped) so that only infinite inputs give
/// infinite products.
///
/// Written without a branch: the kernels split 16 values of a k-block at once,
/// and an early `return` for the rare non-finite x compiled to a divergent
/// branch per value, which serialised the 16 splits (step 17's k-loop held 35
/// branches). The selects below give the same bits for every input.
__device__ __forceinline__ float2 split_tf32(float x) {
  const std::uint32_t bits = __float_as_uint(x);
  const std::uint32_t exponent_all_ones = 0x7F800000u;
  const bool finite = (bits & exponent_all_ones) != exponent_all_ones;
  const std::uint32_t rounded = to_tf32(x);
  const bool rounded_overflows = (rounded & exponent_all_ones) == exponent_all_ones;  // finite x only
  const std::uint32_t hi_finite = rounded_overflows ? (bits & 0xFFFFE000u) : rounded;
  const float hi = __uint_as_float(finite ? hi_finite : bits);
  const float lo = round_to_tf32(x - hi);
  return make_float2(hi, finite ? lo : 0.0f);
}

/// The round-to-nearest (ties away) fp32 -> TF32 bits of a value that stays
/// finite when rounded: the 13 dropped bits' half added to the magnitude, then
/// dropped (what cvt.rna.tf32.f32 does there; it adds a guard for inf and NaN).
__host__ __device__ __forceinline__ std::uint32_t tf32_bits_of_finite(std::uint32_t bits) {
  return (bits + 0x1000u) & 0xFFFFE000u;
}

/// split_tf32 without its guards, for kernels that split many values at once
/// and take split_tf32 only where one of them needs it (step 17's k-block:
/// split_in_registers.cuh). Returns x's parts as split_tf32 gives them
/// whenever `remainder` comes back finite. It does not otherwise: x inf or NaN,
/// or x within half a TF32 step of FLT_MAX (hi rounds to inf), all make the
/// remainder x - hi inf or NaN. So a caller sums its values' remainders (a
/// finite one is below 2^117, so 16 of them cannot overflow: a finite sum
/// means every one was finite) and redoes the lot with split_tf32 if it is not.
__device__ __forceinline__ float2 split_tf32_unguarded(float x, float& remainder) {
  const float hi = __uint_as_float(tf32_bits_of_finite(__float_as_uint(x)));
  remainder = x - hi;
  return make_float2(hi, __uint_as_float(tf32_bits_of_finite(__float_as_uint(remainder))));
}

}  // namespace kf::detail
