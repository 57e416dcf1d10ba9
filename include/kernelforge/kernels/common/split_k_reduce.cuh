// SPDX-License-Identifier: Apache-2.0
// The split-k reduction matmul and conv2d share: a split GEMM leaves `split`
// fp32 partial slabs in its workspace, each laid out as rows x cols dense
// (matmul: m x n; conv2d: N*K x P*Q, the layout of y), and this kernel sums
// them and hands each sum to a family's store functor, which applies what the
// partials leave out, once, to the full sum (matmul: alpha, beta and C, then
// the epilogue; conv2d: the bias, then the epilogue) and writes the output.
//
// Deterministic: every output sums its slabs in the fixed order z = 0, 1, ...
// -- no atomics, the same bits on every run. The slabs' loads are issued
// split_k_reduce_batch at a time and then added in that order: one load's
// latency per batch, not per slab (a wgrad's 44 slabs of a 64 x 576 tile took
// 18 us one load after another). Memory-bound: a grid-stride loop
// over the slab's elements (at most split_k_reduce_blocks_per_sm blocks per
// SM, enough loads in flight to saturate HBM), with float4 loads where
// cols % 4 == 0 (then the 4 sums share a row, and every slab of the pool's
// aligned workspace is 16-byte aligned); scalar otherwise.
//
// The store functor: a copyable object with
//   __device__ void operator()(int i, int row, int col, float sum) const;
//   __device__ void operator()(int i, int row, int col, float4 sums) const;
// i: the slab index of the (first) element, row * cols + col; the float4 form
// gets columns col .. col + 3 of `row` (only called where cols % 4 == 0).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "../runtime/launcher.hpp"
#include "fast_divmod.cuh"
#include "grid.hpp"
#include "kernel.cuh"
#include "vector_access.cuh"

namespace kf::detail {

constexpr int split_k_reduce_block = 256;
/// Blocks per SM the reduction launches at most (grid-stride beyond): enough
/// loads in flight to saturate HBM.
constexpr int split_k_reduce_blocks_per_sm = 8;
/// Slab loads in flight per thread (added in slab order after they land).
constexpr int split_k_reduce_batch = 8;

/// How split_k_sum_slabs reads a slab: plain loads (the reduction kernel, launched
/// after the slabs were written), or through L2 only (slabs that other CTAs of
/// the same launch wrote: conv2d's gradient step 3, wgrad_wgmma/slab_sum.cuh).
struct slab_load_plain {
  template <class V>
  __device__ __forceinline__ V operator()(const V* p) const {
    return *p;
  }
};
struct slab_load_l2 {
  template <class V>
  __device__ __forceinline__ V operator()(const V* p) const {
    return __ldcg(p);
  }
};

/// s += the slabs z = 1 .. split - 1 of element i (slab stride `slab`), in
/// order, their loads issued split_k_reduce_batch at a time.
template <class V, class Add, class Load = slab_load_plain>
__device__ __forceinline__ void split_k_sum_slabs(V& s, const V* __restrict__ slabs, std::size_t slab, std::size_t i,
                                                  int split, Add add, Load load = {}) {
  int z = 1;
  for (; z + split_k_reduce_batch <= split; z += split_k_reduce_batch) {
    V v[split_k_reduce_batch];
#pragma unroll
    for (int j = 0; j < split_k_reduce_batch; ++j) v[j] = load(slabs + (z + j) * slab + i);
#pragma unroll
    for (int j = 0; j < split_k_reduce_batch; ++j) add(s, v[j]);
  }
  for (; z < split; ++z) add(s, load(slabs + z * slab + i));
}

/// The float4 sum split_k_sum_slabs adds with.
struct add_float4 {
  __device__ __forceinline__ void operator()(float4& a, const float4& v) const {
    a.x += v.x;
    a.y += v.y;
    a.z += v.z;
    a.w += v.w;
  }
};

/// workspace: `split` slabs of `count` (= rows x cols < 2^31) floats; cols: the
/// slab's row length; vector: cols % 4 == 0 and the workspace 16-byte aligned.
template <class Store>
KF_KERNEL void __launch_bounds__(split_k_reduce_block)
    split_k_reduce(const float* __restrict__ workspace, int count, fast_divmod cols, int split, bool vector,
                   Store store) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * split_k_reduce_block;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * split_k_reduce_block + threadIdx.x;
  if (vector) {
    const auto* ws4 = reinterpret_cast<const float4*>(workspace);
    const std::size_t slab4 = static_cast<std::size_t>(count) / 4;
    for (std::size_t i = first; i < slab4; i += stride) {
      float4 s = ws4[i];
      split_k_sum_slabs(s, ws4, slab4, i, split, add_float4{});
      const int e = static_cast<int>(i * 4);
      int row, col;
      cols.divmod(e, row, col);
      store(e, row, col, s);
    }
    return;
  }
  const auto n = static_cast<std::size_t>(count);
  for (std::size_t i = first; i < n; i += stride) {
    float s = workspace[i];
    split_k_sum_slabs(s, workspace, n, i, split, [](float& a, float v) { a += v; });
    const int e = static_cast<int>(i);
    int row, col;
    cols.divmod(e, row, col);
    store(e, row, col, s);
  }
}

/// Whether split_k_reduce reads a workspace of slabs with `cols` columns as float4.
inline bool split_k_reduce_vector(const float* workspace, std::size_t cols) {
  return cols % 4 == 0 && misalignment(workspace) == 0;
}

/// Enqueues split_k_reduce on `stream` over `split` slabs of rows x cols
/// floats (rows x cols < 2^31: the caller's plan keeps it there), `store`
/// writing each sum: at most split_k_reduce_blocks_per_sm blocks per SM of
/// `device` (cached limits: no query). `what` names the call in errors.
template <class Store>
void launch_split_k_reduce(int device, const float* workspace, std::size_t rows, std::size_t cols, int split,
                           const Store& store, cudaStream_t stream, const char* what) {
  const bool vector = split_k_reduce_vector(workspace, cols);
  const std::size_t count = rows * cols;
  const int sms = limits_for(device).sm_count;
  const std::size_t cap = static_cast<std::size_t>(sms > 0 ? sms : 1) * split_k_reduce_blocks_per_sm;
  const std::size_t needed = ceil_div(vector ? count / 4 : count, split_k_reduce_block);
  const auto grid = static_cast<std::uint32_t>(needed < cap ? needed : cap);
  split_k_reduce<Store><<<grid, split_k_reduce_block, 0, stream>>>(
      workspace, static_cast<int>(count), fast_divmod(static_cast<unsigned>(cols)), split, vector, store);
  check_launch(what);
}

}  // namespace kf::detail
