// SPDX-License-Identifier: Apache-2.0
// FP8 step 2 -- mma_sync: FP8 on the tensor cores of Ada (sm_89) and newer with
// mma.sync.m16n8k32, fp32 sums promoted every 128 of k. The Hopper step
// (03_wgmma.cuh) is faster where it runs; this is the path of compute
// capability 8.9 and of the 10.x / 12.x GPUs the library's sm_90a kernels do
// not run on.
//
// What changes from step 1 (naive: one thread per element of D, every operand
// converted and multiplied on the CUDA cores), and why it is faster:
//  * The tensor cores: one mma.m16n8k32 multiplies 16 x 32 by 32 x 8 FP8 values;
//    a warp's 64 x 32 tile is 4 x 4 of them, a block's 128 x 128 tile 8 warps.
//  * Shared-memory staging as the f16 step (10_tensor_core_f16.cuh), whose
//    layout it reuses: a stage holds 64 bytes of k -- 64 FP8 values, where the
//    f16 step holds 32 halves -- for 128 rows of A and of B, in the same
//    swizzled 16-byte chunks (operand_tile), filled by cp.async, 4 stages deep;
//    the FP8 fragments hold the same bytes as the f16 ones, so the same
//    ldmatrix addresses load them. Both operands k-major (TN), with 16-byte
//    aligned rows: the FP8 mma.sync reads no other layout, and the launcher
//    gives other layouts to the naive step.
//  * The promotion: the products go into a partial accumulator that is added
//    into an fp32 total (times the blockwise scales) every two stages, 128 of k:
//    the tensor cores' FP8 sums are not fp32-exact. Both sets need 2 x 64
//    registers a thread: one block of 256 threads an SM.
//  * The epilogue is step 1's, per element (scaled/args.cuh: outer_scale,
//    store_scaled): per-tensor or rowwise scales, alpha, beta, bias, ReLU, D's
//    rounding and the amax.
// H200 (sm_90, where best runs the wgmma step instead): not measured yet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "../../arch/cp_async.cuh"
#include "../../arch/guards.cuh"
#include "../../arch/mma_sm80.cuh"
#include "../../arch/smem.cuh"
#include "../../common/kernel.cuh"
#include "../../common/raster.hpp"
#include "../../runtime/kernel_attributes.hpp"
#include "../../runtime/launcher.hpp"
#include "../10_tensor_core_f16.cuh"  // f16_mma::operand_tile: the staging layout
#include "../launch_util.hpp"
#include "args.cuh"

namespace kf::detail {
namespace fp8_mma {

inline constexpr int block_m = 128, block_n = 128;
inline constexpr int stage_k = 64;  ///< bytes (= FP8 values) of k a stage
inline constexpr int mma_k = 32;    ///< mma.sync.m16n8k32
inline constexpr int warps_m = 2, warps_n = 4;
inline constexpr int threads = warps_m * warps_n * 32;
inline constexpr int frags_m = block_m / warps_m / 16;  // 4 m16 fragments a warp
inline constexpr int frags_n = block_n / warps_n / 8;   // 4 n8 fragments a warp
inline constexpr int stages = 4;
inline constexpr int stages_per_promotion = static_cast<int>(fp8_promotion_k) / stage_k;  // 2
/// A stage of one operand: the f16 step's k-contiguous tile of 128 rows x 64 bytes.
using tile = f16_mma::operand_tile<true, block_m>;
inline constexpr int chunk_bytes = f16_mma::chunk_bytes;
static_assert(tile::bytes == block_m * stage_k && block_m == block_n, "A and B stages alike: 128 rows x 64 bytes");
inline constexpr int smem_bytes = stages * 2 * tile::bytes;  // 64 KiB
inline constexpr int raster_group_m = 8;

/// The copies of one operand's stage: rows x0 .. x0 + 127 (of `rows`), bytes
/// k0 .. k0 + 63 (of k), from g (row stride ld bytes, 16-byte aligned rows).
/// Whole 16-byte chunks by cp.async (zero-filled past the last row); a chunk
/// that k cuts is loaded byte by byte and zero-padded.
template <class T>
__device__ __forceinline__ void load_stage(unsigned char* s, const T* g, long long ld, long long x0, long long k0,
                                           long long rows, long long k, int tid) {
  const auto* const raw = reinterpret_cast<const unsigned char*>(g);
  constexpr int chunks_per_row = tile::chunks_per_row;     // 4
  constexpr int rows_per_pass = threads / chunks_per_row;  // 64
  const int chunk = tid % chunks_per_row, first_row = tid / chunks_per_row;
  const long long p0 = k0 + chunk * chunk_bytes;
  const long long left = k - p0;
  const int valid = left <= 0 ? 0 : static_cast<int>(left < chunk_bytes ? left : chunk_bytes);
#pragma unroll
  for (int pass = 0; pass < tile::outer / rows_per_pass; ++pass) {
    const int row = first_row + pass * rows_per_pass;
    const long long x = x0 + row;
    const int n = x < rows ? valid : 0;
    unsigned char* const dst = s + tile::chunk_offset(row, chunk);
    if (n == chunk_bytes || n == 0) {
      cp_async_16(dst, n != 0 ? static_cast<const void*>(raw + x * ld + p0) : static_cast<const void*>(raw), n);
    } else {
      unsigned char e[chunk_bytes];
#pragma unroll
      for (int q = 0; q < chunk_bytes; ++q) e[q] = q < n ? raw[x * ld + p0 + q] : 0;
      uint4 v;
      memcpy(&v, e, sizeof v);
      *reinterpret_cast<uint4*>(dst) = v;
    }
  }
}

}  // namespace fp8_mma

/// The scaled product of `g` (A m x k and op(B)^T n x k, both k-contiguous:
/// a_col == 1, b_row == 1; rows 16-byte aligned) with mma.sync FP8: one block a
/// 128 x 128 tile of D, `tiles_m` x `tiles_n` of them in grouped order.
template <class TA, class TB, class TD>
KF_KERNEL void __launch_bounds__(fp8_mma::threads, 1)
    scaled_mma_sync_kernel(const scaled_gemm_args<TA, TB, TD> g, long long tiles_m, long long tiles_n) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM89
  __trap();  // FP8 mma.sync needs sm_89; the launcher never selects it below
#else
  using namespace fp8_mma;
  extern __shared__ uint4 fp8_mma_smem[];
  unsigned char* const smem_a = reinterpret_cast<unsigned char*>(fp8_mma_smem);
  unsigned char* const smem_b = smem_a + stages * tile::bytes;
  const std::uint32_t smem_a_addr = smem_address(smem_a), smem_b_addr = smem_address(smem_b);

  const tile_coord t = grouped_tile(blockIdx.x, tiles_m, tiles_n, raster_group_m);
  const long long m0 = t.m * block_m, n0 = t.n * block_n;
  const long long m = static_cast<long long>(g.m), n = static_cast<long long>(g.n), k = static_cast<long long>(g.k);
  const long long lda = static_cast<long long>(g.a_row), ldb = static_cast<long long>(g.b_col);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = (warp % warps_m) * (block_m / warps_m), wn = (warp / warps_m) * (block_n / warps_n);
  const long long k_tiles = (k + stage_k - 1) / stage_k;
  const auto load = [&](int stage, long long kt) {
    load_stage(smem_a + stage * tile::bytes, g.A, lda, m0, kt * stage_k, m, k, tid);
    load_stage(smem_b + stage * tile::bytes, g.B, ldb, n0, kt * stage_k, n, k, tid);
  };
  // ldmatrix.x4 row addresses (the f16 step's k-contiguous ones, in bytes): A's
  // matrices (m 0-7 | 8-15) x (k 0-15 | 16-31), B's (n 0-7, k 0-15), (n 0-7, k 16-31), (n 8-15, ...).
  const int j8 = lane / 8, r8 = lane % 8;
  const int a_x = lane % 16, a_chunk = j8 / 2;
  const int b_x = 8 * (j8 / 2) + r8, b_chunk = j8 % 2;

  float total[frags_m][frags_n][4], part[frags_m][frags_n][4];
#pragma unroll
  for (int i = 0; i < frags_m; ++i)
#pragma unroll
    for (int j = 0; j < frags_n; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) total[i][j][r] = part[i][j][r] = 0.0f;

  // Blockwise: the scales of the thread's rows (row g + 8h of each m fragment) and of the tile's column block.
  const int gq = lane / 4;
  const bool blockwise = g.mode == fp8_scaling::blockwise;
  const auto promote = [&](long long kb) {
    float sb = 1.0f;
    if (blockwise) sb = g.scale_b[(n0 / static_cast<long long>(fp8_promotion_k)) * g.k_blocks + kb];
#pragma unroll
    for (int i = 0; i < frags_m; ++i) {
      float s[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long row = m0 + wm + i * 16 + gq + 8 * h;
        s[h] = !blockwise ? 1.0f : row < m ? g.scale_a[row * g.k_blocks + kb] * sb : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < frags_n; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          total[i][j][r] = fmaf(s[r / 2], part[i][j][r], total[i][j][r]);
          part[i][j][r] = 0.0f;
        }
    }
  };

#pragma unroll
  for (int s = 0; s < stages - 1; ++s) {  // prologue: stages - 1 tiles in flight, one commit group each
    if (s < k_tiles) load(s, s);
    cp_async_commit();
  }
  int stage = 0;
  for (long long kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<stages - 2>();  // tile kt has landed (this thread's copies)
    __syncthreads();              // ... everyone's, and the stage of tile kt - 1 is free to refill
    {
      const long long next = kt + stages - 1;
      const int next_stage = (stage + stages - 1) % stages;
      if (next < k_tiles) load(next_stage, next);
      cp_async_commit();
    }
    const std::uint32_t sa = smem_a_addr + stage * tile::bytes, sb = smem_b_addr + stage * tile::bytes;
#pragma unroll
    for (int kk = 0; kk < stage_k / mma_k; ++kk) {  // two m16n8k32 steps a stage
      const int chunk0 = kk * (mma_k / chunk_bytes);
      std::uint32_t a[frags_m][4], b[frags_n][2];
#pragma unroll
      for (int i = 0; i < frags_m; ++i) ldmatrix_x4(a[i], sa + tile::chunk_offset(wm + i * 16 + a_x, chunk0 + a_chunk));
#pragma unroll
      for (int j = 0; j < frags_n; j += 2) {
        ldmatrix_x4_b_pair(b[j], b[j + 1], sb + tile::chunk_offset(wn + j * 8 + b_x, chunk0 + b_chunk));
      }
#pragma unroll
      for (int i = 0; i < frags_m; ++i)
#pragma unroll
        for (int j = 0; j < frags_n; ++j) mma_m16n8k32_fp8<TA, TB>(part[i][j], a[i], b[j]);
    }
    if ((kt + 1) % stages_per_promotion == 0 || kt + 1 == k_tiles) promote(kt / stages_per_promotion);
    stage = (stage + 1) % stages;
  }
  cp_async_wait<0>();  // drain (only empty groups can be pending here)

  // Epilogue, step 1's per element. Accumulator r of an m16n8 tile: row g + 8 (r / 2), column 2 t + r % 2.
  unsigned amax = 0;
#pragma unroll
  for (int i = 0; i < frags_m; ++i)
#pragma unroll
    for (int j = 0; j < frags_n; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const long long row = m0 + wm + i * 16 + gq + 8 * (r / 2);
        const long long col = n0 + wn + j * 8 + 2 * (lane % 4) + r % 2;
        if (row < m && col < n) {
          const float v = total[i][j][r] * outer_scale(g, static_cast<std::size_t>(row), static_cast<std::size_t>(col));
          amax = max(amax, store_scaled(g, static_cast<std::size_t>(row), static_cast<std::size_t>(col), v));
        }
      }
  if (g.amax_bits == nullptr) return;
  for (int offset = 16; offset > 0; offset /= 2) amax = max(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, offset));
  if (lane == 0 && amax != 0) atomicMax(g.amax_bits, amax);
#endif
}

/// Whether the mma.sync step takes `g`: both operands k-contiguous with 16-byte
/// aligned rows (cp.async), k > 0, and a grid the device can launch.
template <class TA, class TB, class TD>
bool scaled_mma_sync_takes(const scaled_gemm_args<TA, TB, TD>& g) {
  return g.k > 0 && g.a_col == 1 && g.b_row == 1 && rows_aligned(g.A, g.a_row, 1, 16) &&
         rows_aligned(g.B, g.b_col, 1, 16);
}

/// Enqueues `g` with the mma.sync FP8 kernel (the caller checked the device:
/// compute capability 8.9+, and scaled_mma_sync_takes).
template <class TA, class TB, class TD>
void launch_scaled_mma_sync(const scaled_gemm_args<TA, TB, TD>& g, cudaStream_t stream) {
  const char* what = "kf::scaled_matmul (mma_sync)";
  constexpr auto kernel = &scaled_mma_sync_kernel<TA, TB, TD>;
  const int device = current_device(what);
  const long long tiles_m = static_cast<long long>(ceil_div(g.m, std::size_t(fp8_mma::block_m)));
  const long long tiles_n = static_cast<long long>(ceil_div(g.n, std::size_t(fp8_mma::block_n)));
  if (tiles_m * tiles_n > static_cast<long long>(limits_for(device).max_grid_x)) {
    throw error(errc::unsupported, std::string(what) + ": " + std::to_string(g.m) + " x " + std::to_string(g.n) +
                                       " needs more tiles of 128 x 128 than the device's grid holds");
  }
  allow_dynamic_smem<kernel>(device, fp8_mma::smem_bytes, what);
  kernel<<<static_cast<unsigned>(tiles_m * tiles_n), fp8_mma::threads, fp8_mma::smem_bytes, stream>>>(g, tiles_m,
                                                                                                      tiles_n);
  check_launch(what);
}

}  // namespace kf::detail
