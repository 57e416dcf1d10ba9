// SPDX-License-Identifier: Apache-2.0
// The multi-stage cp.async GEMM core of the pipelined conv2d kernels (step 5,
// implicit_gemm_pipelined, and step 6's Winograd batched GEMMs): a block
// computes a BM x BN tile of C = A * B with 8 x 8 outputs per thread, reading
// BK-deep slices of A and B that STAGES - 1 slices of cp.async copies run ahead of.
//
// Shared layout per stage (one dynamic buffer, STAGES of these):
//   As[kk][m], row pitch BM + 4: the A slice, kk-major, so a thread's 4
//     consecutive rows m are one 16-byte read (as in step 3).
//   Bs[k][kk], row pitch BK + 4: the B slice, k-major -- the way B lies in
//     memory for both users (filters K x C*R*S; Winograd's U: 16 x K x C), so
//     16-byte cp.async copies land without a transpose. A thread reads 4 kk of
//     one column k with one 16-byte load: per 4 kk, 8 A and 8 B float4 loads
//     feed 256 FMAs, the same ratio as step 3's 2 + 2 loads per 64 FMAs.
// Bank conflicts: a quarter warp (the unit of a 16-byte shared load) reads 8
// consecutive float4 of one As row, or one broadcast float4 of Bs.
//
// The copiers here are the shared-memory side of the pipeline; the im2col
// gather of step 5 is gemm_loader.cuh's conv2d_im2col_async_gather.
#pragma once

#include "../arch/cp_async.cuh"

namespace kf::detail {

constexpr int conv2d_pipe_thread_tile = 8;  // 8 x 8 outputs per thread
constexpr int conv2d_pipe_pad = 4;          // floats: rows stay 16-byte aligned, consecutive rows shift banks
constexpr int conv2d_pipe_vector = 4;       // floats per 16-byte copy

template <int BM, int BN>
constexpr int conv2d_pipe_threads = (BM / conv2d_pipe_thread_tile) * (BN / conv2d_pipe_thread_tile);

/// Floats of one pipeline stage: the A and the B slice.
template <int BM, int BN, int BK>
constexpr int conv2d_pipe_stage_floats = BK*(BM + conv2d_pipe_pad) + BN*(BK + conv2d_pipe_pad);

/// Dynamic shared memory of a pipelined kernel.
template <int BM, int BN, int BK, int STAGES>
constexpr int conv2d_pipe_smem_bytes = STAGES* conv2d_pipe_stage_floats<BM, BN, BK>* static_cast<int>(sizeof(float));

/// cp.async source bytes of a 16-byte chunk starting at element `index` of a
/// row that holds `end` elements: 16 inside, fewer at the end (the copy
/// zero-fills the rest), 0 past it.
__device__ __forceinline__ int conv2d_pipe_chunk_bytes(int index, int end) {
  const int left = end - index;
  return left >= conv2d_pipe_vector ? 16 : (left > 0 ? left * 4 : 0);
}

/// Copies ROWS x BK of a row-major matrix (rows of at least kk_end elements, ld
/// apart) into S[row][kk] (pitch BK + 4): the B side. Rows >= rows and kk >=
/// kk_end are zero-filled. vec16 (16-byte chunks) needs the base and ld aligned
/// to 4 floats and k0 a multiple of 4; otherwise 4-byte copies.
template <int ROWS, int BK, int THREADS>
struct conv2d_row_tile_copier {
  static constexpr int chunks_per_row = BK / conv2d_pipe_vector;
  static_assert(BK % conv2d_pipe_vector == 0, "whole 16-byte chunks per row");
  static_assert((ROWS * chunks_per_row) % THREADS == 0, "whole chunks per thread");
  static constexpr int per_thread = ROWS * chunks_per_row / THREADS;
  static constexpr int row_step = THREADS / chunks_per_row;

  const float* base = nullptr;  // row 0 of the tile
  int ld = 0;
  int rows = 0;  // valid rows of the tile
  int row = 0;   // this thread's first row
  int col = 0;   // its chunk's first kk within the slice

  __device__ __forceinline__ void init(const float* matrix, int ld_, int first_row, int total_rows, int tid) {
    base = matrix + static_cast<long long>(first_row) * ld_;
    ld = ld_;
    rows = total_rows - first_row;
    row = tid / chunks_per_row;
    col = (tid % chunks_per_row) * conv2d_pipe_vector;
  }

  __device__ __forceinline__ void copy(int k0, int kk_end, float* S, bool vec16) const {
    constexpr int pitch = BK + conv2d_pipe_pad;
#pragma unroll
    for (int j = 0; j < per_thread; ++j) {
      const int r = row + j * row_step;
      const int kk = k0 + col;
      float* dst = S + r * pitch + col;
      const float* src = base + r * ld + kk;
      if (vec16) {
        const int bytes = r < rows ? conv2d_pipe_chunk_bytes(kk, kk_end) : 0;
        cp_async_16(dst, bytes > 0 ? src : base, bytes);
      } else {
#pragma unroll
        for (int e = 0; e < conv2d_pipe_vector; ++e) {
          const bool in = r < rows && kk + e < kk_end;
          cp_async_4(dst + e, in ? src + e : base, in ? 4 : 0);
        }
      }
    }
  }
};

/// Copies BK x BM of a kk-major matrix (row kk holds the m values, ld apart;
/// ld and the base aligned to 4 floats) into As[kk][m] (pitch BM + 4) by
/// 16-byte copies: the A side of Winograd's GEMMs. m >= m_end and kk >= kk_end
/// are zero-filled; block_m is a multiple of 4.
template <int BM, int BK, int THREADS>
struct conv2d_col_tile_copier {
  static constexpr int chunks_per_row = BM / conv2d_pipe_vector;
  static_assert((BK * chunks_per_row) % THREADS == 0, "whole chunks per thread");
  static constexpr int per_thread = BK * chunks_per_row / THREADS;
  static constexpr int row_step = THREADS / chunks_per_row;
  static_assert(THREADS % chunks_per_row == 0, "whole rows per pass");

  const float* base = nullptr;  // column block_m of row 0
  int ld = 0;
  int m_left = 0;  // valid columns of the tile
  int row = 0;     // this thread's first kk within the slice
  int col = 0;     // its chunk's first m within the tile

  __device__ __forceinline__ void init(const float* matrix, int ld_, int block_m, int m_end, int tid) {
    base = matrix + block_m;
    ld = ld_;
    m_left = m_end - block_m;
    row = tid / chunks_per_row;
    col = (tid % chunks_per_row) * conv2d_pipe_vector;
  }

  __device__ __forceinline__ void copy(int k0, int kk_end, float* As) const {
    constexpr int pitch = BM + conv2d_pipe_pad;
#pragma unroll
    for (int j = 0; j < per_thread; ++j) {
      const int r = row + j * row_step;
      const int bytes = k0 + r < kk_end ? conv2d_pipe_chunk_bytes(col, m_left) : 0;
      cp_async_16(As + r * pitch + col, bytes > 0 ? base + static_cast<long long>(k0 + r) * ld + col : base, bytes);
    }
  }
};

/// The main loop: `slices` BK-deep slices; copy_stage(slice, As, Bs) issues the
/// cp.async copies of one slice (every thread calls it, every thread's copies
/// are waited for). acc[i][j]: row (i / 4) * BM / 2 + tr * 4 + i % 4, column
/// (j / 4) * BN / 2 + tc * 4 + j % 4 of the block tile, with tr = tid % (BM / 8),
/// tc = tid / (BM / 8). smem: conv2d_pipe_smem_bytes<BM, BN, BK, STAGES>.
template <int BM, int BN, int BK, int STAGES, class CopyStage>
__device__ __forceinline__ void conv2d_pipelined_mainloop(float* smem, int slices, CopyStage copy_stage,
                                                          float (&acc)[8][8]) {
  static_assert(STAGES >= 2, "at least double buffering");
  constexpr int A_PITCH = BM + conv2d_pipe_pad;
  constexpr int B_PITCH = BK + conv2d_pipe_pad;
  constexpr int A_FLOATS = BK * A_PITCH;
  constexpr int STAGE = conv2d_pipe_stage_floats<BM, BN, BK>;
  const int tr = threadIdx.x % (BM / conv2d_pipe_thread_tile);
  const int tc = threadIdx.x / (BM / conv2d_pipe_thread_tile);

  // Prologue: slices 0 .. STAGES - 2 in flight, one commit group each (empty past the end).
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < slices) copy_stage(s, smem + s * STAGE, smem + s * STAGE + A_FLOATS);
    cp_async_commit();
  }
  int read = 0, write = STAGES - 1;
  for (int t = 0; t < slices; ++t) {
    // Groups committed so far: STAGES - 1 + t; slice t's is done when at most STAGES - 2 remain.
    cp_async_wait<STAGES - 2>();
    // Makes every thread's copies of slice t visible, and tells every thread that
    // the stage read in iteration t - 1 (the one written next) is free.
    __syncthreads();
    if (t + STAGES - 1 < slices) copy_stage(t + STAGES - 1, smem + write * STAGE, smem + write * STAGE + A_FLOATS);
    cp_async_commit();
    write = write + 1 == STAGES ? 0 : write + 1;

    const float* As = smem + read * STAGE;
    const float* Bs = As + A_FLOATS;
    read = read + 1 == STAGES ? 0 : read + 1;
#pragma unroll
    for (int kq = 0; kq < BK; kq += conv2d_pipe_vector) {
      float4 b4[8];  // 4 kk of each of the thread's 8 columns
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int col = (j / 4) * (BN / 2) + tc * 4 + (j % 4);
        b4[j] = *reinterpret_cast<const float4*>(Bs + col * B_PITCH + kq);
      }
#pragma unroll
      for (int e = 0; e < conv2d_pipe_vector; ++e) {
        const float* a_row = As + (kq + e) * A_PITCH;
        const float4 a0 = *reinterpret_cast<const float4*>(a_row + tr * 4);
        const float4 a1 = *reinterpret_cast<const float4*>(a_row + BM / 2 + tr * 4);
        const float av[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        float bv[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) bv[j] = e == 0 ? b4[j].x : e == 1 ? b4[j].y : e == 2 ? b4[j].z : b4[j].w;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
      }
    }
  }
  cp_async_wait<0>();  // no copy outlives the kernel's use of shared memory
}

}  // namespace kf::detail
