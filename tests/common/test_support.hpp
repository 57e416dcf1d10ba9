// SPDX-License-Identifier: Apache-2.0
// Shared test support: GPU detection for skips, random inputs (never zero),
// poisoned outputs, and comparison against a double-precision reference in
// which NaN never passes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/kernelforge.hpp"
#include "kernelforge/reference/elementwise.hpp"

namespace kf::test {

/// Empty when a CUDA device is usable; otherwise why not (for GTEST_SKIP).
inline std::string gpu_unavailable_reason() {
  static const std::string reason = [] {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
      cudaGetLastError();
      return std::string("no CUDA GPU on this machine (") + cudaGetErrorName(status) + ": " +
             cudaGetErrorString(status) + ")";
    }
    if (count == 0) return std::string("no CUDA GPU on this machine (0 devices)");
    return std::string();
  }();
  return reason;
}

#define KF_SKIP_WITHOUT_GPU()                                                            \
  do {                                                                                   \
    const std::string kf_skip_reason = ::kf::test::gpu_unavailable_reason();             \
    if (!kf_skip_reason.empty()) GTEST_SKIP() << "GPU test skipped: " << kf_skip_reason; \
  } while (0)

/// Unit roundoff of T (half an ulp at 1.0): the natural unit for tolerances.
template <class T>
constexpr double unit_roundoff() {
  if constexpr (std::is_same_v<T, __half>)
    return 1.0 / (1 << 11);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return 1.0 / (1 << 8);
  else if constexpr (std::is_same_v<T, float>)
    return 1.0 / (1 << 24);
  else
    return 1.0 / 9007199254740992.0;  // 2^-53
}

/// splitmix64: a fast, high-quality 64-bit mixer; value i depends only on (seed, i),
/// so huge inputs can be filled in parallel and regenerated exactly.
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Runs body(begin, end) over [0, n) on all hardware threads.
template <class F>
void parallel_for(std::size_t n, F body) {
  const std::size_t workers = std::max(1u, std::thread::hardware_concurrency());
  if (n < (1u << 20) || workers == 1) {
    body(std::size_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  const std::size_t step = (n + workers - 1) / workers;
  for (std::size_t begin = 0; begin < n; begin += step) {
    pool.emplace_back(body, begin, std::min(n, begin + step));
  }
  for (auto& t : pool) t.join();
}

/// n values uniform in magnitude in [lo, hi] with a random sign: never zero.
template <class T>
std::vector<T> random_vector(std::size_t n, std::uint64_t seed, double lo = 0.125, double hi = 2.0) {
  std::vector<T> v(n);
  parallel_for(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const std::uint64_t r = mix64(seed * 0x100000001B3ull + i);
      const double u = static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
      const double magnitude = lo + (hi - lo) * u;
      v[i] = kf::reference::from_double<T>((r & 1) ? -magnitude : magnitude);
    }
  });
  return v;
}

/// Fills device memory with 0xFF bytes: NaN in float, double, __half and
/// __nv_bfloat16, so an element a kernel fails to write can never pass.
inline void poison(void* device_ptr, std::size_t bytes, cudaStream_t stream = nullptr) {
  ASSERT_EQ(cudaMemsetAsync(device_ptr, 0xFF, bytes, stream), cudaSuccess);
}

struct tolerance {
  double rel = 0;  ///< relative to the magnitude (|ref|, or a caller-given error scale)
  double abs = 0;
  /// relative to |ref| on top of rel x the error scale: a sum in a wider type
  /// (error proportional to the scale) rounded once to a narrower one (to |ref|)
  double rel_ref = 0;
};

/// got[i] must be within tol of ref[i]. NaN passes only where ref is NaN; an
/// infinity only where ref is the same infinity. `scale` (optional) replaces
/// |ref[i]| as the magnitude the relative tolerance multiplies, for results
/// formed by cancellation (e.g. |a*x| + |y| for a*x + y). Within tol:
/// |got - ref| <= tol.abs + tol.rel * magnitude + tol.rel_ref * |ref|.
template <class T, class R>
::testing::AssertionResult all_close(const std::vector<T>& got, const std::vector<R>& ref, tolerance tol,
                                     const std::vector<double>* scale = nullptr, std::size_t offset = 0) {
  if (got.size() < offset + ref.size()) {
    return ::testing::AssertionFailure() << "size mismatch: got " << got.size() << ", expected " << ref.size();
  }
  std::size_t bad = 0;
  std::ostringstream report;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double g = kf::reference::to_double(got[offset + i]);
    const double r = kf::reference::to_double(ref[i]);
    bool ok;
    if (std::isnan(r))
      ok = std::isnan(g);
    else if (std::isinf(r))
      ok = g == r;
    else {
      const double magnitude = scale ? (*scale)[i] : std::fabs(r);
      ok = !std::isnan(g) && std::fabs(g - r) <= tol.abs + tol.rel * magnitude + tol.rel_ref * std::fabs(r);
    }
    if (!ok && bad++ < 8) report << "\n  [" << i << "] got " << g << ", expected " << r;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << ref.size() << " elements differ (rel " << tol.rel << ", abs "
                                       << tol.abs << ", rel_ref " << tol.rel_ref << "):" << report.str();
}

/// Expects `call` to throw kf::error with `code` and a message containing `needle`.
inline void expect_error(kf::errc code, const std::string& needle, const std::function<void()>& call) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected " << kf::to_string(code) << " mentioning '" << needle << "'";
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

/// A fake device address for validation tests: validation never dereferences
/// pointers, and such tests throw (or return for empty work) before anything is enqueued.
inline float* fake(std::uintptr_t address) { return reinterpret_cast<float*>(address); }

}  // namespace kf::test
