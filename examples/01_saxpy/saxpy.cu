// SPDX-License-Identifier: Apache-2.0
// Example 01 -- SAXPY, y = a*x + y, done twice:
//   part 1: by hand, the way the classic CUDA tutorial writes it: a CPU
//           reference, cudaMalloc, cudaMemcpy in, a __global__ kernel launched
//           with <<<grid, block>>>, cudaMemcpy out, verify;
//   part 2: the same through kernelforge: kf::to_device, kf::saxpy, kf::to_host,
//           checked against kf::reference::saxpy.
// Both are timed with CUDA events on your GPU (a rough figure: the benchmarks
// in benchmarks/ are the careful measurement).
// Exit code: 0 both parts passed, 1 a check or a CUDA call failed, 77 no GPU
// (ctest reports that as skipped).
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <cuda_runtime.h>

#include <kernelforge/kernelforge.hpp>
#include <kernelforge/reference/elementwise.hpp>

namespace {

constexpr int exit_skipped = 77;  // the example's SKIP_RETURN_CODE in ctest

// 2^24 floats = 64 MiB per array: more than any GPU's L2, so the timing sees
// DRAM. The +7 makes n deliberately not a multiple of the block size, so the
// last block has threads past the end (the `if (i < n)` below is needed).
constexpr std::size_t n = (std::size_t{1} << 24) + 7;
constexpr float a = 2.5f;
constexpr int threads_per_block = 256;  // a multiple of the warp size (32); the tutorial's choice
constexpr int timed_runs = 20;          // launches averaged per timing
constexpr unsigned random_seed = 2024;  // fixed: a failure reproduces

// Tolerance. In float, a*x + y is rounded twice (product, then sum) or once
// (fused multiply-add, which nvcc emits); each rounding errs by at most half
// an ulp, so |gpu - exact| <= FLT_EPSILON * (|a*x| + |y|). We allow twice that.
constexpr double tolerance_in_eps = 2.0;

// Part 1 checks every CUDA call: a failed call returns an error code and
// nothing else happens, so an unchecked failure surfaces later as wrong data.
#define CHECK_CUDA(call) check_cuda((call), #call, __FILE__, __LINE__)
void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "CUDA error at %s:%d in %s\n  %s: %s\nFAILED\n", file, line, call, cudaGetErrorName(status),
                 cudaGetErrorString(status));
    std::exit(EXIT_FAILURE);
  }
}

// ---- part 1: the kernel of the classic tutorial ---------------------------
// One thread per element. Thread i of block b handles element
// b * blockDim.x + threadIdx.x. That index is computed in 64 bits:
// blockIdx.x * blockDim.x alone is 32-bit unsigned arithmetic and wraps past
// 2^32, and an `int` index overflows past 2^31 elements (8 GiB of floats,
// which one H200 holds many times over).
__global__ void saxpy_by_hand(std::size_t count, float alpha, const float* x, float* y) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) y[i] = alpha * x[i] + y[i];
}

/// Every element within the tolerance of `exact`; prints the first few misses.
bool verify(const char* what, const std::vector<float>& got, const std::vector<double>& exact,
            const std::vector<float>& x, const std::vector<float>& y0) {
  std::size_t misses = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = tolerance_in_eps * FLT_EPSILON * (std::fabs(double(a) * x[i]) + std::fabs(y0[i]));
    if (!(std::fabs(got[i] - exact[i]) <= bound)) {  // written so that NaN fails
      if (++misses <= 5) std::printf("  %s: y[%zu] = %.9g, expected %.9g\n", what, i, got[i], exact[i]);
    }
  }
  std::printf("%-30s %s (%zu of %zu elements off by more than %.0f eps x (|a*x| + |y|))\n", what,
              misses ? "FAILED" : "PASSED", misses, got.size(), tolerance_in_eps);
  return misses == 0;
}

/// Average milliseconds of one `launch()`, after one warm-up, by CUDA events.
template <class Launch>
float average_ms(Launch launch) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  launch();  // warm-up: first-launch costs (module load, caches) stay out of the figure
  CHECK_CUDA(cudaEventRecord(start));
  for (int r = 0; r < timed_runs; ++r) launch();
  CHECK_CUDA(cudaEventRecord(stop));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return ms / timed_runs;
}

void print_timing(const char* what, float ms) {
  const double bytes = 3.0 * n * sizeof(float);  // read x, read y, write y
  std::printf("%-30s %8.3f ms  %7.1f GB/s\n", what, ms, bytes / (ms * 1e-3) / 1e9);
}

bool part1_by_hand(const std::vector<float>& x, const std::vector<float>& y0) {
  std::printf("\n-- part 1: by hand --\n");
  // CPU reference, in double.
  std::vector<double> exact(n);
  for (std::size_t i = 0; i < n; ++i) exact[i] = double(a) * x[i] + y0[i];

  const std::size_t bytes = n * sizeof(float);
  float *d_x = nullptr, *d_y = nullptr;
  CHECK_CUDA(cudaMalloc(&d_x, bytes));
  CHECK_CUDA(cudaMalloc(&d_y, bytes));
  CHECK_CUDA(cudaMemcpy(d_x, x.data(), bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_y, y0.data(), bytes, cudaMemcpyHostToDevice));

  // Enough blocks to cover n: round up, the last block is partly idle.
  const unsigned blocks = static_cast<unsigned>((n + threads_per_block - 1) / threads_per_block);
  saxpy_by_hand<<<blocks, threads_per_block>>>(n, a, d_x, d_y);
  CHECK_CUDA(cudaGetLastError());  // a bad launch configuration is reported here

  std::vector<float> y(n);
  CHECK_CUDA(cudaMemcpy(y.data(), d_y, bytes, cudaMemcpyDeviceToHost));  // waits for the kernel
  const bool ok = verify("hand-written kernel", y, exact, x, y0);

  // Timing runs keep updating d_y; the result was verified above.
  const float ms = average_ms([&] {
    saxpy_by_hand<<<blocks, threads_per_block>>>(n, a, d_x, d_y);
    CHECK_CUDA(cudaGetLastError());
  });
  print_timing("hand-written kernel", ms);

  CHECK_CUDA(cudaFree(d_x));
  CHECK_CUDA(cudaFree(d_y));
  return ok;
}

// ---- part 2: the same through kernelforge ----------------------------------
// kf::saxpy validates its arguments, picks block and grid sizes for this GPU
// from the occupancy API (cached per device), runs the vectorized kernel
// (16-byte loads, grid-stride loop) and checks the launch. Errors arrive as
// kf::error with a code and a message that says what to do.
bool part2_kernelforge(const std::vector<float>& x, const std::vector<float>& y0) {
  std::printf("\n-- part 2: kernelforge --\n");
  try {
    std::vector<float> expected = y0;
    kf::reference::saxpy(n, a, x.data(), expected.data());  // double inside, rounded once to float

    kf::device_buffer<float> d_x = kf::to_device(x);
    kf::device_buffer<float> d_y = kf::to_device(y0);
    kf::saxpy(n, a, d_x.data(), d_y.data());        // enqueued on the default stream; returns at once
    const std::vector<float> y = kf::to_host(d_y);  // waits for the stream
    const bool ok = verify("kf::saxpy", y, std::vector<double>(expected.begin(), expected.end()), x, y0);

    const float ms = average_ms([&] { kf::saxpy(n, a, d_x.data(), d_y.data()); });
    print_timing("kf::saxpy", ms);
    return ok;
  } catch (const kf::error& e) {  // e.g. errc::no_kernel_image: the library was built for other GPUs
    std::printf("kf::error (%s): %s\nFAILED\n", kf::to_string(e.code()), e.what());
    return false;
  }
}

}  // namespace

int main() {
  int device_count = 0;
  const cudaError_t status = cudaGetDeviceCount(&device_count);
  if (status != cudaSuccess || device_count == 0) {  // no GPU, or no (recent enough) driver
    std::printf(
        "SKIPPED: this example needs a CUDA GPU and found none (%s); kernelforge-doctor says why and how to fix it.\n",
        status != cudaSuccess ? cudaGetErrorName(status) : "0 devices");
    return exit_skipped;
  }
  int device = 0;
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  std::printf("SAXPY y = a*x + y, n = %zu floats, a = %g, on %s (sm_%d%d)\n", n, a, prop.name, prop.major, prop.minor);

  // Random inputs in [-1, 1): patterns such as all-ones hide indexing bugs.
  std::mt19937 rng(random_seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(n), y0(n);
  for (auto& v : x) v = uniform(rng);
  for (auto& v : y0) v = uniform(rng);

  const bool by_hand = part1_by_hand(x, y0);
  const bool with_kf = part2_kernelforge(x, y0);
  std::printf("\n%s\n", by_hand && with_kf ? "PASSED" : "FAILED");
  return by_hand && with_kf ? EXIT_SUCCESS : EXIT_FAILURE;
}
