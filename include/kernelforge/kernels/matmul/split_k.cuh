// SPDX-License-Identifier: Apache-2.0
// Split-k for warp_tiled and large_tile: when the m x n tiles of a product
// cannot fill the GPU (e.g. 128 x 8192 x 8192: 64 tiles of 128 x 128 on a
// 132-SM H200), k is cut into `split` slices computed by separate blocks. Each
// writes its partial tile to a workspace (split x m x n floats, dense); this
// reduction then sums the slices in a fixed order -- the result is
// deterministic, unlike atomics -- and applies the BLAS epilogue
// C = alpha * sum + beta * C, then the epilogue functor -- here, once per
// element of C, never to a partial sum.
//
// The workspace comes from a stream-ordered memory pool that the library owns,
// one per device, created on first use and never trimmed (its release
// threshold is unlimited), so after the first call an allocation is a cheap,
// enqueue-only operation; it keeps at most split_k_max_workspace_bytes
// (tuning.hpp) per concurrent call. Devices without memory-pool support get no
// split (pooled_workspace gives no memory).
//
// The plan (how many slices, how long) is tuning.hpp's split_k_plan, a pure
// function the CPU tests cover; launch_split_k below is the one place a tiled
// launcher turns it into a workspace, a grid, its kernel and this reduction.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "../common/kernel.cuh"
#include "../runtime/launcher.hpp"
#include "gemm_args.cuh"
#include "operand.cuh"
#include "tuning.hpp"

namespace kf::detail {

constexpr int split_k_reduce_block = 256;
constexpr std::size_t split_k_reduce_max_grid_rows = 4096;

/// C = ep(alpha * (sum of the split partial tiles) + beta * C): the partials are
/// fp32 (dense m x n each) whatever C's type T is, summed in fp32, rounded once.
template <class T, class Epilogue>
KF_KERNEL void matmul_split_k_reduce(gemm_args<T> g, const float* workspace, int split, Epilogue ep) {
  const std::size_t j = blockIdx.x * std::size_t(split_k_reduce_block) + threadIdx.x;
  if (j >= g.n) return;
  const std::size_t slice = g.m * g.n;
  for (std::size_t i = blockIdx.y; i < g.m; i += gridDim.y) {
    const float* w = workspace + i * g.n + j;
    float sum = 0;
    for (int z = 0; z < split; ++z) sum += w[z * slice];
    store_c(g, i, j, sum, ep);
  }
}

template <class T, class Epilogue>
void launch_split_k_reduce(const gemm_args<T>& g, const float* workspace, int split, const Epilogue& ep,
                           cudaStream_t stream) {
  const std::size_t rows = g.m < split_k_reduce_max_grid_rows ? g.m : split_k_reduce_max_grid_rows;
  const dim3 grid = grid_2d(ceil_div(g.n, split_k_reduce_block), rows, "split-k reduction");
  matmul_split_k_reduce<T, Epilogue><<<grid, split_k_reduce_block, 0, stream>>>(g, workspace, split, ep);
  check_launch("kf::matmul (split-k reduction)");
}

/// A split-k plan with its fp32 partial tiles (plan.workspace_bytes) from the
/// runtime's pool, returned on `stream` when this object goes out of scope
/// (after the launches are enqueued, or when one throws). Without pool memory
/// the plan falls back to one slice of all of k: the one place that rule lives.
class split_k_workspace {
 public:
  split_k_workspace(split_k_plan plan, std::size_t m, std::size_t n, std::size_t k, int device, cudaStream_t stream)
      : plan_(plan), memory_(device, plan.workspace_bytes(m, n), stream) {
    if (memory_.data() == nullptr) plan_ = split_k_plan{1, k};
  }
  [[nodiscard]] const split_k_plan& plan() const noexcept { return plan_; }
  /// The partial tiles (split x m x n floats), nullptr unsplit.
  [[nodiscard]] float* partials() const noexcept { return memory_.data<float>(); }
  /// Enqueues the reduction (alpha, beta and `ep` on the summed slices) when split.
  template <class T, class Epilogue>
  void reduce(const gemm_args<T>& g, const Epilogue& ep, cudaStream_t stream) const {
    if (partials() != nullptr) launch_split_k_reduce(g, partials(), plan_.split, ep, stream);
  }

 private:
  split_k_plan plan_;
  pooled_workspace memory_;
};

/// tiles_m x tiles_n block tiles: the x extent of a tiled launcher's 1D grid;
/// errc::unsupported, naming `what`, past the hardware's 2^31-1 blocks.
inline std::size_t grid_block_tiles(std::size_t tiles_m, std::size_t tiles_n, const char* what) {
  const std::size_t tiles = tiles_m * tiles_n;
  if (tiles > 0x7FFFFFFFu) {
    throw error(errc::unsupported, std::string(what) + ": " + std::to_string(tiles) +
                                       " block tiles exceed the grid limit of 2^31-1 blocks");
  }
  return tiles;
}

/// Runs a tiled kernel over `tiles` block tiles of k-slices `block_k`, split
/// along k where they fill too little of the `resident_blocks` the GPU holds
/// (plan_split_k): sets x.k_slice and x.workspace (partial tiles, from the
/// runtime's pool; nullptr unsplit), calls launch(grid) with grid (tiles, 1,
/// split) to enqueue the kernel on `stream`, then the reduction, which applies
/// alpha, beta and `ep`. Without pool memory it runs unsplit. Params: the
/// kernel's parameter block (warp_tiled_params, large_tile_params).
template <class Params, class Epilogue, class Launch>
void launch_split_k(const gemm_args<float>& g, Params& x, std::size_t tiles, int block_k, int resident_blocks,
                    int device, const Epilogue& ep, cudaStream_t stream, Launch&& launch) {
  const split_k_workspace split(plan_split_k(tiles, g.m, g.n, g.k, block_k, resident_blocks), g.m, g.n, g.k, device,
                                stream);
  x.workspace = split.partials();
  x.k_slice = split.plan().k_slice;
  launch(dim3(static_cast<unsigned>(tiles), 1, static_cast<unsigned>(split.plan().split)));
  split.reduce(g, ep, stream);
}

}  // namespace kf::detail
