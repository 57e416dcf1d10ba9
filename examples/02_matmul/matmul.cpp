// SPDX-License-Identifier: Apache-2.0
// Example 02 -- the matrix product C = A * B, three steps of the progression:
//   naive      one thread per element of C, every operand read from global memory
//   smem_tiled 32 x 32 tiles of A and B staged in shared memory, each reused 32 times
//   warp_tiled 128 x 128 block tiles, 8 x 8 outputs per thread in registers,
//              warp-level tiles and a cp.async pipeline (the library's fastest exact kernel)
// all through the same call, kf::matmul, with options.variant choosing the kernel.
// Each result is checked against the CPU reference (double precision) on a
// sample of entries, then timed with CUDA events on your GPU.
//
// Usage: example_02_matmul [N]   (N x N x N, default 2048)
// Exit code: 0 passed, 1 a check or a call failed, 77 no GPU (ctest: skipped).
// Plain C++: it includes only kernelforge's host headers and the CUDA runtime API.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include <kernelforge/kernelforge.hpp>
#include <kernelforge/matmul.hpp>
#include <kernelforge/reference/matmul.hpp>

namespace {

constexpr int exit_skipped = 77;  // the example's SKIP_RETURN_CODE in ctest
constexpr std::size_t default_size = 2048;
constexpr int sampled_rows = 48, sampled_cols = 48;  // entries checked: 48 x 48 of N x N
constexpr double timed_budget_ms = 300;              // per variant: repeat up to about this long
constexpr int max_timed_runs = 20;
constexpr unsigned long long seed = 2024;  // fixed: a failure reproduces

/// A step of the progression and what it teaches.
struct step {
  kf::matmul_variant variant;
  const char* idea;
  double flop_per_byte;  // arithmetic intensity against global memory (L2/DRAM), FMA = 2 FLOPs
};

// Intensity: FLOPs per byte a thread block fetches from global memory.
//  naive:      every FMA reads one A and one B float: 2 FLOPs / 8 bytes
//  smem_tiled: a 32-wide tile of A and B serves 32 x 32 outputs: 2*32*32 / (2*32*4)
//  warp_tiled: a 128 x 128 block tile: per k-step 2*128*128 FLOPs for (128 + 128) * 4 bytes
const step steps[] = {
    {kf::matmul_variant::naive, "one thread per output, operands from global memory", 0.25},
    {kf::matmul_variant::smem_tiled, "32x32 tiles in shared memory, each value reused 32x", 8.0},
    {kf::matmul_variant::warp_tiled, "register + warp tiles, cp.async pipeline", 32.0},
};

bool cuda_ok(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::printf("CUDA error in %s: %s\n", what, cudaGetErrorString(status));
  return false;
}

/// splitmix64: random values that depend only on (seed, index).
unsigned long long mix(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Values in +-[0.5, 1): never zero (all-ones or zero inputs hide indexing bugs).
std::vector<float> random_matrix(std::size_t count, unsigned long long s) {
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) {
    const unsigned long long h = mix(s * 0x100000001B3ull + i);
    const float magnitude = 0.5f + 0.5f * static_cast<float>(h >> 40) / static_cast<float>(1ull << 24);
    v[i] = (h & 1) ? -magnitude : magnitude;
  }
  return v;
}

/// Checks a sample of entries of C against the reference, relative to
/// sum_p |a_ip b_pj| (the scale rounding errors grow with): |err| <= 4 sqrt(N) 2^-24 scale.
bool check(const char* name, const std::vector<float>& c, const std::vector<float>& a, const std::vector<float>& b,
           std::size_t n) {
  const double tolerance = 4.0 * std::sqrt(static_cast<double>(n)) / 16777216.0;
  int bad = 0;
  for (int r = 0; r < sampled_rows; ++r) {
    const std::size_t i = r == 0 ? 0 : r == 1 ? n - 1 : mix(seed + 7 * r) % n;  // corners + random rows
    for (int s = 0; s < sampled_cols; ++s) {
      const std::size_t j = s == 0 ? 0 : s == 1 ? n - 1 : mix(seed + 11 * s + 5) % n;
      const kf::reference::matmul_entry e = kf::reference::matmul_element<float>(
          kf::op::none, kf::op::none, n, 1.f, a.data(), n, b.data(), n, 0.f, 0.f, i, j);
      const double got = c[i * n + j];
      if (!(std::fabs(got - e.value) <= tolerance * e.scale)) {  // written so that NaN fails
        if (++bad <= 3) std::printf("  %s: C(%zu, %zu) = %.7g, expected %.7g\n", name, i, j, got, e.value);
      }
    }
  }
  return bad == 0;
}

/// Average milliseconds of one call of `run`, by CUDA events: one warm-up,
/// then as many runs as fit in about timed_budget_ms (the naive kernel is slow).
template <class Run>
double average_ms(Run run) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  run();  // warm-up: module loading and first-touch costs stay out of the figure
  cudaEventRecord(start);
  run();
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float first = 0;
  cudaEventElapsedTime(&first, start, stop);
  const int runs = std::clamp(static_cast<int>(timed_budget_ms / std::max(first, 0.001f)), 1, max_timed_runs);
  cudaEventRecord(start);
  for (int r = 0; r < runs; ++r) run();
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / runs;
}

}  // namespace

int main(int argc, char** argv) {
  int device_count = 0;
  const cudaError_t status = cudaGetDeviceCount(&device_count);
  if (status != cudaSuccess || device_count == 0) {
    std::printf(
        "SKIPPED: this example needs a CUDA GPU and found none (%s); kernelforge-doctor says why and how to fix it.\n",
        status != cudaSuccess ? cudaGetErrorName(status) : "0 devices");
    return exit_skipped;
  }
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : default_size;
  if (n < 2) {
    std::printf("usage: %s [N >= 2]\n", argv[0]);
    return EXIT_FAILURE;
  }
  const double flops = 2.0 * double(n) * double(n) * double(n);
  bool all_ok = true;
  try {
    const kf::device_info gpu = kf::get_device_info();
    std::printf("C = A * B, %zu x %zu x %zu floats (row-major), on %s (sm_%d%d, %d SMs, FP32 peak %.1f TFLOP/s)\n\n", n,
                n, n, gpu.name.c_str(), gpu.cc_major, gpu.cc_minor, gpu.sm_count, gpu.peak_fp32_tflops);

    const std::vector<float> a = random_matrix(n * n, seed), b = random_matrix(n * n, seed + 1);
    kf::device_buffer<float> d_a = kf::to_device(a), d_b = kf::to_device(b), d_c(n * n);

    std::printf("%-11s %-52s %9s %9s %8s %10s  %s\n", "variant", "idea", "ms", "TFLOP/s", "x naive", "FLOP/byte",
                "check");
    double naive_ms = 0;
    for (const step& s : steps) {
      kf::matmul_options options;
      options.variant = s.variant;
      auto run = [&] {
        kf::matmul<float>(kf::op::none, kf::op::none, n, n, n, 1.f, d_a.data(), n, d_b.data(), n, 0.f, d_c.data(), n,
                          options);
      };
      if (!cuda_ok(cudaMemset(d_c.data(), 0xFF, d_c.size_bytes()), "cudaMemset")) return EXIT_FAILURE;  // NaN
      run();
      const bool ok = check(kf::to_string(s.variant), kf::to_host(d_c), a, b, n);
      all_ok = all_ok && ok;
      const double ms = average_ms(run);
      if (s.variant == kf::matmul_variant::naive) naive_ms = ms;
      std::printf("%-11s %-52s %9.3f %9.2f %8.1f %10.2f  %s\n", kf::to_string(s.variant), s.idea, ms,
                  flops / (ms * 1e-3) / 1e12, naive_ms / ms, s.flop_per_byte, ok ? "PASSED" : "FAILED");
    }
    if (!cuda_ok(cudaGetLastError(), "the timed runs")) return EXIT_FAILURE;
  } catch (const kf::error& e) {  // e.g. errc::no_kernel_image: the library was built for other GPUs
    std::printf("kf::error (%s): %s\nFAILED\n", kf::to_string(e.code()), e.what());
    return EXIT_FAILURE;
  }
  std::printf(
      "\nTimings: CUDA events, one warm-up, no L2 flush: a quick look; benchmarks/matmul is the careful one.\n");
  std::printf("%s\n", all_ok ? "PASSED" : "FAILED");
  return all_ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
