// SPDX-License-Identifier: Apache-2.0
// The FP8 wgmma GEMM's epilogue (scaled/03_wgmma.cuh), on top of the Hopper
// GEMM's stores (wgmma/epilogue.cuh): the functor a tile's values go through,
// and the amax of D as stored. A tile stored after its k-steps (128 x 192)
// keeps the tensor cores idle while it is finished, so each value pays only for
// what the call asked:
//  * with_value_functor: bias, ReLU, both or neither, decided once per call (a
//    uniform branch around the store, each functor inlined), where the
//    library's run-time functor (epilogue::bias_relu_threshold) tests both per value.
//  * stored_amax: the amax of a finished tile, after its staged store, from its
//    values as rounded to D: 16-bit D in packed pairs, two values an
//    instruction (a max and a min of the pairs, NaN propagating; |.| once, at
//    the end), float D per value. Values outside D are masked out (a NaN or inf
//    in A meets B's zero fill beyond n there: NaN, which D does not hold).
//  * amax_epilogue: the per-value form, for D stored from registers (beta != 0,
//    or D's rows not 16-byte aligned), whose stored value includes beta * D.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../../common/numeric.cuh"
#include "args.cuh"
#include "kernelforge/epilogue.cuh"

namespace kf::detail {

/// The library's bias and threshold ReLU (epilogue::bias_relu_threshold), and
/// the running max of |D| as it will be stored (rounded to TD), which the
/// consumer folds into options.amax at the end.
template <class TD>
struct amax_epilogue {
  epilogue::bias_relu_threshold<TD> fused;
  mutable unsigned amax_bits = 0;  ///< this thread's max |D| so far, as bits (scaled/args.cuh: stored_abs_bits)
  __device__ __forceinline__ float operator()(float v, long long row, long long col) const {
    v = fused(v, row, col);
    amax_bits = max(amax_bits, stored_abs_bits<TD>(v));
    return v;
  }
};

/// f(functor) with the functor that does what `fused` asks and nothing more:
/// identity, bias_add, relu_threshold, or the bias then the ReLU.
template <class TD, class F>
__device__ __forceinline__ void with_value_functor(const epilogue::bias_relu_threshold<TD>& fused, const F& f) {
  if (fused.bias != nullptr) {
    const epilogue::bias_add<TD> bias{fused.bias};
    if (fused.relu) {
      f(epilogue::compose<epilogue::bias_add<TD>, epilogue::relu_threshold>{bias, {fused.threshold}});
    } else {
      f(bias);
    }
  } else if (fused.relu) {
    f(epilogue::relu_threshold{fused.threshold});
  } else {
    f(epilogue::identity{});
  }
}

namespace wgmma {

/// The thread's rows of a consumer warpgroup's accumulators: row0 and row0 + 8
/// (h = 0, 1), and its first column (accumulator layout: epilogue.cuh, store_tile).
struct fragment_origin {
  long long row0, col0;
};

/// A thread's max |D| as stored, folded from its finished tiles (see the header).
template <class TD>
struct stored_amax {
  static constexpr bool packed = sizeof(TD) == 2;
  using pair = std::conditional_t<std::is_same_v<TD, __half>, __half2, __nv_bfloat162>;
  /// 16-bit TD: the max and the min of the pairs so far, each as two packed
  /// elements (+0 at first: neutral for the max of |.|). float: `hi` is the max
  /// of |v|'s bits (stored_abs_bits' order), `lo` unused.
  std::uint32_t hi = 0, lo = 0;

  /// Folds in the values of a finished 64 x N tile that lie inside D (m x n).
  /// stored(i): accumulator i as stored -- 16-bit TD: i and i + 1 packed (i
  /// even; from_compute_pair); float: its bits. whole: the warpgroup's tile
  /// lies inside D (uniform), so nothing is masked.
  template <int Accumulators, class Stored>
  __device__ __forceinline__ void add(const Stored& stored, const fragment_origin& at, int m, int n, bool whole) {
    if (whole) {
      fold<Accumulators>(stored, [](int) { return ~0u; });
      return;
    }
    // Accumulator i: row row0 + 8 ((i % 4) / 2), column col0 + 8 (i / 4) + i % 2 (wgmma's layout).
    fold<Accumulators>(stored, [&](int i) {
      const long long col = at.col0 + 8 * (i / 4) + i % 2;
      if (at.row0 + 8 * ((i % 4) / 2) >= m) return 0u;
      if constexpr (packed) return (col < n ? 0xFFFFu : 0u) | (col + 1 < n ? 0xFFFF0000u : 0u);
      return col < n ? ~0u : 0u;
    });
  }

  /// The thread's amax as stored_abs_bits gives it (NaN's bits exceed every number's).
  __device__ __forceinline__ unsigned bits() const {
    if constexpr (packed) {
      const pair high = as_pair(hi), low = as_pair(lo);
      const auto abs_bits = [](auto x) { return __float_as_uint(fabsf(to_compute(x))); };
      return max(max(abs_bits(high.x), abs_bits(high.y)), max(abs_bits(low.x), abs_bits(low.y)));
    } else {
      return hi;
    }
  }

 private:
  __device__ __forceinline__ static pair as_pair(std::uint32_t bits) {
    pair v;
    memcpy(&v, &bits, sizeof(v));
    return v;
  }
  __device__ __forceinline__ static std::uint32_t as_bits(pair v) {
    std::uint32_t bits;
    memcpy(&bits, &v, sizeof(bits));
    return bits;
  }
  /// 16-bit: max and min of the masked pairs (a masked-out element reads +0);
  /// the _nan forms return NaN where either operand is NaN. float: max of |v|'s bits.
  template <int Accumulators, class Stored, class Mask>
  __device__ __forceinline__ void fold(const Stored& stored, const Mask& mask) {
    if constexpr (packed) {
      pair high = as_pair(hi), low = as_pair(lo);
#pragma unroll
      for (int i = 0; i < Accumulators; i += 2) {
        const pair v = as_pair(stored(i) & mask(i));
        high = __hmax2_nan(high, v);
        low = __hmin2_nan(low, v);
      }
      hi = as_bits(high);
      lo = as_bits(low);
    } else {
#pragma unroll
      for (int i = 0; i < Accumulators; ++i) hi = max(hi, stored(i) & mask(i) & 0x7FFFFFFFu);
    }
  }
};

}  // namespace wgmma
}  // namespace kf::detail
