// SPDX-License-Identifier: Apache-2.0
// The pre-pass of the fp32-emulation step (15_wgmma_fp32_emulated.cuh): each
// fp32 operand split into two TF32 parts and laid out k-major for TMA.
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

#include <cuda_runtime_api.h>

#include "../common/grid.hpp"
#include "../common/kernel.cuh"
#include "../runtime/cuda_check.hpp"

namespace kf::detail {

/// k per split block: one 128-byte row of fp32 (the GEMM's stage_k for TF32).
inline constexpr int split_block_k = 32;

/// The packed row stride (elements) of an operand with k columns: hi and lo per 32 of k.
inline std::size_t split_tf32_ld(std::size_t k) { return 2 * ceil_div(k, std::size_t{split_block_k}) * split_block_k; }

/// TF32 rounding to nearest (ties away), as fp32 bits with the low 13 bits zero.
__device__ __forceinline__ float round_to_tf32(float x) {
  std::uint32_t bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
  return __uint_as_float(bits);
}

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
/// written as coalesced 128-byte rows of hi and of lo.
/// src(r, p) = src[r * row_stride + p * k_stride]; dst row r at dst + r * ld.
/// *nonfinite gets a non-zero bit where any element is infinite or NaN (the
/// GEMM then keeps its correction products apart: 15_wgmma_fp32_emulated.cuh).
KF_KERNEL void __launch_bounds__(256)
    split_tf32_pack_kernel(const float* __restrict__ src, std::size_t row_stride, std::size_t k_stride,
                           std::size_t rows, std::size_t k, float* __restrict__ dst, std::size_t ld,
                           unsigned* __restrict__ nonfinite) {
  __shared__ float tile[split_block_k][split_block_k + 1];
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

/// Enqueues the split of `rows` x k (src(r, p) = src[r * row_stride + p *
/// k_stride]) into dst (rows x split_tf32_ld(k)), or-ing 1 into *nonfinite
/// (device memory, zeroed by the caller) where an element is inf or NaN.
inline void launch_split_tf32_pack(const float* src, std::size_t row_stride, std::size_t k_stride, std::size_t rows,
                                   std::size_t k, float* dst, unsigned* nonfinite, cudaStream_t stream,
                                   const char* what) {
  const dim3 block(split_block_k, 8);
  const std::size_t k_blocks = ceil_div(k, std::size_t{split_block_k});
  const std::size_t row_blocks = ceil_div(rows, std::size_t{split_block_k});
  // gridDim.y is at most 65535: walk the rows in slabs.
  constexpr std::size_t max_y = 65535;
  for (std::size_t y0 = 0; y0 < row_blocks; y0 += max_y) {
    const std::size_t ys = row_blocks - y0 < max_y ? row_blocks - y0 : max_y;
    const std::size_t r = y0 * split_block_k;
    split_tf32_pack_kernel<<<dim3(static_cast<unsigned>(k_blocks), static_cast<unsigned>(ys)), block, 0, stream>>>(
        src + r * row_stride, row_stride, k_stride, rows - r, k, dst + r * split_tf32_ld(k), split_tf32_ld(k),
        nonfinite);
    check_launch(what);
  }
}

}  // namespace kf::detail
