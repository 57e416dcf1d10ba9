// SPDX-License-Identifier: Apache-2.0
// Step 6 -- tma_pipeline: a producer warp streams the image through a ring of
// shared-memory stages with TMA; consumer warps compute from shared memory.
// Device code; compiled for sm_90a only (src/filter2d/sources.cmake). Host side:
// tma_sm90a.cu; host interface: tma_sm90a.hpp.
//
// What changes from register_window (step 4) and rolling_window (step 5), and
// why it should be faster at 5x5:
//  * In both earlier steps the same threads issue the loads and the FMAs, and
//    with 90-138 registers per thread few warps are resident: while a warp
//    computes its strip (5x5: ~50 us of FMAs at peak for 8192^2, against the
//    130 us copy) it has no loads in flight, and too few other warps do. Here
//    loading and computing are decoupled: one producer thread per block keeps
//    up to filter2d_tma::stages boxes in flight (cp.async.bulk.tensor, bytes
//    counted on a full mbarrier per stage) whatever the consumers are doing.
//  * A block owns a column strip of filter2d_tma::strip_cols output columns and
//    a contiguous range of row chunks of it (a persistent-style split: the
//    launcher sizes the grid to one wave). Stage s of a range holds input rows
//    [y0 + s * chunk_rows - r/2, + chunk_rows) by box_cols columns starting at
//    x0 - lead_cols (a box must start on a 16-byte column: tma_plan.hpp); chunk j of outputs reads stages j and j + 1
//    (its bottom halo), so each input row is loaded once (plus one extra stage per range).
//  * The zero border is free: TMA fills what lies outside the image (negative
//    coordinates, past the width, height or last row) with zeros. Hence zero
//    border only; clamp and reflect keep the earlier steps.
//  * Consumers: 4 warps; lane l owns output columns x0 + 4l .. + 3 (one float4
//    store) and warp w the rows w * rows_per_warp .. + rows_per_warp - 1 of a
//    chunk, sliding down them as register_window does: each input row read
//    from shared memory (three 16-byte reads, conflict-free: a warp reads 512
//    contiguous bytes each) feeds the r output rows that need it. Shared-memory
//    traffic per output: (rows_per_warp + r - 1) / rows_per_warp * 48 / 4 =
//    18 bytes at 5x5, 4.5 times its global input, well under the 128 B/clock
//    shared-memory bandwidth at the copy rate (~18 B/clock per SM).
//  * Every consumer thread arrives on the stage's empty mbarrier once it is
//    done with it (stage j after chunk j; the last stage of a range after the
//    last chunk): the producer refills a slot only after all consumers left it.
// Requirements (tma_sm90a.hpp, checked by the launcher, errc::unsupported by
// name otherwise): float, 3x3 or 5x5, border::zero, in and out 16-byte aligned
// with pitches a multiple of 4 elements (TMA strides are multiples of 16 bytes;
// float4 stores), compute capability 9.0 and a build with sm_90a.
// Its measured speed: the docs site's learning path (docs/build_site.py) and
// benchmarks/tuning/filter2d.md#best_uses_tma_pipeline (bench_conv).
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../arch/guards.cuh"
#include "../arch/mbarrier_sm90.cuh"
#include "../arch/pipeline_sm90.cuh"
#include "../arch/smem.cuh"
#include "../arch/tma_sm90.cuh"
#include "../common/kernel.cuh"
#include "tma_plan.hpp"

namespace kf::detail {
namespace filter2d_tma {

/// Chunks [begin, end) of range `part` of `parts` over `chunks`: sizes differ by at most one.
__host__ __device__ inline int chunk_range_begin(int part, int parts, int chunks) {
  return static_cast<int>(static_cast<long long>(part) * chunks / parts);
}

}  // namespace filter2d_tma

/// out = filter (*) in, zero border, for an R x S filter (3x3, 5x5).
/// map: the input, dims (width, height, channels), box box_cols x chunk_rows x 1.
/// Grid: x = column strips, y = ranges of row chunks (params.parts), z =
/// channels (grid-stride). Producer and consumers walk the same sequence of
/// (channel, range) and of stages, so the ring's stage count runs on across it.
template <int R, int S>
KF_KERNEL void __launch_bounds__(filter2d_tma::threads, filter2d_tma::min_blocks_per_sm)
    filter2d_tma_pipeline(const __grid_constant__ CUtensorMap map, const filter2d_tma::params prm) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();  // TMA and mbarrier transactions: this file is compiled for sm_90a alone
#elif KF_ARCH_SM90A
  using namespace filter2d_tma;
  static_assert(S - 1 <= max_halo && R - 1 <= max_halo, "the box holds a halo of at most max_halo");
  constexpr int top = R / 2, left = S / 2;
  // A thread's input columns per row: x - left .. x + 3 + S - 1 - left, read as
  // the three aligned float4s x - 4 .. x + 7 (the box starts lead_cols left of
  // the strip); w[k] is column x - left + k.
  constexpr int window = cols_per_thread + S - 1;  // <= 8
  constexpr int skip = lead_cols - left;           // first used float of the three float4s
  static_assert(skip >= 0 && skip + window <= 3 * 4, "the window lies within the three float4s");
  constexpr int box_row_bytes = box_cols * 4;
  extern __shared__ unsigned char filter2d_tma_smem[];
  const std::uint32_t raw = smem_address(filter2d_tma_smem);
  const std::uint32_t base = (raw + smem_alignment - 1) & ~std::uint32_t(smem_alignment - 1);
  unsigned char* const base_ptr = filter2d_tma_smem + (base - raw);
  static_assert(stage_ring_barrier_bytes(stages) == 2 * stages * barrier_bytes, "tma_plan.hpp's barrier space");
  const stage_ring<stages> ring(base + stages * stage_bytes);

  if (threadIdx.x == 0) {
    ring.init(consumer_threads);  // every consumer thread releases a stage
    mbar_init_fence();
  }
  __syncthreads();  // the only block-wide barrier: the roles split below

  const int x0 = blockIdx.x * strip_cols;
  const int begin = chunk_range_begin(blockIdx.y, prm.parts, prm.chunks);
  const int end = chunk_range_begin(blockIdx.y + 1, prm.parts, prm.chunks);
  const int range = end - begin;  // chunks; the range loads range + 1 stages
  if (range <= 0) return;         // uniform over the block (the launcher keeps parts <= chunks)

  if (threadIdx.x >= consumer_threads) {
    // ------------------------------------------------------------------ producer
    if (threadIdx.x == consumer_threads) {
      ring_position<stages> at;  // runs on across every (channel, range)
      for (int c = blockIdx.z; c < prm.channels; c += gridDim.z) {
        for (int s = 0; s <= range; ++s) {
          // Out-of-bounds zeros count too: always the whole box.
          const std::uint32_t full = ring.producer_acquire(at, stage_bytes);
          tma_load_3d(base + at.stage * stage_bytes, &map, x0 - lead_cols, (begin + s) * chunk_rows - top, c, full);
          at.advance();
        }
      }
    }
    return;
  }

  // -------------------------------------------------------------------- consumers
  const int warp = threadIdx.x / warp_threads;
  const int lane = threadIdx.x % warp_threads;
  const int x = x0 + lane * cols_per_thread;
  const bool full_store = x + cols_per_thread <= prm.width;
  float f[R * S];
#pragma unroll
  for (int t = 0; t < R * S; ++t) f[t] = __ldg(prm.filter + t);

  ring_position<stages> at;  // this chunk's stage
  for (int c = blockIdx.z; c < prm.channels; c += gridDim.z) {
    float* const out_plane = prm.out + c * prm.out_plane;
    for (int j = 0; j < range; ++j) {
      ring_position<stages> next = at;  // the next stage: this chunk's halo
      next.advance();
      const int slot0 = at.stage, slot1 = next.stage;
      // Every consumer waits on every stage in order, so no wait can be two
      // rounds ahead of its barrier's parity (stages >= 2).
      ring.consumer_wait(at);
      ring.consumer_wait(next);
      const unsigned char* const stage0 = base_ptr + slot0 * stage_bytes + lane * cols_per_thread * 4;
      const unsigned char* const stage1 = base_ptr + slot1 * stage_bytes + lane * cols_per_thread * 4;
      const int y_first = (begin + j) * chunk_rows + warp * rows_per_warp;  // this warp's first output row

      float acc[rows_per_warp][cols_per_thread];
#pragma unroll
      for (int ry = 0; ry < rows_per_warp; ++ry) {
#pragma unroll
        for (int k = 0; k < cols_per_thread; ++k) acc[ry][k] = 0.0f;
      }
#pragma unroll
      for (int q = 0; q < rows_per_warp + R - 1; ++q) {
        // Input row y_first - top + q: row (warp * rows_per_warp + q) of the chunk's stage pair.
        const int row = warp * rows_per_warp + q;
        const unsigned char* const src =
            row < chunk_rows ? stage0 + row * box_row_bytes : stage1 + (row - chunk_rows) * box_row_bytes;
        const float4 lo = *reinterpret_cast<const float4*>(src);
        const float4 mid = *reinterpret_cast<const float4*>(src + 16);
        const float4 hi = *reinterpret_cast<const float4*>(src + 32);
        const float all[12] = {lo.x, lo.y, lo.z, lo.w, mid.x, mid.y, mid.z, mid.w, hi.x, hi.y, hi.z, hi.w};
        float w[window];
#pragma unroll
        for (int k = 0; k < window; ++k) w[k] = all[skip + k];
#pragma unroll
        for (int i = 0; i < R; ++i) {
          const int ry = q - i;  // input row q feeds output row ry through filter row i
          if (ry >= 0 && ry < rows_per_warp) {
#pragma unroll
            for (int jj = 0; jj < S; ++jj) {
#pragma unroll
              for (int k = 0; k < cols_per_thread; ++k) acc[ry][k] = fmaf(f[i * S + jj], w[k + jj], acc[ry][k]);
            }
          }
        }
        const int done = q - (R - 1);  // the output row this input row completes
        if (done >= 0) {
          const int y = y_first + done;
          if (y < prm.height && x < prm.width) {
            float* const out = out_plane + y * prm.out_pitch + x;
            if (full_store) {
              *reinterpret_cast<float4*>(out) = make_float4(acc[done][0], acc[done][1], acc[done][2], acc[done][3]);
            } else {
#pragma unroll
              for (int k = 0; k < cols_per_thread; ++k) {
                if (x + k < prm.width) out[k] = acc[done][k];
              }
            }
          }
        }
      }
      // Chunk j was stage slot0's last reader; the range's last chunk is also the
      // last reader of the range's extra stage slot1.
      ring.release(slot0);
      if (j == range - 1) ring.release(slot1);
      at = next;
    }
    at.advance();  // past the range's extra stage
  }
#endif
}

}  // namespace kf::detail
