// SPDX-License-Identifier: Apache-2.0
// bench_matmul's fp32 and TF32 rows against cuBLAS (the binary's list of rows and its
// main: bench_matmul_main.cu; the tuning rows' configurations: bench_matmul_tuning.cuh):
// the operands of one shape, how each row runs, the spot check that gates its timing,
// and the single and paired rows of a shape (register_fp32).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <type_traits>

#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "bench_matmul.hpp"
#include "bench_matmul_tuning.cuh"
#include "gemm_bench.hpp"
#include "gpu_benchmark.hpp"
#include "kernelforge/elementwise.hpp"
#include "kernelforge/kernels/matmul/large_tile_launch.cuh"
#include "kernelforge/kernels/matmul/warp_tiled_launch.cuh"
#include "kernelforge/matmul.hpp"
#include "kernelforge/transform.cuh"

#include "kernelforge/kernels/matmul/mma_sync_fp32_emulated.hpp"
#include "kernelforge/kernels/matmul/tensor_core_tf32_launch.cuh"
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"

namespace kf::bench::matmul {

/// The unfused rows' bias add: c + bias (kf::transform over C and a broadcast bias matrix).
struct add_op {
  __device__ float operator()(float c, float bias) const { return c + bias; }
};

// ---- inputs (bench_matmul.hpp: the pack rows' file uses them too) --------------
/// Magnitudes in [0.5, 1) with a random sign: never zero, never denormal.
__global__ void fill_random_kernel(float* data, std::size_t n, std::uint64_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::uint64_t h = mix64(seed ^ mix64(i));
    const float magnitude = 0.5f + 0.5f * static_cast<float>(h >> 40) * (1.0f / (1u << 24));
    data[i] = (h & 1u) ? -magnitude : magnitude;
  }
}

void fill_random(float* data, std::size_t n, std::uint64_t seed) {
  const std::size_t blocks = std::min<std::size_t>((n + fill_block - 1) / fill_block, fill_max_blocks);
  fill_random_kernel<<<static_cast<unsigned>(std::max<std::size_t>(blocks, 1)), fill_block>>>(data, n, seed);
  check(cudaGetLastError(), "fill_random");
}

namespace {

/// A, B and C of one shape, kept while consecutive benchmarks use that shape.
struct operands {
  shape s;
  kf::device_buffer<float> a, b, c;
  explicit operands(const shape& s_) : s(s_), a(s_.m * s_.k), b(s_.k * s_.n), c(s_.m * s_.n) {
    fill_random(a.data(), a.size(), 1);
    fill_random(b.data(), b.size(), 2);
    check(cudaDeviceSynchronize(), "fill");
  }
};

/// The fused / unfused rows' bias: n values (bias) and the same broadcast to m x n rows (bias_rows).
struct bias_operands {
  shape s;
  kf::device_buffer<float> bias, bias_rows;
  explicit bias_operands(const shape& s_) : s(s_), bias(s_.n), bias_rows(s_.m * s_.n) {
    fill_random(bias.data(), bias.size(), 3);
    for (std::size_t i = 0; i < s.m; ++i) {
      check(cudaMemcpy(bias_rows.data() + i * s.n, bias.data(), s.n * sizeof(float), cudaMemcpyDeviceToDevice),
            "broadcast bias");
    }
    check(cudaDeviceSynchronize(), "fill bias");
  }
};

bias_operands& bias_for(const shape& s) {
  static std::unique_ptr<bias_operands> current;
  if (!current || current->s.m != s.m || current->s.n != s.n || current->s.k != s.k) {
    current.reset();
    current = std::make_unique<bias_operands>(s);
  }
  return *current;
}

operands& operands_for(const shape& s) {
  static std::unique_ptr<operands> current;
  if (!current || current->s.m != s.m || current->s.n != s.n || current->s.k != s.k) {
    current.reset();  // free the previous shape's buffers first
    current = std::make_unique<operands>(s);
  }
  return *current;
}

}  // namespace

void release_fp32_operands() { operands_for(shape{1, 1, 1}); }

namespace {

// ---- implementations -----------------------------------------------------------
/// Row-major C = A B through column-major cuBLAS: C^T = B^T A^T.
void cublas_matmul(operands& p, bool tf32, cudaStream_t stream) {
  const float alpha = 1.f, beta = 0.f;
  const int m = static_cast<int>(p.s.m), n = static_cast<int>(p.s.n), k = static_cast<int>(p.s.k);
  cublas_check(cublasSetStream(cublas(), stream), "cublasSetStream");
  if (!tf32) {
    cublas_check(cublasSgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, p.b.data(), n, p.a.data(), k, &beta,
                             p.c.data(), n),
                 "cublasSgemm");
  } else {
    cublas_check(cublasGemmEx(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, p.b.data(), CUDA_R_32F, n,
                              p.a.data(), CUDA_R_32F, k, &beta, p.c.data(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32,
                              CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx (TF32)");
  }
}

kf::detail::gemm_args<float> args_of(operands& p) {
  kf::detail::gemm_args<float> g;
  g.m = p.s.m, g.n = p.s.n, g.k = p.s.k;
  g.alpha = 1.f, g.beta = 0.f;
  g.A = p.a.data(), g.lda = p.s.k;
  g.B = p.b.data(), g.ldb = p.s.n;
  g.C = p.c.data(), g.ldc = p.s.n;
  return g;
}

enum class impl {
  kf,
  cublas,
  mma_sync,
  mma_sync_emulated,
  wgmma_emulated,
  wgmma_repack_b,
  wgmma_cluster_mode,
  tuning,
  fused,
  unfused
};

struct row {
  std::string precision;  // "fp32" or "tf32"
  std::string name;       // variant, "cublas", "mma_sync" or "tuning/<config>"
  impl kind = impl::kf;
  kf::matmul_variant variant = kf::matmul_variant::best;
  void (*tuning)(const kf::detail::gemm_args<float>&, cudaStream_t) = nullptr;  // tuning rows (bench_matmul_tuning.cuh)
  double expected_tflops = 1;                                                   // for iteration counts only
  int warmups = 3;
  int block_n = 0;  // wgmma_repack_b: the tile width, 0 by shape
  kf::detail::wgmma_cluster_mode multicast = kf::detail::wgmma_cluster_mode::by_shape;  // wgmma_cluster_mode rows
  /// wgmma_emulated rows: step 15 or step 17 (split ahead or serial) forced.
  kf::detail::fp32_emulated_wgmma_kernel emulated = kf::detail::fp32_emulated_wgmma_kernel::by_shape;
};

/// Enqueues one call of `r` on `stream`.
void run(const row& r, operands& p, cudaStream_t stream) {
  switch (r.kind) {
    case impl::cublas: return cublas_matmul(p, r.precision == "tf32", stream);
    case impl::tuning: return r.tuning(args_of(p), stream);
    case impl::mma_sync: kf::detail::launch_tensor_core_tf32(args_of(p), stream); return;
    case impl::mma_sync_emulated:
      if (!kf::detail::mma_sync_fp32_emulated_try_launch(args_of(p), {}, kf::detail::current_device("bench"), stream)) {
        throw std::runtime_error("step 16 found no workspace for the split operands");
      }
      return;
    case impl::wgmma_emulated: {
      const kf::detail::gemm_args<float> g = args_of(p);
      if (!kf::detail::wgmma_fp32_emulated_try_launch(g, {}, kf::detail::current_device("bench"), stream, r.emulated)) {
        throw std::runtime_error(
            "the wgmma fp32-emulation step does not run here (compute capability 9.0 and 90 in the build)");
      }
      return;
    }
    case impl::wgmma_repack_b:
      if (!kf::detail::wgmma_try_launch(
              args_of(p), stream,
              {2, r.block_n, kf::detail::wgmma_cluster_mode::by_shape, kf::detail::wgmma_tf32_b_mode::repack})) {
        throw std::runtime_error(
            "the wgmma TF32 kernel does not run here (compute capability 9.0 and 90 in the build)");
      }
      return;
    case impl::wgmma_cluster_mode:
      if (!kf::detail::wgmma_try_launch(args_of(p), stream, {2, 0, r.multicast})) {
        throw std::runtime_error(
            "the wgmma TF32 kernel does not run here (compute capability 9.0 and 90 in the build)");
      }
      return;
    case impl::kf:
    case impl::fused:
    case impl::unfused: {
      kf::matmul_options o;
      o.stream = stream;
      o.variant = r.variant;
      o.math = r.precision == "tf32"            ? kf::math_mode::tf32
               : r.precision == "fp32_emulated" ? kf::math_mode::fp32_emulated
                                                : kf::math_mode::exact;
      if (r.kind == impl::fused) {
        o.bias = bias_for(p.s).bias.data();
        o.relu = true;
      }
      kf::matmul<float>(kf::op::none, kf::op::none, p.s.m, p.s.n, p.s.k, 1.f, p.a.data(), p.s.k, p.b.data(), p.s.n, 0.f,
                        p.c.data(), p.s.n, o);
      if (r.kind == impl::unfused) {
        const std::size_t mn = p.s.m * p.s.n;
        kf::transform(mn, add_op{}, p.c.data(), p.c.data(), bias_for(p.s).bias_rows.data(),
                      kf::transform_options{stream});
        kf::elementwise_options e;
        e.stream = stream;
        kf::relu_threshold_forward<float>(mn, p.c.data(), p.c.data(), 0.0f, e);
      }
      return;
    }
  }
}

/// Runs `r` once and compares 16 entries of C with a double-precision dot
/// product. Tolerance relative to sum |a||b|: 1e-5 for fp32, 4 * 2^-10 for tf32.
/// The largest |got - ref| / sum |a b| over the last spot check's 16 entries.
double& last_spot_error() {
  static double e = 0;
  return e;
}

std::string spot_check(const row& r, operands& p) {
  last_spot_error() = 0;
  check(cudaMemset(p.c.data(), 0xFF, p.c.size_bytes()), "poison C");
  run(r, p, nullptr);
  check(cudaDeviceSynchronize(), "spot check run");
  const double tol = r.precision == "tf32" ? 4.0 / 1024.0 : 1e-5;
  for (int t = 0; t < 16; ++t) {
    const spot_entry e = sample_entry(p.a.data(), p.b.data(), p.c.data(), p.s, t);
    double ref = e.ref, scale = e.scale;
    if (r.kind == impl::fused || r.kind == impl::unfused) {  // relu(ref + bias[j]), threshold 0
      float bias = 0;
      check(cudaMemcpy(&bias, bias_for(p.s).bias.data() + e.j, sizeof(float), cudaMemcpyDeviceToHost), "copy bias");
      ref = ref + bias <= 0 ? 0 : ref + bias;
      scale += std::fabs(bias);
    }
    const double err = std::fabs(e.got - ref);
    last_spot_error() = std::max(last_spot_error(), err / scale);
    if (!(err <= tol * scale)) {  // false for NaN
      return r.name + " is wrong at (" + std::to_string(e.i) + ", " + std::to_string(e.j) + "): got " +
             std::to_string(e.got) + ", expected " + std::to_string(ref);
    }
  }
  return {};
}

void bm_matmul(benchmark::State& state, row r, shape s) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    if (r.kind == impl::tuning && kf::detail::warp_tiled_tuning_of(kf::detail::current_device("bench")) !=
                                      kf::detail::warp_tiled_tuning_id::large_smem) {
      state.SkipWithError("tuning rows use the large_smem configuration family (sm_80, sm_90, sm_100)");
      return;
    }
    if (r.precision == "tf32" && r.kind != impl::cublas && device().cc_major < 8) {
      state.SkipWithError("TF32 tensor cores need compute capability 8.0");
      return;
    }
    operands& p = operands_for(s);
    const std::string wrong = spot_check(r, p);
    if (!wrong.empty()) {
      state.SkipWithError(wrong.c_str());
      return;
    }
    time_gpu(
        state, [&](cudaStream_t stream) { run(r, p, stream); }, nullptr, r.warmups);
    set_flops(state, s.flops(), r.precision == "tf32" ? tensor_peak_tflops(4) : 0.0);
    const std::string key = r.precision + "/" + s.name();
    const double t = state.counters["gpu_s"];
    if (r.kind == impl::cublas) {
      cublas_times()[key] = t;
    } else if (cublas_times().count(key) && t > 0) {
      state.counters["frac_cublas"] = cublas_times()[key] / t;
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void register_row(const row& r, const shape& s) {
  const std::string name = "matmul/" + r.precision + "/" + r.name + "/" + s.name();
  const double seconds = s.flops() / (r.expected_tflops * 1e12);
  const auto iterations =
      std::clamp(static_cast<std::int64_t>(row_seconds() / seconds), min_iterations, max_iterations);
  benchmark::RegisterBenchmark(name.c_str(), bm_matmul, r, s)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(iterations);
}

/// matmul/<fp32|tf32>/<what>/<shape>: rows `first` and `second` timed in turn
/// (best_vs_cublas: the library's pick and cuBLAS of its precision;
/// mcast_a_vs_b: the TF32 wgmma rows sharing A and sharing B).
void bm_pair(benchmark::State& state, row first, row second, pair_names names, shape s) {
  KF_BENCH_REQUIRE_GPU(state);
  try {
    if ((first.precision == "tf32" || first.kind == impl::mma_sync_emulated) && device().cc_major < 8) {
      state.SkipWithError("TF32 tensor cores need compute capability 8.0");
      return;
    }
    operands& p = operands_for(s);
    double errors[2] = {0, 0};  // each side's spot-check error: a speed is reported with its accuracy
    time_pair(
        state, s, first.precision == "tf32" ? tensor_peak_tflops(4) : 0.0, names,
        [&](int side) {
          std::string wrong = spot_check(side == 0 ? first : second, p);
          errors[side] = last_spot_error();
          return wrong;
        },
        [&](cudaStream_t stream) { run(first, p, stream); }, [&](cudaStream_t stream) { run(second, p, stream); });
    state.counters["max_error"] = errors[0];
    state.counters["baseline_max_error"] = errors[1];
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void register_pair(const char* what, const row& first, const row& second, pair_names names, const shape& s) {
  const std::string name = "matmul/" + first.precision + "/" + what + "/" + s.name();
  benchmark::RegisterBenchmark(name.c_str(), bm_pair, first, second, names, s)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Iterations(paired_iterations(s, first.expected_tflops));
}

row kf_row(kf::matmul_variant v, double tflops, const char* precision = "fp32") {
  row r;
  r.precision = precision;
  r.name = kf::to_string(v);
  r.kind = impl::kf;
  r.variant = v;
  r.expected_tflops = tflops;
  return r;
}

}  // namespace

void register_fp32(const shape& s) {
  using v = kf::matmul_variant;
  row cublas_fp32{"fp32", "cublas", impl::cublas, v::best, nullptr, 50};
  row cublas_tf32{"tf32", "cublas", impl::cublas, v::best, nullptr, 350};
  row mma{"tf32", "mma_sync", impl::mma_sync, v::best, nullptr, 150};
  row repack_b{"tf32", "wgmma_repack_b", impl::wgmma_repack_b, v::best, nullptr, 250};
  // tensor_core_tf32's wgmma kernel with its clusters forced to share A, or B,
  // or to split k (B's source by shape).
  const auto multicast_row = [](const char* name, kf::detail::wgmma_cluster_mode m) {
    return row{"tf32", name, impl::wgmma_cluster_mode, v::best, nullptr, 250, 3, 0, m};
  };
  const row mcast_a = multicast_row("wgmma_mcast_a", kf::detail::wgmma_cluster_mode::share_a);
  const row mcast_b = multicast_row("wgmma_mcast_b", kf::detail::wgmma_cluster_mode::share_b);
  const row cluster_split_k = multicast_row("wgmma_cluster_splitk", kf::detail::wgmma_cluster_mode::split_k);
  const std::vector<row> slow = {kf_row(v::naive, 0.5), kf_row(v::coalesced, 2), kf_row(v::smem_tiled, 5),
                                 kf_row(v::blocktile_1d, 12)};
  const std::vector<row> fast = {kf_row(v::blocktile_2d, 20), kf_row(v::vectorized, 25), kf_row(v::warp_tiled, 45),
                                 kf_row(v::large_tile, 48), kf_row(v::best, 48)};
  const std::vector<row> tuning = {
      {"fp32", "tuning/128x128x16", impl::tuning, v::best, &launch_tuning<tune_128x128x16>, 45},
      {"fp32", "tuning/128x128x32_4stages", impl::tuning, v::best, &launch_tuning<tune_128x128x32_4stages>, 45},
      {"fp32", "tuning/128x256x16_8x16", impl::tuning, v::best, &launch_tuning<tune_128x256x16>, 45},
      {"fp32", "tuning/128x128x16_2blocks", impl::tuning, v::best, &launch_tuning<tune_128x128x16_2blocks>, 45}};
  // 16-byte copies only: on the aligned tuning shape.
  const std::vector<row> large_tuning = {{"fp32", "tuning/large_128x256x8_3stages", impl::tuning, v::best,
                                          &launch_large_tuning<tune_large_k8_3stages>, 48},
                                         {"fp32", "tuning/large_128x256x8_4stages", impl::tuning, v::best,
                                          &launch_large_tuning<tune_large_k8_4stages>, 48}};
  register_row(cublas_fp32, s);
  if (is_cube(s) && s.flops() <= slow_max_flops) {
    for (row r : slow) {
      if (r.variant == v::naive && s.m >= 4096) r.warmups = 1;  // ~0.1-0.3 s a call
      register_row(r, s);
    }
  }
  for (const row& r : fast) register_row(r, s);
  if (s.m == 4096 || s.m == 4095) {
    for (const row& r : tuning) register_row(r, s);
  }
  if (s.m == 4096) {
    for (const row& r : large_tuning) register_row(r, s);
  }
  register_row(cublas_tf32, s);
  register_row(kf_row(v::tensor_core_tf32, 250, "tf32"), s);
  register_row(mma, s);
  register_row(repack_b, s);
  if (compares_wgmma_multicast(s)) {
    register_row(mcast_a, s);
    register_row(mcast_b, s);
  }
  if (compares_wgmma_cluster_split_k(s)) register_row(cluster_split_k, s);
  register_pair("mcast_a_vs_b", mcast_a, mcast_b, a_vs_b, s);
  register_pair("best_vs_cublas", kf_row(v::best, 48), cublas_fp32, vs_cublas, s);
  register_pair("best_vs_cublas", kf_row(v::tensor_core_tf32, 250, "tf32"), cublas_tf32, vs_cublas, s);
  // fp32 accuracy on TF32 tensor cores (step 15 on compute capability 9.0 with the sm_90a image, step 16
  // elsewhere from 8.0; errc::unsupported, so skipped, below 8.0).
  register_pair("best_vs_cublas", kf_row(v::best, 100, "fp32_emulated"), cublas_fp32, vs_cublas, s);
  // Step 16 alone (mma.sync; what the row above runs off compute capability 9.0), on every GPU of 8.0 or newer.
  register_pair("mma_sync_vs_cublas", {"fp32_emulated", "mma_sync", impl::mma_sync_emulated, v::best, nullptr, 60},
                cublas_fp32, vs_cublas, s);
  // Step 17 (the large operand split in registers) against step 15 (both operands split by a pre-pass),
  // each forced, on the shapes step 17 is for (plan.hpp: choose_fp32_emulated_large; best runs it there
  // only while tuning.hpp's best_uses_fp32_emulated_skinny is on).
  if (kf::detail::choose_fp32_emulated_large(s.m, s.n, s.k) != kf::detail::fp32_emulated_large::none) {
    row skinny{"fp32_emulated", "skinny", impl::wgmma_emulated, v::best, nullptr, 100};
    skinny.emulated = kf::detail::fp32_emulated_wgmma_kernel::skinny;
    row step15 = skinny;
    step15.name = "step15";
    step15.emulated = kf::detail::fp32_emulated_wgmma_kernel::step_15;
    register_pair("skinny_vs_step15", skinny, step15, skinny_vs_step15, s);
    // Step 17's k-loop split ahead of the products (what it runs) against its serial one, same bits.
    row serial = skinny;
    serial.name = "skinny_serial";
    serial.emulated = kf::detail::fp32_emulated_wgmma_kernel::skinny_serial;
    register_pair("skinny_split_ahead_vs_serial", skinny, serial, split_ahead_vs_serial, s);
  }
  if ((is_cube(s) && s.m == 4096) || (s.m == 8192 && s.n == 8192 && s.k == 1024)) {
    for (const char* precision : {"fp32", "tf32"}) {
      const double tflops = precision[0] == 'f' ? 45 : 250;
      register_row({precision, "fused_bias_relu", impl::fused, v::best, nullptr, tflops}, s);
      register_row({precision, "unfused_bias_relu", impl::unfused, v::best, nullptr, tflops}, s);
    }
  }
}

}  // namespace kf::bench::matmul
