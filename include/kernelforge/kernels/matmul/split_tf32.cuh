// SPDX-License-Identifier: Apache-2.0
// The pre-pass of the fp32-emulation steps (matmul 15_wgmma_fp32_emulated.cuh,
// conv2d 09_implicit_gemm_wgmma_fp32_emulated.cuh): each fp32 operand split
// into two TF32 parts and laid out k-major for TMA.
//
//   x = hi + lo + e,  hi = tf32(x),  lo = tf32(x - hi)   (both rounded to nearest)
//
// x - hi is exact in fp32, |lo| <= 2^-11 |x| and |e| <= 2^-11 |lo| <= 2^-22 |x|,
// so hi*hi + hi*lo + lo*hi carries fp32-level accuracy (the dropped lo*lo is
// below 2^-22 of the product). hi and lo are stored as fp32 bit patterns whose
// low 13 mantissa bits are zero, which TF32 wgmma reads without loss.
//
// Layout: an operand as `rows` x k (A as m x k; B as n x k, i.e. op(B)^T),
// written k-major with row stride ld = 2 * round_up(k, 32): for each block of 32
// of k, the 32 hi values then the 32 lo values (one 128-byte swizzled row each),
// zero beyond k. A stage of the GEMM is one such 32-wide half, so a k-block's
// hi and lo arrive in two consecutive stages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "../arch/mma_sm80.cuh"  // round_to_tf32
#include "../common/grid.hpp"
#include "../common/kernel.cuh"
#include "../runtime/cuda_check.hpp"

namespace kf::detail {

/// k per split block: one 128-byte row of fp32 (the GEMM's stage_k for TF32).
inline constexpr int split_block_k = 32;

/// The packed row stride (elements) of an operand with k columns: hi and lo per 32 of k.
inline std::size_t split_tf32_ld(std::size_t k) { return 2 * ceil_div(k, std::size_t{split_block_k}) * split_block_k; }

/// x's two TF32 parts. Non-finite x: hi = x, lo = 0 (x - hi would be NaN). A
/// finite x that rounds up past the largest TF32 value keeps a finite hi
/// (truncated: the low 13 bits dropped) so that only infinite inputs give
/// infinite products.
__device__ __forceinline__ float2 split_tf32(float x) {
  if (!isfinite(x)) return make_float2(x, 0.0f);
  float hi = round_to_tf32(x);
  if (isinf(hi)) hi = __uint_as_float(__float_as_uint(x) & 0xFFFFE000u);
  return make_float2(hi, round_to_tf32(x - hi));
}

/// One 32 x 32 tile (rows x k) per block of 32 x 8 threads: read coalesced
/// along whichever of the source's strides is 1 (through shared memory), then
/// written as coalesced 128-byte rows of hi and of lo. Grid z: a batch of such
/// operands, src_batch and dst_batch elements apart.
/// src(r, p) = src[r * row_stride + p * k_stride]; dst row r at dst + r * ld.
/// *nonfinite gets a non-zero bit where any element is infinite or NaN (the
/// GEMM then keeps its correction products apart: 15_wgmma_fp32_emulated.cuh).
/// Float is a template parameter (float only) so that the two sm_90a
/// translation units that enqueue it, matmul's and conv2d's fp32 emulation,
/// share one weak copy instead of defining the kernel twice.
template <class Float>
KF_KERNEL void __launch_bounds__(256)
    split_tf32_pack_kernel(const Float* __restrict__ src, std::size_t src_batch, std::size_t row_stride,
                           std::size_t k_stride, std::size_t rows, std::size_t k, float* __restrict__ dst,
                           std::size_t dst_batch, std::size_t ld, unsigned* __restrict__ nonfinite) {
  static_assert(std::is_same_v<Float, float>, "fp32 operands only");
  __shared__ float tile[split_block_k][split_block_k + 1];
  src += blockIdx.z * src_batch;
  dst += blockIdx.z * dst_batch;
  const std::size_t r0 = static_cast<std::size_t>(blockIdx.y) * split_block_k;
  const std::size_t kb = blockIdx.x;  // the k block
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

/// Enqueues the split of `batch` operands of `rows` x k (operand b's element
/// (r, p) = src[b * src_batch + r * row_stride + p * k_stride]) into dst
/// (operand b's rows x split_tf32_ld(k) at dst + b * dst_batch), or-ing 1 into
/// *nonfinite (device memory, zeroed by the caller) where an element is inf or NaN.
inline void launch_split_tf32_pack_batched(const float* src, std::size_t batch, std::size_t src_batch,
                                           std::size_t row_stride, std::size_t k_stride, std::size_t rows,
                                           std::size_t k, float* dst, std::size_t dst_batch, unsigned* nonfinite,
                                           cudaStream_t stream, const char* what) {
  const dim3 block(split_block_k, 8);
  const std::size_t ld = split_tf32_ld(k);
  const std::size_t k_blocks = ceil_div(k, std::size_t{split_block_k});
  const std::size_t row_blocks = ceil_div(rows, std::size_t{split_block_k});
  // gridDim.y and gridDim.z are at most 65535: walk the rows and the batch in slabs.
  constexpr std::size_t max_yz = 65535;
  for (std::size_t z0 = 0; z0 < batch; z0 += max_yz) {
    const std::size_t zs = batch - z0 < max_yz ? batch - z0 : max_yz;
    for (std::size_t y0 = 0; y0 < row_blocks; y0 += max_yz) {
      const std::size_t ys = row_blocks - y0 < max_yz ? row_blocks - y0 : max_yz;
      const std::size_t r = y0 * split_block_k;
      split_tf32_pack_kernel<float>
          <<<dim3(static_cast<unsigned>(k_blocks), static_cast<unsigned>(ys), static_cast<unsigned>(zs)), block, 0,
             stream>>>(src + z0 * src_batch + r * row_stride, src_batch, row_stride, k_stride, rows - r, k,
                       dst + z0 * dst_batch + r * ld, dst_batch, ld, nonfinite);
      check_launch(what);
    }
  }
}

/// One operand: `rows` x k (src(r, p) = src[r * row_stride + p * k_stride]) into dst (rows x split_tf32_ld(k)).
inline void launch_split_tf32_pack(const float* src, std::size_t row_stride, std::size_t k_stride, std::size_t rows,
                                   std::size_t k, float* dst, unsigned* nonfinite, cudaStream_t stream,
                                   const char* what) {
  launch_split_tf32_pack_batched(src, 1, 0, row_stride, k_stride, rows, k, dst, 0, nonfinite, stream, what);
}

}  // namespace kf::detail
