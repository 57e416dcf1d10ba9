// SPDX-License-Identifier: Apache-2.0
// The Hopper GEMM's epilogue (14_wgmma.cuh): a consumer warpgroup's finished
// 64 x N accumulator tile -> C, in fp32 until one rounding to T, with the
// epilogue functor (kernelforge/epilogue.cuh) applied to each value in registers.
//  * store_tile: from registers, two adjacent columns per store where C allows;
//    C read only when beta != 0 (NaN in C must not leak otherwise). Used for
//    beta != 0, ragged alignment, and split-k partials (partial_slice).
//  * store_tile_staged: beta == 0 and 16-byte aligned rows of C: through two
//    swizzled 8 KiB C buffers per warpgroup (16-bit values by stmatrix, four
//    8 x 8 matrices an instruction) and TMA stores, which clip at C's edges: a
//    few wide stores per tile instead of hundreds of 4-byte ones.
//  * staged_tile_16: the same for 16-bit C, overlapped with the next tile's
//    products -- one chunk is stored after each of its k-steps is issued.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../../arch/guards.cuh"
#include "../../arch/smem.cuh"
#include "../../arch/stmatrix_sm90.cuh"
#include "../../arch/tma_sm90.cuh"
#include "../../arch/warpgroup_sm90.cuh"
#include "../../common/numeric.cuh"
#include "config.cuh"
#include "element.cuh"
#include "kernelforge/epilogue.cuh"

namespace kf::detail::wgmma {

#if KF_ARCH_SM90A
/// One consumer warpgroup's 64 x N accumulator tile (N = 2 * Accumulators) -> C. Accumulator r of a
/// thread: row 16 * warp + lane / 4 + 8 * ((r % 4) / 2), column 8 * (r / 4) +
/// 2 * (lane % 4) + r % 2 -- so accumulators 2h, 2h+1 are adjacent columns.
/// The epilogue functor `fn` (kernelforge/epilogue.cuh) runs once per stored
/// value, on alpha * acc + beta * C in fp32, in registers; the result is
/// rounded once to T. rows[h]: the thread's row for accumulators 4c + 2h,
/// 4c + 2h + 1 (wgmma's layout: row0 and row0 + 8; the skinny fp32-emulation
/// step's fragments permute the rows, 17_wgmma_fp32_emulated_skinny.cuh).
template <class T, class Epilogue, int Accumulators>
__device__ __forceinline__ void store_tile(const float (&d)[Accumulators], const params<T>& ep,
                                           const long long (&rows)[2], long long col0, const Epilogue& fn) {
  using pair = typename element<T>::pair;
  const bool read_c = ep.beta != 0.0f;  // beta == 0: C is not read (NaN in C must not leak)
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const long long row = rows[h];
    if (row >= ep.m) continue;
    T* const c_row = ep.C + row * ep.ldc;
#pragma unroll
    for (int c = 0; c < Accumulators / 4; ++c) {
      const long long col = col0 + 8 * c;
      float v0 = ep.alpha * d[4 * c + 2 * h];
      float v1 = ep.alpha * d[4 * c + 2 * h + 1];
      if (ep.pairs && col + 1 < ep.n) {
        pair* const p = reinterpret_cast<pair*>(c_row + col);
        if (read_c) {
          const pair old = *p;
          v0 = fmaf(ep.beta, to_compute(old.x), v0);
          v1 = fmaf(ep.beta, to_compute(old.y), v1);
        }
        pair out;
        out.x = from_compute<T>(fn(v0, row, col));
        out.y = from_compute<T>(fn(v1, row, col + 1));
        *p = out;
      } else {
        if (col < ep.n) {
          c_row[col] = from_compute<T>(fn(read_c ? fmaf(ep.beta, to_compute(c_row[col]), v0) : v0, row, col));
        }
        if (col + 1 < ep.n) {
          c_row[col + 1] =
              from_compute<T>(fn(read_c ? fmaf(ep.beta, to_compute(c_row[col + 1]), v1) : v1, row, col + 1));
        }
      }
    }
  }
}

/// store_tile in wgmma's own layout: the thread's rows row0 and row0 + 8.
template <class T, class Epilogue, int Accumulators>
__device__ __forceinline__ void store_tile(const float (&d)[Accumulators], const params<T>& ep, long long row0,
                                           long long col0, const Epilogue& fn) {
  const long long rows[2] = {row0, row0 + 8};
  store_tile<T>(d, ep, rows, col0, fn);
}

/// alpha and the epilogue functor on a consumer warpgroup's finished 64 x N
/// tile, in place, before its staged stores (row_base, col_base: the
/// warpgroup's first row and column of C). alpha == 1 (exact: 1 * x == x)
/// skips the multiplies (a uniform branch); the identity functor (compile
/// time) touches nothing else, since TMA clips what lies outside C. Any other
/// functor sees only values inside C (e.g. a bias read per column would
/// overrun): a chunk wholly inside C, the common case, is tested once for the
/// whole chunk, and only edge chunks check each value. Tiles are whole chunks
/// wide (64, 128, 192 or 256 columns).
template <class T, class Epilogue, int Accumulators>
__device__ __forceinline__ void finish_staged_values(float (&d)[Accumulators], const params<T>& ep, int row_base,
                                                     int col_base, const Epilogue& fn) {
  constexpr int chunk_cols = swizzle_row_bytes / static_cast<int>(sizeof(T));  // 64 halves, 32 floats
  constexpr int groups_per_chunk = chunk_cols / 8;  // accumulator column groups (8 columns each) per chunk
  constexpr int chunks = 2 * Accumulators / chunk_cols;
  static_assert(chunks * chunk_cols == 2 * Accumulators, "staged tiles are a whole number of chunks wide");
  if (ep.alpha != 1.0f) {
#pragma unroll
    for (int i = 0; i < Accumulators; ++i) d[i] *= ep.alpha;
  }
  if constexpr (!std::is_same_v<Epilogue, epilogue::identity>) {
    const int tid = static_cast<int>(threadIdx.x % warpgroup_threads);
    const int lane = tid % 32, warp = tid / 32;
    // The functor's coordinates: the thread's rows row_in_warpgroup + 8h, columns 8g + col_in_group (+1) of a chunk.
    const int row_in_warpgroup = 16 * warp + lane / 4;
    const int col_in_group = 2 * (lane % 4);
    const int rows_in_c = ep.m - row_base;
#pragma unroll
    for (int j = 0; j < chunks; ++j) {
      const int col_chunk = col_base + j * chunk_cols;
      if (col_chunk >= ep.n) break;  // the same for the whole warpgroup, and for every later chunk
      const int cols_in_c = ep.n - col_chunk;
      const auto apply = [&](auto checked) {
#pragma unroll
        for (int g = 0; g < groups_per_chunk; ++g) {
          const int c = j * groups_per_chunk + g;  // accumulators 4c .. 4c + 3
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int r = row_in_warpgroup + 8 * h;
            const long long row = static_cast<long long>(row_base) + r;
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int col = 8 * g + col_in_group + e;
              if (!decltype(checked)::value || (r < rows_in_c && col < cols_in_c)) {
                d[4 * c + 2 * h + e] = fn(d[4 * c + 2 * h + e], row, static_cast<long long>(col_chunk) + col);
              }
            }
          }
        }
      };
      if (rows_in_c >= wgmma_m && cols_in_c >= chunk_cols) {  // uniform: the chunk lies inside C
        apply(std::false_type{});
      } else {
        apply(std::true_type{});
      }
    }
  }
}

/// One chunk of the staged epilogue (64 rows x one 128-byte swizzled row of C)
/// through C buffer `buffer` of `Buffers` (kept across chunks and tiles; taken in turn):
/// once that buffer's previous store (Buffers commits back) has read it, write(buf)
/// fills it, and one thread stores it with TMA at (col_chunk, row_base).
/// `barrier`: the warpgroup's named barrier.
template <int Buffers = c_buffers, class Write>
__device__ __forceinline__ void store_staged_chunk(const CUtensorMap* map_c, std::uint32_t c_smem, int col_chunk,
                                                   int row_base, int barrier, int& buffer, const Write& write) {
  const bool issuer = threadIdx.x % warpgroup_threads == 0;
  const std::uint32_t buf = c_smem + buffer * c_buffer_bytes;
  if (issuer) tma_store_wait_read<Buffers - 1>();  // this buffer's previous store has read it
  named_barrier_sync(barrier, warpgroup_threads);
  write(buf);
  fence_proxy_async_shared();  // the writes, visible to the TMA engine
  named_barrier_sync(barrier, warpgroup_threads);
  if (issuer) {
    tma_store_2d(map_c, buf, col_chunk, row_base);
    tma_store_commit();
  }
  buffer = Buffers == 2 ? buffer ^ 1 : (buffer + 1) % Buffers;
}

/// 16-bit chunk j's writes into a C buffer at `at` (the buffer plus the
/// thread's staged_lane_offset): pair(i) is accumulators i, i + 1 rounded to T
/// and packed; one stmatrix.x4 writes the m8n8 matrices (c, 0), (c, 1),
/// (c + 1, 0), (c + 1, 1) for each pair of column groups c, c + 1 of the chunk.
template <int GroupsPerChunk, class Pair>
__device__ __forceinline__ void write_chunk_16(std::uint32_t at, int j, const Pair& pair) {
#pragma unroll
  for (int p = 0; p < GroupsPerChunk / 2; ++p) {
    const int i = 4 * (j * GroupsPerChunk + 2 * p);  // 4c
    stmatrix_x4(at ^ (p * staged_group_xor), pair(i), pair(i + 2), pair(i + 4), pair(i + 6));
  }
}

/// One consumer warpgroup's 64 x N accumulator tile -> C through shared memory,
/// for beta == 0 (C is not read) and 16-byte aligned rows of C. The tile goes in
/// chunks of one 128-byte row (64 halves or 32 floats) x 64 rows: the warpgroup
/// writes alpha * acc, through the epilogue functor, rounded once to T, into a C
/// buffer in the 128-byte swizzle, then one thread stores the chunk with TMA,
/// which skips what lies outside C (the map's extents are m x n, and the staged
/// path runs only where n is whole 16-byte units). The two buffers alternate
/// (`buffer`, kept across tiles): store_staged_chunk. row_base, col_base: the
/// warpgroup's first row and column of C; `barrier`: the warpgroup's named
/// barrier. `d` is scaled in place (the caller does not read it again).
/// 16-bit tiles without the cluster split-k or the swapped product take the
/// overlapped form instead (staged_tile_16, in the kernel's main loop).
/// What keeps it short (the tensor cores idle for this warpgroup meanwhile):
///  * 16-bit T: accumulators 4c + 2h, 4c + 2h + 1 are row 16 warp + lane / 4 +
///    8h, columns 8c + 2 (lane % 4), + 1 of the tile: lane `lane`'s part of
///    the m8n8 matrix (c, h) in stmatrix's fragment layout. Each pair is one
///    cvt to 16 bits, and one stmatrix.x4 writes the matrices (c, 0), (c, 1),
///    (c + 1, 0), (c + 1, 1): 4 per chunk and thread instead of 16 32-bit
///    stores. Each matrix's 8 rows land in 8 distinct 16-byte bank groups (the
///    swizzle XORs the chunk with row % 8): conflict-free. float stays on 8-byte
///    stores of the pairs (stmatrix moves 16-bit elements only).
///  * Addresses: the swizzled 16-byte slot of column group g in row r is
///    g ^ (r % 8); for a thread, r % 8 does not depend on the group, and the
///    group's bits (g = 2p + the lane's matrix column with stmatrix) enter only
///    through an XOR with 32 p (32 g for float), so a thread's offset in a
///    buffer is computed once and each store XORs a constant into it (the
///    buffers are 1024-aligned: the XOR commutes with adding the buffer).
///  * finish_staged_values: no bounds checks with the identity functor, no
///    multiply where alpha == 1.
template <class T, int Buffers = c_buffers, class Epilogue, int Accumulators>
__device__ __forceinline__ void store_tile_staged(float (&d)[Accumulators], const params<T>& ep,
                                                  const CUtensorMap* map_c, std::uint32_t c_smem, int row_base,
                                                  int col_base, int barrier, int& buffer, const Epilogue& fn) {
  constexpr int chunk_cols = swizzle_row_bytes / static_cast<int>(sizeof(T));  // 64 halves, 32 floats
  constexpr int groups_per_chunk = chunk_cols / 8;       // accumulator column groups (8 columns each) per chunk
  constexpr int chunks = 2 * Accumulators / chunk_cols;  // whole chunks (finish_staged_values asserts it)
  const int tid = static_cast<int>(threadIdx.x % warpgroup_threads);
  const int lane = tid % 32, warp = tid / 32;
  if (row_base >= ep.m) return;  // the whole warpgroup's rows lie below C
  finish_staged_values(d, ep, row_base, col_base, fn);
  const std::uint32_t lane_offset = staged_lane_offset(warp, lane, static_cast<int>(sizeof(T)));
#pragma unroll
  for (int j = 0; j < chunks; ++j) {
    const int col_chunk = col_base + j * chunk_cols;
    if (col_chunk >= ep.n) break;  // the same for the whole warpgroup, and for every later chunk
    store_staged_chunk<Buffers>(map_c, c_smem, col_chunk, row_base, barrier, buffer, [&](std::uint32_t buf) {
      const std::uint32_t at = buf + lane_offset;
      if constexpr (sizeof(T) == 2) {
        write_chunk_16<groups_per_chunk>(at, j, [&](int i) { return from_compute_pair<T>(d[i], d[i + 1]); });
      } else {
#pragma unroll
        for (int g = 0; g < groups_per_chunk; ++g) {
          const int c = j * groups_per_chunk + g;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            store_shared_v2((at ^ (g * staged_group_xor)) + h * staged_half_rows_bytes,
                            make_float2(d[4 * c + 2 * h], d[4 * c + 2 * h + 1]));
          }
        }
      }
    });
  }
}

/// The 16-bit staged epilogue overlapped with the next tile's products: at the
/// end of a tile's main loop the warpgroup finishes its values
/// (finish_staged_values) and packs them to T in pairs (half the registers of
/// the fp32 accumulators, which the next tile then zeroes and reuses), and
/// stores one chunk (store_staged_chunk) after each of the next tile's k-steps
/// is issued, while those products run; what a short tile leaves is stored
/// before the next pack, and the last tile's after the loop. So the tensor
/// cores do not idle for this warpgroup through a tile's stores
/// (benchmarks/tuning/matmul.md#staged_tile_16).
template <class T, int Accumulators>
struct staged_tile_16 {
  static constexpr int chunk_cols = swizzle_row_bytes / 2;  // 64 elements
  static constexpr int groups_per_chunk = chunk_cols / 8;
  static constexpr int chunks = 2 * Accumulators / chunk_cols;
  std::uint32_t packed[Accumulators / 2];  ///< pair i / 2: accumulators i, i + 1
  int row_base = 0, col_base = 0;
  int next = chunks;  ///< the next chunk to store; `chunks`: none pending

  /// Takes a finished tile (alpha, the functor) from `d`; nothing to store
  /// where the warpgroup's rows lie below C.
  template <class Epilogue>
  __device__ __forceinline__ void take(float (&d)[Accumulators], const params<T>& ep, int row0, int col0,
                                       const Epilogue& fn) {
    row_base = row0;
    col_base = col0;
    next = row0 < ep.m ? 0 : chunks;  // uniform across the warpgroup
    if (next == chunks) return;
    finish_staged_values(d, ep, row0, col0, fn);
#pragma unroll
    for (int i = 0; i < Accumulators; i += 2) packed[i / 2] = from_compute_pair<T>(d[i], d[i + 1]);
  }

  /// Stores the next pending chunk, if any (chunks past C's last column end the tile).
  __device__ __forceinline__ void store_next(const params<T>& ep, const CUtensorMap* map_c, std::uint32_t c_smem,
                                             int barrier, int& buffer) {
    if (next >= chunks) return;
    const int j = next++;
    const int col_chunk = col_base + j * chunk_cols;
    if (col_chunk >= ep.n) {  // uniform: this chunk and every later one lie right of C
      next = chunks;
      return;
    }
    const int tid = static_cast<int>(threadIdx.x % warpgroup_threads);
    const std::uint32_t lane_offset = staged_lane_offset(tid / 32, tid % 32, 2);
    // j is not a compile-time index here: the chunk's pairs are selected by a
    // test against each chunk of an unrolled loop (constant register indices).
    store_staged_chunk(map_c, c_smem, col_chunk, row_base, barrier, buffer, [&](std::uint32_t buf) {
#pragma unroll
      for (int jj = 0; jj < chunks; ++jj) {
        if (jj == j) write_chunk_16<groups_per_chunk>(buf + lane_offset, jj, [&](int i) { return packed[i / 2]; });
      }
    });
  }

  /// Stores every pending chunk.
  __device__ __forceinline__ void flush(const params<T>& ep, const CUtensorMap* map_c, std::uint32_t c_smem,
                                        int barrier, int& buffer) {
#pragma unroll 1
    while (next < chunks) store_next(ep, map_c, c_smem, barrier, buffer);
  }
};

/// Split-k: where k-slice `slice`'s raw fp32 sums go (unscaled, identity
/// functor): a dense block of ep.m x ep.n floats in the workspace, rows `ldc`
/// apart (256-byte aligned, so even rows allow pair stores).
template <class T>
__device__ __forceinline__ params<float> partial_slice(const params<T>& ep, int slice, long long ldc) {
  params<float> p;
  p.C = ep.partial + static_cast<long long>(slice) * ep.m * ep.n;
  p.ldc = ldc;
  p.m = ep.m;
  p.n = ep.n;
  p.alpha = 1.0f;
  p.beta = 0.0f;
  p.pairs = ldc % 2 == 0;
  return p;
}

#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::wgmma
