// SPDX-License-Identifier: Apache-2.0
// A progress line per benchmark case on stderr ("[bench 12, 95 s] matmul/...
// done (0.41 s, 0.30 s sampling)"), so a user running the whole suite (minutes)
// sees it working, also when stdout goes to a file or ctest, and sees where a
// case's time went: its wall time, and how much of it its sample loops took
// (time_gpu / time_gpu_paired: the samples, the L2 flush and the event wait
// before each); the rest is its setup (inputs, plans, vendor searches, checks).
// The tables still print on stdout through Google Benchmark's console
// reporter, which this wraps.
//
// Usage, in main():  const bool tabular = kf::bench::wants_tabular(argc, argv);  (before Initialize)
//                    ... benchmark::Initialize(&argc, argv); ...
//                    kf::bench::run_with_progress(tabular);
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include <unistd.h>

namespace kf::bench {

/// Seconds the case being run has spent in its sample loops so far (every run
/// Google Benchmark makes of it, its estimating runs included); reset as each
/// case is reported.
inline double& case_sampling_seconds() {
  static double seconds = 0;
  return seconds;
}

/// Adds the seconds of its scope (a sample loop of time_gpu / time_gpu_paired)
/// to case_sampling_seconds().
class sampling_scope {
 public:
  sampling_scope() = default;
  sampling_scope(const sampling_scope&) = delete;
  sampling_scope& operator=(const sampling_scope&) = delete;
  ~sampling_scope() {
    case_sampling_seconds() += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

class progress_reporter : public benchmark::ConsoleReporter {
 public:
  explicit progress_reporter(OutputOptions options) : ConsoleReporter(options) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    if (runs.empty()) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stderr, "[bench %zu, %.0f s] %s done (%.2f s, %.2f s sampling)\n", ++cases_, s,
                 runs.front().benchmark_name().c_str(), s - last_, case_sampling_seconds());
    std::fflush(stderr);
    last_ = s;
    case_sampling_seconds() = 0;
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_ = 0;  // seconds since start_ when the last case was reported
  std::size_t cases_ = 0;
};

/// --benchmark_counters_tabular=true on the command line (read before Initialize removes it).
inline bool wants_tabular(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--benchmark_counters_tabular=true") == 0 ||
        std::strcmp(argv[i], "--benchmark_counters_tabular") == 0)
      return true;
  }
  return false;
}

/// RunSpecifiedBenchmarks with the progress reporter as the display reporter
/// (--benchmark_out still writes the JSON file).
inline std::size_t run_with_progress(bool tabular) {
  int options = benchmark::ConsoleReporter::OO_Defaults & ~benchmark::ConsoleReporter::OO_Color;
  if (isatty(fileno(stdout))) options |= benchmark::ConsoleReporter::OO_Color;
  if (tabular) options |= benchmark::ConsoleReporter::OO_Tabular;
  progress_reporter reporter(static_cast<benchmark::ConsoleReporter::OutputOptions>(options));
  return benchmark::RunSpecifiedBenchmarks(&reporter);
}

}  // namespace kf::bench
