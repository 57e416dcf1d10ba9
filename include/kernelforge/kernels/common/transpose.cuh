// SPDX-License-Identifier: Apache-2.0
// Batched matrix transposes, the layout changes several launchers make:
// dst[b][j][i] = convert(src[b][i][j]) for `batches` row-major rows x cols
// matrices (NCHW <-> NHWC is one: rows = C, cols = H W, or the other way round).
//  * transpose_tiles: a block's share of the transpose, 32 x 32 tiles through
//    shared memory, so both the reads (along a source row) and the writes
//    (along a destination row) are coalesced; the device function the kernels
//    below and step 7's NCHW repack (conv2d/wgmma_nchw_repack.cuh, which also
//    rounds to TF32 and pads the rows) share.
//  * batched_transpose_tiled: that, as a kernel.
//  * batched_transpose_narrow: one thread per destination element, for
//    matrices with a side shorter than transpose_narrow_below (a 3-channel
//    image, a filter's 3 x 3 taps), where a 32 x 32 tile would leave most of
//    its threads idle and launch a block per few dozen elements.
//  * launch_batched_transpose: picks one of the two and launches it.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "../runtime/launcher.hpp"
#include "fast_divmod.cuh"
#include "grid.hpp"
#include "kernel.cuh"

namespace kf::detail {

namespace tiled_transpose {
inline constexpr int tile = 32;                       ///< a tile's side: one warp along a row
inline constexpr int rows_per_pass = 8;               ///< a block is tile x rows_per_pass threads
inline constexpr int threads = tile * rows_per_pass;  ///< 256
inline constexpr int narrow_block = 256;              ///< batched_transpose_narrow's block
inline constexpr std::size_t narrow_below = 8;        ///< a side below this: the narrow kernel (a quarter tile)
inline constexpr int narrow_blocks_per_sm = 16;       ///< its grid-stride cap: one wave of 16 blocks an SM
}  // namespace tiled_transpose

struct transpose_copy {
  template <class T>
  __device__ __forceinline__ T operator()(T v) const {
    return v;
  }
};

/// This block's share of dst[b][j][i] = convert(src[b][i][j]), src `batches`
/// x rows x cols, dst batches x cols x dst_ld (dst_ld >= rows; the columns
/// rows .. dst_ld - 1 of each dst row are not written). Block
/// (tiled_transpose::tile, tiled_transpose::rows_per_pass); grid x over tiles
/// of columns, y and z striding over tiles of rows and over the batch.
template <class T, class Convert>
__device__ __forceinline__ void transpose_tiles(const T* __restrict__ src, T* __restrict__ dst, int batches, int rows,
                                                long long cols, int dst_ld, Convert convert) {
  using namespace tiled_transpose;
  __shared__ T tile_buf[tile][tile + 1];  // +1: the transposed read is conflict-free
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const long long col0 = static_cast<long long>(blockIdx.x) * tile;
  const int row_tiles = (rows + tile - 1) / tile;
  for (int b = static_cast<int>(blockIdx.z); b < batches; b += static_cast<int>(gridDim.z)) {
    for (int rt = static_cast<int>(blockIdx.y); rt < row_tiles; rt += static_cast<int>(gridDim.y)) {
      const int row0 = rt * tile;
#pragma unroll
      for (int i = 0; i < tile; i += rows_per_pass) {
        const int row = row0 + ty + i;
        const long long col = col0 + tx;
        if (row < rows && col < cols)
          tile_buf[ty + i][tx] = convert(src[(static_cast<long long>(b) * rows + row) * cols + col]);
      }
      __syncthreads();
#pragma unroll
      for (int i = 0; i < tile; i += rows_per_pass) {
        const long long col = col0 + ty + i;
        const int row = row0 + tx;
        if (row < rows && col < cols)
          dst[(static_cast<long long>(b) * cols + col) * dst_ld + row] = tile_buf[tx][ty + i];
      }
      __syncthreads();  // the tile is rewritten by the next (batch, row tile)
    }
  }
}

/// dst[b][j][i] = src[b][i][j] through transpose_tiles (dst_ld = rows).
template <class T>
KF_KERNEL void __launch_bounds__(tiled_transpose::threads)
    batched_transpose_tiled(const T* __restrict__ src, T* __restrict__ dst, int batches, int rows, int cols) {
  transpose_tiles(src, dst, batches, rows, cols, rows, transpose_copy{});
}

/// dst[b][j][i] = src[b][i][j], one thread per element of dst (grid-stride):
/// the writes are coalesced, the reads cols elements apart (a narrow matrix's
/// rows share their cache lines across neighbouring threads). total = batches
/// rows cols < 2^31.
template <class T>
KF_KERNEL void __launch_bounds__(tiled_transpose::narrow_block)
    batched_transpose_narrow(const T* __restrict__ src, T* __restrict__ dst, int total, fast_divmod div_rows,
                             fast_divmod div_cols) {
  const int rows = static_cast<int>(div_rows.divisor), cols = static_cast<int>(div_cols.divisor);
  const int step = static_cast<int>(gridDim.x * blockDim.x);
  for (int idx = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); idx < total; idx += step) {
    int bj, i, b, j;
    div_rows.divmod(idx, bj, i);  // idx = (b cols + j) rows + i
    div_cols.divmod(bj, b, j);
    dst[idx] = src[(b * rows + i) * cols + j];
  }
}

/// Enqueues dst[b][j][i] = src[b][i][j] (batches x rows x cols, fewer than
/// 2^31 elements in all; src and dst do not overlap) on `stream`.
template <class T>
void launch_batched_transpose(int device, const T* src, T* dst, std::size_t batches, std::size_t rows, std::size_t cols,
                              cudaStream_t stream, const char* what) {
  using namespace tiled_transpose;
  const std::size_t total = batches * rows * cols;
  if (total == 0) return;
  if (rows < narrow_below || cols < narrow_below) {
    const launch_plan plan = plan_grid_stride(limits_for(device), narrow_block, narrow_blocks_per_sm, total,
                                              static_cast<std::size_t>(narrow_block));
    batched_transpose_narrow<T><<<plan.grid, narrow_block, 0, stream>>>(src, dst, static_cast<int>(total),
                                                                        fast_divmod(static_cast<unsigned>(rows)),
                                                                        fast_divmod(static_cast<unsigned>(cols)));
  } else {
    const dim3 grid(static_cast<std::uint32_t>(ceil_div(cols, static_cast<std::size_t>(tile))),
                    capped_grid_dim(ceil_div(rows, static_cast<std::size_t>(tile))), capped_grid_dim(batches));
    batched_transpose_tiled<T><<<grid, dim3(tile, rows_per_pass), 0, stream>>>(
        src, dst, static_cast<int>(batches), static_cast<int>(rows), static_cast<int>(cols));
  }
  check_launch(what);
}

}  // namespace kf::detail
