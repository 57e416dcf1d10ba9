// SPDX-License-Identifier: Apache-2.0
// Step 2 -- vectorized: 16-byte loads and stores, all of a thread's loads
// issued before the first use, a grid-stride loop that is correct for any n.
//
// What changes from naive, and why it is faster:
//  * Each access moves a 16-byte chunk (4 floats, 8 halves, 2 doubles): a
//    quarter of naive's load/store instructions for fp32, an eighth for halves,
//    so each warp keeps 4-8x more bytes in flight per instruction issued.
//  * Each thread issues its U x N loads (U chunks of each of N inputs) back to
//    back before it computes, so they overlap (Little's law: bandwidth =
//    bytes in flight / latency). On the H200 U = 1 measured best: with one
//    tile per block, the resident threads already keep enough bytes in flight.
//  * Alignment: 16-byte accesses need 16-byte aligned addresses. When all
//    pointers sit at the same offset from a 16-byte boundary, the first `head`
//    elements are peeled off as scalars and the rest is aligned. When they sit
//    at different offsets no common peel exists, and the launcher instantiates
//    this kernel with one-element chunks, 4 per thread.
//  * 64-bit indices throughout: correct past 2^31 elements.
// Tuning (chunks per thread, grid size) lives in tuning.hpp with its data.
// Its measured speed: the README's generated tables and benchmarks/TUNING.md (bench_elementwise).
#pragma once

#include <cstddef>

#include "../common/kernel.cuh"
#include "../common/vector_access.cuh"
#include "apply.cuh"

namespace kf::detail {

/// W consecutive elements moved by one access (W * sizeof(T) bytes, aligned to that).
template <class T, int W>
struct alignas(sizeof(T) * W) chunk {
  T v[W];
};

/// Elements per 16-byte chunk.
template <class T>
constexpr int aligned_chunk_elements = static_cast<int>(vector_bytes / sizeof(T));

template <class T, int N, int W, class Op>
__device__ __forceinline__ chunk<T, W> apply_chunk(const Op& op, const chunk<T, W> (&v)[N]) {
  chunk<T, W> r;
#pragma unroll
  for (int w = 0; w < W; ++w) {
    if constexpr (N == 1) {
      r.v[w] = apply_op(op, v[0].v[w]);
    } else {
      r.v[w] = apply_op(op, v[0].v[w], v[1].v[w]);
    }
  }
  return r;
}

/// out[i] = op(in[0][i], ...) for i < n. Elements [0, head) are done one by
/// one; from `head` on, every pointer must be aligned to W * sizeof(T).
template <class T, int N, int W, int U, class Op>
KF_KERNEL void elementwise_vectorized(std::size_t n, std::size_t head, Op op, input_pointers<T, N> in, T* out) {
  using chunk_t = chunk<T, W>;
  const std::size_t chunks = (n - head) / W;
  const std::size_t tile = static_cast<std::size_t>(blockDim.x) * U;  // chunks per block per step
  const std::size_t full_tiles = chunks / tile;

  const chunk_t* in_chunks[N];
#pragma unroll
  for (int k = 0; k < N; ++k) in_chunks[k] = reinterpret_cast<const chunk_t*>(in.p[k] + head);
  chunk_t* out_chunks = reinterpret_cast<chunk_t*>(out + head);

  // Full tiles: U loads per input issued back to back, then U stores. No bounds checks.
  for (std::size_t t = blockIdx.x; t < full_tiles; t += gridDim.x) {
    const std::size_t base = t * tile + threadIdx.x;
    chunk_t v[U][N];
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int k = 0; k < N; ++k) v[u][k] = in_chunks[k][base + u * blockDim.x];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) out_chunks[base + u * blockDim.x] = apply_chunk<T, N, W>(op, v[u]);
  }

  // The last partial tile, the scalar head and the scalar tail: grid-stride, one at a time.
  const std::size_t thread = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t c = full_tiles * tile + thread; c < chunks; c += threads) {
    chunk_t v[N];
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = in_chunks[k][c];
    out_chunks[c] = apply_chunk<T, N, W>(op, v);
  }
  for (std::size_t i = thread; i < head; i += threads) out[i] = apply_at(op, in, i);
  for (std::size_t i = head + chunks * W + thread; i < n; i += threads) out[i] = apply_at(op, in, i);
}

}  // namespace kf::detail
