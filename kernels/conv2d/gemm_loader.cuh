// SPDX-License-Identifier: Apache-2.0
// Global -> registers -> shared memory for the implicit-GEMM kernels: the A
// tile (BM rows of im2col, gathered on the fly, never materialized) and the B
// tile (BK x BN of the filters), one BK-deep slice per pipeline stage.
//
// A mapping: BK rows of kk, THREADS / BK threads per row, each thread owning
// BM / (THREADS / BK) values of m strided by THREADS / BK. So one load
// instruction of a warp reads consecutive m for the same kk -- consecutive
// output columns q, i.e. consecutive input pixels when stride_w = 1: coalesced.
// A thread decodes its m values (n, p, q) once, up front; per stage it decodes
// only its single kk (c, r, s) with two fast divisions.
//
// B mapping: consecutive threads take consecutive kk of one filter k (w is
// KCRS, so B's columns are contiguous in kk): 32-byte runs per filter.
//
// Shared layout: As[kk][m] and Bs[kk][k] (K-major), rows padded by PAD floats.
#pragma once

#include "args.cuh"

namespace kf::detail {

template <int BM, int BN, int BK, int THREADS>
struct conv2d_gemm_loader {
  static_assert(THREADS % BK == 0, "whole threads per kk row");
  static constexpr int a_threads_per_row = THREADS / BK;
  static_assert(BM % a_threads_per_row == 0, "whole m values per thread");
  static constexpr int a_per_thread = BM / a_threads_per_row;
  static_assert((BN * BK) % THREADS == 0, "whole B values per thread");
  static constexpr int b_per_thread = BN * BK / THREADS;
  static constexpr int b_k_stride = THREADS / BK;
  /// An input row index no filter tap can bring back inside the image: marks m >= M.
  static constexpr int out_of_range_row = -(1 << 30);

  int a_kk = 0;                   // this thread's kk within the slice
  int a_m = 0;                    // its first m within the tile
  unsigned a_base[a_per_thread];  // n*C*H*W + ih0*W + iw0, modulo 2^32 (ih0, iw0 may be negative)
  int a_ih0[a_per_thread];        // p*stride_h - pad_h (out_of_range_row for m >= M)
  int a_iw0[a_per_thread];        // q*stride_w - pad_w
  int b_kk = 0;                   // B: kk within the slice
  int b_k_local = 0;              // B: first filter index within the tile
  int b_k = 0;                    // B: first filter index (global)
  float a_value[a_per_thread];
  float b_value[b_per_thread];

  __device__ __forceinline__ void init(const conv2d_args<float>& a, int block_m, int block_n, int tid) {
    a_kk = tid / a_threads_per_row;
    a_m = tid % a_threads_per_row;
#pragma unroll
    for (int i = 0; i < a_per_thread; ++i) {
      const int m = block_m + a_m + i * a_threads_per_row;
      if (m < a.m) {
        int n, pq, p, q;
        a.div_pq.divmod(m, n, pq);
        a.div_q.divmod(pq, p, q);
        a_ih0[i] = p * a.stride_h - a.pad_h;
        a_iw0[i] = q * a.stride_w - a.pad_w;
        a_base[i] = static_cast<unsigned>(n * a.c * a.hw) + static_cast<unsigned>(a_ih0[i]) * a.w +
                    static_cast<unsigned>(a_iw0[i]);
      } else {
        a_ih0[i] = out_of_range_row;
        a_iw0[i] = 0;
        a_base[i] = 0u;
      }
    }
    b_kk = tid % BK;
    b_k_local = tid / BK;
    b_k = block_n + b_k_local;
  }

  /// Reads the slice kk in [k0, k0 + BK) into registers (zeros outside).
  __device__ __forceinline__ void load(const conv2d_args<float>& a, int k0) {
    const int kk = k0 + a_kk;
    if (kk < a.crs) {
      int c, rs, r, s;
      a.div_rs.divmod(kk, c, rs);
      a.div_s.divmod(rs, r, s);
      const int dr = r * a.dilation_h, ds = s * a.dilation_w;
      const unsigned offset = static_cast<unsigned>(c * a.hw) + static_cast<unsigned>(dr * a.w) + ds;
#pragma unroll
      for (int i = 0; i < a_per_thread; ++i) {
        const int ih = a_ih0[i] + dr, iw = a_iw0[i] + ds;
        const bool inside = static_cast<unsigned>(ih) < static_cast<unsigned>(a.h) &&
                            static_cast<unsigned>(iw) < static_cast<unsigned>(a.w);
        // Only inside taps are read, and their index a_base + offset is the true one (< 2^31).
        a_value[i] = inside ? __ldg(a.x + (a_base[i] + offset)) : 0.0f;
      }
    } else {
#pragma unroll
      for (int i = 0; i < a_per_thread; ++i) a_value[i] = 0.0f;
    }
    const int bkk = k0 + b_kk;
#pragma unroll
    for (int j = 0; j < b_per_thread; ++j) {
      const int k = b_k + j * b_k_stride;
      b_value[j] = (bkk < a.crs && k < a.k) ? __ldg(a.wt + k * a.crs + bkk) : 0.0f;
    }
  }

  /// Writes the registers into As[kk][m] (row pitch a_pitch) and Bs[kk][k]
  /// (row pitch b_pitch), converted by `convert` (identity, or to TF32).
  template <class Convert>
  __device__ __forceinline__ void store(float* As, int a_pitch, float* Bs, int b_pitch, Convert convert) const {
#pragma unroll
    for (int i = 0; i < a_per_thread; ++i) As[a_kk * a_pitch + a_m + i * a_threads_per_row] = convert(a_value[i]);
#pragma unroll
    for (int j = 0; j < b_per_thread; ++j) Bs[b_kk * b_pitch + b_k_local + j * b_k_stride] = convert(b_value[j]);
  }
};

}  // namespace kf::detail
