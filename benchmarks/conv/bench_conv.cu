// SPDX-License-Identifier: Apache-2.0
// bench_conv: the convolution family against cuDNN and the memory floor, in one
// run so every comparison is a ratio of figures measured together.
//
//   conv2d/fp32/<impl>/<layer>     impl: cudnn (FMA math: no TF32), best, naive,
//                                  smem_tiled, implicit_gemm, implicit_gemm_pipelined,
//                                  winograd, winograd_fused (3x3 stride-1 layers only;
//                                  winograd_fused: step 8, sm_90/sm_100 shared memory)
//   conv2d/tf32/<impl>/<layer>     impl: cudnn (tensor-op math), implicit_gemm_tf32,
//                                  implicit_gemm_wgmma (stride-1 layers; sm_90 only), best
//   filter2d/fp32/<impl>/8192x8192_<r>x<s>   impl: copy (cudaMemcpyAsync of the image:
//                                  the floor), cudnn (as a 1-channel convolution), best,
//                                  naive, constant_memory, smem_tiled, register_window,
//                                  rolling_window, tma_pipeline (sm_90 only: skipped elsewhere)
//   filter2d/fp32/register_window_cfg/<name>/8192x8192_<r>x<s>   register_window's candidate
//                                  configurations (include/kernelforge/kernels/filter2d/tuning.hpp; the
//                                  first, rows8_cols4, is the library's), launched directly
//   conv2d_bias_relu/<fp32|tf32>/<impl>/<layer>   conv + bias + ReLU (threshold 0, cuDNN's):
//                                  impl: cudnn_fused (cudnnConvolutionBiasActivationForward,
//                                  CUDNN_ACTIVATION_RELU, the algorithm of the cudnn row above),
//                                  unfused (kf::conv2d_forward with bias, then
//                                  kf::relu_threshold_forward in place), fused (conv2d_options.relu);
//                                  speedup_vs_unfused on the fused row (goal: >= 1.2);
//                                  layers: those below plus n32_c64_56x56_k64_1x1
// Layers: the ResNet-50 layers of shared/perf/ANCHORS.md.
//
// cuDNN runs first in each group; its algorithm comes from
// cudnnFindConvolutionForwardAlgorithm, run once per layer and math mode before
// timing, with its workspace allocated once. Every kernelforge result is
// checked against cuDNN's output before it is timed (the run stops with an
// error otherwise). Counters: TFLOP/s (2 N K C R S P Q) or GB/s (image read +
// written), frac_peak (of the FP32 CUDA-core peak, or of the datasheet
// bandwidth), frac_cudnn (cuDNN time / this time: > 1 is faster than cuDNN),
// frac_copy (of the copy rate measured in this run). Time from CUDA events
// around the call alone, L2 flushed before each sample (gpu_benchmark.hpp).
// benchmarks/plot_conv.py turns the JSON into the README table and a plot.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "conv_problem.hpp"
#include "cudnn_baseline.hpp"
#include "gpu_benchmark.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/elementwise.hpp"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/kernels/filter2d/window_launch.cuh"

namespace kf::bench::conv {
namespace {

// Every benchmark runs for at least this much GPU time: 0.1 s is over 100 samples
// of the slowest row timed this way (filter2d constant_memory 5x5, 0.93 ms) and
// 500 to 2000 of the convolutions (at 0.25 s the binary took 94 s).
constexpr double min_time_s = 0.1;
// Naive kernels on the large layers take milliseconds per call: a few samples suffice.
constexpr int naive_iterations = 10;
// Sanity check against cuDNN before timing: max |ours - cuDNN| / max |cuDNN|.
// cuDNN may pick Winograd or FFT (a few 1e-6 apart from direct summation), and
// TF32 results differ by ~1e-3.
constexpr double exact_check_tolerance = 1e-4;
constexpr double tf32_check_tolerance = 2e-2;

/// cuDNN's time per problem key, stored by its benchmark for frac_cudnn.
std::map<std::string, double>& cudnn_seconds() {
  static std::map<std::string, double> times;
  return times;
}

/// relative_difference of d.y, computed once per benchmark (Google Benchmark
/// may call a benchmark function several times while it sizes the run).
double checked_difference(const std::string& benchmark_name, const problem_data& d) {
  static std::map<std::string, double> done;
  const auto it = done.find(benchmark_name);
  if (it != done.end()) return it->second;
  return done[benchmark_name] = relative_difference(d, d.y.data());
}

void set_frac_cudnn(benchmark::State& state, const std::string& key) {
  const auto it = cudnn_seconds().find(key);
  if (it != cudnn_seconds().end() && state.counters["gpu_s"] > 0) {
    state.counters["frac_cudnn"] = it->second / state.counters["gpu_s"];
  }
}

// ---- conv2d -------------------------------------------------------------------
void bm_conv_cudnn(benchmark::State& state, const layer& L, bool tf32) {
  KF_BENCH_REQUIRE_GPU(state);
  const std::string key = (tf32 ? "tf32/" : "fp32/") + L.name;
  problem_data& d = data_for(L.name, L.p);
  cudnn_plan& c = cudnn_plan_for(key, d, tf32);
  // No bias in the comparison: cuDNN's forward has none, so the kernelforge rows pass null too.
  time_gpu(state, [&](cudaStream_t s) { run_cudnn(c, d, d.y_cudnn.data(), s); });
  check(cudaDeviceSynchronize(), "cuDNN");
  d.have_cudnn_result = true;  // the tf32 rows, registered after all fp32 rows, check against cuDNN's TF32 output
  cudnn_seconds()[key] = state.counters["gpu_s"];
  set_flops(state, d.flops());
  state.SetLabel(std::string("algo ") + std::to_string(static_cast<int>(c.algo)));
}

void bm_conv_kf(benchmark::State& state, const layer& L, kf::conv2d_variant variant, kf::math_mode math) {
  KF_BENCH_REQUIRE_GPU(state);
  problem_data& d = data_for(L.name, L.p);
  kf::conv2d_options options;
  options.variant = variant;
  options.math = math;
  auto run = [&](cudaStream_t s) {
    options.stream = s;
    kf::conv2d_forward<float>(d.p, d.x.data(), d.w.data(), nullptr, d.y.data(), options);
  };
  try {
    run(nullptr);
  } catch (const kf::error& e) {
    state.SkipWithError(e.what());
    return;
  }
  check(cudaDeviceSynchronize(), "kf::conv2d_forward");
  const double tolerance = math == kf::math_mode::tf32 ? tf32_check_tolerance : exact_check_tolerance;
  const double diff = checked_difference(
      std::string(math == kf::math_mode::tf32 ? "tf32/" : "fp32/") + kf::to_string(variant) + "/" + L.name, d);
  if (!(diff <= tolerance)) {
    state.SkipWithError(("result differs from cuDNN by " + std::to_string(diff) + " (relative to max |y|)").c_str());
    return;
  }
  time_gpu(state, run);
  set_flops(state, d.flops());
  state.counters["diff_vs_cudnn"] = diff;
  set_frac_cudnn(state, (math == kf::math_mode::tf32 ? "tf32/" : "fp32/") + L.name);
}

// ---- conv2d + bias + ReLU: fused against unfused and cuDNN's fused call -------------------
std::string bias_relu_key(bool tf32, const layer& L) { return std::string(tf32 ? "tf32/" : "fp32/") + L.name; }

/// Unfused time per key, stored by its benchmark for the fused row's speedup.
std::map<std::string, double>& unfused_seconds() {
  static std::map<std::string, double> times;
  return times;
}

void bm_bias_relu_cudnn(benchmark::State& state, const layer& L, bool tf32) {
  KF_BENCH_REQUIRE_GPU(state);
  const std::string key = bias_relu_key(tf32, L);
  problem_data& d = data_for(L.name, L.p);
  cudnn_plan& c = cudnn_plan_for(key, d, tf32);  // the conv2d/<type>/cudnn row's algorithm
  cudnn_bias_relu& br = cudnn_bias_relu_for(key, d);
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  auto run = [&](cudaStream_t s) {
    cudnn_check(cudnnSetStream(cudnn(), s), "cudnnSetStream");
    const float one = 1.0f, zero = 0.0f;  // alpha2 = 0: z (= y) is not read
    status = cudnnConvolutionBiasActivationForward(cudnn(), &one, c.x_desc, d.x.data(), c.w_desc, d.w.data(),
                                                   c.conv_desc, c.algo, c.workspace.data(), c.workspace_bytes, &zero,
                                                   c.y_desc, d.y_cudnn_fused.data(), br.bias_desc, d.bias.data(),
                                                   br.relu, c.y_desc, d.y_cudnn_fused.data());
  };
  run(nullptr);
  if (status != CUDNN_STATUS_SUCCESS) {
    state.SkipWithError((std::string("cudnnConvolutionBiasActivationForward: ") + cudnnGetErrorString(status)).c_str());
    return;
  }
  time_gpu(state, run);
  check(cudaDeviceSynchronize(), "cuDNN");
  d.have_cudnn_fused_result = true;
  cudnn_seconds()["bias_relu/" + key] = state.counters["gpu_s"];
  set_flops(state, d.flops());
  state.SetLabel(std::string("algo ") + std::to_string(static_cast<int>(c.algo)));
}

/// fused: conv2d_options.relu; else conv2d_forward then relu_threshold_forward in place.
void bm_bias_relu_kf(benchmark::State& state, const layer& L, bool tf32, bool fused) {
  KF_BENCH_REQUIRE_GPU(state);
  const std::string key = bias_relu_key(tf32, L);
  problem_data& d = data_for(L.name, L.p);
  kf::conv2d_options options;
  options.math = tf32 ? kf::math_mode::tf32 : kf::math_mode::exact;
  options.relu = fused;
  options.relu_threshold = 0.0f;  // cuDNN's ReLU
  auto run = [&](cudaStream_t s) {
    options.stream = s;
    kf::conv2d_forward<float>(d.p, d.x.data(), d.w.data(), d.bias.data(), d.y.data(), options);
    if (!fused) kf::relu_threshold_forward<float>(d.y_size(), d.y.data(), d.y.data(), 0.0f, {s});
  };
  try {
    run(nullptr);
  } catch (const kf::error& e) {
    state.SkipWithError(e.what());
    return;
  }
  check(cudaDeviceSynchronize(), "kf::conv2d_forward + ReLU");
  const double diff = d.have_cudnn_fused_result ? relative_difference(d, d.y.data(), d.y_cudnn_fused.data()) : 0.0;
  if (!(diff <= (tf32 ? tf32_check_tolerance : exact_check_tolerance))) {
    state.SkipWithError(("result differs from cuDNN's fused output by " + std::to_string(diff)).c_str());
    return;
  }
  time_gpu(state, run);
  set_flops(state, d.flops());
  state.counters["diff_vs_cudnn"] = diff;
  set_frac_cudnn(state, "bias_relu/" + key);
  if (!fused) {
    unfused_seconds()[key] = state.counters["gpu_s"];
  } else if (unfused_seconds().count(key) && state.counters["gpu_s"] > 0) {
    state.counters["speedup_vs_unfused"] = unfused_seconds()[key] / state.counters["gpu_s"];
  }
}

// ---- filter2d -----------------------------------------------------------------
std::string filter_name(std::size_t taps) {
  return std::to_string(image_extent) + "x" + std::to_string(image_extent) + "_" + std::to_string(taps) + "x" +
         std::to_string(taps);
}

problem_data& filter_data(std::size_t taps) {
  // The image filter as a 1-channel convolution: N = C = K = 1, pad = taps / 2 ("same" size).
  return data_for("filter2d/" + filter_name(taps), params(1, 1, image_extent, 1, taps, 1, taps / 2));
}

double image_bytes() { return 2.0 * image_extent * image_extent * sizeof(float); }  // one read + one write

void bm_filter_copy(benchmark::State& state, std::size_t taps) {
  KF_BENCH_REQUIRE_GPU(state);
  problem_data& d = filter_data(taps);
  time_gpu(state, [&](cudaStream_t s) {
    check(cudaMemcpyAsync(d.y.data(), d.x.data(), image_extent * image_extent * sizeof(float), cudaMemcpyDeviceToDevice,
                          s),
          "cudaMemcpyAsync");
  });
  copy_rate_gbs() = 0;  // set_bandwidth below must not divide the copy by itself
  set_bandwidth(state, image_bytes());
  copy_rate_gbs() = state.counters["GB/s"];
  state.counters["frac_copy"] = 1.0;
}

void bm_filter_cudnn(benchmark::State& state, std::size_t taps) {
  KF_BENCH_REQUIRE_GPU(state);
  const std::string key = "filter2d/" + filter_name(taps);
  problem_data& d = filter_data(taps);
  cudnn_plan& c = cudnn_plan_for(key, d, false);
  time_gpu(state, [&](cudaStream_t s) { run_cudnn(c, d, d.y_cudnn.data(), s); });
  check(cudaDeviceSynchronize(), "cuDNN");
  d.have_cudnn_result = true;
  cudnn_seconds()[key] = state.counters["gpu_s"];
  set_bandwidth(state, image_bytes());
  state.SetLabel(std::string("algo ") + std::to_string(static_cast<int>(c.algo)));
}

/// Checks one run of `run` against cuDNN (into a NaN-poisoned y, so an
/// unwritten pixel fails), then times it: the filter2d rows' common part.
template <class Run>
void time_filter(benchmark::State& state, std::size_t taps, const std::string& impl, const Run& run) {
  problem_data& d = filter_data(taps);
  check(cudaMemset(d.y.data(), 0xFF, d.y_size() * sizeof(float)), "cudaMemset");
  try {
    run(nullptr);
  } catch (const kf::error& e) {
    state.SkipWithError(e.what());
    return;
  }
  check(cudaDeviceSynchronize(), impl.c_str());
  const double diff = checked_difference(impl + "/" + filter_name(taps), d);
  if (!(diff <= exact_check_tolerance)) {
    state.SkipWithError(("result differs from cuDNN by " + std::to_string(diff) + " (relative to max |y|)").c_str());
    return;
  }
  time_gpu(state, run);
  set_bandwidth(state, image_bytes());
  state.counters["diff_vs_cudnn"] = diff;
  set_frac_cudnn(state, "filter2d/" + filter_name(taps));
}

void bm_filter_kf(benchmark::State& state, std::size_t taps, kf::filter2d_variant variant) {
  KF_BENCH_REQUIRE_GPU(state);
  problem_data& d = filter_data(taps);
  kf::filter2d_options options;
  options.variant = variant;
  options.mode = kf::border::zero;
  auto run = [&](cudaStream_t s) {
    options.stream = s;
    kf::filter2d<float>(1, image_extent, image_extent, d.x.data(), image_extent, d.w.data(), taps, taps, d.y.data(),
                        image_extent, options);
  };
  time_filter(state, taps, kf::to_string(variant), run);
}

/// register_window's candidate `name` (tuning.hpp), zero border, with
/// the kernel launched directly (no kf::filter2d validation on the timed path).
void bm_filter_window_candidate(benchmark::State& state, std::size_t taps, const std::string& name) {
  KF_BENCH_REQUIRE_GPU(state);
  problem_data& d = filter_data(taps);
  const auto a =
      kf::detail::make_filter2d_args<float>(1, image_extent, image_extent, d.x.data(), image_extent, d.w.data(), taps,
                                            taps, d.y.data(), image_extent, kf::border::zero);
  time_filter(state, taps, "register_window_cfg/" + name,
              [&](cudaStream_t s) { kf::detail::launch_filter2d_window_candidate(name, a, s); });
}

// ---- registration, in the order the ratios need: baselines first -----------------
/// iterations > 0: a fixed count instead of the minimum time (Google Benchmark takes one or the other).
benchmark::internal::Benchmark* configure(benchmark::internal::Benchmark* b, int iterations = 0) {
  b->UseManualTime()->Unit(benchmark::kMillisecond);
  return iterations > 0 ? b->Iterations(iterations) : b->MinTime(min_time_s);
}

struct registrar {
  registrar() {
    const std::pair<const char*, kf::conv2d_variant> exact_variants[] = {
        {"best", kf::conv2d_variant::best},
        {"naive", kf::conv2d_variant::naive},
        {"smem_tiled", kf::conv2d_variant::smem_tiled},
        {"implicit_gemm", kf::conv2d_variant::implicit_gemm},
        {"implicit_gemm_pipelined", kf::conv2d_variant::implicit_gemm_pipelined},
        {"winograd", kf::conv2d_variant::winograd},
        {"winograd_fused", kf::conv2d_variant::winograd_fused},
    };
    for (const layer& L : layers()) {
      configure(benchmark::RegisterBenchmark(("conv2d/fp32/cudnn/" + L.name).c_str(),
                                             [&L](benchmark::State& s) { bm_conv_cudnn(s, L, false); }));
      const bool winograd_applies =
          kf::detail::conv2d_winograd_unsupported_reason(L.p.filter_height, L.p.filter_width, L.p.stride_h,
                                                         L.p.stride_w, L.p.dilation_h, L.p.dilation_w) == nullptr;
      for (const auto& [name, variant] : exact_variants) {
        const bool is_winograd =
            variant == kf::conv2d_variant::winograd || variant == kf::conv2d_variant::winograd_fused;
        if (is_winograd && !winograd_applies) continue;
        auto* b = benchmark::RegisterBenchmark(
            ("conv2d/fp32/" + std::string(name) + "/" + L.name).c_str(),
            [&L, variant = variant](benchmark::State& s) { bm_conv_kf(s, L, variant, kf::math_mode::exact); });
        configure(b, variant == kf::conv2d_variant::naive ? naive_iterations : 0);
      }
    }
    for (const layer& L : layers()) {
      configure(benchmark::RegisterBenchmark(("conv2d/tf32/cudnn/" + L.name).c_str(),
                                             [&L](benchmark::State& s) { bm_conv_cudnn(s, L, true); }));
      configure(
          benchmark::RegisterBenchmark(("conv2d/tf32/implicit_gemm_tf32/" + L.name).c_str(), [&L](benchmark::State& s) {
            bm_conv_kf(s, L, kf::conv2d_variant::implicit_gemm_tf32, kf::math_mode::tf32);
          }));
      // Stride-1 layers only (others: errc::unsupported); sm_90 only (elsewhere the row is skipped).
      if (kf::detail::conv2d_wgmma_unsupported_reason(L.p.stride_h, L.p.stride_w) == nullptr) {
        configure(benchmark::RegisterBenchmark(
            ("conv2d/tf32/implicit_gemm_wgmma/" + L.name).c_str(), [&L](benchmark::State& s) {
              bm_conv_kf(s, L, kf::conv2d_variant::implicit_gemm_wgmma, kf::math_mode::tf32);
            }));
      }
      configure(benchmark::RegisterBenchmark(("conv2d/tf32/best/" + L.name).c_str(), [&L](benchmark::State& s) {
        bm_conv_kf(s, L, kf::conv2d_variant::best, kf::math_mode::tf32);
      }));
    }
    for (bool tf32 : {false, true}) {
      const std::string type = tf32 ? "tf32/" : "fp32/";
      for (const layer& L : bias_relu_layers()) {
        configure(benchmark::RegisterBenchmark(("conv2d_bias_relu/" + type + "cudnn_fused/" + L.name).c_str(),
                                               [&L, tf32](benchmark::State& s) { bm_bias_relu_cudnn(s, L, tf32); }));
        configure(
            benchmark::RegisterBenchmark(("conv2d_bias_relu/" + type + "unfused/" + L.name).c_str(),
                                         [&L, tf32](benchmark::State& s) { bm_bias_relu_kf(s, L, tf32, false); }));
        configure(benchmark::RegisterBenchmark(("conv2d_bias_relu/" + type + "fused/" + L.name).c_str(),
                                               [&L, tf32](benchmark::State& s) { bm_bias_relu_kf(s, L, tf32, true); }));
      }
    }
    for (std::size_t taps : {std::size_t{3}, std::size_t{5}}) {
      const std::string suffix = "/" + filter_name(taps);
      configure(benchmark::RegisterBenchmark(("filter2d/fp32/copy" + suffix).c_str(),
                                             [taps](benchmark::State& s) { bm_filter_copy(s, taps); }));
      configure(benchmark::RegisterBenchmark(("filter2d/fp32/cudnn" + suffix).c_str(),
                                             [taps](benchmark::State& s) { bm_filter_cudnn(s, taps); }));
      for (kf::filter2d_variant v :
           {kf::filter2d_variant::best, kf::filter2d_variant::naive, kf::filter2d_variant::constant_memory,
            kf::filter2d_variant::smem_tiled, kf::filter2d_variant::register_window,
            kf::filter2d_variant::rolling_window, kf::filter2d_variant::tma_pipeline}) {
        configure(benchmark::RegisterBenchmark(("filter2d/fp32/" + std::string(kf::to_string(v)) + suffix).c_str(),
                                               [taps, v](benchmark::State& s) { bm_filter_kf(s, taps, v); }));
      }
      kf::detail::for_each_filter2d_window_candidate([&](const char* name, auto) {
        configure(benchmark::RegisterBenchmark(
            ("filter2d/fp32/register_window_cfg/" + std::string(name) + suffix).c_str(),
            [taps, name = std::string(name)](benchmark::State& s) { bm_filter_window_candidate(s, taps, name); }));
      });
    }
  }
};
const registrar register_all;

}  // namespace
}  // namespace kf::bench::conv

KF_BENCHMARK_MAIN();
