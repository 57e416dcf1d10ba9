// SPDX-License-Identifier: Apache-2.0
// Step 1 -- naive: one thread per element, the kernel of every CUDA tutorial.
//
//   i = blockIdx.x * blockDim.x + threadIdx.x;  if (i < n) out[i] = op(in[i]);
//
// Correct for any n and any alignment, and already coalesced: consecutive
// threads touch consecutive 4-byte words. What it leaves on the table: each
// thread makes one narrow load per input and then exits, so few bytes are in
// flight per SM and a block's launch overhead is paid every 256 elements.
// The index is computed in 64 bits: `int i` overflows past 2^31 elements.
//
// The library has one elementwise kernel, elementwise_kernel in
// 02_vectorized.cuh; this step is its scalar setting: one element per access
// (W = 1) and one access per thread (U = 1), launched with one thread per
// element (plan_one_per_thread: grid = ceil(n / block)), where its tiles, head
// and tail reduce to the line above, with element_at below as its body.
// Its measured speed: the docs site's learning path (docs/build_site.py) and benchmarks/tuning/elementwise.md
// (bench_elementwise).
#pragma once

#include <cstddef>

namespace kf::detail {

/// out[i] = op(in0[i], in1[i], ...), one element (also step 2's scalar head and tail).
template <class Op, class Out, class... In>
__device__ __forceinline__ void element_at(const Op& op, Out* out, std::size_t i, const In*... in) {
  out[i] = static_cast<Out>(op(in[i]...));
}

}  // namespace kf::detail
