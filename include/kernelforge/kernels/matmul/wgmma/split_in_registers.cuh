// SPDX-License-Identifier: Apache-2.0
// The skinny fp32-emulation step's operands (17_wgmma_fp32_emulated_skinny.cuh):
// its large operand X (rows x k, plain fp32) reaches wgmma from registers, split
// there into TF32 parts; its small operand Y (cols x k) is pre-split in HBM
// (split_tf32.cuh) and read from shared memory.
//  * A stage is one k-block: 32 of k of X's 128 rows (16 KiB, as step 14's A)
//    and Y's hi and lo parts of that k-block (its packed columns 64 j and
//    64 j + 32), BlockN rows each: tile_config<BlockN, false, 2>.
//  * X is loaded by step 14's own copies (mainloop::load_a): k-major X in one
//    box of 128 rows (64 a CTA where a cluster shares it), M-major X (rows
//    contiguous) in the swapped TF32 product's four boxes of 32 rows (two a CTA).
//  * Fragments: the swapped product's rows (swap_ab.cuh: swap_row), for both
//    layouts, so the accumulators are laid out as step 14's swapped ones and
//    its epilogues store them. M-major loads are conflict-free (swap_ab.cuh);
//    k-major ones put two rows (r and r + 16) on each 16-byte bank group: two
//    passes per load, 16 loads a k-block (the CPU test
//    MatmulWgmmaTf32.SkinnyFragmentMapping checks both).
//  * The split (tf32_parts.cuh, the pre-pass's own function) gives three
//    fragment sets: hi (for hi x hi), lo, and hi_c, the hi that the hi x lo
//    correction reads: hi where x is finite, else zero. So an inf or a NaN of
//    X never meets a zero lo part of Y (inf * 0 = NaN, which no exact product
//    makes): its corrections are exactly zero and hi x hi carries the exact
//    products' infinities and NaNs. (Y's non-finite values are flagged by its
//    pre-pass and take the kernel's Apart instance, as in step 15.)
#pragma once

#include <cstdint>

#include "../../arch/guards.cuh"
#include "../../arch/smem.cuh"
#include "../tf32_parts.cuh"
#include "config.cuh"
#include "swap_ab.cuh"

namespace kf::detail::wgmma {

/// k-steps (wgmma k8) in a k-block of 32.
inline constexpr int split_k_steps = 4;
/// A fragment register's offset for k-step kk is the k-step-0 offset XOR kk
/// times these: M-major, 8 rows of 128 bytes further in the box; k-major, two
/// 16-byte slots further in the 128-byte swizzled row (slot (k / 4) ^ (row % 8),
/// and k / 4 + 2 kk == (k / 4) ^ 2 kk for k < 8).
inline constexpr int m_major_k_step_xor = 8 * swizzle_row_bytes;  // 1024
inline constexpr int k_major_k_step_xor = 2 * 16;                 // 32

/// Byte offset, in a stage's k-major X (128 rows of one swizzled row of k), of
/// fragment register r (0-3) of lane `lane` of warp `warp` of consumer
/// warpgroup `consumer`, for k-step 0: row swap_row(...) of the warpgroup's 64,
/// k lane % 4 (+ 4 for a2, a3), as swap_fragment_offset for M-major X.
__host__ __device__ constexpr int k_major_fragment_offset(int consumer, int warp, int lane, int r) {
  const int row = wgmma_m * consumer + swap_row(warp, lane / 4 + 8 * (r % 2));
  const int k = lane % 4 + 4 * (r / 2);
  return swizzle_offset(row, 4 * k);
}

#if KF_ARCH_SM90A
/// One k-block of a thread's X fragments, split: per k-step kk, a0..a3 of hi,
/// of hi_c (hi, zero where x is not finite) and of lo, as TF32 bit patterns.
struct split_fragments {
  std::uint32_t hi[split_k_steps][4], hi_c[split_k_steps][4], lo[split_k_steps][4];

  /// Loads and splits the k-block in the stage at x_stage; offset: the
  /// thread's k-step-0 offsets, k_step_xor: m_major_k_step_xor or k_major_k_step_xor.
  /// The thread's 16 values are split unguarded (7 instructions a value, against
  /// ~16 with split_tf32's guards and the predicates they hold), and again by
  /// split_tf32 only where one of them is inf, NaN or rounds past FLT_MAX
  /// (tf32_parts.cuh: split_tf32_unguarded): the same bits either way.
  __device__ __forceinline__ void load(std::uint32_t x_stage, const std::uint32_t (&offset)[4],
                                       std::uint32_t k_step_xor) {
    // The k-step offsets made here, each k-block (a LOP3 each): hoisted out of the k-loop, ptxas kept
    // all 16 live across it and spilled them into the loop (13 LDL a k-block).
    std::uint32_t base[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      base[r] = offset[r];
      asm volatile("" : "+r"(base[r]));
    }
    const auto value = [&](int kk, int r) {
      return __uint_as_float(load_shared_b32(x_stage + (base[r] ^ (kk * k_step_xor))));
    };
    float remainders = 0.0f;  // finite iff every unguarded split below is split_tf32's
#pragma unroll
    for (int kk = 0; kk < split_k_steps; ++kk) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        float remainder;
        const float2 parts = split_tf32_unguarded(value(kk, r), remainder);
        remainders += remainder;
        hi[kk][r] = hi_c[kk][r] = __float_as_uint(parts.x);
        lo[kk][r] = __float_as_uint(parts.y);
      }
    }
    // Rare: this thread's values loaded again (the stage stays until its products are done; keeping
    // them in registers spilled the offsets) and split with split_tf32's guards.
    if (__builtin_expect(!isfinite(remainders), 0)) {
#pragma unroll
      for (int kk = 0; kk < split_k_steps; ++kk) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const float x = value(kk, r);
          const float2 parts = split_tf32(x);
          hi[kk][r] = __float_as_uint(parts.x);
          hi_c[kk][r] = isfinite(x) ? hi[kk][r] : 0u;
          lo[kk][r] = __float_as_uint(parts.y);
        }
      }
    }
    // The split ends here, before the products' wgmma_fence: left to the
    // compiler, it moves into the products, and ptxas then fences each part.
#pragma unroll
    for (int kk = 0; kk < split_k_steps; ++kk) {
#pragma unroll
      for (int r = 0; r < 4; ++r) asm volatile("" : "+r"(hi[kk][r]), "+r"(hi_c[kk][r]), "+r"(lo[kk][r]));
    }
  }
};
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::wgmma
