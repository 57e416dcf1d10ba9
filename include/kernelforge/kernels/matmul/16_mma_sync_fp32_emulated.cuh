// SPDX-License-Identifier: Apache-2.0
// Step 16 -- fp32 accuracy on the TF32 tensor cores with mma.sync
// (math_mode::fp32_emulated on compute capability 8.0 and newer, where step
// 15's wgmma does not run): step 15's split and sums on step 9's instruction.
// Host side: mma_sync_fp32_emulated_launch.cuh; declaration:
// mma_sync_fp32_emulated.hpp.
//
// What changes from step 9 (mma.sync.m16n8k8 TF32, ~1e-3 relative error), and
// why it is as accurate as the exact fp32 steps:
//  * The operands are step 15's pre-pass output (split_tf32.cuh): each of A and
//    op(B)^T split into TF32 hi and lo parts, k-major, per 32 of k the 32 hi
//    values then the 32 lo values. So every transpose reads the same way, rows
//    are 16-byte aligned, and k is padded with zeros to whole k-blocks: one
//    instantiation per tile width, 16-byte cp.async only, no k edge.
//  * a b ~ a_hi b_hi + a_hi b_lo + a_lo b_hi, three TF32 products per pair,
//    in step 15's order and sums (fp32_emulated_sums.cuh): each k-block's
//    products start a fresh partial (mma.sync with a zero accumulator), the
//    small hi x lo and lo x hi first, then hi x hi on top, as three passes over
//    the k-block's fragments; the partial is added on the CUDA cores with
//    round-to-nearest into a window of 32 k-blocks, the window into the total.
//    Inputs with an inf or a NaN run the kernel's other instance (Apart), which
//    keeps the corrections apart and drops them where hi x hi is not finite.
//  * A stage is one k-block: 64 floats (hi, lo) of each of the block's rows of
//    A and B, stored unpadded with the 16-byte chunks of row r swizzled (chunk
//    c at c ^ (r % 8)), so the ldmatrix.x4 that fills an A fragment or two B
//    fragments (TF32 fragments are 32-bit: an 8 x 8 b16 matrix is 8 rows x 4
//    floats) reads 8 rows at 8 distinct bank groups; ldmatrix replaces step 9's
//    scalar fragment loads, which three passes would make three times as many.
//  * Registers: a thread keeps its warp tile's window and total (the fp32
//    sums) in registers, and the tensor cores' partial for half of it: the
//    64 x 32 warp tile's products run as two 32 x 32 slices, each a whole
//    k-block (its three passes) into one partial, added before the next slice
//    reuses it -- 5 x 32 accumulators, not 3 x 64. One block of 8 warps (128 x
//    128) or 4 (128 x 64) an SM, up to 255 registers a thread
//    (plan.hpp: choose_mma_fp32_emulated_block_n). The inf / NaN instance
//    has a second partial (the corrections): it runs 64-row tiles (32 x 32
//    warp tiles), launched with a grid of its own.
//  * Epilogue as step 9's (store_warp_tile): alpha, beta, the fused bias / ReLU.
//  * Cost: three times step 9's products over hi and lo stages of twice its
//    bytes, plus the pre-pass. Ceiling: a third of the TF32 mma.sync rate.
// Speed and accuracy:
// benchmarks/tuning/matmul.md#step-16-the-mmasync-path-16_mma_sync_fp32_emulatedcuh.
#pragma once

#include <cstdint>

#include "../arch/cp_async.cuh"
#include "../arch/mma_sm80.cuh"
#include "../arch/smem.cuh"
#include "../common/kernel.cuh"
#include "../common/raster.hpp"
#include "09_tensor_core_tf32.cuh"
#include "fp32_emulated_sums.cuh"
#include "plan.hpp"
#include "split_tf32.cuh"

namespace kf::detail {
namespace emulated_mma {

using tf32_mma::mma_k;
using tf32_mma::mma_m;
using tf32_mma::mma_n;

inline constexpr int warps_m = 2;  ///< warps along m; along n one per 32 columns
inline constexpr int warp_tile_n = 32;
inline constexpr int frags_n = warp_tile_n / mma_n;  // 4
/// A warp tile's k-block products run in two slices along m, one partial at a
/// time: a thread holds both slices' windows and totals and one slice's
/// partial, not three whole sets of accumulators.
inline constexpr int slices = 2;

/// A stored row of a stage: one k-block of one row of A or op(B)^T, its hi
/// part (chunks 0-7) then its lo part (chunks 8-15), as the pre-pass lays it out.
inline constexpr int row_floats = 2 * split_block_k;
inline constexpr int row_bytes = row_floats * static_cast<int>(sizeof(float));
inline constexpr int chunk_bytes = 16;  ///< one cp.async, one ldmatrix row
inline constexpr int chunk_floats = chunk_bytes / static_cast<int>(sizeof(float));
inline constexpr int chunks_per_row = row_bytes / chunk_bytes;
inline constexpr int part_chunks = chunks_per_row / 2;  ///< chunks of the hi (or lo) part
static_assert(row_bytes == static_cast<int>(mma_fp32_emulated_row_bytes), "plan.hpp sizes the stages");
/// The parts, as fp32_emulated_products names them to the mma callable.
inline constexpr int hi = 0, lo = 1;

/// Byte offset of chunk c of stored row r: at chunk position c ^ (r % 8). An
/// ldmatrix phase reads 8 consecutive rows (from a multiple of 8) at one
/// logical chunk: 8 distinct positions within a part, so 8 distinct groups of
/// 4 banks.
__host__ __device__ constexpr int chunk_offset(int r, int c) { return r * row_bytes + (c ^ (r & 7)) * chunk_bytes; }

/// The block tile: 128 x BlockN in warp tiles of 64 x 32 (2 slices of 32 x
/// 32: 5 x 32 accumulators a thread); the instance for inputs with an inf or a
/// NaN (Apart), whose slice has a second partial (the corrections), 64 x
/// BlockN in warp tiles of 32 x 32 (slices of 16 x 32), so that it too runs
/// without spills (it is enqueued with a grid of its own).
template <int BlockN, bool Apart>
struct tile_config {
  static constexpr int block_m =
      Apart ? static_cast<int>(mma_fp32_emulated_block_m) / 2 : static_cast<int>(mma_fp32_emulated_block_m);
  static constexpr int block_n = BlockN;
  static constexpr int warp_tile_m = block_m / warps_m;
  static constexpr int frags_m = warp_tile_m / mma_m;
  static constexpr int slice_frags_m = frags_m / slices;
  /// A thread's accumulators of one slice in one set (partial, correction, window or total).
  static constexpr int accumulators = slice_frags_m * frags_n * 4;
  static constexpr int warps_n = BlockN / warp_tile_n;
  static constexpr int threads = warps_m * warps_n * 32;
  static constexpr int a_bytes = block_m * row_bytes;
  static constexpr int b_bytes = BlockN * row_bytes;
  static constexpr int stage_bytes = a_bytes + b_bytes;
  static_assert(BlockN == 128 || BlockN == 64, "the widths plan.hpp chooses from");
  static_assert(stage_bytes <= static_cast<int>(mma_fp32_emulated_stage_bytes(BlockN)), "plan.hpp sizes the stages");
};

/// Enqueues the copy of k-block kb of `Rows` split rows into stage `s`: rows
/// of `operand` (row stride ld) from the thread's first one, at g, of which
/// `rows_left` exist; rows past them are zero-filled and not read (the copy
/// then names `operand`, a valid address). Each thread copies one fixed chunk
/// of every (Threads / 16)-th row.
template <int Rows, int Threads>
__device__ __forceinline__ void load_k_block(unsigned char* s, const float* g, const float* operand, long long ld,
                                             long long rows_left, int kb, int tid) {
  constexpr int rows_per_pass = Threads / chunks_per_row;
  static_assert(Threads % chunks_per_row == 0 && Rows % rows_per_pass == 0, "every thread copies as many chunks");
  const int c = tid % chunks_per_row;
  const int first_row = tid / chunks_per_row;
  const float* src = g + static_cast<long long>(kb) * row_floats + c * chunk_floats;
  // Not unrolled: one address live instead of a row's each, in a kernel whose
  // accumulators take most of the registers.
#pragma unroll 1
  for (int pass = 0; pass < Rows / rows_per_pass; ++pass) {
    const int bytes = pass * rows_per_pass < rows_left ? chunk_bytes : 0;
    cp_async_16(s + chunk_offset(first_row + pass * rows_per_pass, c), bytes != 0 ? src : operand, bytes);
    src += rows_per_pass * ld;  // past the operand only where nothing more is read
  }
}

/// mma.sync into accumulator tile t (4 floats) of a flat set.
template <int N>
__device__ __forceinline__ void mma_into(float (&d)[N], int t, const std::uint32_t (&a)[4], const std::uint32_t (&b)[2],
                                         bool fresh) {
  float(&acc)[4] = *reinterpret_cast<float(*)[4]>(&d[4 * t]);
  if (fresh) {
    mma_m16n8k8_tf32_fresh(acc, a, b);
  } else {
    mma_m16n8k8_tf32(acc, a, b);
  }
}

}  // namespace emulated_mma

/// C = ep(alpha * A B + beta * C) in fp32 accuracy from the split operands
/// (p.A: A's split, m x p.k; p.B: op(B)^T's, n x p.k; p.k = p.lda = p.ldb =
/// split_tf32_ld(k)), tiles of 128 x BlockN (Apart: 64 x BlockN), p.stages
/// k-blocks in flight.
/// Apart: the instance for inputs with an inf or a NaN (*nonfinite != 0, set
/// by the pre-pass); the launcher enqueues both, and the other one returns at once.
template <int BlockN, bool Apart, class Epilogue>
KF_KERNEL void __launch_bounds__(emulated_mma::tile_config<BlockN, Apart>::threads, 1)
    mma_sync_fp32_emulated_kernel(const tf32_mma::params p, const Epilogue ep, const unsigned* nonfinite) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // mma.sync TF32 needs sm_80; the launcher never selects this kernel below that
#else
  using namespace emulated_mma;
  using tile = tile_config<BlockN, Apart>;
  constexpr int block_m = tile::block_m, slice_frags_m = tile::slice_frags_m, slice_acc = tile::accumulators;
  if ((*nonfinite != 0) != Apart) return;  // the other instance runs these inputs

  extern __shared__ uint4 emulated_mma_smem[];  // uint4: 16-byte aligned for cp.async and ldmatrix
  unsigned char* const smem_a = reinterpret_cast<unsigned char*>(emulated_mma_smem);
  unsigned char* const smem_b = smem_a + p.stages * tile::a_bytes;
  const std::uint32_t smem_a_addr = smem_address(smem_a), smem_b_addr = smem_address(smem_b);

  const tile_coord tc = grouped_tile(blockIdx.x, p.tiles_m, p.tiles_n, tf32_mma::raster_group_m);
  const long long m0 = tc.m * block_m;
  const long long n0 = tc.n * BlockN;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int wm = (warp % warps_m) * tile::warp_tile_m;
  const int wn = (warp / warps_m) * warp_tile_n;

  const int k_blocks = static_cast<int>(p.k / row_floats);  // the launcher checks that it fits
  // The rows this thread copies start at row m0 (n0) + its first row.
  const long long first_row = tid / chunks_per_row;
  const float* const a_rows = p.A + (m0 + first_row) * p.lda;
  const float* const b_rows = p.B + (n0 + first_row) * p.ldb;
  const long long a_left = p.m - m0 - first_row, b_left = p.n - n0 - first_row;
  const auto load_stage = [&](int stage, int kb) {
    load_k_block<block_m, tile::threads>(smem_a + stage * tile::a_bytes, a_rows, p.A, p.lda, a_left, kb, tid);
    load_k_block<BlockN, tile::threads>(smem_b + stage * tile::b_bytes, b_rows, p.B, p.ldb, b_left, kb, tid);
  };

  // The row and chunk each lane addresses for ldmatrix.x4 (matrix j = lane / 8
  // gets the row addresses of lanes 8j..8j+7), relative to a fragment's corner:
  //  A: matrices (m 0-7, k 0-3), (m 8-15, k 0-3), (m 0-7, k 4-7), (m 8-15, k 4-7): a[0..3];
  //  B: (n 0-7, k 0-3), (n 0-7, k 4-7), (n 8-15, k 0-3), (n 8-15, k 4-7): b[j][0..1], b[j + 1][0..1].
  // Every fragment's rows start at a multiple of 8, so lane's row % 8 (its swizzle) is lane % 8.
  const int j8 = lane / 8, r8 = lane % 8;
  const std::uint32_t a_lane = (wm + r8 + 8 * (j8 % 2)) * row_bytes;
  const std::uint32_t b_lane = (wn + r8 + 8 * (j8 / 2)) * row_bytes;
  // A k-step's chunk within a part is 2 kk + (a_chunk or b_chunk); its
  // position (2 kk + chunk) ^ r8 = 2 kk ^ q stays within the part (r8 < 8), so
  // the part's offset is an immediate and only the 4 values of 2 kk ^ q are per lane.
  const int a_q = (j8 / 2) ^ r8, b_q = (j8 % 2) ^ r8;

  std::uint32_t sa = 0, sb = 0;  // the stage in the products
  // Slice h's products: A's part ap (the slice's m-fragments) x B's part bp
  // over the k-block (4 k-steps of 8) into d; fresh: the first k-step starts a new sum.
  const auto mma_of_slice = [&](int h) {
    return [&, h](float(&d)[slice_acc], int ap, int bp, bool fresh) {
#pragma unroll
      for (int kk = 0; kk < split_block_k / mma_k; ++kk) {
        const std::uint32_t a_at = sa + a_lane + ((2 * kk) ^ a_q) * chunk_bytes +
                                   (h * slice_frags_m * mma_m * row_bytes + ap * part_chunks * chunk_bytes);
        const std::uint32_t b_at = sb + b_lane + ((2 * kk) ^ b_q) * chunk_bytes + bp * part_chunks * chunk_bytes;
        std::uint32_t a[slice_frags_m][4];
        std::uint32_t b[frags_n][2];
#pragma unroll
        for (int i = 0; i < slice_frags_m; ++i) ldmatrix_x4(a[i], a_at + i * mma_m * row_bytes);
#pragma unroll
        for (int j = 0; j < frags_n; j += 2) ldmatrix_x4_b_pair(b[j], b[j + 1], b_at + j * mma_n * row_bytes);
#pragma unroll
        for (int i = 0; i < slice_frags_m; ++i)
#pragma unroll
          for (int j = 0; j < frags_n; ++j) mma_into(d, i * frags_n + j, a[i], b[j], fresh && kk == 0);
      }
    };
  };

  // Prologue: stages - 1 k-blocks in flight (one commit group each, empty or not).
  for (int s = 0; s < p.stages - 1; ++s) {
    if (s < k_blocks) load_stage(s, s);
    cp_async_commit();
  }

  fp32_emulated_sums<slice_acc> sums[slices];  // each slice's window and total
#pragma unroll
  for (int h = 0; h < slices; ++h) sums[h].reset();
  // A slice's k-block products in the tensor cores (and, Apart, its
  // corrections): each k-block starts them fresh, so they are never read before written.
  float partial[slice_acc];
  [[maybe_unused]] float correction[Apart ? slice_acc : 1];
  int stage = 0;
  for (int kb = 0; kb < k_blocks; ++kb) {
    tf32_mma::cp_async_wait_oldest(p.stages);  // k-block kb has landed (this thread's copies)
    __syncthreads();                           // ... everyone's, and k-block kb - 1's stage is free to refill
    {
      const int next = kb + p.stages - 1;
      int next_stage = stage + p.stages - 1;
      if (next_stage >= p.stages) next_stage -= p.stages;
      if (next < k_blocks) load_stage(next_stage, next);
      cp_async_commit();
    }
    sa = smem_a_addr + stage * tile::a_bytes;
    sb = smem_b_addr + stage * tile::b_bytes;
#pragma unroll
    for (int h = 0; h < slices; ++h) {
      if constexpr (Apart) {
        fp32_emulated_products_apart(partial, correction, hi, lo, mma_of_slice(h));
        sums[h].add_apart(partial, correction);
      } else {
        fp32_emulated_products(partial, hi, lo, mma_of_slice(h));
        sums[h].add(partial);
      }
    }
    if (++stage == p.stages) stage = 0;
  }
  cp_async_wait<0>();  // drain (only empty groups can be pending here)

#pragma unroll
  for (int h = 0; h < slices; ++h) sums[h].finish();
  tf32_mma::store_warp_tile<tile::frags_m, frags_n>(
      p, m0 + wm, n0 + wn, lane,
      [&](int i, int j, int r) { return sums[i / slice_frags_m].total[((i % slice_frags_m) * frags_n + j) * 4 + r]; },
      ep);
#endif
}

}  // namespace kf::detail
