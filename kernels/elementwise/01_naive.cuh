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
// Its measured speed: the README's generated tables and benchmarks/TUNING.md (bench_elementwise).
#pragma once

#include <cstddef>

#include "../common/kernel.cuh"
#include "apply.cuh"

namespace kf::detail {

template <class T, int N, class Op>
KF_KERNEL void elementwise_naive(std::size_t n, Op op, input_pointers<T, N> in, T* out) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = apply_at(op, in, i);
}

}  // namespace kf::detail
