// SPDX-License-Identifier: Apache-2.0
// Benchmark harness shared by every family: GPU timing with CUDA events around
// the GPU work only, the L2 cache flushed before every sample, device identity
// in the JSON context, and rate counters (GB/s, TFLOP/s, fractions of peak).
//
// Usage:
//   static void BM_x(benchmark::State& state) {
//     KF_BENCH_REQUIRE_GPU(state);
//     ... allocate ...
//     kf::bench::time_gpu(state, [&](cudaStream_t s) { kf::saxpy(n, a, x, y, {s}); });
//     kf::bench::set_bandwidth(state, bytes_per_call);
//   }
//   BENCHMARK(BM_x)->UseManualTime()->Unit(benchmark::kMicrosecond);
//   KF_BENCHMARK_MAIN();
#pragma once

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

#include "kernelforge/kernelforge.hpp"
#include "progress.hpp"

namespace kf::bench {

/// Aborts the process with the CUDA error: a benchmark must never time a failure.
inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s failed: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

/// Empty when a GPU is usable, else why not.
inline const std::string& gpu_unavailable_reason() {
  static const std::string reason = [] {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
      cudaGetLastError();
      return std::string("no CUDA GPU: ") + cudaGetErrorString(status);
    }
    return std::string();
  }();
  return reason;
}

#define KF_BENCH_REQUIRE_GPU(state)                                         \
  do {                                                                      \
    if (!::kf::bench::gpu_unavailable_reason().empty()) {                   \
      (state).SkipWithError(::kf::bench::gpu_unavailable_reason().c_str()); \
      return;                                                               \
    }                                                                       \
  } while (0)

/// The device benchmarks run on, queried once.
inline const kf::device_info& device() {
  static const kf::device_info info = kf::get_device_info();
  return info;
}

/// A buffer twice the L2 size, overwritten before each sample so no sample
/// reads data an earlier one left in L2.
class l2_flusher {
 public:
  l2_flusher() {
    int dev = 0, l2_bytes = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, dev), "cudaDeviceGetAttribute(L2)");
    bytes_ = 2 * static_cast<std::size_t>(l2_bytes);
    if (bytes_ != 0) check(cudaMalloc(&buffer_, bytes_), "cudaMalloc(L2 flush buffer)");
  }
  ~l2_flusher() { cudaFree(buffer_); }
  l2_flusher(const l2_flusher&) = delete;
  l2_flusher& operator=(const l2_flusher&) = delete;

  void flush(cudaStream_t stream) {
    if (bytes_ != 0) check(cudaMemsetAsync(buffer_, static_cast<int>(++pass_ & 0xFF), bytes_, stream), "L2 flush");
  }

  static l2_flusher& instance() {
    static l2_flusher flusher;
    return flusher;
  }

 private:
  void* buffer_ = nullptr;
  std::size_t bytes_ = 0;
  unsigned pass_ = 0;
};

/// CUDA events around one sample: L2 flushed (outside the events), `work`
/// enqueued between them, the elapsed GPU time in seconds.
class sample_timer {
 public:
  sample_timer() {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~sample_timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  sample_timer(const sample_timer&) = delete;
  sample_timer& operator=(const sample_timer&) = delete;

  template <class Work>
  double seconds(Work& work, cudaStream_t stream) {
    l2_flusher::instance().flush(stream);
    check(cudaEventRecord(start_, stream), "cudaEventRecord");
    work(stream);
    check(cudaEventRecord(stop_, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms * 1e-3;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

/// Times `work(stream)` per benchmark iteration with CUDA events (manual time),
/// flushing L2 before each sample (outside the events). A few untimed warm-up
/// calls first keep module loading and first-touch costs out. The mean GPU time
/// per call in seconds is stored in state.counters["gpu_s"] for the rate helpers.
template <class Work>
void time_gpu(benchmark::State& state, Work&& work, cudaStream_t stream = nullptr, int warmups = 3) {
  for (int i = 0; i < warmups; ++i) work(stream);
  check(cudaStreamSynchronize(stream), "warm-up");
  sample_timer timer;
  double total_s = 0;
  std::size_t calls = 0;
  {
    const sampling_scope sampling;
    for (auto _ : state) {
      const double s = timer.seconds(work, stream);
      state.SetIterationTime(s);
      total_s += s;
      ++calls;
    }
  }
  check(cudaGetLastError(), "benchmarked work");
  state.counters["gpu_s"] = calls ? total_s / static_cast<double>(calls) : 0.0;
}

/// Times `work` and `baseline` alternately, one sample of each per iteration
/// (the order swapped every iteration), each after an L2 flush; the manual time
/// is work's. Rows timed one after the other can rank two kernels differently
/// when the GPU runs at its power cap, since its clock then follows the energy
/// of the last seconds (the H200, bf16 4096^3: one kernel at 1.015 of cuBLAS in
/// the first row of a run, 0.920 in the last); samples taken in turn see the
/// same clocks. Sets gpu_s and baseline_s, the mean seconds per call of each.
template <class Work, class Baseline>
void time_gpu_paired(benchmark::State& state, Work&& work, Baseline&& baseline, cudaStream_t stream = nullptr,
                     int warmups = 3) {
  for (int i = 0; i < warmups; ++i) {
    work(stream);
    baseline(stream);
  }
  check(cudaStreamSynchronize(stream), "warm-up");
  sample_timer timer;
  double work_s = 0, baseline_s = 0;
  std::size_t calls = 0;
  {
    const sampling_scope sampling;
    for (auto _ : state) {
      double w = 0;
      if (calls % 2 == 0) {
        w = timer.seconds(work, stream);
        baseline_s += timer.seconds(baseline, stream);
      } else {
        baseline_s += timer.seconds(baseline, stream);
        w = timer.seconds(work, stream);
      }
      state.SetIterationTime(w);
      work_s += w;
      ++calls;
    }
  }
  check(cudaGetLastError(), "benchmarked work");
  const double n = calls ? static_cast<double>(calls) : 1.0;
  state.counters["gpu_s"] = work_s / n;
  state.counters["baseline_s"] = baseline_s / n;
}

/// The minimum GPU time a row timed by Google Benchmark's MinTime gathers
/// (bench_conv, bench_scaled_matmul; bench_matmul sizes its iteration counts by
/// it): `fallback` seconds, or the environment's
/// KF_BENCH_MIN_TIME (seconds, at least 0.001) where set. Read when the rows
/// register; a value that is not such a number is a std::invalid_argument
/// (benchmark_main: the binary exits 2, naming it).
inline double min_time_seconds(double fallback) {
  const char* text = std::getenv("KF_BENCH_MIN_TIME");
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(seconds >= 0.001)) {
    throw std::invalid_argument(std::string("KF_BENCH_MIN_TIME=") + text +
                                ": give the minimum GPU time of a row in seconds, at least 0.001 (e.g. 0.05)");
  }
  return seconds;
}

/// The device-to-device copy rate measured in this run (GB/s, read + write),
/// set by the family's copy benchmark; 0 until then.
inline double& copy_rate_gbs() {
  static double rate = 0;
  return rate;
}

/// Counters for a memory-bound call moving `bytes` (each input read once, each
/// output written once): GB/s, fraction of the device's peak, fraction of the copy rate.
inline void set_bandwidth(benchmark::State& state, double bytes) {
  const double s = state.counters["gpu_s"];
  const double gbs = s > 0 ? bytes / s / 1e9 : 0;
  state.counters["GB/s"] = gbs;
  state.counters["frac_peak"] = device().peak_bandwidth_gbs > 0 ? gbs / device().peak_bandwidth_gbs : 0;
  if (copy_rate_gbs() > 0) state.counters["frac_copy"] = gbs / copy_rate_gbs();
  state.counters["bytes"] = bytes;
}

/// The dense tensor-core peak (TFLOP/s) for products of `element_bytes`-byte
/// operands: TF32 (4) taken as 8 x the FP32 peak on compute capability 8.0,
/// 9.x and 10.x (A100, H100/H200, B200), 1 x elsewhere; 16-bit (2) twice it,
/// FP8 (1) four times.
inline double tensor_peak_tflops(std::size_t element_bytes) {
  const kf::device_info& d = device();
  const int cc = d.cc_major * 10 + d.cc_minor;
  const bool datacenter = cc == 80 || (cc >= 90 && cc < 120);
  const double tf32 = d.peak_fp32_tflops * (datacenter ? 8.0 : 1.0);
  return element_bytes >= 4 ? tf32 : tf32 * static_cast<double>(4 / element_bytes);
}

/// Counters for a compute-bound call doing `flops`: TFLOP/s and fraction of
/// `peak_tflops` (default: the device's FP32 peak; a tensor-core call passes
/// tensor_peak_tflops).
inline void set_flops(benchmark::State& state, double flops, double peak_tflops = 0) {
  const double s = state.counters["gpu_s"];
  const double tflops = s > 0 ? flops / s / 1e12 : 0;
  const double peak = peak_tflops > 0 ? peak_tflops : device().peak_fp32_tflops;
  state.counters["TFLOP/s"] = tflops;
  state.counters["frac_peak"] = peak > 0 ? tflops / peak : 0;
}

/// Device identity in the JSON "context" block: name, compute capability, SMs,
/// driver and runtime versions, peaks, and the library's compiled architectures.
inline void add_device_context() {
  if (!gpu_unavailable_reason().empty()) {
    benchmark::AddCustomContext("gpu", "none (" + gpu_unavailable_reason() + ")");
    return;
  }
  const kf::device_info& d = device();
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
  std::string archs;
  for (int a : kf::compiled_architectures()) archs += (archs.empty() ? "" : ",") + std::to_string(a);
  benchmark::AddCustomContext("gpu_name", d.name);
  benchmark::AddCustomContext("gpu_compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor));
  benchmark::AddCustomContext("gpu_sm_count", std::to_string(d.sm_count));
  benchmark::AddCustomContext("gpu_memory_bytes", std::to_string(d.global_memory_bytes));
  benchmark::AddCustomContext("gpu_peak_bandwidth_gbs", std::to_string(d.peak_bandwidth_gbs));
  benchmark::AddCustomContext("gpu_peak_fp32_tflops", std::to_string(d.peak_fp32_tflops));
  benchmark::AddCustomContext("cuda_driver_version", version(driver));
  benchmark::AddCustomContext("cuda_runtime_version", version(runtime));
  benchmark::AddCustomContext("kernelforge_version", KERNELFORGE_VERSION_STRING);
  benchmark::AddCustomContext("kernelforge_architectures", archs);
}

/// What a benchmark binary's main() may add to the default run.
struct main_options {
  const char* binary = nullptr;       ///< its name, for the error below
  void (*register_rows)() = nullptr;  ///< rows registered at run time (after the context)
  const char* note_key = nullptr;     ///< a context entry of its own (with note)
  const char* note = nullptr;
};

/// main() of a benchmark binary: the device context (and the binary's note),
/// then its run-time rows (a std::invalid_argument from them -- a bad
/// KF_BENCH_* setting -- ends the run with status 2), then every row with a
/// progress line per case on stderr.
inline int benchmark_main(int argc, char** argv, const main_options& o = {}) {
  const bool tabular = wants_tabular(argc, argv);
  ::benchmark::Initialize(&argc, argv);
  if (::benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  add_device_context();
  if (o.note_key != nullptr) ::benchmark::AddCustomContext(o.note_key, o.note);
  if (o.register_rows != nullptr) {
    try {
      o.register_rows();  // without a GPU every row reports why (KF_BENCH_REQUIRE_GPU)
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "%s: %s\n", o.binary != nullptr ? o.binary : argv[0], e.what());
      return 2;
    }
  }
  run_with_progress(tabular);
  ::benchmark::Shutdown();
  return 0;
}

}  // namespace kf::bench

/// main() for a family benchmark whose rows register statically: kf::bench::benchmark_main.
#define KF_BENCHMARK_MAIN() \
  int main(int argc, char** argv) { return ::kf::bench::benchmark_main(argc, argv); }
