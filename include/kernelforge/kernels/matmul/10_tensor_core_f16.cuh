// SPDX-License-Identifier: Apache-2.0
// Step 10 -- tensor_core_f16: __half and __nv_bfloat16 products on the tensor
// cores with mma.sync.m16n8k16 (fp32 accumulation), for sm_80 and newer.
//
// What changes from tensor_core_tf32 (step 9), and why it is faster:
//  * 16-bit operands: one m16n8k16 does twice the k of m16n8k8 TF32 per
//    instruction, at twice the tensor-core rate, and a stage of 128 x 32
//    elements is half the bytes. No conversion: the products of two fp16 (11-bit
//    significands) or two bf16 (8-bit) values are exact in fp32, so the only
//    rounding is the fp32 accumulation and the one rounding of the result to T.
//  * ldmatrix instead of scalar fragment loads: one ldmatrix.x4 fills the four
//    registers of an A fragment (16 x 16) or two B fragments (16 x 8 each); the
//    operand stored m- or n-contiguous (A transposed, B not transposed) uses
//    ldmatrix.trans, so all four transpose combinations read shared memory at the
//    same rate and no operand is repacked.
//  * Swizzled shared memory instead of padding: a tile is stored as it lies in
//    global memory, in 16-byte chunks whose column index is XORed with bits of
//    the row (see operand_tile), so the 8 row addresses of every ldmatrix phase
//    hit 8 distinct 16-byte bank groups and cp.async writes whole chunks.
//  * 4-stage cp.async pipeline (16 KiB a stage, 64 KiB a block: two blocks per
//    SM on sm_80 / sm_90, one on the 99 KiB parts).
//  * Block tile 128 x 128 x 32, 8 warps in a 2 x 4 grid, each a 64 x 32 tile =
//    4 x 4 mma tiles (64 fp32 accumulators a thread); grouped rasterization.
//  * Edges: cp.async's zero-fill (source size below 16 bytes) pads tiles that
//    overhang m, n or k; the epilogue guards every store. Operands whose rows
//    are not 16-byte aligned (pointer or leading dimension) take the Vec16 =
//    false instantiation: 16-bit loads into registers, stored as whole chunks.
//  * Epilogue: alpha * acc + beta * C in fp32, rounded once to T; C is not read
//    when beta == 0; pairs of adjacent columns stored as one 32-bit word when C
//    allows.
// Device code for sm_80 and newer; below that the kernel body is a trap (the
// launcher never selects it there: naive is the fallback). On Hopper the wgmma
// steps (11-14) are the fast path.
// Its measured speed: the docs site's learning path (docs/build_site.py) and benchmarks/tuning/matmul.md
// (bench_matmul).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "../arch/cp_async.cuh"
#include "../arch/mma_sm80.cuh"
#include "../arch/smem.cuh"
#include "../common/kernel.cuh"
#include "../common/numeric.cuh"
#include "../common/raster.hpp"
#include "gemm_args.cuh"

namespace kf::detail {
namespace f16_mma {

// ---- tile shape -------------------------------------------------------------
inline constexpr int block_m = 128;
inline constexpr int block_n = 128;
inline constexpr int block_k = 32;
inline constexpr int mma_m = 16, mma_n = 8, mma_k = 16;  ///< mma.sync.m16n8k16
inline constexpr int warps_m = 2, warps_n = 4;
inline constexpr int threads = warps_m * warps_n * 32;
inline constexpr int warp_tile_m = block_m / warps_m;  // 64
inline constexpr int warp_tile_n = block_n / warps_n;  // 32
inline constexpr int frags_m = warp_tile_m / mma_m;    // 4
inline constexpr int frags_n = warp_tile_n / mma_n;    // 4
/// Two blocks per SM on sm_80 / sm_90: at most 128 registers a thread.
inline constexpr int min_blocks_per_sm = 2;
inline constexpr int stages = 4;
/// Tile rows a group of consecutive blocks covers before moving along n (L2 reuse).
inline constexpr int raster_group_m = 8;
inline constexpr int element_bytes = 2;
inline constexpr int chunk_bytes = 16;                              ///< one cp.async / one ldmatrix row
inline constexpr int chunk_elements = chunk_bytes / element_bytes;  // 8

/// One operand's block_k-deep tile in shared memory, stored as it lies in
/// global memory: KContiguous: Extent rows of block_k elements (4 chunks of 16
/// bytes); else block_k rows of Extent elements (Extent / 8 chunks). Element
/// (x, p): row or column x of the tile (m or n), k index p.
/// Swizzle: the chunk holding columns [8c, 8c + 8) of stored row r lies at
/// chunk position c ^ f(r) of that row. An ldmatrix phase reads 8 consecutive
/// stored rows (starting at a multiple of 8) at one logical chunk c:
///  * k-contiguous, 64-byte rows (two per 128-byte bank line): f(r) = (r / 2) % 4
///    puts the 8 rows on 4 chunk positions x 2 line halves = 8 distinct groups;
///  * mn-contiguous, 256-byte rows: f(r) = r % 8 puts them on 8 chunk positions.
template <bool KContiguous, int Extent>
struct operand_tile {
  static constexpr bool k_contiguous = KContiguous;
  static constexpr int outer = KContiguous ? Extent : block_k;  ///< stored rows
  static constexpr int inner = KContiguous ? block_k : Extent;  ///< elements per stored row
  static constexpr int chunks_per_row = inner / chunk_elements;
  static constexpr int bytes = outer * inner * element_bytes;
  static_assert(chunks_per_row == 4 || chunks_per_row % 8 == 0, "swizzle patterns for 64-byte or 128n-byte rows");
  /// Byte offset of chunk c of stored row r.
  __host__ __device__ static constexpr int chunk_offset(int r, int c) {
    const int f = chunks_per_row == 4 ? (r >> 1) & 3 : r & 7;
    return (r * chunks_per_row + (c ^ f)) * chunk_bytes;
  }
  /// Byte offset of the 16-byte run that starts at element (x, p); p (k-contiguous)
  /// or x (mn-contiguous) a multiple of 8.
  __host__ __device__ static constexpr int run_offset(int x, int p) {
    return KContiguous ? chunk_offset(x, p / chunk_elements) : chunk_offset(p, x / chunk_elements);
  }
};

template <bool TransA>
using a_tile = operand_tile<!TransA, block_m>;  // op(A)(i, p) = A[i*lda + p]: k-contiguous unless transposed
template <bool TransB>
using b_tile = operand_tile<TransB, block_n>;  // op(B)(p, j) = B[j*ldb + p] when transposed: k-contiguous

inline constexpr int stage_bytes = a_tile<false>::bytes + b_tile<false>::bytes;  // same for every layout
inline constexpr int smem_bytes = stages * stage_bytes;                          // 64 KiB
static_assert(a_tile<true>::bytes + b_tile<true>::bytes == stage_bytes, "every layout has the same stage size");

/// Kernel arguments (gemm_args plus the launch decisions), by value.
template <class T>
struct params {
  long long m = 0, n = 0, k = 0;
  float alpha = 0, beta = 0;
  const T* A = nullptr;
  long long lda = 0;
  const T* B = nullptr;
  long long ldb = 0;
  T* C = nullptr;
  long long ldc = 0;
  long long tiles_m = 0, tiles_n = 0;
  bool c_pairs = false;  ///< C rows allow 4-byte stores of two elements (C 4-byte aligned, ldc even)
};

// ---- global -> shared --------------------------------------------------------
/// Enqueues the copy of one operand tile: tile element (x, p) is global element
/// (x0 + x, k0 + p) of the operand, at g[(x0+x)*ld + k0+p] when the tile is
/// k-contiguous and at g[(k0+p)*ld + x0+x] otherwise. Elements with
/// x >= x_extent or p >= k are zero-filled and not read.
/// Vec16: 16-byte cp.async (rows 16-byte aligned) for whole chunks; else, and
/// for a partial chunk at a row's end, 16-bit loads into registers and one
/// 16-byte shared store per chunk (complete on return: the block's next
/// __syncthreads publishes it like a landed cp.async group).
template <class Tile, bool Vec16, class T>
__device__ __forceinline__ void load_tile(unsigned char* s, const T* g, long long ld, long long x0, long long k0,
                                          long long x_extent, long long k, int tid) {
  const long long outer0 = Tile::k_contiguous ? x0 : k0;
  const long long inner0 = Tile::k_contiguous ? k0 : x0;
  const long long outer_extent = Tile::k_contiguous ? x_extent : k;
  const long long inner_extent = Tile::k_contiguous ? k : x_extent;

  constexpr int rows_per_pass = threads / Tile::chunks_per_row;
  static_assert(threads % Tile::chunks_per_row == 0 && Tile::outer % rows_per_pass == 0,
                "every thread copies the same number of chunks");
  const int chunk = tid % Tile::chunks_per_row;
  const int first_row = tid / Tile::chunks_per_row;
  const long long columns_left = inner_extent - (inner0 + chunk * chunk_elements);
  const int valid =
      columns_left <= 0 ? 0 : static_cast<int>(columns_left < chunk_elements ? columns_left : chunk_elements);
  const auto* const raw = reinterpret_cast<const unsigned short*>(g);
  long long offset = (outer0 + first_row) * ld + inner0 + chunk * chunk_elements;
#pragma unroll
  for (int pass = 0; pass < Tile::outer / rows_per_pass; ++pass) {
    const int row = first_row + pass * rows_per_pass;
    const int n = outer0 + row < outer_extent ? valid : 0;  // elements to read
    unsigned char* const dst = s + Tile::chunk_offset(row, chunk);
    // A whole chunk or nothing: cp.async (zero-filling when nothing is read). A
    // partial chunk (the ragged end of a row) takes the register path, so every
    // cp.async source size is 0 or 16 bytes.
    if (Vec16 && (n == chunk_elements || n == 0)) {
      cp_async_16(dst, n != 0 ? static_cast<const void*>(raw + offset) : static_cast<const void*>(raw),
                  n * element_bytes);
    } else {
      unsigned short e[chunk_elements];
#pragma unroll
      for (int q = 0; q < chunk_elements; ++q) e[q] = q < n ? raw[offset + q] : static_cast<unsigned short>(0);
      uint4 v;
      v.x = e[0] | (static_cast<unsigned>(e[1]) << 16);
      v.y = e[2] | (static_cast<unsigned>(e[3]) << 16);
      v.z = e[4] | (static_cast<unsigned>(e[5]) << 16);
      v.w = e[6] | (static_cast<unsigned>(e[7]) << 16);
      *reinterpret_cast<uint4*>(dst) = v;
    }
    offset += rows_per_pass * ld;
  }
}

/// Two adjacent elements of C as one 32-bit word.
template <class T>
using pair_t = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;

}  // namespace f16_mma

/// C = alpha * op(A) * op(B) + beta * C on the tensor cores (mma.sync f16 /
/// bf16, fp32 accumulation). One block computes a 128 x 128 tile of C.
template <class T, bool TransA, bool TransB, bool Vec16>
KF_KERNEL void __launch_bounds__(f16_mma::threads, f16_mma::min_blocks_per_sm)
    tensor_core_f16_kernel(const f16_mma::params<T> p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // mma.sync f16 / bf16 with fp32 accumulation needs sm_80; the launcher never selects it below
#else
  using namespace f16_mma;
  using tile_a = a_tile<TransA>;
  using tile_b = b_tile<TransB>;

  extern __shared__ uint4 f16_mma_smem[];  // uint4: 16-byte aligned for cp.async and ldmatrix
  unsigned char* const smem_a = reinterpret_cast<unsigned char*>(f16_mma_smem);
  unsigned char* const smem_b = smem_a + stages * tile_a::bytes;
  const std::uint32_t smem_a_addr = smem_address(smem_a);
  const std::uint32_t smem_b_addr = smem_address(smem_b);

  const tile_coord tile = grouped_tile(blockIdx.x, p.tiles_m, p.tiles_n, raster_group_m);
  const long long m0 = tile.m * block_m;
  const long long n0 = tile.n * block_n;

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int wm = (warp % warps_m) * warp_tile_m;
  const int wn = (warp / warps_m) * warp_tile_n;

  const long long k_tiles = (p.k + block_k - 1) / block_k;
  auto load_stage = [&](int stage, long long kt) {
    const long long k0 = kt * block_k;
    load_tile<tile_a, Vec16>(smem_a + stage * tile_a::bytes, p.A, p.lda, m0, k0, p.m, p.k, tid);
    load_tile<tile_b, Vec16>(smem_b + stage * tile_b::bytes, p.B, p.ldb, n0, k0, p.n, p.k, tid);
  };

  // The element each lane addresses for ldmatrix.x4 (matrix j = lane / 8 gets
  // the row addresses of lanes 8j..8j+7), relative to a fragment's corner:
  //  A k-contiguous (x4):    matrices (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15)
  //  A m-contiguous (x4.trans): the same four, read from k-rows
  //  B k-contiguous (x4):    (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15)
  //  B n-contiguous (x4.trans): the same four, read from k-rows
  // so registers 0-3 are a[0..3] of one A fragment, or b[0..1] of two B fragments.
  const int j8 = lane / 8, r8 = lane % 8;
  const int a_x = TransA ? 8 * (j8 % 2) : lane % 16;
  const int a_p = TransA ? 8 * (j8 / 2) + r8 : 8 * (j8 / 2);
  const int b_x = TransB ? 8 * (j8 / 2) + r8 : 8 * (j8 / 2);
  const int b_p = TransB ? 8 * (j8 % 2) : 8 * (j8 % 2) + r8;

  float acc[frags_m][frags_n][4];
#pragma unroll
  for (int i = 0; i < frags_m; ++i)
#pragma unroll
    for (int j = 0; j < frags_n; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

        // Prologue: stages - 1 tiles in flight (one commit group per tile, empty or not).
#pragma unroll
  for (int s = 0; s < stages - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }

  int stage = 0;
  for (long long kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<stages - 2>();  // tile kt has landed (this thread's copies)
    __syncthreads();              // ... everyone's, and the stage of tile kt-1 is free to refill
    {
      const long long next = kt + stages - 1;
      int next_stage = stage + stages - 1;
      if (next_stage >= stages) next_stage -= stages;
      if (next < k_tiles) load_stage(next_stage, next);
      cp_async_commit();
    }

    const std::uint32_t sa = smem_a_addr + stage * tile_a::bytes;
    const std::uint32_t sb = smem_b_addr + stage * tile_b::bytes;
#pragma unroll
    for (int kk = 0; kk < block_k; kk += mma_k) {
      std::uint32_t a[frags_m][4];
      std::uint32_t b[frags_n][2];
#pragma unroll
      for (int i = 0; i < frags_m; ++i) {
        const std::uint32_t address = sa + tile_a::run_offset(wm + i * mma_m + a_x, kk + a_p);
        if constexpr (TransA) {
          ldmatrix_x4_trans(a[i], address);
        } else {
          ldmatrix_x4(a[i], address);
        }
      }
#pragma unroll
      for (int j = 0; j < frags_n; j += 2) {
        ldmatrix_x4_b_pair<!TransB>(b[j], b[j + 1], sb + tile_b::run_offset(wn + j * mma_n + b_x, kk + b_p));
      }
#pragma unroll
      for (int i = 0; i < frags_m; ++i)
#pragma unroll
        for (int j = 0; j < frags_n; ++j) mma_m16n8k16<T>(acc[i][j], a[i], b[j]);
    }
    if (++stage == stages) stage = 0;
  }
  cp_async_wait<0>();  // drain (only empty groups can be pending here)

  // Epilogue. Accumulator r of an m16n8 tile: row g + 8*(r/2), column 2*t + r%2.
  const int g = lane / 4, t = lane % 4;
  const bool read_c = p.beta != 0.0f;  // beta == 0: C is not read (NaN in C must not leak)
#pragma unroll
  for (int i = 0; i < frags_m; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long row = m0 + wm + i * mma_m + g + 8 * h;
      if (row >= p.m) continue;
      T* const c_row = p.C + row * p.ldc;
#pragma unroll
      for (int j = 0; j < frags_n; ++j) {
        const long long col = n0 + wn + j * mma_n + 2 * t;  // even
        float v0 = p.alpha * acc[i][j][2 * h];
        float v1 = p.alpha * acc[i][j][2 * h + 1];
        if (p.c_pairs && col + 1 < p.n) {
          auto* const c2 = reinterpret_cast<pair_t<T>*>(c_row + col);
          if (read_c) {
            const pair_t<T> old = *c2;
            v0 = fmaf(p.beta, to_compute(old.x), v0);
            v1 = fmaf(p.beta, to_compute(old.y), v1);
          }
          pair_t<T> out;
          out.x = from_compute<T>(v0);
          out.y = from_compute<T>(v1);
          *c2 = out;
        } else {
          if (col < p.n) c_row[col] = from_compute<T>(read_c ? fmaf(p.beta, to_compute(c_row[col]), v0) : v0);
          if (col + 1 < p.n) {
            c_row[col + 1] = from_compute<T>(read_c ? fmaf(p.beta, to_compute(c_row[col + 1]), v1) : v1);
          }
        }
      }
    }
  }
#endif
}

}  // namespace kf::detail
