// SPDX-License-Identifier: Apache-2.0
// The m x n x k shapes of the matmul benchmarks (bench_matmul, bench_scaled_matmul):
// a shape's name and FLOPs, and the list an environment variable may give
// ("MxNxK,MxNxK,...") in place of a benchmark's own.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

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

/// The environment variable's list, or nullptr where it is unset or empty.
inline const char* environment_gemm_shapes(const char* variable) {
  const char* list = std::getenv(variable);
  return list != nullptr && *list != '\0' ? list : nullptr;
}

}  // namespace kf::bench
