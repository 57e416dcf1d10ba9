// SPDX-License-Identifier: Apache-2.0
// Split-k for warp_tiled, large_tile and the wgmma kernel (step 14): when the m x n tiles of a product
// cannot fill the GPU (e.g. 128 x 8192 x 8192: 64 tiles of 128 x 128 on a
// 132-SM H200), k is cut into `split` slices computed by separate blocks. Each
// writes its partial tile to a workspace (split x m x n floats, dense); the
// reduction then sums the slices in a fixed order -- the result is
// deterministic, unlike atomics -- and applies the BLAS epilogue
// C = alpha * sum + beta * C, then the epilogue functor -- there, once per
// element of C, never to a partial sum.
//
// The workspace comes from a stream-ordered memory pool that the library owns,
// one per device, created on first use and never trimmed (its release
// threshold is unlimited), so after the first call an allocation is a cheap,
// enqueue-only operation; it keeps at most split_k_max_workspace_bytes
// (tuning.hpp) per concurrent call. Devices without memory-pool support get no
// split (pooled_workspace gives no memory).
//
// The plan (how many slices, how long) is plan.hpp's plan_matmul_split_k over
// the shared planner (common/split_k_plan.hpp), a pure function the CPU tests
// cover, and the reduction is the shared one (common/split_k_reduce.cuh) with
// matmul_split_k_store below; launch_split_k is the one place a tiled launcher
// turns them into a workspace, a grid, its kernel and the reduction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "../common/alignment.hpp"
#include "../common/split_k_reduce.cuh"
#include "../runtime/launcher.hpp"
#include "gemm_args.cuh"
#include "operand.cuh"
#include "plan.hpp"

namespace kf::detail {

/// The reduction's store for C: C = ep(alpha * sum + beta * C), as store_c
/// computes it (C not read when beta == 0), rounded once to T. Four sums of a
/// row at a time with one 16-byte access where C is fp32 with 16-byte aligned
/// rows (c_vector), else element by element.
template <class T, class Epilogue>
struct matmul_split_k_store {
  gemm_args<T> g;
  Epilogue ep;
  bool c_vector = false;

  __device__ void operator()(int, int row, int col, float sum) const { store_c(g, row, col, sum, ep); }
  __device__ void operator()(int, int row, int col, float4 s) const {
    if constexpr (std::is_same_v<T, float>) {
      if (c_vector) {
        float4* dst = reinterpret_cast<float4*>(g.C + static_cast<std::size_t>(row) * g.ldc + col);
        const float4 c = g.beta == 0.f ? float4{} : *dst;
        const auto scale = [&](float acc, float old) {
          return g.beta == 0.f ? g.alpha * acc : g.alpha * acc + g.beta * old;
        };
        const std::int64_t r = row, j = col;
        *dst = make_float4(ep(scale(s.x, c.x), r, j), ep(scale(s.y, c.y), r, j + 1), ep(scale(s.z, c.z), r, j + 2),
                           ep(scale(s.w, c.w), r, j + 3));
        return;
      }
    }
    store_c(g, row, col, s.x, ep);
    store_c(g, row, col + 1, s.y, ep);
    store_c(g, row, col + 2, s.z, ep);
    store_c(g, row, col + 3, s.w, ep);
  }
};

/// A split-k plan with its fp32 partial tiles (plan.workspace_bytes) from the
/// runtime's pool, returned on `stream` when this object goes out of scope
/// (after the launches are enqueued, or when one throws). Without pool memory
/// the plan falls back to one slice of all of k: the one place that rule lives.
class split_k_workspace {
 public:
  split_k_workspace(split_k_plan plan, std::size_t m, std::size_t n, std::size_t k, int device, cudaStream_t stream)
      : plan_(plan), device_(device), memory_(device, plan.workspace_bytes(m, n), stream) {
    if (memory_.data() == nullptr) plan_ = split_k_plan{1, k};
  }
  [[nodiscard]] const split_k_plan& plan() const noexcept { return plan_; }
  /// The partial tiles (split x m x n floats), nullptr unsplit.
  [[nodiscard]] float* partials() const noexcept { return memory_.data<float>(); }
  /// Enqueues the reduction (alpha, beta and `ep` on the summed slices) when split.
  /// Defined below, out of line (not inline), so that an `extern template`
  /// declaration keeps a translation unit from compiling the reduction's kernel.
  template <class T, class Epilogue>
  void reduce(const gemm_args<T>& g, const Epilogue& ep, cudaStream_t stream) const;

 private:
  split_k_plan plan_;
  int device_;
  pooled_workspace memory_;
};

template <class T, class Epilogue>
void split_k_workspace::reduce(const gemm_args<T>& g, const Epilogue& ep, cudaStream_t stream) const {
  if (partials() == nullptr) return;
  const matmul_split_k_store<T, Epilogue> store{g, ep,
                                                std::is_same_v<T, float> && rows_aligned(g.C, g.ldc, sizeof(T), 16)};
  launch_split_k_reduce(device_, partials(), g.m, g.n, plan_.split, store, stream, "kf::matmul (split-k reduction)");
}

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
/// (plan_matmul_split_k): sets x.k_slice and x.workspace (partial tiles, from the
/// runtime's pool; nullptr unsplit), calls launch(grid) with grid (tiles, 1,
/// split) to enqueue the kernel on `stream`, then the reduction, which applies
/// alpha, beta and `ep`. Without pool memory it runs unsplit. Params: the
/// kernel's parameter block (tile_params).
template <class Params, class Epilogue, class Launch>
void launch_split_k(const gemm_args<float>& g, Params& x, std::size_t tiles, int block_k, int resident_blocks,
                    int device, const Epilogue& ep, cudaStream_t stream, Launch&& launch) {
  const split_k_workspace split(plan_matmul_split_k(tiles, g.m, g.n, g.k, block_k, resident_blocks), g.m, g.n, g.k,
                                device, stream);
  x.workspace = split.partials();
  x.k_slice = split.plan().k_slice;
  launch(dim3(static_cast<unsigned>(tiles), 1, static_cast<unsigned>(split.plan().split)));
  split.reduce(g, ep, stream);
}

}  // namespace kf::detail
