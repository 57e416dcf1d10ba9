// SPDX-License-Identifier: Apache-2.0
// How the fp32-emulation kernels order their TF32 products and sum them, in
// one place for every architecture: matmul step 15 (wgmma,
// 15_wgmma_fp32_emulated.cuh) and step 16 (mma.sync,
// 16_mma_sync_fp32_emulated.cuh), conv2d step 9
// (conv2d/09_implicit_gemm_wgmma_fp32_emulated.cuh):
//  * a k-block (32 of k) has a hi and a lo part per operand (split_tf32.cuh);
//    its three products start a fresh tensor-core partial, the small hi x lo
//    and lo x hi first (the tensor cores truncate as they add, so their
//    truncation stays relative to their own size), then hi x hi on top;
//  * the partial is added on the CUDA cores with round-to-nearest into a
//    window of promotion_window k-blocks, and the window into the total: two
//    levels, since one running total's error grows with the count of its
//    additions times its size;
//  * inputs with an inf or a NaN (the pre-pass flags them): the corrections go
//    into a partial of their own and are left out wherever hi x hi is not
//    finite (an inf times a zero lo part is a NaN no exact product makes; hi
//    keeps every zero, sign, inf and NaN of x). One level of sums there.
// The instruction that issues a product is the caller's (an `mma` callable);
// how a k-block's parts reach it (ring stages, shared-memory offsets) too.
#pragma once

namespace kf::detail {

/// k-blocks (of 32) whose partials are summed in `window` before it is added to `total`.
inline constexpr int promotion_window = 32;

/// One k-block's products into `partial`. mma(d, a_part, b_part, fresh) issues
/// A's part a_part x B's part b_part over the k-block's 32 of k (the parts as
/// the caller names them: `hi` and `lo`); fresh: its first product starts a new sum.
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

}  // namespace kf::detail
