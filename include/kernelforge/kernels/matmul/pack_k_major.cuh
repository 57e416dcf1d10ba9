// SPDX-License-Identifier: Apache-2.0
// The repacking pass of the wgmma step (14): a k-contiguous copy of an
// operand wgmma cannot read in place (TF32 B not transposed where the shape
// repacks it, A transposed, rows not 16-byte aligned), written into the
// stream-ordered workspace that wgmma/launch.cuh's TMA descriptors then read;
// the host side below launches it (launch_pack) and checks the repack alone.
// Compiled in the sm_90a objects only (wgmma_sm90a_*.cu), like the kernels it feeds.
//
// What changes from the pass before (32 x 32 tiles of single elements, 32 x 8
// threads; ncu on the H200 at TF32 4096^3: 46.6 us, 51% of DRAM bandwidth, for
// the 128 MB a copy moves in ~28 us), and why it is faster:
//  * 16-byte accesses: every thread moves whole 16-byte chunks (4 floats, 8
//    halves). The stores always are (the destination is the workspace: 16-byte
//    aligned rows, ld a multiple of 16 bytes); the loads are too where the
//    source's base and leading dimension allow (SourceAligned, chosen per
//    launch on the host), else a chunk's elements are loaded one by one (the
//    misaligned operands, which the GEMM repacks for that very reason).
//  * More bytes in flight: tiles of 64 rows x 256 bytes of k (64 floats or 128
//    halves, 16 KiB), 256 threads, each issuing its 4 independent 16-byte loads
//    before any store; a warp's accesses cover whole 128-byte lines.
//  * Conflict-free shared memory with no padding: the transposing case holds
//    the tile k-contiguous, each row's 16-byte chunks XOR-swizzled by the row's
//    chunk column in the source (pack_layout::offset). A thread scatters its
//    source chunk's elements to one word-column of 8 distinct chunks-mod-8, and
//    reads back whole destination chunks, 8 distinct bank groups a quarter-warp
//    (tests/matmul/pack_test.cu checks both on the CPU).
//  * The copy case (source already k-contiguous, misaligned rows) needs no
//    shared memory at all: loads to registers, then 16-byte stores.
//  * 1-byte elements (FP8, transposing): each thread reads 8 consecutive k
//    and transposes them in registers by byte permutes, storing 8-byte runs
//    of k into the tile (16 stores a thread instead of 128 single bytes), and
//    every chunk is built as four words (a chunk of one-byte elements built
//    element by element spilled 376-1004 bytes a thread).
//  * One tile per block, as many blocks as tiles (4096 at 4096 x 4096 floats):
//    at ~8 resident blocks an SM that is several waves on 132 SMs.
// The pad between k and the row stride is zero up to k rounded up to 16 bytes
// (all of it at the GEMM's ld_packed), so the packed copy holds no stale bytes;
// the GEMM itself never reads it (its TMA maps end at k).
// Its measured rate: bench_matmul's matmul/pack/ rows (benchmarks/tuning/matmul.md#pack_k_major).
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>

#include "../arch/guards.cuh"
#include "../common/alignment.hpp"
#include "../common/grid.hpp"
#include "../common/host_device.hpp"
#include "../common/kernel.cuh"
#include "../common/vector_access.cuh"
#include "../runtime/launcher.hpp"
#include "../runtime/validate.hpp"
#include "wgmma_sm90a.hpp"  // wgmma_available

namespace kf::detail {

namespace pack {
inline constexpr int threads = 256;
inline constexpr int warp_size = 32;
inline constexpr int warps = threads / warp_size;
/// At most 64 registers a thread (no spills at that cap for 4- and 2-byte
/// elements, ptxas -v on sm_90a): at least 4 blocks, 1024 threads and 64 KiB of
/// loads in flight, an SM. 1-byte elements: at most 80 (3 blocks, 96 KiB in
/// flight): at 64, their 8 chunks a thread spilled 40-240 bytes.
inline constexpr int min_blocks_per_sm = 4;
inline constexpr int min_blocks_per_sm_1byte = 3;
inline constexpr int chunk_bytes = static_cast<int>(vector_bytes);  ///< one 16-byte access
/// A warp instruction covers 4 rows x 8 chunks: one 128-byte line of each row,
/// and in shared memory the 8 chunks of one quarter-warp's 128-bit access.
inline constexpr int chunks_per_line = 8;
inline constexpr int rows_per_instruction = warp_size / chunks_per_line;  // 4
/// The XOR swizzle's period in chunks: 8 x 16 bytes = the 32 banks.
inline constexpr int swizzle_chunks = 8;
/// A tile: 64 rows of the packed operand (m of A, n of B; 128 for 1-byte
/// elements, so that a source row of the transposing case still spans whole
/// 128-byte lines) x 256 bytes of k.
inline constexpr int tile_k_bytes = 256;
inline constexpr int tile_chunks = tile_k_bytes / chunk_bytes;  // 16 a row

/// The chunk (row, column) of a threads x accesses sweep over `chunks` chunks a
/// row: access i of thread t. Warp instruction w = warp + warps * i covers
/// rows_per_instruction rows x chunks_per_line chunks, the `chunks /
/// chunks_per_line` line groups of a row in consecutive warps. A thread keeps
/// its column, and its row steps by row_step(chunks) from one access to the
/// next (the kernel advances pointers instead of recomputing 64-bit offsets).
KF_HOST_DEVICE constexpr int line_groups(int chunks) { return chunks / chunks_per_line; }
KF_HOST_DEVICE constexpr int row_step(int chunks) { return warps / line_groups(chunks) * rows_per_instruction; }
KF_HOST_DEVICE constexpr int first_row(int t, int chunks) {
  return (t / warp_size) / line_groups(chunks) * rows_per_instruction + (t % warp_size) / chunks_per_line;
}
KF_HOST_DEVICE constexpr int column(int t, int chunks) {
  return (t / warp_size) % line_groups(chunks) * chunks_per_line + t % chunks_per_line;
}
}  // namespace pack

/// The tile of one element type: sizes, sweeps and the shared-memory layout.
template <class T>
struct pack_layout {
  static constexpr int vec = pack::chunk_bytes / static_cast<int>(sizeof(T));      ///< elements a chunk: 4, 8 or 16
  static constexpr int tile_k = pack::tile_k_bytes / static_cast<int>(sizeof(T));  ///< 64, 128 or 256
  static constexpr int tile_rows = sizeof(T) == 1 ? 128 : 64;                      ///< rows of the packed operand
  static constexpr int tile_elements = tile_rows * tile_k;                         // 16 KiB (FP8: 32 KiB)
  /// Destination side (both cases): 64 rows x 16 chunks.
  static constexpr int dst_chunks = pack::tile_chunks;
  static constexpr int dst_accesses = tile_rows * dst_chunks / pack::threads;  // 4 (FP8: 8)
  /// Transposing source side: tile_k source rows (one per k) x 64 elements.
  static constexpr int src_chunks = tile_rows / vec;                        // 16, 8 or 8
  static constexpr int src_accesses = tile_k * src_chunks / pack::threads;  // 4 (FP8: 8)
  /// The transposing sweep: access i of thread t reads source row (a k)
  /// src_row(t, i), chunk src_column(t). 4- and 2-byte elements: the shared
  /// sweep (rows row_step apart). 1-byte elements: a thread's 8 rows are
  /// consecutive k, so that registers transpose them by byte permutes
  /// (transpose_bytes_4x4) into 8-byte runs of k; a warp instruction still reads
  /// 4 rows' whole 128-byte lines (lanes 8 apart are 8 rows apart).
  KF_HOST_DEVICE static constexpr int src_row(int t, int i) {
    if constexpr (sizeof(T) == 1) {
      return t / pack::chunks_per_line * src_accesses + i;
    } else {
      return pack::first_row(t, src_chunks) + i * pack::row_step(src_chunks);
    }
  }
  KF_HOST_DEVICE static constexpr int src_column(int t) { return pack::column(t, src_chunks); }
  static_assert(dst_chunks % pack::chunks_per_line == 0 && src_chunks % pack::chunks_per_line == 0,
                "a warp instruction covers whole 128-byte lines");
  static_assert(pack::warps % pack::line_groups(dst_chunks) == 0 && pack::warps % pack::line_groups(src_chunks) == 0,
                "the warps split evenly between a row's line groups");
  static_assert(dst_accesses * pack::threads == tile_rows * dst_chunks &&
                    src_accesses * pack::threads == tile_k * src_chunks,
                "every thread makes the same number of accesses");
  static_assert(tile_rows % vec == 0, "source chunks tile the rows");

  /// Element (x, p) of the tile (x: packed row, p: k), k-contiguous, its 16-byte
  /// chunks XOR-swizzled by x / vec (the source chunk x lies in): the vec
  /// elements of a source chunk (x..x+vec-1 at one p) land in one word column of
  /// distinct bank groups, and a destination chunk (vec values of p at one x)
  /// stays whole.
  /// offset(x + e, p) = offset(x, p) + e * tile_k for x a multiple of vec and e < vec.
  KF_HOST_DEVICE static constexpr int offset(int x, int p) {
    const int chunk = (p / vec) ^ ((x / vec) % pack::swizzle_chunks);
    return x * tile_k + chunk * vec + p % vec;
  }
};

/// __byte_perm on the host too (the CPU tests check transpose_bytes_4x4): byte
/// n of the result is byte (s >> 4 n) & 7 of the 8 bytes y:x (x the low four).
KF_HOST_DEVICE inline unsigned byte_perm(unsigned x, unsigned y, unsigned s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const unsigned long long xy = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int n = 0; n < 4; ++n) r |= static_cast<unsigned>((xy >> (8 * ((s >> (4 * n)) & 7))) & 0xFF) << (8 * n);
  return r;
#endif
}

/// Rows w[0..3] of a 4 x 4 byte matrix (byte b of w[i] is element (i, b)) ->
/// its columns: byte i of out[b] is element (i, b). Eight PRMTs.
KF_HOST_DEVICE inline void transpose_bytes_4x4(const unsigned (&w)[4], unsigned (&out)[4]) {
  const unsigned lo01 = byte_perm(w[0], w[1], 0x5140), lo23 = byte_perm(w[2], w[3], 0x5140);  // bytes 0, 1
  const unsigned hi01 = byte_perm(w[0], w[1], 0x7362), hi23 = byte_perm(w[2], w[3], 0x7362);  // bytes 2, 3
  out[0] = byte_perm(lo01, lo23, 0x5410);
  out[1] = byte_perm(lo01, lo23, 0x7632);
  out[2] = byte_perm(hi01, hi23, 0x5410);
  out[3] = byte_perm(hi01, hi23, 0x7632);
}

/// A 16-byte chunk of a line as four words: one 16-byte load where Aligned and
/// the chunk lies within `extent` (j: the chunk's first element), else element
/// by element, zero past the extent. Built as words, not as an array of T: an
/// array of 16 one-byte elements filled one by one went to local memory (ptxas:
/// 376-1004 bytes of spill in the FP8 instances).
template <bool Aligned, class T>
__device__ __forceinline__ uint4 load_chunk_words(const T* line, long long j, long long extent) {
  constexpr int vec = static_cast<int>(vector_bytes / sizeof(T));
  if (Aligned && j + vec <= extent) return *reinterpret_cast<const uint4*>(line);
  using bits_t =
      std::conditional_t<sizeof(T) == 1, unsigned char, std::conditional_t<sizeof(T) == 2, unsigned short, unsigned>>;
  unsigned w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int e = 0; e < vec; ++e) {
    if (j + e < extent) {
      // A typed load, then the bits: a memcpy straight from `line` went out as byte loads and PRMTs
      // for 4- and 2-byte elements (4x the LDGs of the element loads it replaced, sm_90a).
      const T element = line[e];
      bits_t b;
      std::memcpy(&b, &element, sizeof b);
      w[e * sizeof(T) / 4] |= static_cast<unsigned>(b) << (8 * (e * sizeof(T) % 4));
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/// dst (rows x k, k-contiguous, row stride ld_dst, 16-byte aligned rows) = the
/// operand whose element (x, p) lies at src[x * ld_src + p] (SourceKContiguous)
/// or src[p * ld_src + x]; columns k up to k rounded up to 16 bytes are zero.
/// SourceAligned: src's base and row stride are 16-byte aligned (16-byte
/// loads), else elements are loaded singly. Grid: (row tiles, k tiles, capped
/// at 65535 and strided). T: float (TF32 step), the 16-bit types (step 14) or
/// the FP8 types (the scaled GEMM, scaled/03_wgmma.cuh).
template <bool SourceKContiguous, bool SourceAligned, class T>
KF_KERNEL void __launch_bounds__(pack::threads,
                                 sizeof(T) == 1 ? pack::min_blocks_per_sm_1byte : pack::min_blocks_per_sm)
    pack_k_major_kernel(const T* __restrict__ src, long long ld_src, T* __restrict__ dst, long long ld_dst,
                        long long rows, long long k) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();
#elif KF_ARCH_SM90A
  using L = pack_layout<T>;
  using chunk_t = vector16<T>;
  constexpr int vec = L::vec;
  const int t = threadIdx.x;
  // A chunk of `extent` elements starting at line[j] (j a multiple of vec), zero past the extent.
  const auto load_chunk = [](const T* line, long long j, long long extent) {
    const uint4 u = load_chunk_words<SourceAligned>(line, j, extent);
    chunk_t c;
    std::memcpy(&c, &u, sizeof c);
    return c;
  };
  const long long k_out = (k + vec - 1) / vec * vec;  // written: k, then zeros to a whole chunk
  const long long x0 = static_cast<long long>(blockIdx.x) * L::tile_rows;
  const long long k_tiles = (k_out + L::tile_k - 1) / L::tile_k;
  // The destination side, the same in both cases: rows x, chunks of p.
  constexpr int dst_step = pack::row_step(L::dst_chunks);
  const int dst_row = pack::first_row(t, L::dst_chunks), dst_col = pack::column(t, L::dst_chunks) * vec;
  const long long dst_x = x0 + dst_row;
  for (long long kt = blockIdx.y; kt < k_tiles; kt += gridDim.y) {
    const long long p0 = kt * L::tile_k;
    const long long dst_p = p0 + dst_col;
    T* const dst_at = dst + dst_x * ld_dst + dst_p;
    chunk_t v[SourceKContiguous ? L::dst_accesses : L::src_accesses];
    if constexpr (SourceKContiguous) {
      // Every load first, then the stores: 4 chunks a thread in flight.
      const T* const src_at = src + dst_x * ld_src + dst_p;
#pragma unroll
      for (int i = 0; i < L::dst_accesses; ++i) {
        // Rows past the operand load nothing (extent 0: zeros, never stored).
        v[i] = load_chunk(src_at + i * dst_step * ld_src, dst_p, dst_x + i * dst_step < rows ? k : 0);
      }
#pragma unroll
      for (int i = 0; i < L::dst_accesses; ++i) {
        if (dst_x + i * dst_step < rows && dst_p < k_out) store16_global(dst_at + i * dst_step * ld_dst, v[i]);
      }
    } else {
      __shared__ alignas(pack::chunk_bytes) T tile[L::tile_elements];
      // Source rows are k: a thread's chunk holds x = src_col .. src_col + vec - 1 at p = src_row (+ steps).
      const int src_row = L::src_row(t, 0), src_col = L::src_column(t) * vec;
      const long long src_p = p0 + src_row, src_x = x0 + src_col;
      const T* const src_at = src + src_p * ld_src + src_x;
      if constexpr (sizeof(T) == 1) {
        // 1-byte elements: the thread's 8 rows are k = src_p .. src_p + 7. Word j of each chunk (x = src_col +
        // 4 j .. + 3) of rows 0-3 and of rows 4-7 transposed by byte permutes gives, per x, those 8 k as two
        // words: one 8-byte store each, 16 a thread, instead of 128 single-byte stores (2 wavefronts a warp
        // instruction, the fewest 256 bytes take: checked by test_matmul_pack_layout).
        unsigned w[L::src_accesses][4];
#pragma unroll
        for (int i = 0; i < L::src_accesses; ++i) {
          const uint4 u = src_p + i < k ? load_chunk_words<SourceAligned>(src_at + i * ld_src, src_x, rows)
                                        : make_uint4(0u, 0u, 0u, 0u);  // the zero pad up to k_out
          w[i][0] = u.x, w[i][1] = u.y, w[i][2] = u.z, w[i][3] = u.w;
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const unsigned first[4] = {w[0][j], w[1][j], w[2][j], w[3][j]},
                         second[4] = {w[4][j], w[5][j], w[6][j], w[7][j]};
          unsigned lo[4], hi[4];
          transpose_bytes_4x4(first, lo);   // lo[b]: k src_row .. + 3 of x = src_col + 4 j + b
          transpose_bytes_4x4(second, hi);  // hi[b]: k src_row + 4 .. + 7
#pragma unroll
          for (int b = 0; b < 4; ++b) {
            *reinterpret_cast<uint2*>(&tile[L::offset(src_col + 4 * j + b, src_row)]) = make_uint2(lo[b], hi[b]);
          }
        }
      } else {
        constexpr int src_step = pack::row_step(L::src_chunks);
#pragma unroll
        for (int i = 0; i < L::src_accesses; ++i) {
          if (src_p + i * src_step < k) {
            v[i] = load_chunk(src_at + i * src_step * ld_src, src_x, rows);
          } else {
#pragma unroll
            for (int e = 0; e < vec; ++e) v[i].v[e] = T(0.0f);  // the zero pad up to k_out
          }
        }
#pragma unroll
        for (int i = 0; i < L::src_accesses; ++i) {
          // Element e of the chunk: x = src_col + e, one tile row further each (the swizzle is x / vec's).
          T* const column = &tile[L::offset(src_col, src_row + i * src_step)];
#pragma unroll
          for (int e = 0; e < vec; ++e) column[e * L::tile_k] = v[i].v[e];
        }
      }
      __syncthreads();
#pragma unroll
      for (int i = 0; i < L::dst_accesses; ++i) {
        if (dst_x + i * dst_step < rows && dst_p < k_out) {
          store16_global(dst_at + i * dst_step * ld_dst, load16(&tile[L::offset(dst_row + i * dst_step, dst_col)]));
        }
      }
      __syncthreads();  // the tile is rewritten by the next k-tile
    }
  }
#endif
}

#if defined(__CUDACC__)
// ---- host side: the launch, and the repack alone (wgmma_pack_k_major) --------
namespace wgmma_host {

/// dst (rows x k, k-contiguous, row stride ld_dst; columns k up to k rounded up
/// to 16 bytes zero) from src (pack_k_major_kernel): element (x, p) at
/// src[x * ld_src + p] when source_k_contiguous, else src[p * ld_src + x].
/// dst's rows must be 16-byte aligned (the workspace: 256-byte aligned base,
/// ld_packed a multiple of 16 bytes); src's decide between 16-byte and
/// element-wise loads. Size 0: nothing to do.
template <class T>
void launch_pack(const T* src, std::size_t ld_src, bool source_k_contiguous, T* dst, std::size_t ld_dst,
                 std::size_t rows, std::size_t k, cudaStream_t stream, const char* what) {
  if (rows == 0 || k == 0) return;
  using layout = pack_layout<T>;
  const std::size_t k_out = round_up(k, static_cast<std::size_t>(layout::vec));
  const dim3 grid(static_cast<unsigned>(ceil_div(rows, static_cast<std::size_t>(layout::tile_rows))),
                  capped_grid_dim(ceil_div(k_out, static_cast<std::size_t>(layout::tile_k))));
  const dim3 block(pack::threads);
  const auto ll = [](std::size_t v) { return static_cast<long long>(v); };
  const auto launch = [&](auto kernel) {
    kernel<<<grid, block, 0, stream>>>(src, ll(ld_src), dst, ll(ld_dst), ll(rows), ll(k));
  };
  const bool aligned = rows_aligned(src, ld_src, sizeof(T), vector_bytes);
  if (source_k_contiguous) {
    aligned ? launch(pack_k_major_kernel<true, true, T>) : launch(pack_k_major_kernel<true, false, T>);
  } else {
    aligned ? launch(pack_k_major_kernel<false, true, T>) : launch(pack_k_major_kernel<false, false, T>);
  }
  check_launch(what);
}

/// The repack alone, validated first (wgmma_pack_k_major: tests and benchmarks);
/// false where the sm_90a kernels do not run.
template <class T>
bool pack_k_major(const T* src, std::size_t ld_src, bool source_k_contiguous, T* dst, std::size_t ld_dst,
                  std::size_t rows, std::size_t k, cudaStream_t stream, const char* what) {
  const std::size_t src_rows = source_k_contiguous ? rows : k, src_cols = source_k_contiguous ? k : rows;
  require_pointer(what, "src", src, src_rows * src_cols);
  require_pointer(what, "dst", dst, rows * k);
  require_aligned(what, "src", src, alignof(T));
  if (ld_src < src_cols) {
    throw_invalid_argument(what, "ld_src = " + std::to_string(ld_src) + " is less than a source row's " +
                                     std::to_string(src_cols) + " elements (" + (source_k_contiguous ? "k" : "rows") +
                                     "): pass ld_src >= " + std::to_string(src_cols));
  }
  const std::size_t vec = static_cast<std::size_t>(pack_layout<T>::vec);
  if (!rows_aligned(dst, ld_dst, sizeof(T), vector_bytes) || ld_dst < k) {
    throw_invalid_argument(what, "dst must be 16-byte aligned with ld_dst a multiple of " + std::to_string(vec) +
                                     " elements and at least k = " + std::to_string(k) + " (got ld_dst = " +
                                     std::to_string(ld_dst) + "): pass the layout the GEMM's workspace has");
  }
  if (rows == 0 || k == 0) return true;
  const std::size_t src_bytes = ((src_rows - 1) * ld_src + src_cols) * sizeof(T);
  const std::size_t dst_bytes = ((rows - 1) * ld_dst + round_up(k, vec)) * sizeof(T);
  if (ranges_overlap(src, src_bytes, dst, dst_bytes)) {
    throw_invalid_argument(what, "src and dst overlap: the repack writes a separate copy (pass a disjoint dst)");
  }
  const int device = current_device(what);
  if (!wgmma_available(device)) return false;
  require_kernel_image_cached(device, what);
  launch_pack(src, ld_src, source_k_contiguous, dst, ld_dst, rows, k, stream, what);
  return true;
}

}  // namespace wgmma_host
#endif

}  // namespace kf::detail
