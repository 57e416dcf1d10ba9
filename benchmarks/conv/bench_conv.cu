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
//   conv2d_nhwc/<fp16|bf16|tf32>/<impl>/<layer>   channels_last (params.layout = nhwc: x NHWC,
//                                  weight KRSC, y NPQK; tf32 = float under math_mode::tf32):
//                                  impl: cudnn_legacy (cudnnFindConvolutionForwardAlgorithm +
//                                  cudnnConvolutionForward, CUDNN_TENSOR_NHWC x, w and y, tensor-op
//                                  math, fp32 accumulation), cudnn (the same convolution as a cuDNN
//                                  backend graph, its engine searched like torch's benchmark mode:
//                                  cudnn_graph.hpp; label: the engine picked; speedup_vs_legacy:
//                                  the legacy time over this one), best, cudnn_legacy_fused
//                                  (cudnnConvolutionBiasActivationForward, ReLU, in NHWC),
//                                  cudnn_fused (conv + bias add + ReLU as one graph, searched the
//                                  same way) and best_fused (bias + conv2d_options.relu); frac_cudnn
//                                  of best and best_fused is against the graph rows (cudnn,
//                                  cudnn_fused). The tf32 cudnn_legacy row carries speedup_vs_nchw
//                                  (cuDNN's legacy NCHW TF32 time over its legacy NHWC time), and
//                                  conv2d_nhwc/tf32/cudnn_nchw/<layer> times cuDNN's NCHW TF32 on the
//                                  layers conv2d/tf32/cudnn lacks. No naive rows (ms per call on
//                                  these layers). Layers: the first four below plus
//                                  n32_c256_56x56_k64_1x1 (nhwc_layers).
// Layers: the ResNet-50 layers of shared/perf/ANCHORS.md.
//
// cuDNN runs first in each group; its algorithm comes from
// cudnnFindConvolutionForwardAlgorithm, run once per layer and math mode before
// timing, with its workspace allocated once (the conv2d_nhwc cudnn and
// cudnn_fused rows: the fastest execution plan of a backend graph's engine
// search, once per layer, its workspace allocated once). Every kernelforge result is
// checked against cuDNN's output before it is timed (the run stops with an
// error otherwise). The conv2d_nhwc rows check every output of a NaN-poisoned
// y against cuDNN's at twice the per-output bound that
// tests/conv2d/conv2d_nhwc_gpu_test.cpp proves for one result (each of the two
// within it of the exact value), from the error scale sum |w| |x| (+ |bias|)
// that cuDNN computes on the magnitudes of x and w; tf32 also within
// tf32_check_tolerance of max |y|, as the NCHW rows. Both read the same
// tensors (random_values: magnitudes uniform in [0.5, 1), random signs).
// Counters: TFLOP/s (2 N K C R S P Q) or GB/s (image read +
// written), frac_peak (of the FP32 CUDA-core peak, or of the datasheet
// bandwidth), frac_cudnn (cuDNN time / this time: > 1 is faster than cuDNN),
// frac_copy (of the copy rate measured in this run). Time from CUDA events
// around the call alone, L2 flushed before each sample (gpu_benchmark.hpp).
// benchmarks/plot_conv.py turns the JSON into the README table and a plot (the
// conv2d, conv2d_bias_relu and filter2d rows; benchmarks/report.py tabulates
// every family, conv2d_nhwc included).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "conv_problem.hpp"
#include "cudnn_baseline.hpp"
#include "cudnn_graph.hpp"
#include "gpu_benchmark.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/elementwise.hpp"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/kernels/filter2d/window_launch.cuh"
#include "kernelforge/reference/elementwise.hpp"

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

// ---- cuDNN ------------------------------------------------------------------------
/// cuDNN's call on problem d with plan `key`: cudnnConvolutionForward into
/// d.y_cudnn, or (fused) cudnnConvolutionBiasActivationForward (bias, ReLU) into
/// d.y_cudnn_fused. The plan and descriptors are looked up here, not per call.
template <class T>
struct cudnn_call {
  problem_data_t<T>& d;
  cudnn_plan& c;
  cudnn_bias_relu* br;  // nullptr: the plain convolution
  cudnnStatus_t operator()(cudaStream_t s) const {
    if (!br) {
      run_cudnn(c, d, d.y_cudnn.data(), s);
      return CUDNN_STATUS_SUCCESS;
    }
    cudnn_check(cudnnSetStream(cudnn(), s), "cudnnSetStream");
    const float one = 1.0f, zero = 0.0f;  // alpha2 = 0: z (= y) is not read
    return cudnnConvolutionBiasActivationForward(cudnn(), &one, c.x_desc, d.x.data(), c.w_desc, d.w.data(), c.conv_desc,
                                                 c.algo, c.workspace.data(), c.workspace_bytes, &zero, c.y_desc,
                                                 d.y_cudnn_fused.data(), br->bias_desc, d.bias.data(), br->relu,
                                                 c.y_desc, d.y_cudnn_fused.data());
  }
};

template <class T>
cudnn_call<T> make_cudnn_call(problem_data_t<T>& d, const std::string& key, bool tensor_ops, bool fused) {
  return {d, cudnn_plan_for(key, d, tensor_ops), fused ? &cudnn_bias_relu_for(key, d) : nullptr};
}

/// Times cuDNN's call (make_cudnn_call) after one untimed call whose failure
/// skips the row; keeps its output for the checks and its time in
/// cudnn_seconds()[seconds_key] for frac_cudnn.
template <class T>
void time_cudnn(benchmark::State& state, problem_data_t<T>& d, const std::string& key, bool tensor_ops, bool fused,
                const std::string& seconds_key) {
  const cudnn_call<T> call = make_cudnn_call(d, key, tensor_ops, fused);
  cudnnStatus_t status = call(nullptr);
  if (status != CUDNN_STATUS_SUCCESS) {
    state.SkipWithError((std::string(fused ? "cudnnConvolutionBiasActivationForward: " : "cudnnConvolutionForward: ") +
                         cudnnGetErrorString(status))
                            .c_str());
    return;
  }
  time_gpu(state, [&](cudaStream_t s) { status = call(s); });
  check(cudaDeviceSynchronize(), "cuDNN");
  // The tf32 rows, registered after all fp32 rows, check against cuDNN's TF32 output.
  (fused ? d.have_cudnn_fused_result : d.have_cudnn_result) = true;
  cudnn_seconds()[seconds_key] = state.counters["gpu_s"];
  set_flops(state, d.flops());
  state.SetLabel(std::string("algo ") + std::to_string(static_cast<int>(call.c.algo)));
}

/// Times cuDNN through its backend graph (cudnn_graph.hpp: the plan its engine
/// search picked for `key`, plain or fused with bias and ReLU, TF32 allowed for
/// float) into d.y_cudnn or d.y_cudnn_fused, after one untimed run; a plan that
/// cannot be built or run skips the row. Keeps its output for the checks and
/// its time in cudnn_seconds()[seconds_key] for frac_cudnn;
/// speedup_vs_legacy: cudnn_seconds()["legacy/" + seconds_key] over it.
template <class T>
void time_cudnn_graph(benchmark::State& state, problem_data_t<T>& d, const std::string& key, bool fused,
                      const std::string& seconds_key) {
  cudnn_graph_plan& plan = cudnn_graph_plan_for(key, d, fused, true);
  if (!plan.error.empty()) {
    state.SkipWithError(plan.error.c_str());
    return;
  }
  graph::descriptor pack;
  try {
    pack = make_cudnn_graph_pack(plan, d.x.data(), d.w.data(), fused ? d.y_cudnn_fused.data() : d.y_cudnn.data(),
                                 d.bias.data());
  } catch (const graph::graph_error& e) {
    state.SkipWithError(e.what());
    return;
  }
  cudnnStatus_t status = run_cudnn_graph(plan, pack, nullptr);
  if (status == CUDNN_STATUS_SUCCESS) {
    time_gpu(state, [&](cudaStream_t s) {
      const cudnnStatus_t each = run_cudnn_graph(plan, pack, s);
      if (each != CUDNN_STATUS_SUCCESS) status = each;
    });
  }
  check(cudaDeviceSynchronize(), "cuDNN graph");
  if (status != CUDNN_STATUS_SUCCESS) {
    state.SkipWithError(("cudnnBackendExecute: " + graph::status_text(status)).c_str());
    return;
  }
  (fused ? d.have_cudnn_fused_result : d.have_cudnn_result) = true;
  cudnn_seconds()[seconds_key] = state.counters["gpu_s"];
  set_flops(state, d.flops());
  state.SetLabel(plan.label());
  const auto legacy = cudnn_seconds().find("legacy/" + seconds_key);
  if (legacy != cudnn_seconds().end() && state.counters["gpu_s"] > 0) {
    state.counters["speedup_vs_legacy"] = legacy->second / state.counters["gpu_s"];
  }
}

// ---- conv2d -------------------------------------------------------------------
void bm_conv_cudnn(benchmark::State& state, const layer& L, bool tf32) {
  KF_BENCH_REQUIRE_GPU(state);
  const std::string key = (tf32 ? "tf32/" : "fp32/") + L.name;
  // No bias in the comparison: cuDNN's forward has none, so the kernelforge rows pass null too.
  time_cudnn(state, data_for(L.name, L.p), key, tf32, false, key);
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
  set_flops(state, d.flops());
  state.counters["diff_vs_cudnn"] = diff;
  set_frac_cudnn(state, "bias_relu/" + key);
  if (!fused) {
    unfused_seconds()[key] = state.counters["gpu_s"];
  } else if (unfused_seconds().count(key) && state.counters["gpu_s"] > 0) {
    state.counters["speedup_vs_unfused"] = unfused_seconds()[key] / state.counters["gpu_s"];
  }
}

// ---- conv2d in the NHWC layout: fp16, bf16, TF32 -------------------------------------
/// The dtype field of a conv2d_nhwc row: float runs under math_mode::tf32.
template <class T>
const char* nhwc_type_name() {
  if constexpr (std::is_same_v<T, __half>) {
    return "fp16";
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return "bf16";
  } else {
    return "tf32";
  }
}

/// The key of layer L's NHWC problem in T: its data, cuDNN plan and cuDNN time.
template <class T>
std::string nhwc_key(const layer& L) {
  return std::string("nhwc/") + nhwc_type_name<T>() + "/" + L.name;
}

template <class T>
problem_data_t<T>& nhwc_data(const layer& L) {
  return data_for<T>("nhwc/" + L.name, L.p);
}

/// One result's bound per output, |y - exact| <= rel_ref |y| + rel_scale S + abs
/// (S = sum |w| |x| + |bias|), as tests/conv2d/conv2d_nhwc_gpu_test.cpp derives
/// it: fp32 sums of n = C*R*S + 1 terms (2 n 2^-24, round-toward-zero
/// included), the tensor core's k-group alignment (2^-18), TF32 inputs for
/// float (2 * 2^-10 + 2^-20), one rounding to T for the 16-bit types (u_T |y|,
/// half's underflow 2^-25).
struct nhwc_bound {
  double rel_ref, rel_scale, abs;
};

template <class T>
nhwc_bound nhwc_bound_for(const kf::conv2d_params& p) {
  const double n = static_cast<double>(p.in_channels * p.filter_height * p.filter_width + 1);
  const double sums = 2 * n * 0x1p-24 + 0x1p-18;
  if constexpr (std::is_same_v<T, __half>) {
    return {0x1p-11, (1 + 0x1p-11) * sums, 0x1p-25};
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return {0x1p-8, (1 + 0x1p-8) * sums, 0};
  } else {
    return {0, 2 * 0x1p-10 + 0x1p-20 + sums, 0};
  }
}

/// Every output's error scale sum |w| |x| (bias left out), computed by cuDNN
/// with the problem's own graph plan on the magnitudes of x and w (with the
/// legacy plan when no graph plan could be built); once per key.
template <class T>
const std::vector<double>& nhwc_error_scale(const std::string& key, problem_data_t<T>& d) {
  static std::map<std::string, std::vector<double>> cache;
  std::vector<double>& scale = cache[key];
  if (!scale.empty()) return scale;
  const auto abs_x = kf::to_device(random_values<T>(d.x_size(), x_seed, true));
  const auto abs_w = kf::to_device(random_values<T>(d.w_size(), w_seed, true));
  kf::device_buffer<T> out(d.y_size());
  cudnn_graph_plan& plan = cudnn_graph_plan_for(key, d, false, true);
  if (!run_cudnn_graph_once<T>(plan, abs_x.data(), abs_w.data(), out.data(), nullptr).empty()) {
    run_cudnn(cudnn_plan_for(key, d, true), abs_x.data(), abs_w.data(), out.data(), nullptr);
  }
  check(cudaDeviceSynchronize(), "cuDNN (error scale)");
  for (const T& v : copy_to_host(out.data(), d.y_size())) scale.push_back(kf::reference::to_double(v));
  return scale;
}

/// The outcome of one row's check: empty `failure` when it passed.
struct nhwc_check {
  std::string failure;
  double diff = 0;  // max |ours - cuDNN| / max |cuDNN|
};

/// Runs `run` once into a NaN-poisoned d.y and compares every output with
/// cuDNN's (computed here when no cuDNN row has run): within twice nhwc_bound
/// (ours and cuDNN's each within it of the exact value; the ReLU moves no two
/// values further apart), NaN never; tf32 also within tf32_check_tolerance of
/// max |y|. Once per row (Google Benchmark may call a row several times).
template <class T, class Run>
const nhwc_check& check_nhwc(const std::string& row, problem_data_t<T>& d, const std::string& key, bool fused,
                             const Run& run) {
  static std::map<std::string, nhwc_check> done;
  const auto it = done.find(row);
  if (it != done.end()) return it->second;
  nhwc_check& result = done[row];
  bool& have = fused ? d.have_cudnn_fused_result : d.have_cudnn_result;
  if (!have) {
    // cuDNN's graph plan, else its legacy call.
    T* want = fused ? d.y_cudnn_fused.data() : d.y_cudnn.data();
    const std::string graph_failure =
        run_cudnn_graph_once<T>(cudnn_graph_plan_for(key, d, fused, true), d.x.data(), d.w.data(), want, d.bias.data());
    if (!graph_failure.empty()) {
      const cudnnStatus_t status = make_cudnn_call(d, key, true, fused)(nullptr);
      if (status != CUDNN_STATUS_SUCCESS) {
        result.failure =
            "no cuDNN result to check against: " + graph_failure + "; legacy: " + cudnnGetErrorString(status);
        return result;
      }
      check(cudaDeviceSynchronize(), "cuDNN");
    }
    have = true;
  }
  check(cudaMemset(d.y.data(), 0xFF, d.y_size() * sizeof(T)), "cudaMemset");
  try {
    run(nullptr);
  } catch (const kf::error& e) {
    result.failure = e.what();
    return result;
  }
  check(cudaDeviceSynchronize(), "kf::conv2d_forward (NHWC)");
  const T* want_device = fused ? d.y_cudnn_fused.data() : d.y_cudnn.data();
  const std::vector<T> got = copy_to_host(d.y.data(), d.y_size());
  const std::vector<T> want = copy_to_host(want_device, d.y_size());
  const std::vector<double>& scale = nhwc_error_scale(key, d);
  const nhwc_bound b = nhwc_bound_for<T>(d.p);
  const double bias_magnitude = fused ? 1.0 : 0.0;  // random_values: |bias| < 1
  std::size_t bad = 0, first = 0;
  double first_got = 0, first_want = 0, first_tol = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = kf::reference::to_double(got[i]), w = kf::reference::to_double(want[i]);
    const double tol = 2 * (b.rel_ref * std::fabs(w) + b.rel_scale * (scale[i] + bias_magnitude) + b.abs);
    if (std::fabs(g - w) <= tol) continue;  // false for NaN
    if (bad++ == 0) {
      first = i;
      first_got = g;
      first_want = w;
      first_tol = tol;
    }
  }
  result.diff = relative_difference(d, d.y.data(), want_device);
  if (bad != 0) {
    result.failure = std::to_string(bad) + " of " + std::to_string(got.size()) + " outputs differ from cuDNN's; [" +
                     std::to_string(first) + "]: " + std::to_string(first_got) + " vs " + std::to_string(first_want) +
                     " (bound " + std::to_string(first_tol) + ")";
  } else if (std::is_same_v<T, float> && !(result.diff <= tf32_check_tolerance)) {
    result.failure = "result differs from cuDNN by " + std::to_string(result.diff) + " (relative to max |y|)";
  }
  return result;
}

/// cuDNN in NHWC through the legacy API (cudnnFind + cudnnConvolutionForward,
/// or, fused, cudnnConvolutionBiasActivationForward with ReLU); its time under
/// "legacy/" for the graph row's speedup_vs_legacy.
template <class T>
void bm_nhwc_cudnn_legacy(benchmark::State& state, const layer& L, bool fused) {
  KF_BENCH_REQUIRE_GPU(state);
  const std::string key = nhwc_key<T>(L);
  time_cudnn(state, nhwc_data<T>(L), key, true, fused, "legacy/" + std::string(fused ? "bias_relu/" : "") + key);
  // cuDNN's NHWC rate over its NCHW one (conv2d/tf32/cudnn or conv2d_nhwc/tf32/cudnn_nchw, run before).
  const auto nchw = cudnn_seconds().find("tf32/" + L.name);
  if (std::is_same_v<T, float> && !fused && nchw != cudnn_seconds().end() && state.counters["gpu_s"] > 0) {
    state.counters["speedup_vs_nchw"] = nchw->second / state.counters["gpu_s"];
  }
}

/// cuDNN in NHWC through its backend graph, the engine searched (cudnn_graph.hpp):
/// the plain convolution, or (fused) with bias and ReLU; the baseline of frac_cudnn.
template <class T>
void bm_nhwc_cudnn(benchmark::State& state, const layer& L, bool fused) {
  KF_BENCH_REQUIRE_GPU(state);
  const std::string key = nhwc_key<T>(L);
  time_cudnn_graph(state, nhwc_data<T>(L), key, fused, (fused ? "bias_relu/" : "") + key);
}

/// kernelforge's best in NHWC (float under math_mode::tf32), checked against
/// cuDNN (check_nhwc) before it is timed; fused: bias + conv2d_options.relu.
template <class T>
void bm_nhwc_kf(benchmark::State& state, const layer& L, bool fused) {
  KF_BENCH_REQUIRE_GPU(state);
  const std::string key = nhwc_key<T>(L);
  problem_data_t<T>& d = nhwc_data<T>(L);
  kf::conv2d_options options;
  options.math = kf::math_mode::tf32;  // float: TF32 products; __half, __nv_bfloat16: no effect
  options.relu = fused;
  options.relu_threshold = 0.0f;  // cuDNN's ReLU
  auto run = [&](cudaStream_t s) {
    options.stream = s;
    kf::conv2d_forward<T>(d.p, d.x.data(), d.w.data(), fused ? d.bias.data() : nullptr, d.y.data(), options);
  };
  const nhwc_check& result = check_nhwc(key + (fused ? "/best_fused" : "/best"), d, key, fused, run);
  if (!result.failure.empty()) {
    state.SkipWithError(result.failure.c_str());
    return;
  }
  time_gpu(state, run);
  set_flops(state, d.flops());
  state.counters["diff_vs_cudnn"] = result.diff;
  set_frac_cudnn(state, (fused ? "bias_relu/" : "") + key);
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

/// The conv2d_nhwc/<type>/ rows of T: cudnn_legacy, cudnn, best,
/// cudnn_legacy_fused, cudnn_fused, best_fused per layer (each legacy row
/// before its graph row, whose speedup_vs_legacy reads its time); for float
/// first cuDNN's NCHW TF32 on the layers conv2d/tf32/cudnn lacks.
template <class T>
void register_nhwc() {
  const std::string type = std::string("conv2d_nhwc/") + nhwc_type_name<T>() + "/";
  for (const layer& L : nhwc_layers()) {
    const bool has_nchw_row =
        std::any_of(layers().begin(), layers().end(), [&L](const layer& nchw) { return nchw.name == L.name; });
    if (std::is_same_v<T, float> && !has_nchw_row) {
      layer nchw = L;
      nchw.p.layout = kf::conv2d_layout::nchw;
      configure(benchmark::RegisterBenchmark((type + "cudnn_nchw/" + L.name).c_str(),
                                             [nchw](benchmark::State& s) { bm_conv_cudnn(s, nchw, true); }));
    }
    configure(benchmark::RegisterBenchmark((type + "cudnn_legacy/" + L.name).c_str(),
                                           [&L](benchmark::State& s) { bm_nhwc_cudnn_legacy<T>(s, L, false); }));
    configure(benchmark::RegisterBenchmark((type + "cudnn/" + L.name).c_str(),
                                           [&L](benchmark::State& s) { bm_nhwc_cudnn<T>(s, L, false); }));
    configure(benchmark::RegisterBenchmark((type + "best/" + L.name).c_str(),
                                           [&L](benchmark::State& s) { bm_nhwc_kf<T>(s, L, false); }));
    configure(benchmark::RegisterBenchmark((type + "cudnn_legacy_fused/" + L.name).c_str(),
                                           [&L](benchmark::State& s) { bm_nhwc_cudnn_legacy<T>(s, L, true); }));
    configure(benchmark::RegisterBenchmark((type + "cudnn_fused/" + L.name).c_str(),
                                           [&L](benchmark::State& s) { bm_nhwc_cudnn<T>(s, L, true); }));
    configure(benchmark::RegisterBenchmark((type + "best_fused/" + L.name).c_str(),
                                           [&L](benchmark::State& s) { bm_nhwc_kf<T>(s, L, true); }));
  }
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
    register_nhwc<__half>();
    register_nhwc<__nv_bfloat16>();
    register_nhwc<float>();
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
