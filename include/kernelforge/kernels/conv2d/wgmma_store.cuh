// SPDX-License-Identifier: Apache-2.0
// The store of conv2d step 7's tiles (07_implicit_gemm_wgmma.cuh; also step 9's):
// a consumer warpgroup's sums + bias[k], the functor (fp32), the one rounding
// to T, and the masked store into y, NCHW or NHWC.
//
// Where the bias is read. y may not overlap the bias (validate.cpp), but the
// compiler cannot know: a bias load from global memory placed beside the
// stores waits for the store before it (one load latency a pair of values, 32
// a tile), and read ahead in chunks it still left a load wait per chunk (and a
// functor's own bias, epilogue::bias_relu_threshold's, stayed a predicated
// load per value). So the bias is staged in shared memory once per tile
// (stage_bias): after the main loop, before the stores, the warpgroup's 128
// threads read the tile's BN channels with __ldg (read-only: the bias is no
// output) into a buffer of their own, one named barrier, and the store loop
// reads float2 pairs from shared memory, which no store into y can overlap.
// Two buffers a warpgroup, taken in turn: a thread writes a buffer again only
// after the next tile's barrier, which every thread of the warpgroup reaches
// after its stores out of it. The store loop is compiled for the slices staged
// (0, 1, 2: store_tile's Slices), chosen by one uniform branch a tile: with no
// bias nothing is staged and the loop has no bias code at all.
// bias_relu_threshold<float> (the library's fused ReLU, and that type passed as
// a functor) is split: its own bias is one more staged slice, its threshold a
// compare and a select (threshold_select). What it measures: benchmarks/tuning/
// conv2d.md#conv2d_wgmma_bias_in_shared_memory.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../arch/guards.cuh"
#include "../arch/warpgroup_sm90.cuh"
#include "../common/numeric.cuh"
#include "kernelforge/conv.hpp"
#include "kernelforge/epilogue.cuh"
#include "../matmul/wgmma/epilogue.cuh"
#include "wgmma_config.cuh"

namespace kf::detail::conv2d_wgmma {

/// A tile's first output channel and the origin of its pixel box.
struct tile_origin {
  int k0, n0, p0, q0;
};

/// The library's threshold ReLU (epilogue::bias_relu_threshold without its
/// bias): v <= threshold ? 0 : v, one compare and one select a value. Without
/// the ReLU the threshold is NaN, which no v is <= (so the select keeps v, and
/// the relu flag is not tested per value); NaN <= threshold is false, so NaN
/// propagates, as the functor's.
struct threshold_select {
  float threshold;
  __device__ __forceinline__ static threshold_select of(bool relu, float threshold) {
    return {relu ? threshold : __int_as_float(0x7fffffff)};
  }
  __device__ __forceinline__ float operator()(float v, long long /*row*/, long long /*col*/) const {
    return v <= threshold ? 0.0f : v;
  }
};

/// How the store applies a functor: any functor as it is, after the staged
/// bias; bias_relu_threshold<float> split into its bias (one more staged
/// slice, added after the call's bias as the functor would) and its threshold.
template <class Epilogue>
struct split_epilogue {
  static constexpr bool own_bias = false;
  static __device__ __forceinline__ const float* bias(const Epilogue& /*ep*/) { return nullptr; }
  static __device__ __forceinline__ const Epilogue& after_bias(const Epilogue& ep) { return ep; }
};
template <>
struct split_epilogue<epilogue::bias_relu_threshold<float>> {
  static constexpr bool own_bias = true;
  static __device__ __forceinline__ const float* bias(const epilogue::bias_relu_threshold<float>& ep) {
    return ep.bias;
  }
  static __device__ __forceinline__ threshold_select after_bias(const epilogue::bias_relu_threshold<float>& ep) {
    return threshold_select::of(ep.relu, ep.threshold);
  }
};

/// One consumer warpgroup's 64 rows (row block `block` of the 128-row tile w)
/// of a tile's sums d: + the Slices staged bias slices (bias: slice 0, slice s
/// at s * BN; pairs of a thread's neighbouring channels), op (fp32), the one
/// rounding to T, and the masked store into y -- NCHW (NKPQ) or NHWC (NPQK).
/// Rows past the box or outside the output are not stored.
template <class T, conv2d_layout Layout, int Slices, int Acc, class Op>
__device__ __forceinline__ void store_tile(const float (&d)[Acc], const params<T>& prm, const tile_origin& w, int block,
                                           int warp_in_warpgroup, int lane, const Op& op, const float* bias) {
  constexpr int tile_columns = 2 * Acc;  // BN (wgmma_accumulators: BN / 2 a thread)
  // Accumulator i of a thread: row 16 * warp + lane / 4 + 8 * ((i % 4) / 2),
  // column 8 * (i / 4) + 2 * (lane % 4) + i % 2. Row -> pixel of the box.
  bool stored[2];         // the row is in the box and in the output
  long long gemm_row[2];  // n P Q + p Q + q
  long long y_offset[2];  // where the row's channel 0 lies in y
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = block * wgmma_m + warp_in_warpgroup * 16 + lane / 4 + 8 * h;
    const int bq = row % prm.wt;
    const int bp = (row / prm.wt) % prm.ht;
    const int bn = row / (prm.wt * prm.ht);
    const int n = w.n0 + bn, p = w.p0 + bp, q = w.q0 + bq;
    // Past the box: stale shared memory; or the box overhangs the output. Never stored.
    stored[h] = row < prm.box_pixels && n < prm.n && p < prm.p && q < prm.q;
    const int pixel = p * prm.q + q;
    gemm_row[h] = static_cast<long long>(n) * prm.pq + pixel;
    y_offset[h] =
        Layout == conv2d_layout::nchw ? static_cast<long long>(n) * prm.k * prm.pq + pixel : gemm_row[h] * prm.k;
  }
  // In chunks of column groups (8 channels each), each chunk's bias pairs read
  // before its stores: 4 groups (8 registers), 2 with two slices.
  constexpr int groups = Acc / 4;
  constexpr int chunk_groups = Slices > 1 ? 2 : 4;
  constexpr int chunk = groups < chunk_groups ? groups : chunk_groups;
#pragma unroll
  for (int g0 = 0; g0 < groups; g0 += chunk) {
    float2 bias_of[Slices > 0 ? Slices : 1][chunk];
    if constexpr (Slices > 0) {
#pragma unroll
      for (int s = 0; s < Slices; ++s) {
#pragma unroll
        for (int c = 0; c < chunk; ++c) {
          bias_of[s][c] = *reinterpret_cast<const float2*>(bias + s * tile_columns + 8 * (g0 + c) + 2 * (lane % 4));
        }
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!stored[h]) continue;
      // Accumulator 4 c + 2 h + j at output channel k: + the slices, op (fp32), the one rounding to T.
      const auto out = [&](int c, int j, int k) {
        float v = d[4 * c + 2 * h + j];
#pragma unroll
        for (int s = 0; s < Slices; ++s) v += j == 0 ? bias_of[s][c - g0].x : bias_of[s][c - g0].y;
        return static_cast<float>(op(v, gemm_row[h], k));
      };
      T* const y_at = prm.y + y_offset[h];
      if constexpr (Layout == conv2d_layout::nchw) {
#pragma unroll
        for (int c = g0; c < g0 + chunk; ++c) {
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int k = w.k0 + 8 * c + 2 * (lane % 4) + j;
            if (k < prm.k) y_at[static_cast<long long>(k) * prm.pq] = from_compute<T>(out(c, j, k));
          }
        }
      } else {  // NPQK: a thread's two neighbouring channels are neighbours in y
#pragma unroll
        for (int c = g0; c < g0 + chunk; ++c) {
          const int k = w.k0 + 8 * c + 2 * (lane % 4);
          if (prm.pair_stores && k < prm.k) {  // K even: k + 1 < K too
            if constexpr (sizeof(T) == 4) {
              *reinterpret_cast<float2*>(y_at + k) = make_float2(out(c, 0, k), out(c, 1, k + 1));
            } else {
              *reinterpret_cast<std::uint32_t*>(y_at + k) = from_compute_pair<T>(out(c, 0, k), out(c, 1, k + 1));
            }
          } else {
            if (k < prm.k) y_at[k] = from_compute<T>(out(c, 0, k));
            if (k + 1 < prm.k) y_at[k + 1] = from_compute<T>(out(c, 1, k + 1));
          }
        }
      }
    }
  }
}

#if KF_ARCH_SM90A
/// Stages tile k0's bias slices (top of this file) -- the call's bias
/// (prm.bias), then the functor's own (split_epilogue): the present ones, zero
/// past K -- into buffer `turn` (0, 1: the warpgroup's tiles in turn) of
/// consumer warpgroup `consumer`, in the CTA's bias_stage_bytes<BN> at
/// `cta_bias` (smem_carve::bias, as a pointer into the kernel's __shared__
/// array: the compiler then knows the accesses as shared-memory ones). Every
/// thread of the warpgroup calls it. Returns how many slices: 0 (nothing
/// staged, no barrier), 1 or 2, the same for every tile of a call; `slices`:
/// where slice 0 lies, slice s at s * BN.
template <int BN, class T, class Epilogue>
__device__ __forceinline__ int stage_bias(float* cta_bias, int consumer, int turn, const params<T>& prm,
                                          const Epilogue& ep, int k0, int thread, const float*& slices) {
  const T* const call_bias = prm.bias;
  const float* const functor_bias = split_epilogue<Epilogue>::bias(ep);
  const int count = (call_bias != nullptr ? 1 : 0) + (functor_bias != nullptr ? 1 : 0);
  if (count == 0) return 0;
  float* const at = cta_bias + (consumer * bias_buffers + turn) * bias_slices * BN;
#pragma unroll
  for (int i = 0; i < (BN + warpgroup_threads - 1) / warpgroup_threads; ++i) {
    const int c = thread + i * warpgroup_threads;
    if (BN % warpgroup_threads != 0 && c >= BN) break;
    const int k = k0 + c;
    const bool real = k < prm.k;
    const float own = functor_bias != nullptr && real ? __ldg(functor_bias + k) : 0.0f;
    if (call_bias != nullptr) {
      at[c] = real ? to_compute(__ldg(call_bias + k)) : 0.0f;
      if (functor_bias != nullptr) at[BN + c] = own;
    } else {
      at[c] = own;
    }
  }
  // The slices whole before any thread reads them. The buffer is written again two
  // tiles on, after the next tile's barrier: after every thread's stores out of it.
  named_barrier_sync(bias_barrier + consumer, warpgroup_threads);
  slices = at;
  return count;
}

/// A consumer warpgroup's stores of one tile: its bias staged (stage_bias),
/// then store_tile for each of its Blocks m64 row blocks (sums_of(m): block
/// m's sums, row block first_block + m of the tile), compiled for 0, 1 or (a
/// functor with its own bias only) 2 staged slices, chosen once a tile.
template <class T, conv2d_layout Layout, int Blocks, int BN, class Epilogue, class SumsOf>
__device__ __forceinline__ void stage_bias_and_store(float* cta_bias, int consumer, int turn, const SumsOf& sums_of,
                                                     const params<T>& prm, const tile_origin& w, int first_block,
                                                     int thread, const Epilogue& ep) {
  const int warp_in_warpgroup = thread / 32, lane = thread % 32;
  const float* slices = nullptr;
  const int count = stage_bias<BN>(cta_bias, consumer, turn, prm, ep, w.k0, thread, slices);
  const auto store = [&](auto staged) {
#pragma unroll
    for (int m = 0; m < Blocks; ++m) {
      store_tile<T, Layout, decltype(staged)::value>(sums_of(m), prm, w, first_block + m, warp_in_warpgroup, lane,
                                                     split_epilogue<Epilogue>::after_bias(ep), slices);
    }
  };
  if (count == 0) {
    store(std::integral_constant<int, 0>{});
  } else if (!split_epilogue<Epilogue>::own_bias || count == 1) {
    store(std::integral_constant<int, 1>{});
  } else if constexpr (split_epilogue<Epilogue>::own_bias) {
    store(std::integral_constant<int, 2>{});  // a functor's bias beside the call's: a user's, never the library's
  }
}
/// A pointwise layer's 16-bit tile (params::staged_y; one row of pixels, so the consumer's 64 rows of y are
/// one run of 64 x K elements): the bias staged as stage_bias_and_store does, then the matmul's staged
/// store (wgmma/epilogue.cuh: the bias and functor applied in registers, the tile written to one of the
/// consumer's y_buffers C buffers at y_smem in the 128-byte swizzle and stored by a TMA box of 64 pixels x 64
/// channels, clipped to y): whole 128-byte rows, where the register stores write 4 bytes of each 16.
template <class T, int BN, int Acc, class Epilogue>
__device__ __forceinline__ void store_y_staged(float (&d)[Acc], float* cta_bias, int consumer, int turn,
                                               const params<T>& prm, const tile_origin& w, int thread,
                                               const Epilogue& ep, const CUtensorMap* map_y, std::uint32_t y_smem,
                                               int& y_buffer) {
  const float* slices = nullptr;
  const int count = stage_bias<BN>(cta_bias, consumer, turn, prm, ep, w.k0, thread, slices);
  wgmma::params<T> y;
  y.C = prm.y;
  y.ldc = prm.k;
  y.m = prm.q;  // one row of N H W pixels
  y.n = prm.k;
  y.alpha = 1.0f;
  y.beta = 0.0f;
  const int row_base = w.q0 + consumer * wgmma_m;
  const auto after = split_epilogue<Epilogue>::after_bias(ep);
  const auto store = [&](const auto& fn) {
    wgmma::store_tile_staged<T, y_buffers>(d, y, map_y, y_smem, row_base, w.k0, y_barrier + consumer, y_buffer, fn);
  };
  if (count == 0) {
    if constexpr (std::is_same_v<Epilogue, epilogue::identity>) {
      store(epilogue::identity{});
    } else {
      store(after);
    }
  } else if (count == 1) {
    store([&](float v, long long row, long long col) { return after(v + slices[col - w.k0], row, col); });
  } else {  // a functor's bias beside the call's, added in store_tile's order
    store([&](float v, long long row, long long col) {
      return after((v + slices[col - w.k0]) + slices[BN + col - w.k0], row, col);
    });
  }
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::conv2d_wgmma
