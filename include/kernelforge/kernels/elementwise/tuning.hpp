// SPDX-License-Identifier: Apache-2.0
// Tuning of the vectorized elementwise kernel, data only, in one place: each
// constant with the measurement behind it (NVIDIA H200, fp32 saxpy unless
// stated, CUDA events, L2 flushed, median of 11; scratch probe, 2026-11-29) and
// one evidence line naming its section of benchmarks/tuning/elementwise.md.
#pragma once

namespace kf::detail::elementwise_tuning {

/// Aligned path: one 16-byte chunk per thread per input (so a thread has one
/// 16-byte load in flight per input; the many resident threads supply the
/// parallelism). n = 2^28, 256-thread blocks: saxpy 4344 GB/s with 1 chunk,
/// 4281 with 2, 4285 with 4, 4255 with 8; ReLU forward 4255 GB/s with 1,
/// 4130 with 2, 4100 with 4 (copy in the same run: 4252).
/// Evidence: benchmarks/tuning/elementwise.md#aligned_chunks_per_thread
constexpr int aligned_chunks_per_thread = 1;

/// Misaligned path (pointers at different offsets from a 16-byte boundary):
/// one-element chunks, 4 per thread. n = 2^28: 4251 GB/s with 4, 3793 with 8,
/// 3770 with 16, 2653 with 1.
/// Evidence: benchmarks/tuning/elementwise.md#scalar_chunks_per_thread
constexpr int scalar_chunks_per_thread = 4;

/// No wave cap: one tile per block. n = 2^28: 4285 GB/s uncapped vs 4049 with
/// one full wave, 4073 with 2, 4097 with 4, 4141 with 8, 4195 with 16 waves.
/// Many short blocks let the block scheduler keep every SM's memory pipe full
/// through each block's start and finish, which a long grid-stride loop in a
/// single wave does not.
/// Evidence: benchmarks/tuning/elementwise.md#max_waves
constexpr int max_waves = 0;

}  // namespace kf::detail::elementwise_tuning
