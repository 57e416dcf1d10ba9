// SPDX-License-Identifier: Apache-2.0
// What bench_conv's translation units share for registering their rows:
// bench_conv.cu holds the conv2d and conv2d_bias_relu rows, the one registrar
// (which registers every file's rows, in the order the ratios need) and main;
// bench_conv_fp32_emulated.cu the fp32_emulated pairs; bench_conv_nhwc.cu the
// conv2d_nhwc rows; bench_filter2d.cu the filter2d rows. How they time cuDNN and check against it: cudnn_timing.hpp.
#pragma once

#include <benchmark/benchmark.h>

#include "conv_problem.hpp"
#include "gpu_benchmark.hpp"

namespace kf::bench::conv {

// Every benchmark runs for at least this much GPU time (KF_BENCH_MIN_TIME
// overrides it: gpu_benchmark.hpp, min_time_seconds): 0.1 s is over 100 samples
// of the slowest row timed this way (filter2d constant_memory 5x5, 0.93 ms) and
// 500 to 2000 of the convolutions (at 0.25 s the binary took 94 s).
constexpr double min_time_s = 0.1;

/// iterations > 0: a fixed count instead of the minimum time (Google Benchmark takes one or the other).
inline benchmark::internal::Benchmark* configure(benchmark::internal::Benchmark* b, int iterations = 0) {
  b->UseManualTime()->Unit(benchmark::kMillisecond);
  return iterations > 0 ? b->Iterations(iterations) : b->MinTime(min_time_seconds(min_time_s));
}

/// The conv2d/<fp32|tf32>/cudnn row of layer L (bench_conv.cu); the
/// conv2d_nhwc/tf32/cudnn_nchw rows run it on the layers conv2d/tf32 lacks.
void bm_conv_cudnn(benchmark::State& state, const layer& L, bool tf32);

/// The conv2d/fp32_emulated/best_vs_cudnn row of layer L (bench_conv_fp32_emulated.cu)
/// under `math` (fp32_emulated, or exact), in L's layout: the conv2d_nhwc/fp32_emulated
/// and conv2d_nhwc/fp32 rows run it on the NHWC layers.
void bm_conv_fp32_vs_cudnn(benchmark::State& state, const layer& L, kf::math_mode math);

/// Registers the conv2d/fp32_emulated/ rows (bench_conv_fp32_emulated.cu).
void register_conv2d_fp32_emulated();

/// Registers the conv2d_nhwc/ rows (bench_conv_nhwc.cu), after the conv2d/tf32/cudnn rows they read.
void register_conv2d_nhwc();

/// Registers the paired conv2d_nhwc rows (bench_conv_nhwc_pairs.cu), from register_conv2d_nhwc.
void register_conv2d_nhwc_pairs();

/// Registers the conv2d_backward/ rows (bench_conv_backward.cu): the gradients against cuDNN's, paired.
void register_conv2d_backward();

/// Registers the filter2d/ rows (bench_filter2d.cu).
void register_filter2d();

}  // namespace kf::bench::conv
