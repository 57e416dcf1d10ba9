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

#include "../arch/cp_async.cuh"
#include "args.cuh"

namespace kf::detail {

/// An input row index no filter tap can bring back inside the image: marks m >= M.
constexpr int conv2d_im2col_out_of_range_row = -(1 << 30);

/// Row m = (n, p, q) of im2col: base = n*C*H*W + ih0*W + iw0 modulo 2^32,
/// ih0 = p*stride_h - pad_h (conv2d_im2col_out_of_range_row for m >= M), iw0 = q*stride_w - pad_w.
__device__ __forceinline__ void conv2d_im2col_row(const conv2d_args<float>& a, int m, unsigned& base, int& ih0,
                                                  int& iw0) {
  if (m < a.m) {
    int n, pq, p, q;
    a.div_pq.divmod(m, n, pq);
    a.div_q.divmod(pq, p, q);
    ih0 = p * a.stride_h - a.pad_h;
    iw0 = q * a.stride_w - a.pad_w;
    base = static_cast<unsigned>(n * a.c * a.hw) + static_cast<unsigned>(ih0) * a.w + static_cast<unsigned>(iw0);
  } else {
    ih0 = conv2d_im2col_out_of_range_row;
    iw0 = 0;
    base = 0u;
  }
}

/// Whether the tap (dr, ds) of a row with origin (ih0, iw0) is inside the image.
__device__ __forceinline__ bool conv2d_im2col_inside(const conv2d_args<float>& a, int ih0, int iw0, int dr, int ds) {
  return static_cast<unsigned>(ih0 + dr) < static_cast<unsigned>(a.h) &&
         static_cast<unsigned>(iw0 + ds) < static_cast<unsigned>(a.w);
}

/// The tap kk = (c, r, s): its row and column shifts and its offset in x
/// relative to a row's base.
__device__ __forceinline__ void conv2d_im2col_tap(const conv2d_args<float>& a, int kk, int& dr, int& ds,
                                                  unsigned& offset) {
  int c, rs, r, s;
  a.div_rs.divmod(kk, c, rs);
  a.div_s.divmod(rs, r, s);
  dr = r * a.dilation_h;
  ds = s * a.dilation_w;
  offset = static_cast<unsigned>(c * a.hw) + static_cast<unsigned>(dr * a.w) + ds;
}

template <int BM, int BN, int BK, int THREADS>
struct conv2d_gemm_loader {
  static_assert(THREADS % BK == 0, "whole threads per kk row");
  static constexpr int a_threads_per_row = THREADS / BK;
  static_assert(BM % a_threads_per_row == 0, "whole m values per thread");
  static constexpr int a_per_thread = BM / a_threads_per_row;
  static_assert((BN * BK) % THREADS == 0, "whole B values per thread");
  static constexpr int b_per_thread = BN * BK / THREADS;
  static constexpr int b_k_stride = THREADS / BK;

  int a_kk = 0;                   // this thread's kk within the slice
  int a_m = 0;                    // its first m within the tile
  unsigned a_base[a_per_thread];  // n*C*H*W + ih0*W + iw0, modulo 2^32 (ih0, iw0 may be negative)
  int a_ih0[a_per_thread];        // p*stride_h - pad_h (conv2d_im2col_out_of_range_row for m >= M)
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
      conv2d_im2col_row(a, block_m + a_m + i * a_threads_per_row, a_base[i], a_ih0[i], a_iw0[i]);
    }
    b_kk = tid % BK;
    b_k_local = tid / BK;
    b_k = block_n + b_k_local;
  }

  /// Reads the slice kk in [k0, k0 + BK) into registers (zeros outside).
  __device__ __forceinline__ void load(const conv2d_args<float>& a, int k0) {
    const int kk = k0 + a_kk;
    if (kk < a.crs) {
      int dr, ds;
      unsigned offset;
      conv2d_im2col_tap(a, kk, dr, ds, offset);
#pragma unroll
      for (int i = 0; i < a_per_thread; ++i) {
        // Only inside taps are read, and their index a_base + offset is the true one (< 2^31).
        a_value[i] = conv2d_im2col_inside(a, a_ih0[i], a_iw0[i], dr, ds) ? __ldg(a.x + (a_base[i] + offset)) : 0.0f;
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

/// The pipelined kernels' im2col gather (step 5): copies the A slice straight
/// into As[kk][m] (row pitch a_pitch) by 4-byte cp.async, zero-filled outside
/// the image and at kk >= kk_end. Each thread owns MS rows m, BM / MS apart,
/// and 4 kk of each slice, BK / 4 apart: a warp's copies are 32 consecutive m
/// of one kk (coalesced when stride_w = 1), and the thread keeps the state of
/// MS rows only (the register loader above keeps BM * BK / THREADS), at the
/// price of 4 tap decodes per slice.
template <int BM, int BK, int THREADS>
struct conv2d_im2col_async_gather {
  static constexpr int kk_per_thread = 4;
  static_assert((BM * BK) % (THREADS * kk_per_thread) == 0, "whole rows per thread");
  static constexpr int MS = BM * BK / (THREADS * kk_per_thread);
  static constexpr int m_threads = BM / MS;
  static_assert(THREADS % m_threads == 0 && THREADS / m_threads == BK / kk_per_thread, "threads tile the slice");
  static constexpr int kk_threads = THREADS / m_threads;

  int m_lane = 0, kk_lane = 0;
  unsigned base[MS];
  int ih0[MS], iw0[MS];

  __device__ __forceinline__ void init(const conv2d_args<float>& a, int block_m, int tid) {
    m_lane = tid % m_threads;
    kk_lane = tid / m_threads;
#pragma unroll
    for (int i = 0; i < MS; ++i) conv2d_im2col_row(a, block_m + m_lane + i * m_threads, base[i], ih0[i], iw0[i]);
  }

  __device__ __forceinline__ void copy(const conv2d_args<float>& a, int k0, int kk_end, float* As, int a_pitch) const {
#pragma unroll
    for (int j = 0; j < kk_per_thread; ++j) {
      const int row = kk_lane + j * kk_threads;
      const int kk = k0 + row;
      int dr = 0, ds = 0;
      unsigned offset = 0;
      const bool live = kk < kk_end;
      if (live) conv2d_im2col_tap(a, kk, dr, ds, offset);
      float* dst = As + row * a_pitch + m_lane;
#pragma unroll
      for (int i = 0; i < MS; ++i) {
        const bool in = live && conv2d_im2col_inside(a, ih0[i], iw0[i], dr, ds);
        // Only inside taps are read, at their true index (< 2^31); src_bytes 0
        // reads nothing, but the address must be valid: x itself.
        cp_async_4(dst + i * m_threads, in ? a.x + (base[i] + offset) : a.x, in ? 4 : 0);
      }
    }
  }
};

}  // namespace kf::detail
