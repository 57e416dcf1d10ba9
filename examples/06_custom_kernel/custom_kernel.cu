// SPDX-License-Identifier: Apache-2.0
// 06_custom_kernel: your own operation on the GPU, three ways.
//
//  1. By hand: a __global__ kernel for a leaky ReLU and for the fused
//     y = clamp(a*x + b, lo, hi), one thread per element.
//  2. Through kf::transform: the same two operations as a lambda and a functor;
//     the library picks block and grid sizes and 16-byte accesses.
//  3. In a GEMM's epilogue: Y = clamp(A*B + bias, lo, hi) as ONE kf::matmul call
//     with a functor (kernelforge/matmul.cuh), against the unfused sequence
//     kf::matmul, then kf::transform for the bias and the clamp.
// Every result is checked against a CPU loop and every part timed with CUDA
// events. Exit code: 0 passed, 1 a check or a CUDA call failed, 77 no GPU.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <cuda_runtime.h>

#include <kernelforge/kernelforge.hpp>
#include <kernelforge/matmul.cuh>
#include <kernelforge/transform.cuh>

namespace {

constexpr int exit_skipped = 77;                       // the example's SKIP_RETURN_CODE in ctest
constexpr std::size_t n = (std::size_t{1} << 24) + 3;  // not a multiple of any block size
constexpr float slope = 0.01f;                         // leaky ReLU: x > 0 ? x : slope * x
constexpr float a = 1.5f, b = -0.25f, lo = -1.0f, hi = 1.0f;
constexpr int threads_per_block = 256;
constexpr int timed_runs = 20;
constexpr unsigned random_seed = 2024;
// GEMM sizes: M x N output, K deep; 1000 and 1500 are not multiples of the 128 tiles.
constexpr std::size_t M = 2000, N = 1500, K = 1000;

#define CHECK_CUDA(call) check_cuda((call), #call, __FILE__, __LINE__)
void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "CUDA error at %s:%d in %s\n  %s: %s\nFAILED\n", file, line, call, cudaGetErrorName(status),
                 cudaGetErrorString(status));
    std::exit(EXIT_FAILURE);
  }
}

// ---- the operations, once for host and device ------------------------------
// __host__ __device__: the CPU check and the GPU run the very same expression.
__host__ __device__ inline float leaky_relu(float x) { return x > 0.0f ? x : slope * x; }
__host__ __device__ inline float affine_clamp(float x) { return fminf(fmaxf(a * x + b, lo), hi); }

// ---- part 1: by hand --------------------------------------------------------
__global__ void leaky_relu_by_hand(std::size_t count, const float* x, float* y) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) y[i] = leaky_relu(x[i]);
}

__global__ void affine_clamp_by_hand(std::size_t count, const float* x, float* y) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) y[i] = affine_clamp(x[i]);
}

}  // namespace

// Functors the library's kernels are instantiated with live in a named namespace:
// kernelforge marks its kernels hidden, which needs types with external linkage
// (a type in an anonymous namespace draws nvcc warning 1407).
namespace my_ops {

// ---- part 2: kf::transform ----------------------------------------------------
/// A functor with state: what you write when the operation has parameters.
struct affine_clamp_op {
  float a, b, lo, hi;
  __device__ float operator()(float x) const { return fminf(fmaxf(a * x + b, lo), hi); }
};

// ---- part 3: a GEMM epilogue ---------------------------------------------------
/// Runs on every output value of the GEMM, in registers, before the store:
/// value = alpha * (A B)(row, col) + beta * C(row, col).
struct bias_clamp_epilogue {
  const float* bias;  // one value per column (a device pointer)
  float lo, hi;
  __device__ float operator()(float value, std::int64_t /*row*/, std::int64_t col) const {
    return fminf(fmaxf(value + bias[col], lo), hi);
  }
};

/// The unfused pipeline's second pass: y = clamp(y + bias, lo, hi) with a
/// row-broadcast bias matrix (kf::transform sees values, not indices).
struct add_clamp_op {
  float lo, hi;
  __device__ float operator()(float y, float bias) const { return fminf(fmaxf(y + bias, lo), hi); }
};

}  // namespace my_ops

namespace {

using my_ops::add_clamp_op;
using my_ops::affine_clamp_op;
using my_ops::bias_clamp_epilogue;

template <class Launch>
float average_ms(Launch launch) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  launch();  // warm-up
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

/// Elementwise results: exactly the CPU's (same float expression; fmaf contraction
/// aside, within 2 ulps). NaN never passes.
bool verify_elementwise(const char* what, const std::vector<float>& got, const std::vector<float>& x,
                        float (*f)(float)) {
  std::size_t misses = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float want = f(x[i]);
    if (!(std::fabs(got[i] - want) <= 2.0f * 1.2e-7f * (std::fabs(want) + 1.0f))) {
      if (++misses <= 5) std::printf("  %s: y[%zu] = %.9g, expected %.9g\n", what, i, got[i], want);
    }
  }
  std::printf("%-44s %s\n", what, misses ? "FAILED" : "PASSED");
  return misses == 0;
}

float leaky_relu_host(float x) { return leaky_relu(x); }
float affine_clamp_host(float x) { return affine_clamp(x); }

bool elementwise_parts(const std::vector<float>& x) {
  kf::device_buffer<float> dx = kf::to_device(x), dy(n);
  const unsigned blocks = static_cast<unsigned>((n + threads_per_block - 1) / threads_per_block);
  bool ok = true;

  leaky_relu_by_hand<<<blocks, threads_per_block>>>(n, dx.data(), dy.data());
  CHECK_CUDA(cudaGetLastError());
  ok &= verify_elementwise("1. leaky ReLU, __global__ by hand", kf::to_host(dy), x, leaky_relu_host);
  affine_clamp_by_hand<<<blocks, threads_per_block>>>(n, dx.data(), dy.data());
  CHECK_CUDA(cudaGetLastError());
  ok &= verify_elementwise("1. clamp(a*x+b), __global__ by hand", kf::to_host(dy), x, affine_clamp_host);

  CHECK_CUDA(cudaMemset(dy.data(), 0xFF, n * sizeof(float)));  // NaN: an unwritten element fails
  kf::transform(
      n, [] __device__(float v) { return leaky_relu(v); }, dy.data(), dx.data());
  ok &= verify_elementwise("2. leaky ReLU, kf::transform + lambda", kf::to_host(dy), x, leaky_relu_host);
  CHECK_CUDA(cudaMemset(dy.data(), 0xFF, n * sizeof(float)));
  kf::transform(n, affine_clamp_op{a, b, lo, hi}, dy.data(), dx.data());
  ok &= verify_elementwise("2. clamp(a*x+b), kf::transform + functor", kf::to_host(dy), x, affine_clamp_host);

  const double gb = 2.0 * n * sizeof(float) / 1e9;  // read x, write y
  const float t1 = average_ms([&] { affine_clamp_by_hand<<<blocks, threads_per_block>>>(n, dx.data(), dy.data()); });
  const float t2 = average_ms([&] { kf::transform(n, affine_clamp_op{a, b, lo, hi}, dy.data(), dx.data()); });
  std::printf("   clamp(a*x+b) by hand:      %8.3f ms  %7.1f GB/s\n", t1, gb / (t1 * 1e-3));
  std::printf("   clamp(a*x+b) kf::transform: %7.3f ms  %7.1f GB/s\n", t2, gb / (t2 * 1e-3));
  return ok;
}

bool gemm_part(std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> A(M * K), B(K * N), bias(N), bias_rows(M * N);
  for (auto& v : A) v = uniform(rng);
  for (auto& v : B) v = uniform(rng);
  for (auto& v : bias) v = uniform(rng);
  for (std::size_t i = 0; i < M; ++i) std::copy(bias.begin(), bias.end(), bias_rows.begin() + i * N);
  kf::device_buffer<float> dA = kf::to_device(A), dB = kf::to_device(B), dbias = kf::to_device(bias),
                           dbias_rows = kf::to_device(bias_rows), dY(M * N);

  const bias_clamp_epilogue ep{dbias.data(), lo, hi};
  auto fused = [&] {  // one kernel: the epilogue runs in the GEMM's registers
    kf::matmul<float>(kf::op::none, kf::op::none, M, N, K, 1.0f, dA.data(), K, dB.data(), N, 0.0f, dY.data(), N, ep);
  };
  auto unfused = [&] {  // the GEMM writes Y, a second pass reads it back, adds, clamps and writes it again
    kf::matmul<float>(kf::op::none, kf::op::none, M, N, K, 1.0f, dA.data(), K, dB.data(), N, 0.0f, dY.data(), N);
    kf::transform(M * N, add_clamp_op{lo, hi}, dY.data(), dY.data(), dbias_rows.data());
  };

  // CPU reference in double, row by row (i, p, j order: B is read along its rows);
  // tolerance: fp32 sums of K products, |error| <= 4 sqrt(K) 2^-24 (sum |a||b| + |bias|).
  std::vector<double> want(M * N), tol(M * N);
  {
    std::vector<double> sum(N), scale(N);
    for (std::size_t i = 0; i < M; ++i) {
      std::fill(sum.begin(), sum.end(), 0.0);
      std::fill(scale.begin(), scale.end(), 0.0);
      for (std::size_t p = 0; p < K; ++p) {
        const double aip = A[i * K + p];
        for (std::size_t j = 0; j < N; ++j) {
          sum[j] += aip * B[p * N + j];
          scale[j] += std::fabs(aip * B[p * N + j]);
        }
      }
      for (std::size_t j = 0; j < N; ++j) {
        want[i * N + j] = std::min(std::max(sum[j] + bias[j], double(lo)), double(hi));
        tol[i * N + j] = 4.0 * std::sqrt(double(K)) * 0x1p-24 * (scale[j] + std::fabs(bias[j]));
      }
    }
  }
  bool ok = true;
  for (int pass = 0; pass < 2; ++pass) {
    CHECK_CUDA(cudaMemset(dY.data(), 0xFF, M * N * sizeof(float)));  // NaN: unwritten entries fail
    pass == 0 ? fused() : unfused();
    const std::vector<float> Y = kf::to_host(dY);
    std::size_t misses = 0;
    for (std::size_t e = 0; e < M * N; ++e) {
      if (!(std::fabs(Y[e] - want[e]) <= tol[e]) && ++misses <= 5) {  // written so that NaN fails
        std::printf("  Y[%zu][%zu] = %.9g, expected %.9g\n", e / N, e % N, Y[e], want[e]);
      }
    }
    std::printf("%-44s %s\n",
                pass == 0 ? "3. clamp(A*B + bias), kf::matmul + epilogue" : "3. the same, unfused (matmul, transform)",
                misses ? "FAILED" : "PASSED");
    ok &= misses == 0;
  }
  const float tf = average_ms(fused), tu = average_ms(unfused);
  const double tflop = 2.0 * M * N * K / 1e12;
  std::printf("   fused   %8.3f ms  %6.1f TFLOP/s\n   unfused %8.3f ms  %6.1f TFLOP/s  (fused saves %.0f%%)\n", tf,
              tflop / (tf * 1e-3), tu, tflop / (tu * 1e-3), 100.0 * (1.0 - tf / tu));
  return ok;
}

}  // namespace

int main() {
  int device_count = 0;
  const cudaError_t status = cudaGetDeviceCount(&device_count);
  if (status != cudaSuccess || device_count == 0) {
    std::printf(
        "SKIPPED: this example needs a CUDA GPU and found none (%s); kernelforge-doctor says why and how to fix it.\n",
        status != cudaSuccess ? cudaGetErrorName(status) : "0 devices");
    return exit_skipped;
  }
  try {
    std::mt19937 rng(random_seed);
    std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
    std::vector<float> x(n);
    for (auto& v : x) v = uniform(rng);
    std::printf("Your own kernels: n = %zu floats; GEMM %zu x %zu x %zu\n", n, M, N, K);
    const bool elementwise_ok = elementwise_parts(x);
    const bool gemm_ok = gemm_part(rng);
    std::printf("\n%s\n", elementwise_ok && gemm_ok ? "PASSED" : "FAILED");
    return elementwise_ok && gemm_ok ? EXIT_SUCCESS : EXIT_FAILURE;
  } catch (const kf::error& e) {  // e.g. no_kernel_image: this .cu was not compiled for the GPU
    std::printf("kernelforge error: %s\nFAILED\n", e.what());
    return EXIT_FAILURE;
  }
}
