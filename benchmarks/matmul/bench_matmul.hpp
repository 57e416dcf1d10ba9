// SPDX-License-Identifier: Apache-2.0
// What bench_matmul's translation units share: bench_matmul.cu holds the rows
// against cuBLAS and main, bench_matmul_pack.cu the wgmma steps' repack pass
// timed alone.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kf::bench::matmul {

/// data[0 .. n): magnitudes in [0.5, 1) with a random sign (never zero, never
/// denormal), from a hash of (seed, index); enqueued on the default stream.
void fill_random(float* data, std::size_t n, std::uint64_t seed);

/// Registers the matmul/pack/ rows (bench_matmul_pack.cu).
void register_pack();

}  // namespace kf::bench::matmul
