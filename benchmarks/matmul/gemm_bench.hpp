// SPDX-License-Identifier: Apache-2.0
// What the matmul benchmarks (bench_matmul, bench_scaled_matmul) share: the m x
// n x k shapes (a shape's name and FLOPs, and the list an environment variable
// may give, "MxNxK,MxNxK,...", in place of a benchmark's own), the counter hash
// their inputs and spot checks draw from, and the tensor-core peak their
// frac_peak divides by.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu_benchmark.hpp"

namespace kf::bench {

struct gemm_shape {
  std::size_t m, n, k;
  std::string name() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

/// The shapes `list` names ("MxNxK,MxNxK,..."); `variable` (its environment
/// variable) and `example` go into the error for an entry that is not three
/// positive integers joined by 'x'.
inline std::vector<gemm_shape> parse_gemm_shapes(const char* list, const char* variable, const char* example) {
  std::vector<gemm_shape> out;
  std::string rest(list);
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string item = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    unsigned long long m = 0, n = 0, k = 0;
    char tail = 0;
    if (std::sscanf(item.c_str(), "%llux%llux%llu%c", &m, &n, &k, &tail) != 3 || m == 0 || n == 0 || k == 0) {
      throw std::invalid_argument(std::string(variable) + ": '" + item +
                                  "' is not MxNxK with positive integers; set it to e.g. " + example);
    }
    out.push_back({m, n, k});
  }
  return out;
}

/// splitmix64's finalizer: a well-mixed 64-bit value of x (inputs from an index, spot-check positions).
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// What a pair row (time_gpu_paired) reports beside its first side's TFLOP/s:
/// the second side's rate and the ratio (the second's time / the first's, from
/// the same pairs).
struct pair_names {
  const char* rate;
  const char* ratio;
};
/// Rows of ours against the vendor library: ours first, the library second.
inline constexpr pair_names vs_cublas{"cublas_TFLOP/s", "frac_cublas"};

/// After time_gpu_paired: TFLOP/s and frac_peak of the first side (set_flops),
/// and the second side's rate and the ratio under `names`.
inline void set_pair_counters(benchmark::State& state, double flops, double peak_tflops, pair_names names) {
  set_flops(state, flops, peak_tflops);
  const double first_s = state.counters["gpu_s"], second_s = state.counters["baseline_s"];
  state.counters[names.rate] = second_s > 0 ? flops / second_s / 1e12 : 0.0;
  state.counters[names.ratio] = first_s > 0 ? second_s / first_s : 0.0;
}

/// The environment variable's list, or nullptr where it is unset or empty.
inline const char* environment_gemm_shapes(const char* variable) {
  const char* list = std::getenv(variable);
  return list != nullptr && *list != '\0' ? list : nullptr;
}

}  // namespace kf::bench
