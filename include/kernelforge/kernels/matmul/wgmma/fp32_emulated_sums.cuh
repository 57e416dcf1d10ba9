// SPDX-License-Identifier: Apache-2.0
// How the fp32-emulation kernels (matmul step 15, 15_wgmma_fp32_emulated.cuh;
// conv2d step 9, conv2d/09_implicit_gemm_wgmma_fp32_emulated.cuh) order their
// TF32 products and sum them, in one place:
//  * a k-block (32 of k) is a pair of ring stages, its hi and its lo parts
//    (split_tf32.cuh); its three products start a fresh tensor-core partial,
//    the small hi x lo and lo x hi first (wgmma truncates as it adds, so their
//    truncation stays relative to their own size), then hi x hi on top;
//  * the partial is added on the CUDA cores with round-to-nearest into a
//    window of promotion_window k-blocks, and the window into the total: two
//    levels, since one running total's error grows with the count of its
//    additions times its size;
//  * inputs with an inf or a NaN (the pre-pass flags them): the corrections go
//    into a partial of their own and are left out wherever hi x hi is not
//    finite (an inf times a zero lo part is a NaN no exact product makes; hi
//    keeps every zero, sign, inf and NaN of x). One level of sums there.
#pragma once

#include "../../arch/guards.cuh"
#include "../../arch/wgmma_sm90.cuh"

namespace kf::detail::wgmma {

/// k-blocks (of 32) whose partials are summed in `window` before it is added to `total`.
inline constexpr int promotion_window = 32;

#if KF_ARCH_SM90A
/// One k-block's products into `partial`. mma(d, a_stage, b_stage, fresh)
/// issues A (stage a_stage) x B (stage b_stage), the stage's 32 of k; fresh:
/// its first product starts a new sum.
template <class Mma, int N>
__device__ __forceinline__ void fp32_emulated_products(float (&partial)[N], int hi, int lo, Mma&& mma) {
  mma(partial, hi, lo, true);
  mma(partial, lo, hi, false);
  mma(partial, hi, hi, false);
}

/// The inf / NaN form: hi x hi into `partial`, the corrections into `correction`.
template <class Mma, int N>
__device__ __forceinline__ void fp32_emulated_products_apart(float (&partial)[N], float (&correction)[N], int hi,
                                                             int lo, Mma&& mma) {
  mma(correction, hi, lo, true);
  mma(correction, lo, hi, false);
  mma(partial, hi, hi, true);
}

/// The two-level fp32 sums of a tile's k-block partials.
template <int N>
struct fp32_emulated_sums {
  float total[N];
  float window[N];
  int in_window;

  __device__ __forceinline__ void reset() {
#pragma unroll
    for (int i = 0; i < N; ++i) total[i] = window[i] = 0.0f;
    in_window = 0;
  }
  /// A completed k-block partial (fp32_emulated_products).
  __device__ __forceinline__ void add(const float (&partial)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) window[i] += partial[i];
    if (++in_window == promotion_window) {
#pragma unroll
      for (int i = 0; i < N; ++i) {
        total[i] += window[i];
        window[i] = 0.0f;
      }
      in_window = 0;
    }
  }
  /// A completed k-block of the inf / NaN form (fp32_emulated_products_apart).
  __device__ __forceinline__ void add_apart(const float (&partial)[N], const float (&correction)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) total[i] += isfinite(partial[i]) ? partial[i] + correction[i] : partial[i];
  }
  /// The tile's sums (call once, after the last k-block).
  __device__ __forceinline__ float (&finish())[N] {
#pragma unroll
    for (int i = 0; i < N; ++i) total[i] += window[i];
    return total;
  }
};

/// One k-block of a tile, as both kernels run it: the ring's next pair of
/// stages (`at`: the k-block's hi, then its lo), their products (Apart: into
/// partial and correction), the wait for them, both stages handed back
/// (release(stage), by each warp's lane 0), and the partial added to the sums.
template <bool Apart, class Ring, class Position, int N, int C, class Mma, class Release>
__device__ __forceinline__ void fp32_emulated_k_block(const Ring& ring, Position& at, float (&partial)[N],
                                                      float (&correction)[C], fp32_emulated_sums<N>& sums, int lane,
                                                      Mma&& mma, Release&& release) {
  ring.consumer_wait(at);
  const int hi = at.stage;
  at.advance();
  ring.consumer_wait(at);
  const int lo = at.stage;
  at.advance();
  wgmma_fence();
  if constexpr (Apart) {
    fp32_emulated_products_apart(partial, correction, hi, lo, mma);
  } else {
    fp32_emulated_products(partial, hi, lo, mma);
  }
  wgmma_commit();
  wgmma_wait<0>();
  fence_operands(partial);
  if constexpr (Apart) fence_operands(correction);
  if (lane == 0) {  // their products have completed: hand both stages back
    release(hi);
    release(lo);
  }
  if constexpr (Apart) {
    sums.add_apart(partial, correction);
  } else {
    sums.add(partial);
  }
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::wgmma
