// SPDX-License-Identifier: Apache-2.0
// The FP8 wgmma GEMM's scales (scaled/03_wgmma.cuh): each 128-of-k stage's
// partial goes into the fp32 total times its block scales (blockwise: one A
// scale per row, one B scale per 128 columns; else 1), and per-tensor and
// rowwise scales multiply the finished total once. A 192-wide tile straddles
// two blocks of B's scales, at a boundary between 64-column chunks
// (args.cuh: next_b_scale_block_group), so the promotion takes one scale per
// chunk and row and stays one FFMA an accumulator.
#pragma once

#include "../../arch/guards.cuh"
#include "args.cuh"
#include "epilogue.cuh"  // fragment_origin

namespace kf::detail {

/// The scales as the kernel reads them (scaled_gemm_args' fields).
struct fp8_scale_view {
  fp8_scaling mode = fp8_scaling::per_tensor;
  const float* a = nullptr;
  const float* b = nullptr;
  int k_blocks = 0;  ///< ceil(k / 128): a row of blockwise scales
};

namespace wgmma {

#if KF_ARCH_SM90A
/// A 64-column chunk of the tile: 8 accumulator column groups, 32 accumulators
/// a thread. Blockwise, a tile's B scale block changes only between chunks
/// (next_b_scale_block_group), so the promotion takes one scale per chunk and row.
inline constexpr int chunk_groups = 8;
inline constexpr int chunk_accumulators = 4 * chunk_groups;

/// total += partial x the stage's scale: s[j][h] for the accumulators of chunk
/// j and the thread's row h (row0, row0 + 8). One FFMA an accumulator.
template <int Accumulators, int Chunks>
__device__ __forceinline__ void promote(float (&total)[Accumulators], const float (&partial)[Accumulators],
                                        const float (&s)[Chunks][2]) {
  static_assert(Chunks * chunk_accumulators == Accumulators, "one scale pair per 64-column chunk");
#pragma unroll
  for (int c = 0; c < Accumulators / 4; ++c) {
    const int j = 4 * c / chunk_accumulators;
    total[4 * c + 0] = fmaf(s[j][0], partial[4 * c + 0], total[4 * c + 0]);
    total[4 * c + 1] = fmaf(s[j][0], partial[4 * c + 1], total[4 * c + 1]);
    total[4 * c + 2] = fmaf(s[j][1], partial[4 * c + 2], total[4 * c + 2]);
    total[4 * c + 3] = fmaf(s[j][1], partial[4 * c + 3], total[4 * c + 3]);
  }
}

/// total += partial: the promotion of per-tensor and rowwise scales (they
/// multiply the finished total), as the two-partials tile runs it -- the same
/// rounding as promote with s = 1 (fmaf(1, p, t) rounds p + t once).
template <int Accumulators>
__device__ __forceinline__ void promote(float (&total)[Accumulators], const float (&partial)[Accumulators]) {
#pragma unroll
  for (int i = 0; i < Accumulators; ++i) total[i] += partial[i];
}

/// Blockwise scales of one tile, per k-step: the thread's two rows' A scales
/// (0 outside A), and B's scales of the tile's first 128-column block and of
/// the next (a 192-wide tile may straddle two; the first again where it does
/// not), chosen per chunk by the boundary computed once per tile.
template <int BlockN>
struct tile_block_scales {
  static constexpr int chunks = BlockN / (8 * chunk_groups);
  const float* a0;
  const float* a1;
  const float* b;
  const float* b_next;
  int next_group;  ///< next_b_scale_block_group: uniform across the warpgroup
  bool row0_in, row1_in;

  /// The tile whose first column is col_base, the thread's rows at `at`, D m x n.
  __device__ __forceinline__ tile_block_scales(const fp8_scale_view& s, const fragment_origin& at, int col_base, int m,
                                               int n)
      : a0(s.a + at.row0 * s.k_blocks),
        a1(a0 + 8 * static_cast<long long>(s.k_blocks)),
        b(s.b + static_cast<long long>(col_base / static_cast<int>(fp8_promotion_k)) * s.k_blocks),
        next_group(next_b_scale_block_group(col_base, BlockN, n)),
        row0_in(at.row0 < m),
        row1_in(at.row0 + 8 < m) {
    b_next = next_group < BlockN / 8 ? b + s.k_blocks : b;
  }

  /// s[j][h] = sA(row h, kt) x sB(chunk j's block, kt). Only a tile wider than
  /// a block reaches the next (chunk 0 never does): a select per chunk, not per value.
  __device__ __forceinline__ void at(int kt, float (&s)[chunks][2]) const {
    const float sa0 = row0_in ? a0[kt] : 0.0f, sa1 = row1_in ? a1[kt] : 0.0f;
    const float sb = b[kt];
    const float sb_next = BlockN > static_cast<int>(fp8_promotion_k) ? b_next[kt] : sb;
#pragma unroll
    for (int j = 0; j < chunks; ++j) {
      const float sbj = j > 0 && chunk_groups * j >= next_group ? sb_next : sb;
      s[j][0] = sa0 * sbj;
      s[j][1] = sa1 * sbj;
    }
  }
};

/// Per-tensor and rowwise scales on a finished total (blockwise ones were
/// applied per stage). Outside D a rowwise scale is not read (its value: 0).
template <int Accumulators>
__device__ __forceinline__ void apply_outer_scales(float (&total)[Accumulators], const fp8_scale_view& s,
                                                   const fragment_origin& at, int m, int n) {
  if (s.mode == fp8_scaling::per_tensor) {
    const float scale = s.a[0] * s.b[0];
#pragma unroll
    for (int i = 0; i < Accumulators; ++i) total[i] *= scale;
  } else if (s.mode == fp8_scaling::rowwise) {
    float row_scale[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) row_scale[h] = at.row0 + 8 * h < m ? s.a[at.row0 + 8 * h] : 0.0f;
#pragma unroll
    for (int c = 0; c < Accumulators / 4; ++c) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const long long col = at.col0 + 8 * c + e;
        const float col_scale = col < n ? s.b[col] : 0.0f;
        total[4 * c + e] *= row_scale[0] * col_scale;
        total[4 * c + 2 + e] *= row_scale[1] * col_scale;
      }
    }
  }
}
#endif  // KF_ARCH_SM90A

}  // namespace wgmma
}  // namespace kf::detail
