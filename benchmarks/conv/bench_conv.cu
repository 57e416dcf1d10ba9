// SPDX-License-Identifier: Apache-2.0
// bench_conv: the convolution family against cuDNN and the memory floor, in one
// run so every comparison is a ratio of figures measured together. This file
// holds the NCHW conv2d and conv2d_bias_relu rows, the one registrar (every
// row of the binary, in the order the ratios need: baselines first) and main;
// the fp32_emulated pairs in bench_conv_fp32_emulated.cu, the conv2d_nhwc rows
// in bench_conv_nhwc.cu, conv2d_backward in
// bench_conv_backward.cu, the filter2d rows in
// bench_filter2d.cu (each lists its rows at its top); the cuDNN timing and
// checks they share in cudnn_timing.hpp, the problems in conv_problem.hpp.
//
//   conv2d/fp32/<impl>/<layer>     impl: cudnn (FMA math: no TF32), best, naive,
//                                  smem_tiled, implicit_gemm, implicit_gemm_pipelined,
//                                  winograd, winograd_fused (3x3 stride-1 layers only;
//                                  winograd_fused: step 8, sm_90/sm_100 shared memory)
//   conv2d/tf32/<impl>/<layer>     impl: cudnn (tensor-op math), implicit_gemm_tf32,
//                                  implicit_gemm_wgmma (stride-1 layers; sm_90 only), best
//   conv2d/fp32_emulated/best_vs_cudnn/<layer>   math_mode::fp32_emulated paired with cuDNN's
//                                  fastest exact fp32: bench_conv_fp32_emulated.cu
//   conv2d_bias_relu/<fp32|tf32>/<impl>/<layer>   conv + bias + ReLU (threshold 0, cuDNN's):
//                                  impl: cudnn_fused (cudnnConvolutionBiasActivationForward,
//                                  CUDNN_ACTIVATION_RELU, the algorithm of the cudnn row above),
//                                  unfused (kf::conv2d_forward with bias, then
//                                  kf::relu_threshold_forward in place), fused (conv2d_options.relu);
//                                  speedup_vs_unfused on the fused row (goal: >= 1.2);
//                                  layers: those below plus n32_c64_56x56_k64_1x1
//   conv2d_nhwc/<fp16|bf16|tf32>/<impl>/<layer>   channels_last: bench_conv_nhwc.cu
//   conv2d_nhwc/<fp32|fp32_emulated>/best_vs_cudnn/<layer>   float under math_mode::exact or
//                                  fp32_emulated in NHWC, against cuDNN's FMA-only NHWC engine
//                                  search: bench_conv_nhwc.cu
//   conv2d_backward/<fp16|bf16|tf32>/<data|filter|step>/<layer>   the gradients against
//                                  cuDNN's, paired: bench_conv_backward.cu
//   filter2d/fp32/...              8192 x 8192 single-channel images: bench_filter2d.cu
// Layers: the ResNet-50 layers of conv_problem.hpp (layers()).
//
// cuDNN runs first in each group; its algorithm is the fastest of those
// cudnnFindConvolutionForwardAlgorithm returns within 1.5x of its best, timed
// again in the rows' own way (cudnn_baseline.hpp, fastest_retimed), once per
// layer and math mode before timing, with its workspace allocated once (the conv2d_nhwc cudnn and
// cudnn_fused rows: the fastest execution plan of a backend graph's engine
// search). Every kernelforge result is checked against cuDNN's output before
// it is timed (the run stops with an error otherwise): here within
// exact_check_tolerance, or tf32_check_tolerance for TF32, of max |y|.
// Counters: TFLOP/s (2 N K C R S P Q) or GB/s (image read +
// written), frac_peak (of the FP32 CUDA-core peak, or of the datasheet
// bandwidth), frac_cudnn (cuDNN time / this time: > 1 is faster than cuDNN),
// frac_copy (of the copy rate measured in this run). Time from CUDA events
// around the call alone, L2 flushed before each sample (gpu_benchmark.hpp).
// benchmarks/plot_conv.py turns the JSON into the README table and a plot (the
// conv2d, conv2d_bias_relu and filter2d rows; benchmarks/report.py tabulates
// every family, conv2d_nhwc included).
#include <map>
#include <string>
#include <utility>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "bench_conv.hpp"
#include "conv_problem.hpp"
#include "cudnn_timing.hpp"
#include "gpu_benchmark.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/elementwise.hpp"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"

namespace kf::bench::conv {

// ---- conv2d -------------------------------------------------------------------
void bm_conv_cudnn(benchmark::State& state, const layer& L, bool tf32) {
  KF_BENCH_REQUIRE_GPU(state);
  const std::string key = (tf32 ? "tf32/" : "fp32/") + L.name;
  // No bias in the comparison: cuDNN's forward has none, so the kernelforge rows pass null too.
  time_cudnn(state, data_for(L.name, L.p), key, tf32, false, key);
}

namespace {

// Naive kernels on the large layers take milliseconds per call: a few samples suffice.
constexpr int naive_iterations = 10;

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
  set_flops(state, d.flops(), conv_peak_tflops<float>(math == kf::math_mode::tf32));
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
  // The conv2d/<type>/cudnn row's plan (same key): its algorithm.
  time_cudnn(state, data_for(L.name, L.p), key, tf32, true, "bias_relu/" + key);
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
  set_flops(state, d.flops(), conv_peak_tflops<float>(tf32));
  state.counters["diff_vs_cudnn"] = diff;
  set_frac_cudnn(state, "bias_relu/" + key);
  if (!fused) {
    unfused_seconds()[key] = state.counters["gpu_s"];
  } else if (unfused_seconds().count(key) && state.counters["gpu_s"] > 0) {
    state.counters["speedup_vs_unfused"] = unfused_seconds()[key] / state.counters["gpu_s"];
  }
}

}  // namespace

namespace {

// ---- registration, in the order the ratios need: baselines first -----------------
/// The conv2d/fp32, conv2d/tf32 and conv2d_bias_relu rows.
void register_conv2d() {
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
        kf::detail::conv2d_winograd_unsupported_reason(L.p.filter_height, L.p.filter_width, L.p.stride_h, L.p.stride_w,
                                                       L.p.dilation_h, L.p.dilation_w) == nullptr;
    for (const auto& [name, variant] : exact_variants) {
      const bool is_winograd = variant == kf::conv2d_variant::winograd || variant == kf::conv2d_variant::winograd_fused;
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
    configure(benchmark::RegisterBenchmark(
        ("conv2d/tf32/implicit_gemm_tf32/" + L.name).c_str(),
        [&L](benchmark::State& s) { bm_conv_kf(s, L, kf::conv2d_variant::implicit_gemm_tf32, kf::math_mode::tf32); }));
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
      configure(benchmark::RegisterBenchmark(("conv2d_bias_relu/" + type + "unfused/" + L.name).c_str(),
                                             [&L, tf32](benchmark::State& s) { bm_bias_relu_kf(s, L, tf32, false); }));
      configure(benchmark::RegisterBenchmark(("conv2d_bias_relu/" + type + "fused/" + L.name).c_str(),
                                             [&L, tf32](benchmark::State& s) { bm_bias_relu_kf(s, L, tf32, true); }));
    }
  }
}

/// Every file's rows, at run time (benchmark_main: a bad KF_BENCH_* setting ends the run with status 2).
void register_all() {
  register_conv2d();
  register_conv2d_fp32_emulated();  // bench_conv_fp32_emulated.cu
  register_conv2d_nhwc();           // bench_conv_nhwc.cu
  register_conv2d_backward();       // bench_conv_backward.cu (after conv2d_nhwc: it shares its forward plans)
  register_filter2d();              // bench_filter2d.cu
}

}  // namespace
}  // namespace kf::bench::conv

int main(int argc, char** argv) {
  ::kf::bench::main_options o;
  o.binary = "bench_conv";
  o.register_rows = &::kf::bench::conv::register_all;
  return ::kf::bench::benchmark_main(argc, argv, o);
}
