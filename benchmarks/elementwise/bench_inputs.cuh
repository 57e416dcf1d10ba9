// SPDX-License-Identifier: Apache-2.0
// Inputs for the elementwise benchmarks: random values filled on the device
// (never zero, so no kernel is timed on a trivially compressible or special
// input), and a spot check that reads back a few elements so a benchmark
// never times a wrong result. The GoogleTest suite does the full correctness
// work; this only catches a broken variant or baseline before it is timed.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include "gpu_benchmark.hpp"

namespace kf::bench::elementwise {

/// Short type names used in benchmark names ("saxpy/fp32/...").
template <class T>
constexpr const char* type_name() {
  if constexpr (std::is_same_v<T, float>)
    return "fp32";
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return "bf16";
  else
    return "unknown";
}

/// splitmix64: value i depends only on (seed, i), so the fill is parallel.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Magnitudes in [0.5, 1) with a random sign: never zero, never denormal, and
// half of them below a ReLU threshold of 0, so both branches of ReLU are taken.
constexpr float min_magnitude = 0.5f;
constexpr int magnitude_bits = 24;  // the float mantissa: every value is exact in fp32

template <class T>
__global__ void fill_random_kernel(T* data, std::size_t n, std::uint64_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t h = mix64(seed ^ mix64(i));
    const float unit = static_cast<float>(h >> (64 - magnitude_bits)) * (1.0f / (1u << magnitude_bits));
    const float magnitude = min_magnitude + (1.0f - min_magnitude) * unit;
    data[i] = static_cast<T>((h & 1u) ? -magnitude : magnitude);
  }
}

// A fixed grid: enough blocks to fill an H200 several times over, no device query.
constexpr int fill_block = 256;
constexpr unsigned fill_max_blocks = 4096;

/// Fills data[0, n) with random values on `stream` (asynchronous).
template <class T>
void fill_random(T* data, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  if (n == 0) return;
  const std::size_t needed = (n + fill_block - 1) / fill_block;
  const unsigned blocks = needed < fill_max_blocks ? static_cast<unsigned>(needed) : fill_max_blocks;
  fill_random_kernel<T><<<blocks, fill_block, 0, stream>>>(data, n, seed);
  check(cudaGetLastError(), "fill_random_kernel launch");
}

/// Elements read back by the spot check: spread over the array, first and last included.
constexpr int spot_check_points = 16;

inline std::vector<std::size_t> spot_check_indices(std::size_t n) {
  std::vector<std::size_t> indices;
  for (int k = 0; k < spot_check_points && n > 0; ++k) {
    indices.push_back(static_cast<std::size_t>(static_cast<double>(n - 1) * k / (spot_check_points - 1)));
  }
  return indices;
}

/// data[i] for each index, as double (synchronizes the device).
template <class T>
std::vector<double> read_elements(const T* data, const std::vector<std::size_t>& indices) {
  check(cudaDeviceSynchronize(), "spot check: waiting for the call");
  std::vector<double> values;
  for (std::size_t i : indices) {
    T v;
    check(cudaMemcpy(&v, data + i, sizeof(T), cudaMemcpyDeviceToHost), "spot check: cudaMemcpy");
    values.push_back(static_cast<double>(static_cast<float>(v)));
  }
  return values;
}

/// Unit roundoff of T (half an ulp at 1.0).
template <class T>
constexpr double unit_roundoff() {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return 1.0 / (1 << 8);
  else
    return 1.0 / (1 << 24);
}

// Rounding once in T, or an unfused multiply-add in fp32 (cuBLAS may do
// either), stays within 2 roundings of the terms' magnitude; 4 leaves margin.
constexpr double tolerance_roundings = 4;

/// Empty when |got - expected| <= tolerance_roundings * u(T) * scale at every
/// point (NaN never passes), else a message naming the first bad element.
template <class T>
std::string compare_points(const std::vector<std::size_t>& indices, const std::vector<double>& got,
                           const std::vector<double>& expected, const std::vector<double>& scale) {
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const double bound = tolerance_roundings * unit_roundoff<T>() * scale[k];
    if (!(std::fabs(got[k] - expected[k]) <= bound)) {
      return "wrong result at element " + std::to_string(indices[k]) + ": got " + std::to_string(got[k]) +
             ", expected " + std::to_string(expected[k]);
    }
  }
  return std::string();
}

}  // namespace kf::bench::elementwise
