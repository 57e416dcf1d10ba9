// SPDX-License-Identifier: Apache-2.0
// Division by a run-time constant without a divide instruction: the divisor's
// "magic" multiplier and shift are computed once on the host, and the device
// divides with one multiply-high, one add and one shift (the round-up method of
// Granlund and Montgomery, as CUTLASS's FastDivmod uses). The implicit GEMM
// decomposes indices (m -> n, p, q; k -> c, r, s) this way in its inner loops.
// Exact for dividends below 2^31 and divisors from 1 to 2^31 (CPU-tested).
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace kf::detail {

struct fast_divmod {
  unsigned divisor = 1;
  unsigned multiplier = 0;
  unsigned shift = 0;

  fast_divmod() = default;
  __host__ __device__ explicit fast_divmod(unsigned d) : divisor(d) {
    while (shift < 31 && (1u << shift) < d) ++shift;  // shift = ceil(log2 d)
    const std::uint64_t m = ((std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift) - d)) / d + 1;
    multiplier = static_cast<unsigned>(m);
  }

  __host__ __device__ static unsigned mul_hi(unsigned a, unsigned b) {
#ifdef __CUDA_ARCH__
    return __umulhi(a, b);
#else
    return static_cast<unsigned>((static_cast<std::uint64_t>(a) * b) >> 32);
#endif
  }

  /// n / divisor, for 0 <= n < 2^31.
  __host__ __device__ int div(int n) const {
    const unsigned un = static_cast<unsigned>(n);
    return static_cast<int>((mul_hi(un, multiplier) + un) >> shift);
  }
  /// quotient and remainder, for 0 <= n < 2^31.
  __host__ __device__ void divmod(int n, int& quotient, int& remainder) const {
    quotient = div(n);
    remainder = n - quotient * static_cast<int>(divisor);
  }
};

}  // namespace kf::detail
