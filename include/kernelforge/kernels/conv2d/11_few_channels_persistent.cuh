// SPDX-License-Identifier: Apache-2.0
// Step 11 -- few_channels_persistent: step 10's bands (NHWC __half /
// __nv_bfloat16, C <= 4, R*S <= 64: the RGB stem) on persistent CTAs, each
// loading its next band while it computes this one.
//
// What it improves over step 10, and why it is faster: a step-10 CTA loads its
// filter and patch pixel by pixel (2-byte loads, several L2 or HBM round
// trips), then computes, then stores; only the other CTA on the SM fills those
// round trips. Here:
//  * The grid holds the CTAs the GPU runs at once (two an SM where shared
//    memory allows), at most one a band; CTA b computes bands b, b + grid, ...
//    (a static stride). The filter is loaded once per CTA, not once per band.
//  * A band's input rows lie whole in x (the patch's columns of a row are
//    contiguous), so they are copied as they lie, by 16-byte cp.async from the
//    chunk that holds each row's first byte into a staging row where that byte
//    keeps its place in the chunk; a chunk's bytes outside the row are x's own
//    and never read. Only x's first and last chunks, where x's ends are not
//    16-byte aligned, go 2 bytes at a time. The filter comes the same way.
//  * After a barrier the threads spread the staged rows into step 10's patch
//    (pixels padded to 4 channels, zeros outside the image), shared memory to
//    shared memory; after a second barrier they issue the next band's copies
//    and compute this band, so the copies' latency hides behind its mma.sync
//    products and stores, inside the CTA.
//  * Where y is 16-byte aligned and K % 8 == 0, each warp stages one m16
//    fragment (16 pixels x 64 channels) at a time in shared memory, its 16-byte
//    chunks swizzled so that the pair writes and the 16-byte reads are free of
//    bank conflicts, and stores 16-byte vectors; else pairs or single channels
//    straight from the accumulators, as step 10 does.
// Bands (few_channels_plan.hpp: plan_conv2d_few_channels_persistent): step 10's tile shape
// rechosen for the persistent grid, so that the busiest CTA computes the
// fewest warp-rounds -- the stem at N = 16 in 16 x 16 bands (8 warps), 784 of
// them in 3 rounds of 264 CTAs, not step 10's 2 x 112 rows (896, 4 rounds with
// the last 104 CTAs deep). Shared memory for it: filter 27,648 + tap table 208
// + staged rows 37 x 240 + patch 37 x 37 x 8 (10,960) + output tiles 8 x 2,048
// = 64,080 bytes (the raw filter passes through the patch and tiles first).
// Two CTAs take 127 KB, inside sm_80's 164 KB and sm_90's 228 KB; a third would
// fit the H200's shared memory but not its registers (128 a thread: 2 x 256 x
// 128 = 64 K).
// The band's parts (tap table, fragment loads, k-loop, pair stores) are step
// 10's (few_channels_band.cuh). Device code for sm_80 and newer; below that
// the kernel is a trap (the launcher checks the device and the image first).
// Its measured speed: benchmarks/tuning/conv2d.md#conv2d_few_channels_persistent.
#pragma once

#include <cstdint>

#include "../arch/cp_async.cuh"
#include "../arch/guards.cuh"
#include "../arch/smem.cuh"
#include "../common/fast_divmod.cuh"
#include "../common/kernel.cuh"
#include "args.cuh"
#include "few_channels_band.cuh"

namespace kf::detail {
namespace few_channels {

inline constexpr int chunk_bytes = 16;             ///< one cp.async
inline constexpr int out_rows = 16;                ///< pixels a warp stages at a time: one m16 fragment
inline constexpr int out_row_bytes = block_n * 2;  ///< 64 channels, their 16-byte chunks placed by out_swizzle
/// Patch pixels a thread has in flight while spreading the staged rows (the
/// stem: about 9 a thread), so that their shared-memory reads overlap.
inline constexpr int spread_unroll = 4;

/// The launch's plan (few_channels_plan.hpp's conv2d_few_channels_persistent_plan) as the kernel reads it.
struct persistent_tile {
  tile band;  ///< step 10's band; band.patch_offset: this layout's patch
  int bands = 0;
  int stage_offset = 0, stage_row_bytes = 0, out_offset = 0;  ///< shared-memory layout
  fast_divmod patch_cols;                                     ///< a patch pixel's row
  bool y_vectors = false;  ///< y 16-byte aligned and K % 8 == 0: 16-byte stores through shared memory
};

/// threadIdx.x, read again where it is called (asm volatile): at 128 registers
/// the compiler would otherwise keep the thread's lane and warp, and values
/// derived from them, through a band's products, and spill them.
__device__ __forceinline__ int thread_index() {
  int tid;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
  return tid;
}

/// Chunk j of the global bytes [lo, hi) of a tensor [begin, end) -- the 16-byte
/// chunks from the one that holds lo -- into shared memory at dst + 16 j, so
/// that byte lo lands at dst + lo % 16; nothing for a chunk past hi.
__device__ __forceinline__ void copy_chunk(unsigned char* dst, std::uintptr_t lo, std::uintptr_t hi, int j,
                                           std::uintptr_t begin, std::uintptr_t end) {
  const std::uintptr_t from = (lo & ~std::uintptr_t{chunk_bytes - 1}) + static_cast<std::uintptr_t>(chunk_bytes) * j;
  if (from >= hi) return;
  unsigned char* const to = dst + chunk_bytes * j;
  if (from >= begin && from + chunk_bytes <= end) {  // inside the tensor: one copy
    cp_async_16(to, reinterpret_cast<const void*>(from), chunk_bytes);
    return;
  }
  for (int b = 0; b < chunk_bytes; b += 2) {  // the tensor's unaligned first or last chunk: [lo, hi) only
    if (from + b >= lo && from + b < hi) {
      *reinterpret_cast<unsigned short*>(to + b) = __ldg(reinterpret_cast<const unsigned short*>(from + b));
    }
  }
}

/// The columns of x a band's patch reaches, [lo, hi): the same in each of its rows.
template <class T>
__device__ __forceinline__ int2 patch_columns(const band_origin& o, const conv2d_args<T>& a, const tile& t) {
  return make_int2(max(o.w0, 0), min(o.w0 + t.patch_cols, a.w));
}

/// Issues the copies of band o's input rows (the patch's rows inside the image,
/// its columns inside it) into the staging rows.
template <class T>
__device__ __forceinline__ void issue_rows(unsigned char* stage, const band_origin& o, const conv2d_args<T>& a,
                                           const persistent_tile& pt, int tid, int threads) {
  const int2 cols = patch_columns(o, a, pt.band);
  if (cols.x >= cols.y) return;  // the patch lies in the padding
  const auto begin = reinterpret_cast<std::uintptr_t>(a.x);
  const std::uintptr_t end = begin + sizeof(T) * static_cast<std::uintptr_t>(a.n) * a.hw * a.c;
  const int row_bytes = (cols.y - cols.x) * a.c * static_cast<int>(sizeof(T));
  const int chunks = (row_bytes + chunk_bytes - 1) / chunk_bytes + 1;  // from lo's chunk: one more than they fill
  for (int e = tid; e < pt.band.patch_rows * chunks; e += threads) {
    const int row = e / chunks;
    const int h = o.h0 + row;
    if (h < 0 || h >= a.h) continue;
    const std::uintptr_t lo = begin + sizeof(T) * static_cast<std::uintptr_t>((o.n * a.h + h) * a.w + cols.x) * a.c;
    copy_chunk(stage + row * pt.stage_row_bytes, lo, lo + row_bytes, e - row * chunks, begin, end);
  }
}

/// A warp's output tile: staged pixel r's 16-byte chunk f (channels k0 + 8 f ..)
/// lies at chunk f ^ swizzle(r % 8) of the pixel's 128 bytes, swizzle reversing
/// 3 bits, so that a fragment's pair writes (8 pixels x one chunk) and its
/// 16-byte reads (a quarter warp: 2 pixels x 4 chunks, chunks u + 4 q of one
/// and u + 4 (1 - q) of the other) each touch 32 different banks.
__device__ __forceinline__ std::uint32_t out_swizzle(int g) { return ((g & 1) << 2) | (g & 2) | (g >> 2); }

/// The output tile through shared memory (pt.y_vectors): fragment i's 16 pixels
/// x 64 channels + bias[k], the functor, one rounding to T, written to the
/// warp's tile `out` as channel pairs, then stored as 16-byte vectors: the lane
/// of row g stores chunks u and u + 4 of its own two pixels (g, g + 8), 64
/// contiguous bytes of y for each pixel and instruction.
template <class T, class Epilogue>
__device__ __forceinline__ void store_vectors(const conv2d_args<T>& a, const float (&acc)[frags_m][frags_n][4],
                                              const fragment_rows& rows, unsigned char* out, int k0, int lane,
                                              const Epilogue& ep) {
  const int g = lane / 4;
  const int u = lane % 4;
  const std::uint32_t tile = smem_address(out);
  // Pixel g's offset in the tile with its swizzle (chunk f: ^ f << 4), for the
  // pair writes (+ 4 u) and for the reads (chunk u).
  const std::uint32_t pairs = g * out_row_bytes + (out_swizzle(g) << 4) + 4 * u;
  const std::uint32_t vectors = g * out_row_bytes + ((out_swizzle(g) ^ u) << 4);
  constexpr int half = 8 * out_row_bytes;  // pixel g + 8
#pragma unroll
  for (int i = 0; i < frags_m; ++i) {
#pragma unroll
    for (int f = 0; f < frags_n; ++f) {
      const int k = k0 + 8 * f + 2 * u;
      if (k >= a.k) break;  // K % 8 == 0: k + 1 < K as well
      const float bias0 = bias_at(a, k);
      const float bias1 = bias_at(a, k + 1);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const std::int64_t row = rows[i][h];
        if (row < 0) continue;
        const float v0 = static_cast<float>(ep(acc[i][f][2 * h] + bias0, row, std::int64_t{k}));
        const float v1 = static_cast<float>(ep(acc[i][f][2 * h + 1] + bias1, row, std::int64_t{k + 1}));
        store_shared_f32(tile + ((pairs + h * half) ^ (f << 4)), __uint_as_float(from_compute_pair<T>(v0, v1)));
      }
    }
    __syncwarp();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = rows[i][h];
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const int k = k0 + 8 * (u + 4 * q);
        if (row >= 0 && k < a.k) {
          *reinterpret_cast<float4*>(a.y + static_cast<std::int64_t>(row) * a.k + k) =
              load_shared_v4(tile + ((vectors + h * half) ^ (q << 6)));
        }
      }
    }
    __syncwarp();
  }
}

}  // namespace few_channels

/// y = ep(conv(x, w) + bias) for the NHWC layer `a` (C <= 4, R*S <= 64; T
/// __half or __nv_bfloat16): grid (persistent CTAs, ceil(K / 64)), 32 threads
/// per 32 pixels of a band, pt's layout of dynamic shared memory.
template <class T, class Epilogue>
KF_KERNEL void __launch_bounds__(few_channels::max_threads, few_channels::min_blocks_per_sm)
    conv2d_few_channels_persistent(const conv2d_args<T> a, const few_channels::persistent_tile pt, Epilogue ep) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM80
  __trap();  // mma.sync f16 / bf16 with fp32 sums and cp.async need sm_80; the launcher never selects it below
#else
  using namespace few_channels;
  const tile& t = pt.band;
  extern __shared__ uint4 few_channels_persistent_smem[];  // uint4: 16-byte aligned for ldmatrix and cp.async
  unsigned char* const filter = reinterpret_cast<unsigned char*>(few_channels_persistent_smem);  // [64][row bytes]
  int2* const taps = reinterpret_cast<int2*>(filter + t.table_offset);                           // [k_steps][2]
  unsigned char* const stage = filter + pt.stage_offset;  // [patch_rows][stage_row_bytes]: the next band's rows
  unsigned char* const patch = filter + t.patch_offset;   // [patch_rows][patch_cols][4]; first, the raw filter

  const int threads = blockDim.x;
  const int k0 = blockIdx.y * block_n;
  const unsigned grid = gridDim.x;

  // The filter's 64 rows as they lie in w (C*R*S elements a row) and the first
  // band's input rows, in flight together.
  int tid = static_cast<int>(threadIdx.x);
  const auto w_begin = reinterpret_cast<std::uintptr_t>(a.wt);
  const std::uintptr_t w_lo = w_begin + sizeof(T) * static_cast<std::uintptr_t>(k0) * a.crs;
  const std::uintptr_t w_hi = w_begin + sizeof(T) * static_cast<std::uintptr_t>(min(a.k, k0 + block_n)) * a.crs;
  const int w_chunks = static_cast<int>((w_hi - w_lo + chunk_bytes - 1) / chunk_bytes) + 1;
  const std::uintptr_t w_end = w_begin + sizeof(T) * static_cast<std::uintptr_t>(a.k) * a.crs;
  for (int j = tid; j < w_chunks; j += threads) copy_chunk(patch, w_lo, w_hi, j, w_begin, w_end);
  unsigned band = blockIdx.x;
  issue_rows(stage, origin_of(static_cast<int>(band), a, t), a, pt, tid, threads);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  const auto* const raw = reinterpret_cast<const unsigned short*>(patch + (w_lo & (chunk_bytes - 1)));
  write_filter<1>(filter, a, t, k0, tid, threads, [&](int j, int tap) {
    const unsigned short* const src = raw + (j * a.rs + tap) * a.c;
    return gather_pixel([src](int i) -> unsigned { return src[i]; }, a.c);
  });
  write_tap_table(taps, a, t, tid, threads);
  const std::uint32_t b_lane = b_lane_address(filter, t, tid % 32);

  for (; band < static_cast<unsigned>(pt.bands); band += grid) {
    cp_async_wait<0>();
    __syncthreads();  // the band's rows have landed; every warp is done with the patch (or the raw filter)
    tid = thread_index();
    const band_origin o = origin_of(static_cast<int>(band), a, t);
    const int first = patch_columns(o, a, t).x;
    write_patch<spread_unroll>(
        patch, o, a, t, tid, threads, [&](int e) { return pt.patch_cols.div(e); },
        [&](int row, int h, int wc) {  // the staged row's first byte lies where it lies in a 16-byte chunk of x
          const auto start = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(a.x)) +
                             static_cast<unsigned>(sizeof(T) * (((o.n * a.h + h) * a.w + first) * a.c));
          const auto* const src =
              reinterpret_cast<const unsigned short*>(stage + row * pt.stage_row_bytes + (start & (chunk_bytes - 1))) +
              (wc - first) * a.c;
          return gather_pixel([src](int i) -> unsigned { return src[i]; }, a.c);
        });
    __syncthreads();  // the patch is whole, and the staging rows are free
    if (band + grid < static_cast<unsigned>(pt.bands)) {
      issue_rows(stage, origin_of(static_cast<int>(band + grid), a, t), a, pt, tid, threads);
    }
    cp_async_commit();

    fragment_rows base, dest;
    patch_rows(base, a, t, tid / 32, tid % 32);
    float acc[frags_m][frags_n][4] = {};
    accumulate<T>(acc, patch, taps, b_lane, base, t, tid % 32);
    tid = thread_index();  // again: nothing derived from it lives through the products
    output_rows(dest, o, a, t, tid / 32, tid % 32);
    if (pt.y_vectors) {
      store_vectors(a, acc, dest, filter + pt.out_offset + tid / 32 * out_rows * out_row_bytes, k0, tid % 32, ep);
    } else {
      store_pairs(a, t, acc, dest, k0, tid % 32, ep);
    }
  }
#endif
}

}  // namespace kf::detail
