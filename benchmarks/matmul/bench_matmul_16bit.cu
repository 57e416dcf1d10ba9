// SPDX-License-Identifier: Apache-2.0
// bench_matmul's fp16 / bf16 rows (the library's tensor_core_f16 and wgmma_f16
// steps against cuBLAS's half-precision GEMM with fp32 accumulation, and the
// paired rows of the wgmma variants), registered by bench_matmul_main.cu's registrar
// per shape. The rows and counters are listed at the top of bench_matmul_main.cu.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "bench_matmul.hpp"
#include "gemm_bench.hpp"
#include "gpu_benchmark.hpp"
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"
#include "kernelforge/matmul.hpp"

namespace kf::bench::matmul {
namespace {

// ---- fp16 / bf16 rows ------------------------------------------------------------
/// Values as fill_random_kernel's, rounded to T (exact products in fp32).
template <class T>
__global__ void fill_random_16bit_kernel(T* data, std::size_t n, std::uint64_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t h = mix64(seed ^ mix64(i));
    const float magnitude = 0.5f + 0.5f * static_cast<float>(h >> 40) * (1.0f / (1u << 24));
    const float v = (h & 1u) ? -magnitude : magnitude;
    if constexpr (std::is_same_v<T, __half>) {
      data[i] = __float2half_rn(v);
    } else {
      data[i] = __float2bfloat16_rn(v);
    }
  }
}

template <class T>
struct operands16 {
  shape s;
  kf::device_buffer<T> a, b, c;
  explicit operands16(const shape& s_) : s(s_), a(s_.m * s_.k), b(s_.k * s_.n), c(s_.m * s_.n) {
    const auto fill = [](T* data, std::size_t n, std::uint64_t seed) {
      const std::size_t blocks = std::min<std::size_t>((n + fill_block - 1) / fill_block, fill_max_blocks);
      fill_random_16bit_kernel<T>
          <<<static_cast<unsigned>(std::max<std::size_t>(blocks, 1)), fill_block>>>(data, n, seed);
      check(cudaGetLastError(), "fill_random_16bit");
    };
    fill(a.data(), a.size(), 1);
    fill(b.data(), b.size(), 2);
    check(cudaDeviceSynchronize(), "fill");
  }
};

/// One shape's 16-bit operands at a time (the fp32 ones are freed first: 8192^2 x 3).
template <class T>
operands16<T>& operands16_for(const shape& s) {
  static std::unique_ptr<operands16<T>> current;
  if (!current || current->s.m != s.m || current->s.n != s.n || current->s.k != s.k) {
    current.reset();
    current = std::make_unique<operands16<T>>(s);
  }
  return *current;
}

template <class T>
const char* precision16() {
  return std::is_same_v<T, __half> ? "fp16" : "bf16";
}

/// kf variant, or cuBLAS (variant best marks the cuBLAS row), or (block_n
/// nonzero or multicast forced) the wgmma kernel on block tiles 128 x block_n
/// (0: by shape) sharing the operand `multicast` says in its clusters, or (step
/// nonzero) Hopper learning step 11, 12 or 13.
template <class T>
void run16(bool cublas_row, kf::matmul_variant variant, operands16<T>& p, cudaStream_t stream, int block_n = 0,
           kf::detail::wgmma_cluster_mode multicast = kf::detail::wgmma_cluster_mode::by_shape, int step = 0) {
  const float alpha = 1.f, beta = 0.f;
  const int m = static_cast<int>(p.s.m), n = static_cast<int>(p.s.n), k = static_cast<int>(p.s.k);
  if (cublas_row) {
    constexpr cudaDataType_t type = std::is_same_v<T, __half> ? CUDA_R_16F : CUDA_R_16BF;
    cublas_check(cublasSetStream(cublas(), stream), "cublasSetStream");
    cublas_check(cublasGemmEx(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, p.b.data(), type, n, p.a.data(),
                              type, k, &beta, p.c.data(), type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (16-bit)");
    return;
  }
  if (step != 0 || block_n != 0 || multicast != kf::detail::wgmma_cluster_mode::by_shape) {
    const auto g = kf::detail::make_gemm_args<T>(kf::op::none, kf::op::none, p.s.m, p.s.n, p.s.k, alpha, p.a.data(),
                                                 p.s.k, p.b.data(), p.s.n, beta, p.c.data(), p.s.n);
    const bool ran = step != 0 ? kf::detail::wgmma_step_try_launch(static_cast<kf::detail::wgmma_step>(step), g, stream)
                               : kf::detail::wgmma_try_launch(g, stream, {2, block_n, multicast});
    if (!ran) {
      throw std::runtime_error("the wgmma kernel does not run here (compute capability 9.0 and 90 in the build)");
    }
    return;
  }
  kf::matmul_options o;
  o.stream = stream;
  o.variant = variant;
  kf::matmul<T>(kf::op::none, kf::op::none, p.s.m, p.s.n, p.s.k, alpha, p.a.data(), p.s.k, p.b.data(), p.s.n, beta,
                p.c.data(), p.s.n, o);
}

/// 16 entries against a double dot product: |err| <= (4 sqrt(k) + k/16 + 4) 2^-23
/// sum|a b| (fp32 accumulation) + 2 u_T |ref| (the rounding to T).
template <class T>
std::string spot_check16(bool cublas_row, kf::matmul_variant variant, operands16<T>& p, int block_n,
                         kf::detail::wgmma_cluster_mode multicast, int step = 0) {
  check(cudaMemset(p.c.data(), 0xFF, p.c.size_bytes()), "poison C");
  run16<T>(cublas_row, variant, p, nullptr, block_n, multicast, step);
  check(cudaDeviceSynchronize(), "spot check run");
  const double kd = static_cast<double>(p.s.k);
  const double acc_rel = (4.0 * std::sqrt(kd) + kd / 16.0 + 4.0) * std::ldexp(1.0, -23);
  const double u = std::is_same_v<T, __half> ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  for (int t = 0; t < 16; ++t) {
    const spot_entry e = sample_entry(p.a.data(), p.b.data(), p.c.data(), p.s, t);
    if (!(std::fabs(e.got - e.ref) <= acc_rel * e.scale + 2 * u * std::fabs(e.ref))) {
      return std::string(precision16<T>()) + " is wrong at (" + std::to_string(e.i) + ", " + std::to_string(e.j) +
             "): got " + std::to_string(e.got) + ", expected " + std::to_string(e.ref);
    }
  }
  return {};
}

template <class T>
void bm_matmul16(benchmark::State& state, bool cublas_row, kf::matmul_variant variant, shape s, int block_n,
                 kf::detail::wgmma_cluster_mode multicast, int step) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    if (!cublas_row && device().cc_major < 8) {
      state.SkipWithError("fp16 / bf16 tensor cores need compute capability 8.0");
      return;
    }
    release_fp32_operands();  // the fp32 operands of the previous rows
    operands16<T>& p = operands16_for<T>(s);
    const std::string wrong = spot_check16<T>(cublas_row, variant, p, block_n, multicast, step);
    if (!wrong.empty()) {
      state.SkipWithError(wrong.c_str());
      return;
    }
    time_gpu(
        state, [&](cudaStream_t stream) { run16<T>(cublas_row, variant, p, stream, block_n, multicast, step); },
        nullptr, 3);
    set_flops(state, s.flops(), tensor_peak_tflops(2));
    const std::string key = std::string(precision16<T>()) + "/" + s.name();
    const double t = state.counters["gpu_s"];
    if (cublas_row) {
      cublas_times()[key] = t;
    } else if (cublas_times().count(key) && t > 0) {
      state.counters["frac_cublas"] = cublas_times()[key] / t;
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

/// One side of a 16-bit pair row, as run16 takes it.
struct side16 {
  bool cublas_row;
  kf::matmul_variant variant;
  kf::detail::wgmma_cluster_mode multicast;
};

/// matmul/{fp16,bf16}/<what>/<shape>: two sides timed in turn (best_vs_cublas:
/// kf::matmul<T> with variant best and cublasGemmEx; mcast_a_vs_b: the wgmma
/// kernel at the library's tile width, its clusters forced to share A and to
/// share B -- the data of tuning.hpp's wgmma_cluster_shares_a).
template <class T>
void bm_pair16(benchmark::State& state, side16 first, side16 second, pair_names names, shape s) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    if (device().cc_major < 8) {
      state.SkipWithError("fp16 / bf16 tensor cores need compute capability 8.0");
      return;
    }
    release_fp32_operands();  // the fp32 operands of the previous rows
    operands16<T>& p = operands16_for<T>(s);
    const auto go = [&](const side16& x, cudaStream_t stream) {
      run16<T>(x.cublas_row, x.variant, p, stream, 0, x.multicast);
    };
    time_pair(
        state, s, tensor_peak_tflops(2), names,
        [&](int side) {
          const side16& x = side == 0 ? first : second;
          return spot_check16<T>(x.cublas_row, x.variant, p, 0, x.multicast);
        },
        [&](cudaStream_t stream) { go(first, stream); }, [&](cudaStream_t stream) { go(second, stream); });
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

template <class T>
void register_16bit_rows(const shape& s) {
  using v = kf::matmul_variant;
  using kf::detail::wgmma_cluster_mode;
  const auto add = [&](const char* name, bool cublas_row, v variant, double expected_tflops, int block_n = 0,
                       wgmma_cluster_mode multicast = wgmma_cluster_mode::by_shape, int step = 0) {
    const std::string full = std::string("matmul/") + precision16<T>() + "/" + name + "/" + s.name();
    const double seconds = s.flops() / (expected_tflops * 1e12);
    const auto iterations =
        std::clamp(static_cast<std::int64_t>(row_seconds() / seconds), min_iterations, max_iterations);
    benchmark::RegisterBenchmark(full.c_str(), bm_matmul16<T>, cublas_row, variant, s, block_n, multicast, step)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(iterations);
  };
  add("cublas", true, v::best, 600);
  add("tensor_core_f16", false, v::tensor_core_f16, 300);
  // The Hopper learning steps (11 wgmma + TMA, 12 warp-specialized, 13 clusters) before step 14, wgmma_f16;
  // they read A and B in place, so only where both have rows of whole 16-byte units.
  if (s.k % 8 == 0 && s.n % 8 == 0) {
    add("wgmma_step11", false, v::wgmma_f16, 300, 0, wgmma_cluster_mode::by_shape, 11);
    add("wgmma_step12", false, v::wgmma_f16, 400, 0, wgmma_cluster_mode::by_shape, 12);
    add("wgmma_step13", false, v::wgmma_f16, 400, 0, wgmma_cluster_mode::by_shape, 13);
  }
  add("wgmma_f16", false, v::wgmma_f16, 500);
  // The shapes whose tiles are 128 x 64 by shape, also at the 128 x 128 tiles
  // they ran before (split-k by the library's rule): the two widths in one run.
  if (picks_narrowest_wgmma_tile(s)) add("wgmma_f16_n128", false, v::wgmma_f16, 500, 128);
  // The cluster sharing A against sharing B, at the library's tile width.
  if (compares_wgmma_multicast(s)) {
    add("wgmma_mcast_a", false, v::wgmma_f16, 500, 0, wgmma_cluster_mode::share_a);
    add("wgmma_mcast_b", false, v::wgmma_f16, 500, 0, wgmma_cluster_mode::share_b);
  }
  if (compares_wgmma_cluster_split_k(s)) {
    add("wgmma_cluster_splitk", false, v::wgmma_f16, 500, 0, wgmma_cluster_mode::split_k);
  }
  const auto pair = [&](const char* what, side16 first, side16 second, pair_names names) {
    const std::string full = std::string("matmul/") + precision16<T>() + "/" + what + "/" + s.name();
    benchmark::RegisterBenchmark(full.c_str(), bm_pair16<T>, first, second, names, s)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(paired_iterations(s, 600));
  };
  pair("mcast_a_vs_b", {false, v::wgmma_f16, wgmma_cluster_mode::share_a},
       {false, v::wgmma_f16, wgmma_cluster_mode::share_b}, a_vs_b);
  pair("best_vs_cublas", {false, v::best, wgmma_cluster_mode::by_shape}, {true, v::best, wgmma_cluster_mode::by_shape},
       vs_cublas);
}

}  // namespace

void register_16bit(const shape& s) {
  register_16bit_rows<__half>(s);
  register_16bit_rows<__nv_bfloat16>(s);
}

}  // namespace kf::bench::matmul
