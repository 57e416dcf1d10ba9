// SPDX-License-Identifier: Apache-2.0
// Step 2 -- vectorized: 16-byte loads and stores, all of a thread's loads
// issued before the first use, a grid-stride loop that is correct for any n.
//
// What changes from naive, and why it is faster:
//  * Each access moves a 16-byte chunk (4 floats, 8 halves, 2 doubles): a
//    quarter of naive's load/store instructions for fp32, an eighth for halves,
//    so each warp keeps 4-8x more bytes in flight per instruction issued.
//  * Each thread issues its U chunks of every input back to back before it
//    computes, so they overlap (Little's law: bandwidth = bytes in flight /
//    latency). On the H200 U = 1 measured best: with one tile per block, the
//    resident threads already keep enough bytes in flight.
//  * Alignment: 16-byte accesses need 16-byte aligned addresses. When all
//    pointers sit at the same offset from a 16-byte boundary, the first `head`
//    elements are peeled off as scalars and the rest is aligned. When they sit
//    at different offsets no common peel exists, and the launcher instantiates
//    this kernel with one-element chunks, 4 per thread.
//  * 64-bit indices throughout: correct past 2^31 elements.
//
// This is the library's one elementwise kernel: step 1 is its scalar setting
// (W = 1, U = 1, one thread per element; see 01_naive.cuh), kf::saxpy and the
// other precompiled operations are its instantiations with the functors of
// ops.cuh, and kf::transform (include/kernelforge/transform.cuh) instantiates
// it with yours. Hence its generality: 1-4 inputs of any trivially copyable
// types, which may differ from each other and from the output (int8 in, float
// out), and any device-callable op. W comes from the widest type (16 bytes of
// it), so a narrower type moves W * sizeof(T) < 16 bytes per access; a type
// whose size is not a power of two (or over 16 bytes) runs the scalar path.
// Launch planning: launch.cuh. Tuning (chunks per thread, grid size): tuning.hpp, with its data.
// Its measured speed: the docs site's learning path (docs/build_site.py) and benchmarks/tuning/elementwise.md
// (bench_elementwise).
#pragma once

#include <cstddef>

#include "../common/vector_access.cuh"
#include "01_naive.cuh"

namespace kf::detail {

/// W elements of T moved by one access, aligned to W * sizeof(T).
template <class T, int W>
struct alignas(sizeof(T) * W) chunk {
  T v[W];
};

constexpr bool is_power_of_two(std::size_t v) { return v != 0 && (v & (v - 1)) == 0; }

/// Elements per access: 16 bytes of the widest type when every type's size is
/// a power of two of at most 16 bytes, else 1.
template <class Out, class... In>
constexpr int vector_width() {
  constexpr bool vectorizable = (is_power_of_two(sizeof(Out)) && ... && is_power_of_two(sizeof(In))) &&
                                sizeof(Out) <= vector_bytes && ((sizeof(In) <= vector_bytes) && ...);
  if constexpr (!vectorizable) {
    return 1;
  } else {
    std::size_t widest = sizeof(Out);
    ((widest = sizeof(In) > widest ? sizeof(In) : widest), ...);
    return static_cast<int>(vector_bytes / widest);
  }
}

/// U chunks of one input, loaded before anything is computed.
template <class T, int W, int U>
struct chunk_stage {
  chunk<T, W> c[U];
};

template <class T, int W, int U>
__device__ __forceinline__ chunk_stage<T, W, U> load_chunks(const T* p, std::size_t base, std::size_t step) {
  const auto* chunks = reinterpret_cast<const chunk<T, W>*>(p);
  chunk_stage<T, W, U> s;
#pragma unroll
  for (int u = 0; u < U; ++u) s.c[u] = chunks[base + u * step];
  return s;
}

/// Computes and stores U chunks from the staged inputs (all loaded by now).
template <int W, int U, class Op, class Out, class... Stage>
__device__ __forceinline__ void store_chunks(const Op& op, Out* out, std::size_t base, std::size_t step,
                                             const Stage&... in) {
  auto* chunks = reinterpret_cast<chunk<Out, W>*>(out);
#pragma unroll
  for (int u = 0; u < U; ++u) {
    chunk<Out, W> r;
#pragma unroll
    for (int w = 0; w < W; ++w) r.v[w] = static_cast<Out>(op(in.c[u].v[w]...));
    chunks[base + u * step] = r;
  }
}

/// out[i] = op(in[0][i], ...) for i < n. Elements [0, head) one by one; from
/// `head` on every pointer is aligned to W * sizeof(its type). W = U = 1 is
/// step 1, which needs one thread per element and head = 0; any other setting
/// is correct with any grid.
/// Plain __global__, not KF_KERNEL: kf::transform instantiates it in the user's
/// own translation unit, often with types of internal linkage (a functor in an
/// anonymous namespace, a lambda), where a visibility attribute does not apply.
/// (The library's own instantiations are hidden by its CUDA_VISIBILITY_PRESET.)
template <int W, int U, class Op, class Out, class... In>
__global__ void elementwise_kernel(std::size_t n, std::size_t head, Op op, Out* out, const In*... in) {
  if constexpr (W == 1 && U == 1) {
    // Step 1's setting (01_naive.cuh): one element per access and per thread,
    // launched with one thread per element (plan_one_per_thread, never a
    // grid-stride plan). Then there is no head, no tail and one tile per block,
    // and what the code below does reduces to this.
    const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    if (i < n) element_at(op, out, i, in...);
  } else {
    const std::size_t chunks = (n - head) / W;
    const std::size_t tile = static_cast<std::size_t>(blockDim.x) * U;  // chunks per block per step
    const std::size_t full_tiles = chunks / tile;
    Out* const out_aligned = out + head;

    // Full tiles: every input's U chunks loaded back to back (the pack expansion
    // runs before store_chunks' body), then U stores. No bounds checks.
    for (std::size_t t = blockIdx.x; t < full_tiles; t += gridDim.x) {
      const std::size_t base = t * tile + threadIdx.x;
      store_chunks<W, U>(op, out_aligned, base, blockDim.x, load_chunks<In, W, U>(in + head, base, blockDim.x)...);
    }

    // The last partial tile, then the scalar head and tail: grid-stride, one at a time.
    const std::size_t thread = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t c = full_tiles * tile + thread; c < chunks; c += threads) {
      store_chunks<W, 1>(op, out_aligned, c, 0, load_chunks<In, W, 1>(in + head, c, 0)...);
    }
    for (std::size_t i = thread; i < head; i += threads) element_at(op, out, i, in...);
    for (std::size_t i = head + chunks * W + thread; i < n; i += threads) element_at(op, out, i, in...);
  }
}

}  // namespace kf::detail
