// SPDX-License-Identifier: Apache-2.0
// The benchmarks' check of a result against the vendor's, done on the GPU: one
// pass over both device arrays gives the largest difference, the largest
// reference value, how many elements differ, and -- given a bound per element --
// how many lie outside it and the first that does. It replaces copying both
// arrays to the host and looping there, which cost about a second a row on the
// 8192 x 8192 filter2d rows (two 268 MB copies into fresh host vectors) and a
// large part of bench_conv's time outside its samples.
//
// Usage (.cu files only: it launches a kernel):
//   const kf::bench::device_difference r = kf::bench::compare_on_device(got, want, n);
//   r.relative()   // max |got - want| / max |want|; +inf where a difference is NaN
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>  // memcpy
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "gpu_benchmark.hpp"  // check
#include "kernelforge/device_buffer.hpp"

namespace kf::bench {

/// An element i is inside when |got - want| <= per_want |want| + per_scale scale[i] + constant
/// (scale: an array beside the two, or none). NaN is never inside.
struct element_bound {
  double per_want = 0;
  double per_scale = 0;
  double constant = 0;
  /// The largest |got - want| allowed where the reference is `want` and the scale `scale`.
  __host__ __device__ double at(double want, double scale) const {
    return per_want * fabs(want) + per_scale * scale + constant;
  }
};

/// What compare_on_device found.
struct device_difference {
  double max_diff = 0;                   // max |got - want|, +inf where a difference is NaN
  double max_want = 0;                   // max |want| over the non-NaN reference values
  unsigned long long differing = 0;      // elements with got != want (NaN differs from everything)
  unsigned long long outside = 0;        // elements outside the bound (when one was given)
  unsigned long long first_outside = 0;  // the lowest such index (valid when outside > 0)
  bool nan_in_got = false;
  double relative() const { return max_want > 0 ? max_diff / max_want : max_diff; }
};

namespace detail {

struct device_difference_bits {  // the kernel's accumulators: doubles >= 0 as their bits (ordered as integers)
  unsigned long long max_diff, max_want, differing, outside, first_outside, nan_in_got;
};

/// float, __half or __nv_bfloat16 as a double (the 16-bit types through float).
template <class T>
__device__ inline double compare_value(T v) {
  return static_cast<double>(static_cast<float>(v));
}

template <class T>
__global__ void compare_kernel(const T* got, const T* want, const T* scale, std::size_t n, bool bounded,
                               element_bound b, device_difference_bits* out) {
  double max_diff = 0, max_want = 0;
  unsigned long long differing = 0, outside = 0, first = ~0ull, nan_in_got = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const double g = compare_value(got[i]), w = compare_value(want[i]);
    const double d = fabs(g - w);
    max_diff = isnan(d) ? INFINITY : fmax(max_diff, d);
    if (!isnan(w)) max_want = fmax(max_want, fabs(w));
    nan_in_got |= isnan(g) ? 1ull : 0ull;
    differing += g != w ? 1ull : 0ull;
    if (bounded) {
      if (!(d <= b.at(w, scale ? compare_value(scale[i]) : 0.0))) {  // true for NaN
        ++outside;
        first = first < i ? first : i;
      }
    }
  }
  for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2) {
    max_diff = fmax(max_diff, __shfl_xor_sync(0xffffffffu, max_diff, lane_mask));
    max_want = fmax(max_want, __shfl_xor_sync(0xffffffffu, max_want, lane_mask));
    differing += __shfl_xor_sync(0xffffffffu, differing, lane_mask);
    outside += __shfl_xor_sync(0xffffffffu, outside, lane_mask);
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, first, lane_mask);
    first = first < other ? first : other;
    nan_in_got |= __shfl_xor_sync(0xffffffffu, nan_in_got, lane_mask);
  }
  if (threadIdx.x % 32 == 0) {
    atomicMax(&out->max_diff, static_cast<unsigned long long>(__double_as_longlong(max_diff)));
    atomicMax(&out->max_want, static_cast<unsigned long long>(__double_as_longlong(max_want)));
    atomicAdd(&out->differing, differing);
    atomicAdd(&out->outside, outside);
    atomicMin(&out->first_outside, first);
    atomicOr(&out->nan_in_got, nan_in_got);
  }
}

inline double double_of_bits(unsigned long long bits) {
  double v;
  static_assert(sizeof v == sizeof bits, "64-bit double");
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

}  // namespace detail

/// Compares n elements of got with want, both on the device (float, __half or
/// __nv_bfloat16), on the default stream; with `bound` (and its optional
/// `scale` array of n elements), also counts the elements outside it.
template <class T>
device_difference compare_on_device(const T* got, const T* want, std::size_t n, const element_bound* bound = nullptr,
                                    const T* scale = nullptr);

namespace detail {

/// Once a process, before the first comparison: compare_on_device must find a
/// known case exactly (a NaN, one value outside its bound, the counts), else the
/// process ends -- a check that cannot fail would pass every row.
inline void self_check_device_compare() {
  static bool done = false;
  if (done) return;
  done = true;
  const std::vector<float> got_host{1.0f, 2.0f, NAN, 4.5f, 5.0f, -6.0f};
  const std::vector<float> want_host{1.0f, 2.0f, 3.0f, 4.0f, 5.0f, -6.0f};
  const kf::device_buffer<float> got = kf::to_device(got_host), want = kf::to_device(want_host);
  const element_bound bound{0, 0, 0.4};
  const device_difference r = compare_on_device(got.data(), want.data(), got_host.size(), &bound);
  const device_difference clean = compare_on_device(want.data(), got.data() + 3, 1);  // 1 against 4.5, no bound
  const bool ok = r.nan_in_got && r.max_diff == INFINITY && r.max_want == 6.0 && r.differing == 2 && r.outside == 2 &&
                  r.first_outside == 2 && !clean.nan_in_got && clean.max_diff == 3.5 && clean.max_want == 4.5 &&
                  clean.differing == 1 && clean.outside == 0;
  if (!ok) {
    std::fprintf(stderr, "compare_on_device failed its self-check: the benchmarks' result checks cannot be trusted\n");
    std::exit(1);
  }
}

}  // namespace detail

template <class T>
device_difference compare_on_device(const T* got, const T* want, std::size_t n, const element_bound* bound,
                                    const T* scale) {
  detail::self_check_device_compare();
  const detail::device_difference_bits start{0, 0, 0, 0, ~0ull, 0};
  kf::device_buffer<detail::device_difference_bits> acc(1);
  check(cudaMemcpy(acc.data(), &start, sizeof start, cudaMemcpyHostToDevice), "cudaMemcpy (compare_on_device)");
  if (n > 0) {
    constexpr unsigned threads = 256;
    const std::size_t wanted = (n + threads - 1) / threads;
    const unsigned blocks = static_cast<unsigned>(wanted < 4096 ? wanted : 4096);
    detail::compare_kernel<T>
        <<<blocks, threads>>>(got, want, scale, n, bound != nullptr, bound ? *bound : element_bound{}, acc.data());
    check(cudaGetLastError(), "compare_on_device launch");
  }
  detail::device_difference_bits bits{};
  check(cudaMemcpy(&bits, acc.data(), sizeof bits, cudaMemcpyDeviceToHost), "cudaMemcpy (compare_on_device)");
  device_difference r;
  r.max_diff = detail::double_of_bits(bits.max_diff);
  r.max_want = detail::double_of_bits(bits.max_want);
  r.differing = bits.differing;
  r.outside = bits.outside;
  r.first_outside = bits.first_outside;
  r.nan_in_got = bits.nan_in_got != 0;
  return r;
}

}  // namespace kf::bench
