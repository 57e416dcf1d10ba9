// SPDX-License-Identifier: Apache-2.0
// The kernel behind kf::transform (include/kernelforge/transform.cuh): step 2's
// vectorized kernel (02_vectorized.cuh) generalized to 1-4 inputs of any
// trivially copyable types, which may differ from each other and from the
// output (int8 in, float out), and to any device-callable op.
//
// What it keeps from step 2: W elements per access, all of a thread's loads
// issued before it computes, a scalar head peeled so that every pointer is
// aligned from then on, a scalar path with U elements per thread when no common
// peel exists, 64-bit indices. What it generalizes: W comes from the widest
// type (16 bytes of it), so a narrower type moves W * sizeof(T) < 16 bytes per
// access; a type whose size is not a power of two (or over 16 bytes) runs the
// scalar path.
#pragma once

#include <cstddef>
#include <type_traits>

#include "../common/vector_access.cuh"

namespace kf::detail {

/// W elements of T moved by one access, aligned to W * sizeof(T).
template <class T, int W>
struct alignas(sizeof(T) * W) transform_chunk {
  T v[W];
};

constexpr bool is_power_of_two(std::size_t v) { return v != 0 && (v & (v - 1)) == 0; }

/// Elements per access: 16 bytes of the widest type when every type's size is
/// a power of two of at most 16 bytes, else 1.
template <class Out, class... In>
constexpr int transform_width() {
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
struct transform_stage {
  transform_chunk<T, W> c[U];
};

template <class T, int W, int U>
__device__ __forceinline__ transform_stage<T, W, U> transform_load(const T* p, std::size_t base, std::size_t step) {
  const auto* chunks = reinterpret_cast<const transform_chunk<T, W>*>(p);
  transform_stage<T, W, U> s;
#pragma unroll
  for (int u = 0; u < U; ++u) s.c[u] = chunks[base + u * step];
  return s;
}

/// Computes and stores U chunks from the staged inputs (all loaded by now).
template <int W, int U, class Op, class Out, class... Stage>
__device__ __forceinline__ void transform_store(const Op& op, Out* out, std::size_t base, std::size_t step,
                                                const Stage&... in) {
  auto* chunks = reinterpret_cast<transform_chunk<Out, W>*>(out);
#pragma unroll
  for (int u = 0; u < U; ++u) {
    transform_chunk<Out, W> r;
#pragma unroll
    for (int w = 0; w < W; ++w) r.v[w] = static_cast<Out>(op(in.c[u].v[w]...));
    chunks[base + u * step] = r;
  }
}

/// out[i] = op(in[0][i], ...) for i < n. Elements [0, head) one by one; from
/// `head` on every pointer is aligned to W * sizeof(its type).
/// Plain __global__, not KF_KERNEL: it is instantiated in the user's own
/// translation unit, often with types of internal linkage (a functor in an
/// anonymous namespace, a lambda), where a visibility attribute does not apply.
template <int W, int U, class Op, class Out, class... In>
__global__ void transform_kernel(std::size_t n, std::size_t head, Op op, Out* out, const In*... in) {
  const std::size_t chunks = (n - head) / W;
  const std::size_t tile = static_cast<std::size_t>(blockDim.x) * U;  // chunks per block per step
  const std::size_t full_tiles = chunks / tile;
  Out* const out_aligned = out + head;

  // Full tiles: every input's U chunks loaded back to back (the pack expansion
  // runs before transform_store's body), then U stores. No bounds checks.
  for (std::size_t t = blockIdx.x; t < full_tiles; t += gridDim.x) {
    const std::size_t base = t * tile + threadIdx.x;
    transform_store<W, U>(op, out_aligned, base, blockDim.x, transform_load<In, W, U>(in + head, base, blockDim.x)...);
  }

  // The last partial tile, then the scalar head and tail: grid-stride, one at a time.
  const std::size_t thread = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t c = full_tiles * tile + thread; c < chunks; c += threads) {
    transform_store<W, 1>(op, out_aligned, c, 0, transform_load<In, W, 1>(in + head, c, 0)...);
  }
  for (std::size_t i = thread; i < head; i += threads) out[i] = static_cast<Out>(op(in[i]...));
  for (std::size_t i = head + chunks * W + thread; i < n; i += threads) out[i] = static_cast<Out>(op(in[i]...));
}

}  // namespace kf::detail
