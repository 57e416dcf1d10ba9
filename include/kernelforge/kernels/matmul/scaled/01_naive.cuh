// SPDX-License-Identifier: Apache-2.0
// FP8 step 1 -- naive: one thread per element of D, the correctness baseline of
// the FP8 progression and the path of every layout and scaling mode.
//
//   j = blockIdx.x * 32 + threadIdx.x;  i = blockIdx.y * 8 + threadIdx.y;
//   for each 128 of k:  partial = sum_p float(op(A)(i, p)) * float(op(B)(p, j))
//                       acc += block_scale * partial          (the promotion)
//   D(i, j) = epilogue(outer_scale * acc)
//
// What it shows: the arithmetic every faster FP8 step keeps -- fp32 partial sums
// over 128 of k promoted into an fp32 total, where the blockwise scales apply
// (FP8 tensor cores keep only about 14 bits in their accumulators, so the
// promotion is what makes them accurate), per-tensor and rowwise scales applied
// once at the end, and the amax folded per warp. Consecutive threads take
// consecutive columns, so B (op::none) and D are read and written coalesced.
// What it leaves on the table: no reuse; every FP8 operand is loaded and
// converted once per multiply-add, on the CUDA cores.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "../../common/kernel.cuh"
#include "../../runtime/launcher.hpp"
#include "../launch_util.hpp"
#include "args.cuh"

namespace kf::detail {

constexpr int scaled_naive_block_cols = 32;  // a warp along a row of D
constexpr int scaled_naive_block_rows = 8;

template <class TA, class TB, class TD>
KF_KERNEL void scaled_matmul_naive(scaled_gemm_args<TA, TB, TD> g) {
  const std::size_t j = blockIdx.x * std::size_t(scaled_naive_block_cols) + threadIdx.x;
  unsigned amax = 0;
  // Rows stride over the grid's y extent (at most 65535 blocks).
  for (std::size_t i = blockIdx.y * std::size_t(scaled_naive_block_rows) + threadIdx.y; i < g.m;
       i += std::size_t(gridDim.y) * scaled_naive_block_rows) {
    if (j >= g.n) break;
    float acc = 0.0f;
    for (std::size_t k0 = 0; k0 < g.k; k0 += fp8_promotion_k) {
      const std::size_t k1 = k0 + fp8_promotion_k < g.k ? k0 + fp8_promotion_k : g.k;
      float partial = 0.0f;
      for (std::size_t p = k0; p < k1; ++p) {
        partial +=
            static_cast<float>(g.A[i * g.a_row + p * g.a_col]) * static_cast<float>(g.B[p * g.b_row + j * g.b_col]);
      }
      acc += block_scale(g, i, j, k0 / fp8_promotion_k) * partial;
    }
    if (g.k != 0) acc *= outer_scale(g, i, j);  // k == 0: the scales are not read
    amax = max(amax, store_scaled(g, i, j, acc));
  }
  if (g.amax_bits == nullptr) return;
  // Every lane of the warp reaches here (no early return above): one atomic per warp.
  for (int offset = 16; offset > 0; offset /= 2) amax = max(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, offset));
  if (threadIdx.x == 0 && amax != 0) atomicMax(g.amax_bits, amax);
}

template <class TA, class TB, class TD>
void launch_scaled_naive(const scaled_gemm_args<TA, TB, TD>& g, cudaStream_t stream) {
  const std::size_t col_blocks = ceil_div(g.n, scaled_naive_block_cols);
  if (col_blocks > 0x7FFFFFFFu) {
    throw error(errc::unsupported, "kf::scaled_matmul: variant naive covers n up to 2^31-1 blocks of 32 columns; n = " +
                                       std::to_string(g.n) + " is more");
  }
  const std::size_t row_blocks = ceil_div(g.m, scaled_naive_block_rows);
  const dim3 block(scaled_naive_block_cols, scaled_naive_block_rows);
  const dim3 grid(static_cast<unsigned>(col_blocks),
                  static_cast<unsigned>(row_blocks < max_grid_yz ? row_blocks : max_grid_yz));
  scaled_matmul_naive<TA, TB, TD><<<grid, block, 0, stream>>>(g);
  check_launch("kf::scaled_matmul (naive)");
}

}  // namespace kf::detail
