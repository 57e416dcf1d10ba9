// SPDX-License-Identifier: Apache-2.0
// Host cost of one call: what kf::saxpy adds (validation, the cached plan, the
// launch-error check) over a bare <<<>>> launch of the tutorial saxpy kernel.
//
// Both enqueue batches of launch_batch calls at n = 1 on their own stream; only
// the enqueue loop is timed, with std::chrono (host wall time, fed to Google
// Benchmark as the iteration time), and the stream is drained after each batch,
// outside the timed region. Counters: ns_per_call for both; on kf_saxpy also
// overhead_ns = kf_saxpy - bare_launch (the goal: < 1000 ns per call).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "bench_inputs.cuh"
#include "gpu_benchmark.hpp"
#include "launch_overhead.hpp"

namespace kf::bench::elementwise {
namespace {

/// The classic tutorial kernel: one element per thread, no checks.
__global__ void bare_saxpy_kernel(std::size_t n, float a, const float* x, float* y) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

constexpr std::size_t overhead_n = 1;  // the GPU work is negligible: only the host cost shows
constexpr int bare_block = 256;
constexpr float overhead_alpha = 1e-3f;  // keeps y finite across every call
// Enqueues per sample: enough to make the two clock reads negligible, few
// enough never to fill the device's launch queue (about a thousand entries),
// where enqueueing would block and time the GPU instead of the host.
constexpr int launch_batch = 256;
constexpr int warmup_batches = 4;  // first calls build kernelforge's per-device caches
constexpr std::int64_t overhead_iterations = 200;

/// ns per call of the bare launch, for kf_saxpy's overhead_ns (0 until measured).
double& bare_ns_per_call() {
  static double ns = 0;
  return ns;
}

struct owned_stream {
  cudaStream_t stream = nullptr;
  owned_stream() { check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~owned_stream() { cudaStreamDestroy(stream); }
  owned_stream(const owned_stream&) = delete;
  owned_stream& operator=(const owned_stream&) = delete;
};

/// Times batches of `enqueue()` calls; returns host ns per call.
template <class Enqueue>
double time_enqueues(benchmark::State& state, cudaStream_t stream, Enqueue&& enqueue) {
  for (int b = 0; b < warmup_batches; ++b) {
    for (int k = 0; k < launch_batch; ++k) enqueue();
    check(cudaStreamSynchronize(stream), "warm-up");
  }
  double total_s = 0;
  std::int64_t calls = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < launch_batch; ++k) enqueue();
    const auto stop = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(stop - start).count();
    state.SetIterationTime(seconds);
    total_s += seconds;
    calls += launch_batch;
    check(cudaStreamSynchronize(stream), "draining the batch");  // not timed
  }
  check(cudaGetLastError(), "launch overhead batch");
  const double ns = calls ? total_s / static_cast<double>(calls) * 1e9 : 0.0;
  state.counters["ns_per_call"] = ns;
  state.counters["calls_per_iteration"] = launch_batch;
  return ns;
}

void bm_bare_launch(benchmark::State& state) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    owned_stream s;
    kf::device_buffer<float> x(overhead_n), y(overhead_n);
    fill_random(x.data(), overhead_n, /*seed=*/4, s.stream);
    fill_random(y.data(), overhead_n, /*seed=*/5, s.stream);
    const unsigned grid = static_cast<unsigned>((overhead_n + bare_block - 1) / bare_block);
    bare_ns_per_call() = time_enqueues(state, s.stream, [&] {
      bare_saxpy_kernel<<<grid, bare_block, 0, s.stream>>>(overhead_n, overhead_alpha, x.data(), y.data());
    });
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void bm_kf_saxpy_launch(benchmark::State& state) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    owned_stream s;
    kf::device_buffer<float> x(overhead_n), y(overhead_n);
    fill_random(x.data(), overhead_n, /*seed=*/4, s.stream);
    fill_random(y.data(), overhead_n, /*seed=*/5, s.stream);
    kf::elementwise_options options;  // the default path a user gets: variant best
    options.stream = s.stream;
    const double ns =
        time_enqueues(state, s.stream, [&] { kf::saxpy(overhead_n, overhead_alpha, x.data(), y.data(), options); });
    if (bare_ns_per_call() > 0) {
      state.counters["bare_ns_per_call"] = bare_ns_per_call();
      state.counters["overhead_ns"] = ns - bare_ns_per_call();
    }
  } catch (const std::exception& e) {  // a kf::error must fail loudly, not be timed
    state.SkipWithError(e.what());
  }
}

}  // namespace

void register_launch_overhead_benchmarks() {
  benchmark::RegisterBenchmark("launch_overhead/bare_launch", bm_bare_launch)
      ->Iterations(overhead_iterations)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("launch_overhead/kf_saxpy", bm_kf_saxpy_launch)
      ->Iterations(overhead_iterations)
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace kf::bench::elementwise
