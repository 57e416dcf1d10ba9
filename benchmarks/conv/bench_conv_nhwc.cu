// SPDX-License-Identifier: Apache-2.0
// bench_conv's conv2d_nhwc rows (registered by register_conv2d_nhwc, called from
// bench_conv.cu's registrar after the conv2d rows, whose cuDNN TF32 times they read):
//
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
//                                  these layers). Layers: the first four of layers()
//                                  (conv_problem.hpp) plus n32_c256_56x56_k64_1x1 (nhwc_layers).
//   conv2d_nhwc/<fp16|bf16>/columns_vs_one_tap/<layer>   the 3x3 stride-1 layers: best (the wgmma
//                                  kernel as planned: filter-column tiles where
//                                  plan_conv2d_nhwc_wgmma takes them) paired, sample by sample
//                                  (time_gpu_paired), with the same kernel forced to one tap a
//                                  k-step (conv2d_nhwc_wgmma_try_launch, conv2d_nhwc_k_steps::one_tap);
//                                  one_tap_over_planned = one-tap time / planned time (> 1: the
//                                  plan is faster); label: the plan. Both checked as best is.
//   conv2d_nhwc/<fp16|bf16>/gemm_vs_best/<layer>   the 1x1 stride-1 unpadded layers: best paired
//                                  with the same product as one kf::matmul (y (NPQ x K) = x (NHW x C)
//                                  w^T, w K x C), as dx's 1x1 path runs it; best_over_gemm = best's
//                                  time / the GEMM's (> 1: the GEMM is faster). Both checked as best is.
//   conv2d_nhwc/<fp16|bf16>/few_channels_vs_fold/<layer>   the layers of at most 4 input channels
//                                  (the RGB stem): best (step 10, few_channels_mma, where its plan
//                                  takes the layer and the device runs it) paired with the route it
//                                  replaced, step 7 behind its column fold
//                                  (conv2d_nhwc_wgmma_try_launch, fold pass included);
//                                  fold_over_few_channels = the fold route's time / best's (> 1:
//                                  step 10 is faster). Both checked as best is; skipped where either
//                                  cannot run (step 7 needs sm_90).
//   conv2d_nhwc/fp32_emulated/best_vs_cudnn/<layer>   float under math_mode::fp32_emulated paired
//                                  with cuDNN's fastest FMA-only NHWC plan (the backend graph's
//                                  engine search without TF32 engines; the legacy NHWC call with
//                                  FMA math where no graph plan runs): bench_conv_fp32_emulated.cu's
//                                  bm_conv_fp32_vs_cudnn, which documents its counters (the
//                                  conv2d/fp32_emulated rows'); the RGB stem runs the exact kernels
//                                  under it (C < 32), as conv2d_nhwc/fp32 does.
//   conv2d_nhwc/fp32/best_vs_cudnn/<layer>   float under math_mode::exact (the default: best
//                                  through the NCHW kernels on transposed copies, nhwc_launch.cuh)
//                                  paired with the same cuDNN plan, the same function and
//                                  counters; checked against cuDNN (diff_vs_cudnn).
//
// The cudnn rows' engine is the fastest execution plan of a backend graph's
// engine search, once per layer, its workspace allocated once (cudnn_graph.hpp);
// the cudnn_legacy rows' algorithm comes from cudnnFindConvolutionForwardAlgorithm
// (cudnn_baseline.hpp). Every kernelforge row checks every output of a
// NaN-poisoned y against cuDNN's at twice the per-output bound that
// tests/conv2d/conv2d_nhwc_gpu_test.cpp proves for one result (each of the two
// within it of the exact value), from the error scale sum |w| |x| (+ |bias|)
// that cuDNN computes on the magnitudes of x and w; tf32 also within
// tf32_check_tolerance of max |y|, as the NCHW rows. Both read the same
// tensors (random_values: magnitudes uniform in [0.5, 1), random signs).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "bench_conv.hpp"
#include "conv_problem.hpp"
#include "cudnn_baseline.hpp"
#include "cudnn_graph.hpp"
#include "cudnn_timing.hpp"
#include "gpu_benchmark.hpp"
#include "kernelforge/kernels/conv2d/few_channels.hpp"
#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"
#include "kernelforge/kernels/runtime/device_facts.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/matmul.hpp"
#include "kernelforge/reference/elementwise.hpp"

namespace kf::bench::conv {
namespace {

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

/// A run of a paired row under its name ("/best", ...), for check_pair.
using named_run = std::pair<const char*, std::function<void(cudaStream_t)>>;

/// The two runs of a paired row, each checked against cuDNN (check_nhwc) under
/// key + its name before the timing: false, the row skipped with the failure,
/// when one fails or `launched` (set by a run whose launcher may decline) is false.
template <class T>
bool check_pair(benchmark::State& state, problem_data_t<T>& d, const std::string& key, const named_run (&runs)[2],
                const bool& launched) {
  for (const auto& [suffix, run] : runs) {
    const nhwc_check& result = check_nhwc(key + suffix, d, key, false, run);
    if (!result.failure.empty() || !launched) {
      state.SkipWithError((key + suffix + ": " + (launched ? result.failure : "the kernel did not launch")).c_str());
      return false;
    }
  }
  return true;
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

/// The wgmma kernel's k-steps as planned (what best runs) against one tap a
/// k-step, timed in turn; both checked against cuDNN first (check_nhwc).
template <class T>
void bm_nhwc_columns_vs_one_tap(benchmark::State& state, const layer& L) {
  KF_BENCH_REQUIRE_GPU(state);
  const int device = kf::detail::current_device("bench_conv");
  if (!kf::detail::conv2d_wgmma_available(device)) {
    state.SkipWithError("the wgmma kernel needs compute capability 9.0 and the library's sm_90a image");
    return;
  }
  const std::string key = nhwc_key<T>(L);
  problem_data_t<T>& d = nhwc_data<T>(L);
  const kf::detail::conv2d_args<T> args = kf::detail::make_conv2d_args<T>(
      d.p, kf::conv2d_output_height(d.p), kf::conv2d_output_width(d.p), d.x.data(), d.w.data(), nullptr, d.y.data());
  kf::conv2d_options options;
  auto planned = [&](cudaStream_t s) {
    options.stream = s;
    kf::conv2d_forward<T>(d.p, d.x.data(), d.w.data(), nullptr, d.y.data(), options);
  };
  bool launched = true;
  auto one_tap = [&](cudaStream_t s) {
    launched = launched && kf::detail::conv2d_nhwc_wgmma_try_launch(device, args, kf::epilogue::identity{}, s,
                                                                    kf::detail::conv2d_nhwc_k_steps::one_tap);
  };
  if (!check_pair(state, d, key, {{"/best", planned}, {"/one_tap", one_tap}}, launched)) return;
  time_gpu_paired(state, planned, one_tap);
  set_flops(state, d.flops());
  state.counters["one_tap_over_planned"] = state.counters["baseline_s"] / state.counters["gpu_s"];
  const kf::detail::conv2d_wgmma_tile plan = kf::detail::plan_conv2d_nhwc_wgmma_of(args);
  state.SetLabel(plan.filter_rows > 1 ? "filter-column " + std::to_string(plan.wt) + "x" + std::to_string(plan.ht) +
                                            "x" + std::to_string(plan.nt) + " BN " + std::to_string(plan.bn)
                                      : std::string("one-tap (the plan's own)"));
}

/// A 1x1 stride-1 unpadded layer as planned (best) against the same product as
/// one GEMM through kf::matmul, timed in turn; both checked against cuDNN first.
template <class T>
void bm_nhwc_gemm_vs_best(benchmark::State& state, const layer& L) {
  KF_BENCH_REQUIRE_GPU(state);
  const std::string key = nhwc_key<T>(L);
  problem_data_t<T>& d = nhwc_data<T>(L);
  const std::size_t pixels = static_cast<std::size_t>(d.p.batch) * d.p.in_height * d.p.in_width;
  const std::size_t c = d.p.in_channels, k = d.p.out_channels;
  kf::conv2d_options options;
  auto best = [&](cudaStream_t s) {
    options.stream = s;
    kf::conv2d_forward<T>(d.p, d.x.data(), d.w.data(), nullptr, d.y.data(), options);
  };
  kf::matmul_options mo;
  auto gemm = [&](cudaStream_t s) {
    mo.stream = s;
    kf::matmul<T>(kf::op::none, kf::op::transpose, pixels, k, c, kf::compute_t<T>(1), d.x.data(), c, d.w.data(), c,
                  kf::compute_t<T>(0), d.y.data(), k, mo);
  };
  if (!check_pair(state, d, key, {{"/best", best}, {"/gemm", gemm}}, true)) return;
  time_gpu_paired(state, best, gemm);
  set_flops(state, d.flops());
  state.counters["best_over_gemm"] = state.counters["gpu_s"] / state.counters["baseline_s"];
}

/// best (step 10 on few-channel layers) against step 7 behind its column fold,
/// the route such layers took before, timed in turn; both checked against cuDNN first.
template <class T>
void bm_nhwc_few_channels_vs_fold(benchmark::State& state, const layer& L) {
  KF_BENCH_REQUIRE_GPU(state);
  const int device = kf::detail::current_device("bench_conv");
  const std::string key = nhwc_key<T>(L);
  problem_data_t<T>& d = nhwc_data<T>(L);
  const kf::detail::conv2d_args<T> args = kf::detail::make_conv2d_args<T>(
      d.p, kf::conv2d_output_height(d.p), kf::conv2d_output_width(d.p), d.x.data(), d.w.data(), nullptr, d.y.data());
  if (!kf::detail::conv2d_wgmma_available(device) || !kf::detail::conv2d_few_channels_available(device) ||
      !kf::detail::conv2d_best_takes_few_channels(kf::detail::plan_conv2d_few_channels_of(args))) {
    state.SkipWithError("needs step 10 taking the layer (sm_80+) and step 7 (compute capability 9.0, sm_90a image)");
    return;
  }
  kf::conv2d_options options;
  auto best = [&](cudaStream_t s) {
    options.stream = s;
    kf::conv2d_forward<T>(d.p, d.x.data(), d.w.data(), nullptr, d.y.data(), options);
  };
  bool launched = true;
  auto fold = [&](cudaStream_t s) {
    launched = launched && kf::detail::conv2d_nhwc_wgmma_try_launch(device, args, kf::epilogue::identity{}, s);
  };
  if (!check_pair(state, d, key, {{"/best", best}, {"/fold", fold}}, launched)) return;
  time_gpu_paired(state, best, fold);
  set_flops(state, d.flops());
  state.counters["fold_over_few_channels"] = state.counters["baseline_s"] / state.counters["gpu_s"];
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
    if (sizeof(T) == 2 && L.p.filter_height == 3 && L.p.stride_h == 1) {
      configure(benchmark::RegisterBenchmark((type + "columns_vs_one_tap/" + L.name).c_str(),
                                             [&L](benchmark::State& s) { bm_nhwc_columns_vs_one_tap<T>(s, L); }));
    }
    if (sizeof(T) == 2 && L.p.in_channels <= kf::detail::conv2d_few_channels_plan::channels) {
      configure(benchmark::RegisterBenchmark((type + "few_channels_vs_fold/" + L.name).c_str(),
                                             [&L](benchmark::State& s) { bm_nhwc_few_channels_vs_fold<T>(s, L); }));
    }
    if (sizeof(T) == 2 && L.p.filter_height == 1 && L.p.filter_width == 1 && L.p.stride_h == 1 && L.p.stride_w == 1 &&
        L.p.pad_h == 0 && L.p.pad_w == 0) {
      configure(benchmark::RegisterBenchmark((type + "gemm_vs_best/" + L.name).c_str(),
                                             [&L](benchmark::State& s) { bm_nhwc_gemm_vs_best<T>(s, L); }));
    }
  }
}

}  // namespace

void register_conv2d_nhwc() {
  register_nhwc<__half>();
  register_nhwc<__nv_bfloat16>();
  register_nhwc<float>();
  for (const layer& L : nhwc_layers()) {
    configure(
        benchmark::RegisterBenchmark(("conv2d_nhwc/fp32/best_vs_cudnn/" + L.name).c_str(),
                                     [&L](benchmark::State& s) { bm_conv_fp32_vs_cudnn(s, L, kf::math_mode::exact); }));
    configure(benchmark::RegisterBenchmark(
        ("conv2d_nhwc/fp32_emulated/best_vs_cudnn/" + L.name).c_str(),
        [&L](benchmark::State& s) { bm_conv_fp32_vs_cudnn(s, L, kf::math_mode::fp32_emulated); }));
  }
}

}  // namespace kf::bench::conv
