// SPDX-License-Identifier: Apache-2.0
// Gradient step 8 -- dx of a strided NHWC layer with few input channels (the
// RGB stem: C = 3, 7x7, stride 2, channels_last) by its parity classes, on the
// tensor cores: mma.sync m16n8k16 for __half / __nv_bfloat16, m16n8k8 TF32 for
// float under math_mode::tf32; fp32 sums; sm_80+.
//
// What it improves over step 2's route for these layers (dy and the filter
// widened to fp32, dcol = dy w, an N P Q x C R S fp32 matrix written and read
// back, then a col2im that tests every tap of every element): step 7's parity
// classes (07_dgrad_parity_fp32.cuh) -- each class of dx pixels (a + sh i,
// b + sw j) a stride-1 correlation of dy with a sub-filter of at most 4 x 4
// taps -- as tensor-core products: their 16 rows are 16 neighbouring class
// columns, their k the dy channels, their n 8 input channels (C = 3 fills 3 of
// them: the tensor cores have the work to spare). Nothing but dy and the filter
// is read and nothing but dx written.
//
//   dx[n][a + sh i][b + sw j][c] = sum over u, v, k of
//       dy[n][i + e_a - u][j + e_b - v][k] * w[k][r0 + u sh][s0 + v sw][c]
//
// A CTA takes one image, one class, one group of 8 channels and a 16 x 32 tile
// of the class's grid; each of its 4 warps 8 class rows x 16 class columns (one
// 16-row product a class row). K goes through shared memory 32 bytes of
// channels at a time (16 halves or 8 floats: one product's k) on a ring of two
// slots: the dy tile with its 3-row, 3-column halo, and the chunk's sub-filter
// laid out [tap][c][k], each as two planes of 16-byte pieces, so every ldmatrix
// reads 128 contiguous bytes (no bank conflict) at the lane's address plus a
// constant. The A fragment of dy row sr serves every output row it reaches (u =
// 0..3: row sr - 3 + u), so a warp loads 11 A fragments a column shift, not 32;
// the products go by dy rows first, first + 4, first + 8 in turn, whose output
// rows are disjoint, so up to 12 independent products separate two into one
// accumulator; the chunk's 16 B fragments stay in registers. dy comes by
// cp.async where its pixels are whole 16-byte pieces (K * sizeof(T) a multiple
// of 16, dy 16-byte aligned, no ReLU mask: the next chunk lands while this
// one's products run), else through registers element by element (any K, any
// alignment, the forward's mask). Sums in fp32 (the tensor cores' order within
// a product), rounded to T once at the store; TF32 reads dy's floats as stored
// (the tensor cores drop their low 13 bits) and rounds the filter's. Host side:
// src/conv2d/backward_data.cu (dgrad_by_parity_mma), the rule in dgrad_plan.hpp.
// H200 (2026-12-05, bench_conv, paired): the stem's dx 2.69 / 2.73 / 2.21 of
// cuDNN in fp16 / bf16 / TF32; still latency-bound (0.52 instructions issued a
// scheduler cycle); the steps to it: benchmarks/tuning/conv2d.md, "Gradient
// step 8".
#pragma once

#include <cstdint>
#include <cstring>  // memcpy
#include <type_traits>

#include "../../arch/cp_async.cuh"
#include "../../arch/mma_sm80.cuh"
#include "../../arch/smem.cuh"
#include "../../common/kernel.cuh"
#include "../../common/numeric.cuh"
#include "../args.cuh"
#include "01_naive.cuh"    // conv2d_dy_reader
#include "dgrad_plan.hpp"  // dgrad_parity_of

namespace kf::detail {

namespace dgrad_parity_mma {

inline constexpr int taps = dgrad_parity_max_taps;    // sub-filter taps a dimension, at most
inline constexpr int warp_rows = 8;                   // class rows a warp (one m16 block each)
inline constexpr int warp_cols = 16;                  // class columns a warp: an m16 block's rows
inline constexpr int tile_i = 2 * warp_rows;          // 16 class rows a CTA
inline constexpr int tile_j = 2 * warp_cols;          // 32 class columns a CTA
inline constexpr int threads = 4 * 32;                // 4 warps, 2 x 2
inline constexpr int group = dgrad_parity_mma_group;  // input channels a CTA: an n8 product
/// dy channels a ring slot: one product's k, 32 bytes (16 halves: m16n8k16; 8 floats: m16n8k8 TF32).
template <class T>
inline constexpr int chunk = 32 / static_cast<int>(sizeof(T));
inline constexpr int rows = tile_i + taps - 1;  // 19 dy rows with the halo
inline constexpr int cols = tile_j + taps - 1;  // 35 dy columns
inline constexpr int piece_bytes = 16;          // 8 channels: one row of an ldmatrix 8 x 8 matrix
/// A slot holds the dy tile's pixels and the filter's [tap][c] rows as planes
/// of 16-byte pieces: piece 0 of every row, then piece 1 (channels 0-7 and 8-15
/// of a 16-bit chunk, 0-3 and 4-7 of a float one). The 8 rows an ldmatrix reads
/// are 8 consecutive rows of one plane, 128 contiguous bytes: no bank conflict,
/// no padding, and an operand's address is the lane's own plus a constant.
inline constexpr int dy_rows = rows * cols;                 // 665 pixels
inline constexpr int w_rows = taps * taps * group;          // 128: [tap][c]
inline constexpr int dy_bytes = 2 * dy_rows * piece_bytes;  // 21,280
inline constexpr int w_bytes = 2 * w_rows * piece_bytes;    // 4,096
inline constexpr int slot_bytes = dy_bytes + w_bytes;       // 25,376
inline constexpr int smem_bytes = 2 * slot_bytes;           // 50,752: the ring
static_assert(w_rows == threads, "a thread loads one [tap][c] row of the filter slot");

/// Byte offset of byte `byte` (0..31) of row `row` in a region of `Rows` rows
/// (the dy tile: dy_rows; the filter: w_rows, after it).
template <int Rows>
__host__ __device__ constexpr int byte_at(int row, int byte) {
  return byte / piece_bytes * Rows * piece_bytes + row * piece_bytes + byte % piece_bytes;
}

/// The 32-bit word of a filter row that holds k (word) -- two 16-bit values,
/// the lower k first in memory -- or one TF32 value (rounded to nearest).
template <class T>
__device__ __forceinline__ std::uint32_t filter_word(const T (&v)[4 / sizeof(T)]) {
  if constexpr (std::is_same_v<T, float>) {
    return to_tf32(v[0]);
  } else {
    std::uint32_t word;
    memcpy(&word, v, sizeof(word));
    return word;
  }
}

/// d += a b on the tensor cores, one chunk's k: m16n8k16 (16-bit) or m16n8k8 TF32.
template <class T>
__device__ __forceinline__ void mma_chunk(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<T, float>) {
    mma_m16n8k8_tf32(d, a, b);
  } else {
    mma_m16n8k16<T>(d, a, b);
  }
}

}  // namespace dgrad_parity_mma

/// Grid: x = tiles of the class grid (ceil(ceil(H / sh) / 16) x ceil(ceil(W / sw)
/// / 32)), y = the stride_h x stride_w classes x groups of 8 input channels
/// (class fastest), z = images. Async: dy by cp.async (K * sizeof(T) % 16 == 0,
/// dy 16-byte aligned, no mask), else through registers. 50,752 bytes of
/// dynamic shared memory (the ring), at most 128 registers: 4 CTAs an SM on the
/// H200.
template <class T, bool Async>
KF_KERNEL void __launch_bounds__(dgrad_parity_mma::threads, 4)
    conv2d_dgrad_parity_mma(conv2d_args<T> a, conv2d_dy_reader<T> dy, T* __restrict__ dx, int tiles_j) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM80
  __trap();  // mma.sync m16n8k16 needs sm_80; the launcher never selects this kernel below it
#else
  using namespace dgrad_parity_mma;
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, float>,
                "16-bit operands, or float as TF32");
  constexpr int kChunk = chunk<T>, kPiece = piece_bytes / static_cast<int>(sizeof(T));  // elements a 16-byte piece
  constexpr int kWords = 2 * piece_bytes / 4;                                           // 32-bit words a row: 8
  extern __shared__ __align__(128) unsigned char dgrad_parity_mma_smem[];
  const std::uint32_t ring = smem_address(dgrad_parity_mma_smem);
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int classes = a.stride_h * a.stride_w;
  const int cls = static_cast<int>(blockIdx.y) % classes, c0 = static_cast<int>(blockIdx.y) / classes * group;
  const int ca = cls / a.stride_w, cb = cls % a.stride_w;
  const dgrad_parity_dim dh = dgrad_parity_of(ca, a.stride_h, a.pad_h, a.r, a.h);
  const dgrad_parity_dim dw = dgrad_parity_of(cb, a.stride_w, a.pad_w, a.s, a.w);
  const int i0 = static_cast<int>(blockIdx.x) / tiles_j * tile_i, j0 = static_cast<int>(blockIdx.x) % tiles_j * tile_j;
  const int n = static_cast<int>(blockIdx.z);
  if (i0 >= dh.size || j0 >= dw.size) return;  // the whole CTA: no barrier reached
  // dy's tile origin: shared row sr, column sc hold dy[p0 + sr][q0 + sc].
  const int p0 = i0 + dh.offset - (taps - 1), q0 = j0 + dw.offset - (taps - 1);
  const long long image_dy = static_cast<long long>(n) * a.pq * a.k;
  const int wr0 = warp / 2 * warp_rows, wc0 = warp % 2 * warp_cols;

  // ---- the ring's fills ----
  // dy pixel `pix` of the tile: its element offset in dy (k = 0), or -1 outside dy.
  auto dy_offset = [&](int pix) -> long long {
    const int p = p0 + pix / cols, q = q0 + pix % cols;
    const bool inside =
        static_cast<unsigned>(p) < static_cast<unsigned>(a.p) && static_cast<unsigned>(q) < static_cast<unsigned>(a.q);
    return inside ? image_dy + (static_cast<long long>(p) * a.q + q) * a.k : -1;
  };
  auto fill_dy = [&](std::uint32_t slot, int k0) {
    if constexpr (Async) {  // 16-byte pieces: K a multiple of kPiece, so a piece is all inside K or all past it
#pragma unroll 1
      for (int e = tid; e < rows * cols * 2; e += threads) {
        const int pix = e / 2, piece = e % 2;
        const long long at = dy_offset(pix);
        const int k = k0 + piece * kPiece;
        const bool live = at >= 0 && k < a.k;
        cp_async_16(dgrad_parity_mma_smem + (slot - ring) + byte_at<dy_rows>(pix, piece * piece_bytes),
                    dy.dy + (live ? at + k : 0), live ? 16 : 0);
      }
      cp_async_commit();
    } else {  // element by element: any K and alignment, through the mask where there is one
#pragma unroll 1
      for (int e = tid; e < rows * cols * kChunk; e += threads) {
        const int pix = e / kChunk, kk = e % kChunk;
        const long long at = dy_offset(pix);
        const int k = k0 + kk;
        T v = from_compute<T>(0.0f);
        if (at >= 0 && k < a.k) {
          v = dy.dy[at + k];
          if (dy.relu_y != nullptr && to_compute(dy.relu_y[at + k]) <= dy.threshold) v = from_compute<T>(0.0f);
        }
        *reinterpret_cast<T*>(dgrad_parity_mma_smem + (slot - ring) +
                              byte_at<dy_rows>(pix, kk * static_cast<int>(sizeof(T)))) = v;
      }
    }
  };
  // The chunk's sub-filter, w[k][r0 + u sh][s0 + v sw][c0 + c] (KRSC), 0 past the
  // class's taps, the group's channels or K: thread t loads row t of the slot's
  // [tap][c][k] (tap = u * 4 + v; 8 words of k: filter_word) into registers, and
  // stores it after this chunk's products (the loads' latency behind them) as
  // two 16-byte pieces.
  const int w_tap = tid / group, w_c = tid % group;
  const bool w_live = w_tap / taps < dh.taps && w_tap % taps < dw.taps && c0 + w_c < a.c;
  const T* const w_row =
      a.wt +
      ((static_cast<long long>(dh.first + w_tap / taps * a.stride_h) * a.s + dw.first + w_tap % taps * a.stride_w) *
           a.c +
       c0 + w_c);
  auto load_w = [&](int k0, std::uint32_t(&wv)[kWords]) {
    constexpr int per_word = 4 / static_cast<int>(sizeof(T));
#pragma unroll
    for (int e = 0; e < kWords; ++e) {
      T v[per_word];
#pragma unroll
      for (int h = 0; h < per_word; ++h) {
        const int k = k0 + per_word * e + h;
        v[h] = w_live && k < a.k ? w_row[static_cast<long long>(k) * a.crs] : from_compute<T>(0.0f);
      }
      wv[e] = filter_word<T>(v);
    }
  };
  auto store_w = [&](std::uint32_t slot, const std::uint32_t(&wv)[kWords]) {
    unsigned char* const w_base = dgrad_parity_mma_smem + (slot + dy_bytes - ring);
    *reinterpret_cast<uint4*>(w_base + byte_at<w_rows>(tid, 0)) = make_uint4(wv[0], wv[1], wv[2], wv[3]);
    *reinterpret_cast<uint4*>(w_base + byte_at<w_rows>(tid, piece_bytes)) = make_uint4(wv[4], wv[5], wv[6], wv[7]);
  };

  // ---- the products ----
  // acc[ti]: class row i0 + wr0 + ti, an m16n8 fragment (class columns g, g + 8; channels 2t, 2t + 1).
  float acc[warp_rows][4] = {};
  // ldmatrix lanes: matrix lane / 8 is (its rows 0-7 or 8-15, piece 0 or 1).
  const int a_row = (lane / 8 % 2) * 8 + lane % 8, a_piece = lane / 16;
  auto products = [&](std::uint32_t slot) {
    // This lane's ldmatrix rows: A, dy pixel (wr0, wc0 + a_row), piece a_piece (then a
    // constant offset an operand); B, tap lane / 16's channel lane % 8, piece lane / 8 % 2.
    const std::uint32_t a_lane = slot + byte_at<dy_rows>(wr0 * cols + wc0 + a_row, a_piece * piece_bytes);
    const std::uint32_t b_lane =
        slot + dy_bytes + byte_at<w_rows>(lane / 16 * group + lane % 8, lane / 8 % 2 * piece_bytes);
    // B fragments of the 16 taps (u, v), two taps an ldmatrix_x4: matrices (tap, piece).
    std::uint32_t b[taps * taps][2];
#pragma unroll
    for (int t = 0; t < taps * taps; t += 2) {
      ldmatrix_x4_b_pair(b[t], b[t + 1], b_lane + byte_at<w_rows>(t * group, 0));
    }
    // dy rows first, first + 4, first + 8 reach disjoint output rows (sr - 3 .. sr), so their
    // products go in turn: up to 12 independent ones between two into one accumulator.
    constexpr int last = taps - 1, warp_dy_rows = warp_rows + last, group_rows = (warp_dy_rows + taps - 1) / taps;
#pragma unroll
    for (int first = 0; first < taps; ++first) {
#pragma unroll
      for (int v = 0; v < taps; ++v) {
        if (v >= dw.taps) continue;  // uniform
        std::uint32_t frag[group_rows][4];
#pragma unroll
        for (int q = 0; q < group_rows; ++q) {
          const int sr = first + taps * q;
          // A: dy row wr0 + sr, columns wc0 + (taps - 1 - v) + [0, 16); none where no tap of the class reaches sr.
          if (sr >= warp_dy_rows || (sr < last && last - sr >= dh.taps)) continue;
          ldmatrix_x4(frag[q], a_lane + byte_at<dy_rows>(sr * cols + last - v, 0));
        }
#pragma unroll
        for (int u = 0; u < taps; ++u) {
          if (u >= dh.taps) continue;  // uniform
#pragma unroll
          for (int q = 0; q < group_rows; ++q) {
            const int sr = first + taps * q, ti = sr - last + u;            // output row ti reads dy row sr with tap u
            if (sr >= warp_dy_rows || ti < 0 || ti >= warp_rows) continue;  // compile time
            mma_chunk<T>(acc[ti], frag[q], b[u * taps + v]);
          }
        }
      }
    }
  };

  if (a.k > 0 && dh.taps > 0 && dw.taps > 0) {  // else the class receives nothing: dx = 0
    std::uint32_t wv[kWords];
    fill_dy(ring, 0);
    load_w(0, wv);
    store_w(ring, wv);
    for (int k0 = 0, s = 0; k0 < a.k; k0 += kChunk, s ^= 1) {
      const std::uint32_t slot = ring + s * slot_bytes, next = ring + (s ^ 1) * slot_bytes;
      const bool more = k0 + kChunk < a.k;
      if (more) {  // the next chunk into the other slot, last read before the previous closing barrier
        fill_dy(next, k0 + kChunk);
        load_w(k0 + kChunk, wv);
      }
      if constexpr (Async) {
        if (more) {
          cp_async_wait<1>();
        } else {
          cp_async_wait<0>();
        }
      }
      __syncthreads();  // this chunk's copies and stores, every thread's
      products(slot);
      if (more) store_w(next, wv);
      __syncthreads();  // this slot read by every warp before it is filled again
    }
  }

  // ---- the store: pixel (a + sh i, b + sw j), channels c0 + 2t, 2t + 1 ----
  const int g = lane / 4, t2 = lane % 4 * 2;
#pragma unroll
  for (int ti = 0; ti < warp_rows; ++ti) {
    const int i = i0 + wr0 + ti;
    if (i >= dh.size) break;
    const int h = ca + a.stride_h * i;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int j = j0 + wc0 + g + 8 * half;
      if (j >= dw.size) continue;
      T* const out = dx + ((static_cast<long long>(n) * a.h + h) * a.w + cb + a.stride_w * j) * a.c + c0 + t2;
      if (c0 + t2 < a.c) out[0] = from_compute<T>(acc[ti][2 * half]);
      if (c0 + t2 + 1 < a.c) out[1] = from_compute<T>(acc[ti][2 * half + 1]);
    }
  }
#endif
}

}  // namespace kf::detail
