// SPDX-License-Identifier: Apache-2.0
// The pre-pass of the fp32-emulation steps (matmul 15_wgmma_fp32_emulated.cuh
// and 16_mma_sync_fp32_emulated.cuh, conv2d
// 09_implicit_gemm_wgmma_fp32_emulated.cuh): each fp32 operand split into two
// TF32 parts and laid out k-major (for TMA, and for step 16's cp.async).
//
// The parts (hi = tf32(x), lo = tf32(x - hi)) and why three products of them
// carry fp32 accuracy: tf32_parts.cuh, shared with the skinny step 17, which
// splits its large operand in registers instead.
//
// Layout: an operand as `rows` x k (A as m x k; B as n x k, i.e. op(B)^T),
// written k-major with row stride ld = 2 * round_up(k, 32): for each block of 32
// of k, the 32 hi values then the 32 lo values (one 128-byte swizzled row each),
// zero beyond k. A stage of the wgmma GEMM is one such 32-wide half, so a
// k-block's hi and lo arrive in two consecutive stages (step 16: one stage).
//
// The kernel is instantiated in one translation unit alone
// (src/matmul/split_tf32.cu, built for every architecture of the library): the
// launchers below are defined there, and the sm_90a objects call them. A copy
// in an sm_90a object could be the one the program registers, and an sm_80
// GPU would then find no image for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "../common/alignment.hpp"
#include "../common/grid.hpp"
#include "../common/kernel.cuh"
#include "../runtime/cuda_check.hpp"
#include "../runtime/workspace.hpp"
#include "gemm_args.cuh"
#include "tf32_parts.cuh"

namespace kf::detail {

/// k per split block: one 128-byte row of fp32 (the GEMM's stage_k for TF32).
inline constexpr int split_block_k = 32;

/// The packed row stride (elements) of an operand with k columns: hi and lo per 32 of k.
inline std::size_t split_tf32_ld(std::size_t k) { return 2 * ceil_div(k, std::size_t{split_block_k}) * split_block_k; }

/// One 32 x 32 tile (rows x k) by a block of 32 x 8 threads: read coalesced
/// along whichever of the source's strides is 1 (through shared memory), then
/// written as coalesced 128-byte rows of hi and of lo. The tile's rows start at
/// r0, its k at kb * 32. src(r, p) = src[r * row_stride + p * k_stride]; dst
/// row r at dst + r * ld. *nonfinite gets a non-zero bit where any element is
/// infinite or NaN (the GEMM then keeps its correction products apart:
/// 15_wgmma_fp32_emulated.cuh).
template <class Float>
__device__ __forceinline__ void split_tf32_pack_tile(const Float* __restrict__ src, std::size_t row_stride,
                                                     std::size_t k_stride, std::size_t rows, std::size_t k,
                                                     float* __restrict__ dst, std::size_t ld, std::size_t r0,
                                                     std::size_t kb, unsigned* __restrict__ nonfinite) {
  static_assert(std::is_same_v<Float, float>, "fp32 operands only");
  __shared__ float tile[split_block_k][split_block_k + 1];
  const std::size_t p0 = kb * split_block_k;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const bool k_contiguous = k_stride == 1;
#pragma unroll
  for (int i = 0; i < split_block_k / 8; ++i) {
    // k-contiguous: the warp reads along k (tx); else along the rows (tx).
    const int lr = k_contiguous ? ty + 8 * i : tx, lp = k_contiguous ? tx : ty + 8 * i;
    const std::size_t r = r0 + lr, p = p0 + lp;
    tile[lr][lp] = r < rows && p < k ? src[r * row_stride + p * k_stride] : 0.0f;
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < split_block_k / 8; ++i) {
    const int lr = ty + 8 * i;
    const std::size_t r = r0 + lr;
    const float x = r < rows ? tile[lr][tx] : 0.0f;
    if (__any_sync(0xFFFFFFFFu, !isfinite(x)) && tx == 0) atomicOr(nonfinite, 1u);  // rare: one atomic a warp
    if (r >= rows) continue;
    const float2 parts = split_tf32(x);
    float* const out = dst + r * ld + kb * 2 * split_block_k;
    out[tx] = parts.x;
    out[split_block_k + tx] = parts.y;
  }
}

/// split_tf32_pack_tile over a grid: x the k blocks, y the row blocks, z a
/// batch of operands src_batch and dst_batch elements apart.
/// Float is a template parameter (float only): a template kernel is
/// instantiated only where it is launched (src/matmul/split_tf32.cu).
template <class Float>
KF_KERNEL void __launch_bounds__(256)
    split_tf32_pack_kernel(const Float* __restrict__ src, std::size_t src_batch, std::size_t row_stride,
                           std::size_t k_stride, std::size_t rows, std::size_t k, float* __restrict__ dst,
                           std::size_t dst_batch, std::size_t ld, unsigned* __restrict__ nonfinite) {
  split_tf32_pack_tile(src + blockIdx.z * src_batch, row_stride, k_stride, rows, k, dst + blockIdx.z * dst_batch, ld,
                       static_cast<std::size_t>(blockIdx.y) * split_block_k, blockIdx.x, nonfinite);
}

/// One operand set of a split: `batch` operands of rows x k, operand b's
/// element (r, p) = src[b * src_batch + r * row_stride + p * k_stride], into
/// dst (operand b's rows x split_tf32_ld(k) at dst + b * dst_batch).
struct split_tf32_operand {
  const float* src = nullptr;
  std::size_t batch = 1, src_batch = 0, row_stride = 0, k_stride = 1, rows = 0, k = 0;
  float* dst = nullptr;
  std::size_t dst_batch = 0;
};

/// An operand set as split_tf32_pack_pair_kernel walks it: its tiles in block order.
struct split_tf32_tiles {
  split_tf32_operand o;
  std::size_t ld = 0, k_blocks = 0, row_blocks = 0, blocks = 0;  ///< blocks: k_blocks x row_blocks x batch
};

/// Two operand sets split by one launch (a 1-D grid: the first set's tiles,
/// then the second's), where two launches cost the second's launch and tail:
/// conv2d step 9's filter beside its input (N32 C128 28x28, H100 ncu: the
/// filter's own launch 4.1 us beside the input's 13.4; one launch took 1.4-3.4%
/// off every step 9 layer, H100), matmul steps 15 and 16's op(B)^T beside op(A).
template <class Float>
KF_KERNEL void __launch_bounds__(256)
    split_tf32_pack_pair_kernel(const split_tf32_tiles first, const split_tf32_tiles second,
                                unsigned* __restrict__ nonfinite) {
  static_assert(std::is_same_v<Float, float>, "fp32 operands only");
  std::size_t i = blockIdx.x;
  const bool in_first = i < first.blocks;
  const split_tf32_tiles& t = in_first ? first : second;
  if (!in_first) i -= first.blocks;
  const std::size_t kb = i % t.k_blocks, rb = (i / t.k_blocks) % t.row_blocks, b = i / (t.k_blocks * t.row_blocks);
  split_tf32_pack_tile(t.o.src + b * t.o.src_batch, t.o.row_stride, t.o.k_stride, t.o.rows, t.o.k,
                       t.o.dst + b * t.o.dst_batch, t.ld, rb * split_block_k, kb, nonfinite);
}

/// Enqueues the splits of both operand sets, by one launch where the grid
/// allows (else one launch_split_tf32_pack_batched each; a set whose dst is
/// null is not split), or-ing 1 into *nonfinite (device memory, zeroed by the
/// caller) where an element is inf or NaN.
void launch_split_tf32_pack_pair(const split_tf32_operand& first, const split_tf32_operand& second, unsigned* nonfinite,
                                 cudaStream_t stream, const char* what);

/// Enqueues the split of `batch` operands of `rows` x k (operand b's element
/// (r, p) = src[b * src_batch + r * row_stride + p * k_stride]) into dst
/// (operand b's rows x split_tf32_ld(k) at dst + b * dst_batch), or-ing 1 into
/// *nonfinite (device memory, zeroed by the caller) where an element is inf or NaN.
void launch_split_tf32_pack_batched(const float* src, std::size_t batch, std::size_t src_batch, std::size_t row_stride,
                                    std::size_t k_stride, std::size_t rows, std::size_t k, float* dst,
                                    std::size_t dst_batch, unsigned* nonfinite, cudaStream_t stream, const char* what);

/// Which operands of a product split_gemm_operands splits: both (steps 15 and
/// 16), or op(A) alone / op(B)^T alone (step 17, which splits the other one
/// in its kernel).
enum class split_which { both, a, b };

/// A matrix product's operands split for matmul steps 15, 16 and 17: op(A) as
/// m x k and op(B)^T as n x k (both k-major: every transpose reads the same
/// way afterwards), each rows x ld() floats, then the non-finite flag, in one
/// pooled workspace (back to the pool, on `stream`, when this object goes).
/// Allocating enqueues nothing; allocated() is false where the pool gives no
/// memory; a() (b()) is nullptr where A (B) is not split.
class split_gemm_operands {
 public:
  split_gemm_operands(const gemm_args<float>& g, int device, cudaStream_t stream, split_which which = split_which::both)
      : ld_(split_tf32_ld(g.k)),
        a_bytes_(which == split_which::b ? 0 : round_up(g.m * ld_ * sizeof(float), workspace_alignment)),
        b_bytes_(which == split_which::a ? 0 : round_up(g.n * ld_ * sizeof(float), workspace_alignment)),
        scratch_(device, a_bytes_ + b_bytes_ + sizeof(unsigned), stream) {}

  /// The packed row stride (elements) of both operands.
  [[nodiscard]] std::size_t ld() const noexcept { return ld_; }
  [[nodiscard]] bool allocated() const noexcept { return scratch_.data() != nullptr; }
  [[nodiscard]] float* a() const noexcept { return allocated() && a_bytes_ > 0 ? scratch_.data<float>() : nullptr; }
  [[nodiscard]] float* b() const noexcept {
    return allocated() && b_bytes_ > 0 ? reinterpret_cast<float*>(scratch_.data<char>() + a_bytes_) : nullptr;
  }
  /// Non-zero after the split where an element of a split operand is inf or NaN.
  [[nodiscard]] unsigned* nonfinite() const noexcept {
    return allocated() ? reinterpret_cast<unsigned*>(scratch_.data<char>() + a_bytes_ + b_bytes_) : nullptr;
  }

  /// Enqueues the flag's reset and the splits on `stream` (allocated()).
  void enqueue(const gemm_args<float>& g, cudaStream_t stream, const char* what) const {
    cuda_check(cudaMemsetAsync(nonfinite(), 0, sizeof(unsigned), stream), what);
    // op(A)(i, p) = A[i * a_row + p * a_col]; op(B)^T(j, p) = op(B)(p, j) = B[j * b_col + p * b_row].
    const std::size_t a_row = g.trans_a ? 1 : g.lda, a_col = g.trans_a ? g.lda : 1;
    const std::size_t b_row = g.trans_b ? 1 : g.ldb, b_col = g.trans_b ? g.ldb : 1;
    split_tf32_operand a_set, b_set;
    a_set.src = g.A, a_set.row_stride = a_row, a_set.k_stride = a_col, a_set.rows = g.m, a_set.k = g.k, a_set.dst = a();
    b_set.src = g.B, b_set.row_stride = b_col, b_set.k_stride = b_row, b_set.rows = g.n, b_set.k = g.k, b_set.dst = b();
    launch_split_tf32_pack_pair(a_set, b_set, nonfinite(), stream, what);  // (a null a() or b(): that one unsplit)
  }

 private:
  std::size_t ld_, a_bytes_, b_bytes_;
  pooled_workspace scratch_;
};

}  // namespace kf::detail
