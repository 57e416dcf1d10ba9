// SPDX-License-Identifier: Apache-2.0
// bench_matmul_tc: the tensor-core matmul kernels against cuBLAS TF32, in one
// process, so every ratio comes from one run.
//
//   bench_matmul_tc [size ...]      (default: 4096 8192; square m = n = k)
//
// Rows, per size: cuBLAS (cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_TF32) for the
// row-major products C = A B ("NN", B k x n) and C = A B^T ("NT", B stored n x k),
// then launch_tensor_core_tf32 (mma.sync; the default 8-warp layout and the
// 4-warp 64x64 one) and wgmma_try_launch (clusters of 1 and 2 CTAs) on the
// same two products. NN through wgmma includes the pass
// that repacks B k-contiguous (wgmma reads TF32 only k-major); NT needs none, so
// its row is the kernel alone. Each row: median of `reps` calls timed with CUDA
// events after 3 warm-ups, the L2 cache overwritten before every timed call;
// TFLOP/s = 2 m n k / time; ratio to cuBLAS with the same transposes; and the
// largest difference from cuBLAS's C relative to max |C| (a wrong kernel shows
// O(1); TF32 rounding ~1e-3). Exit status 1 when a result differs by more than
// 1e-2 or a wgmma row could not run on a GPU that has wgmma.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "kernelforge/kernels/matmul/tensor_core_tf32_launch.cuh"
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(2);
  }
}
void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: cuBLAS status %d\n", what, static_cast<int>(status));
    std::exit(2);
  }
}

constexpr int warmups = 3;
constexpr double max_difference = 1e-2;  ///< relative to max |C|: far above TF32 rounding, far below a bug

/// Uniform in +-[0.125, 2): never zero (splitmix64 of the index).
__global__ void fill_random(float* x, std::size_t n, unsigned long long seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned long long z = seed * 0x100000001B3ull + i + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
    const float magnitude = 0.125f + 1.875f * u;
    x[i] = (z & 1) ? -magnitude : magnitude;
  }
}

struct timer {
  cudaEvent_t start{}, stop{};
  void* flush = nullptr;
  std::size_t flush_bytes = 0;
  timer() {
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
    int device = 0, l2 = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "L2 size");
    flush_bytes = 2 * static_cast<std::size_t>(l2);
    if (flush_bytes) check(cudaMalloc(&flush, flush_bytes), "cudaMalloc(flush)");
  }
  ~timer() {
    cudaFree(flush);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  /// Median milliseconds of `reps` calls of fn.
  double median_ms(int reps, const std::function<void()>& fn) {
    for (int i = 0; i < warmups; ++i) fn();
    std::vector<float> ms;
    for (int i = 0; i < reps; ++i) {
      if (flush) check(cudaMemsetAsync(flush, i & 0xFF, flush_bytes), "L2 flush");
      check(cudaEventRecord(start), "cudaEventRecord");
      fn();
      check(cudaEventRecord(stop), "cudaEventRecord");
      check(cudaEventSynchronize(stop), "cudaEventSynchronize");
      float t = 0;
      check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }
};

/// max |got - ref| / max |ref|.
double relative_difference(const float* got_d, const float* ref_d, std::size_t n) {
  std::vector<float> got(n), ref(n);
  check(cudaMemcpy(got.data(), got_d, n * sizeof(float), cudaMemcpyDeviceToHost), "copy C");
  check(cudaMemcpy(ref.data(), ref_d, n * sizeof(float), cudaMemcpyDeviceToHost), "copy C ref");
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - ref[i]);
    diff = std::isnan(d) ? INFINITY : std::max(diff, d);
    scale = std::max(scale, std::fabs(static_cast<double>(ref[i])));
  }
  return diff / scale;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
  if (sizes.empty()) sizes = {4096, 8192};

  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  const bool wgmma = kf::detail::wgmma_available(device);
  std::printf("device: %s (sm_%d%d, %d SMs); wgmma kernel %s\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, wgmma ? "available" : "NOT available (needs sm_90 and 90 in the build's list)");
  if (prop.major < 8) {
    std::printf("mma.sync TF32 needs compute capability 8.0 or newer\n");
    return 2;
  }

  cublasHandle_t handle = nullptr;
  check(cublasCreate(&handle), "cublasCreate");
  timer clock;
  bool failed = false;

  for (const std::size_t size : sizes) {
    const std::size_t m = size, n = size, k = size, elements = size * size;
    const int reps = size >= 8192 ? 10 : 20;
    float *A = nullptr, *B = nullptr, *C = nullptr, *C_ref = nullptr;
    check(cudaMalloc(&A, elements * sizeof(float)), "cudaMalloc A");
    check(cudaMalloc(&B, elements * sizeof(float)), "cudaMalloc B");
    check(cudaMalloc(&C, elements * sizeof(float)), "cudaMalloc C");
    check(cudaMalloc(&C_ref, elements * sizeof(float)), "cudaMalloc C_ref");
    fill_random<<<1024, 256>>>(A, elements, 1);
    fill_random<<<1024, 256>>>(B, elements, 2);
    check(cudaGetLastError(), "fill_random");
    const float alpha = 1.0f, beta = 0.0f;
    const double flops = 2.0 * m * n * k;
    std::printf("\n%zu x %zu x %zu (median of %d)\n", m, n, k, reps);
    std::printf("  %-34s %10s %10s %10s %12s\n", "variant", "ms", "TFLOP/s", "x cuBLAS", "max rel diff");

    for (const bool trans_b : {false, true}) {
      // Row-major C = A op(B) is column-major C^T = op(B)^T A^T: cuBLAS gets B first.
      auto cublas = [&](float* out) {
        check(cublasGemmEx(handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n),
                           static_cast<int>(m), static_cast<int>(k), &alpha, B, CUDA_R_32F,
                           static_cast<int>(trans_b ? k : n), A, CUDA_R_32F, static_cast<int>(k), &beta, out,
                           CUDA_R_32F, static_cast<int>(n), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
      };
      kf::detail::gemm_args<float> args;
      args.trans_b = trans_b;
      args.m = m, args.n = n, args.k = k;
      args.alpha = alpha, args.beta = beta;
      args.A = A, args.lda = k;
      args.B = B, args.ldb = trans_b ? k : n;
      args.C = C, args.ldc = n;
      const char* tag = trans_b ? "NT" : "NN";

      const double cublas_ms = clock.median_ms(reps, [&] { cublas(C_ref); });
      const double cublas_tflops = flops / cublas_ms * 1e-9;
      std::printf("  %-34s %10.3f %10.1f %10.3f %12s\n", (std::string("cuBLAS TF32 ") + tag).c_str(), cublas_ms,
                  cublas_tflops, 1.0, "-");

      auto row = [&](const std::string& name, const std::function<bool()>& run) {
        check(cudaMemset(C, 0xFF, elements * sizeof(float)), "poison C");
        if (!run()) {
          std::printf("  %-34s %10s\n", name.c_str(), "declined");
          failed = failed || wgmma;
          return;
        }
        check(cudaDeviceSynchronize(), name.c_str());
        const double diff = relative_difference(C, C_ref, elements);
        const double ms = clock.median_ms(reps, [&] { run(); });
        const double tflops = flops / ms * 1e-9;
        std::printf("  %-34s %10.3f %10.1f %10.3f %12.2e%s\n", name.c_str(), ms, tflops, tflops / cublas_tflops, diff,
                    diff <= max_difference ? "" : "  WRONG");
        failed = failed || !(diff <= max_difference);
      };
      row(std::string("mma.sync 8 warps (default) ") + tag, [&] {
        kf::detail::launch_tensor_core_tf32(args, nullptr);
        return true;
      });
      row(std::string("mma.sync 4 warps 64x64 ") + tag, [&] {
        kf::detail::launch_tensor_core_tf32_with<kf::detail::tf32_mma::four_warps>(args, nullptr);
        return true;
      });
      if (wgmma) {
        row(std::string("wgmma cluster 2 ") + tag + (trans_b ? "" : " (+ B repack)"),
            [&] { return kf::detail::wgmma_try_launch(args, nullptr, {2}); });
        row(std::string("wgmma cluster 1 ") + tag + (trans_b ? "" : " (+ B repack)"),
            [&] { return kf::detail::wgmma_try_launch(args, nullptr, {1}); });
      }
    }
    check(cudaFree(A), "cudaFree");
    check(cudaFree(B), "cudaFree");
    check(cudaFree(C), "cudaFree");
    check(cudaFree(C_ref), "cudaFree");
  }
  cublasDestroy(handle);
  std::printf("\n%s\n",
              failed ? "FAILED: a result differs from cuBLAS (or wgmma declined)" : "all results match cuBLAS TF32");
  return failed ? 1 : 0;
}
