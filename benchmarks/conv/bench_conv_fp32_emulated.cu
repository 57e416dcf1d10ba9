// SPDX-License-Identifier: Apache-2.0
// bench_conv's fp32-emulation rows (conv2d step 9): kf::conv2d_forward under
// math_mode::fp32_emulated paired with cuDNN's fastest exact fp32, each speed
// beside both errors on a sample of outputs against a double reference.
//
//   conv2d/fp32_emulated/best_vs_cudnn/<layer>   NCHW: cuDNN's fastest FMA-math
//                                  algorithm, cudnnFind's candidates timed again
//                                  (the conv2d/fp32/cudnn row's plan; no TF32);
//                                  layers the kernel leaves (the RGB stem) run the
//                                  exact kernels. Timed in turn (time_gpu_paired) on
//                                  randn x and w (random_normal_values). Counters:
//                                  TFLOP/s (ours), cudnn_TFLOP/s, frac_cudnn (cuDNN's
//                                  time / ours, from the same pairs), max_error and
//                                  baseline_max_error (ours, cuDNN's: max |y - ref| /
//                                  sum |x| |w| over 2048 sampled outputs: no speed
//                                  without its error), diff_vs_cudnn; label: cuDNN's
//                                  algorithm or engine.
// The NHWC rows (conv2d_nhwc/fp32_emulated/best_vs_cudnn) run the same function on
// the NHWC layers (bench_conv_nhwc.cu), against cuDNN's FMA-only NHWC engine search,
// and so do conv2d_nhwc/fp32/best_vs_cudnn under math_mode::exact (the default:
// best through the NCHW kernels on transposed copies), with the same counters;
// the exact rows are checked against cuDNN only (diff_vs_cudnn, as the NCHW
// conv2d/fp32/best rows), their max_error reported beside cuDNN's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "bench_conv.hpp"
#include "conv_problem.hpp"
#include "cudnn_timing.hpp"
#include "gpu_benchmark.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/reference/conv.hpp"

namespace kf::bench::conv {

// ---- conv2d under math_mode::fp32_emulated, paired with cuDNN's exact fp32 ------------------
namespace {

/// Outputs of each fp32_emulated row's accuracy sample.
constexpr std::size_t error_sample_size = 2048;

/// The double reference and sum |x| |w| at error_sample_size outputs of a
/// problem (drawn with a fixed seed; their offsets in y), computed once per key.
struct error_sample {
  std::vector<std::size_t> offset;
  std::vector<double> ref, magnitude;
};

const error_sample& error_sample_for(const std::string& key, const problem_data& d) {
  static std::map<std::string, error_sample> cache;
  error_sample& e = cache[key];
  if (!e.offset.empty()) return e;
  const kf::conv2d_params& p = d.p;
  const kf::reference::conv2d_indexer ix = kf::reference::conv2d_reference_indexer(p, "bench_conv");
  const std::vector<float> x = copy_to_host(d.x.data(), d.x_size()), w = copy_to_host(d.w.data(), d.w_size());
  std::uint64_t z = 12345;
  const auto below = [&z](std::size_t n) {
    z = z * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::size_t>((z >> 11) % n);
  };
  for (std::size_t i = 0; i < error_sample_size; ++i) {
    const std::size_t n = below(p.batch), k = below(p.out_channels), op = below(d.P), oq = below(d.Q);
    const kf::reference::conv2d_exact_output r =
        kf::reference::conv2d_forward_exact_at(p, x.data(), w.data(), n, k, op, oq);
    e.offset.push_back(ix.y(n, k, op, oq));
    e.ref.push_back(r.value);
    e.magnitude.push_back(r.scale);
  }
  return e;
}

/// max |y - ref| / sum |x| |w| over the sample of y (d's layout, on the device); infinity for a NaN.
double sampled_error(const error_sample& e, const problem_data& d, const float* y_device) {
  const std::vector<float> y = copy_to_host(y_device, d.y_size());
  double worst = 0;
  for (std::size_t i = 0; i < e.offset.size(); ++i) {
    const double error = std::fabs(static_cast<double>(y[e.offset[i]]) - e.ref[i]);
    if (std::isnan(error)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, e.magnitude[i] > 0 ? error / e.magnitude[i] : error);
  }
  return worst;
}

/// What one fp32_emulated row's check found (once per row: Google Benchmark
/// may call a row several times while it sizes the run).
struct emulated_check {
  std::string failure;  // empty: passed
  double max_error = 0, baseline_max_error = 0, diff = 0;
};

}  // namespace

void bm_conv_fp32_vs_cudnn(benchmark::State& state, const layer& L, kf::math_mode math) {
  KF_BENCH_REQUIRE_GPU(state);
  const bool nhwc = L.p.layout == kf::conv2d_layout::nhwc;
  const bool emulated = math == kf::math_mode::fp32_emulated;
  const std::string key = std::string(nhwc ? "nhwc/" : "") + "fp32/" + L.name;  // cuDNN's FMA plan
  problem_data& d = data_for("randn/" + key, L.p, true);
  kf::conv2d_options options;
  options.math = math;
  auto ours = [&](cudaStream_t s) {
    options.stream = s;
    kf::conv2d_forward<float>(d.p, d.x.data(), d.w.data(), nullptr, d.y.data(), options);
  };
  // The check, part one: ours into a NaN-poisoned y (a device without the
  // emulation refuses here, before cuDNN's plan search).
  static std::map<std::string, emulated_check> checks;
  const std::string check_key = std::string(emulated ? "emulated/" : "exact/") + key;
  const bool first_call = !checks.count(check_key);
  emulated_check& c = checks[check_key];
  if (first_call) {
    check(cudaMemset(d.y.data(), 0xFF, d.y_size() * sizeof(float)), "cudaMemset");  // NaN: unwritten outputs fail
    try {
      ours(nullptr);
    } catch (const kf::error& e) {
      c.failure = e.what();
    }
  }
  if (!c.failure.empty()) {
    state.SkipWithError(c.failure.c_str());
    return;
  }
  // cuDNN on the layout's best path, FMA math only: in NCHW the legacy
  // cudnnFind algorithm of the conv2d/fp32/cudnn row (same key: same plan); in
  // NHWC the backend graph's engine search without TF32 engines, or the legacy
  // NHWC call where no graph plan runs.
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  cudnn_graph_plan* graph_plan = nhwc ? &cudnn_graph_plan_for(key, d, false, false) : nullptr;
  graph::descriptor pack;
  bool use_graph = graph_plan != nullptr && graph_plan->error.empty();
  if (use_graph) {
    try {
      pack = make_cudnn_graph_pack<float>(*graph_plan, d.x.data(), d.w.data(), d.y_cudnn.data(), nullptr);
    } catch (const graph::graph_error&) {
      use_graph = false;  // the legacy call instead
    }
  }
  cudnn_plan* legacy = use_graph ? nullptr : &cudnn_plan_for(key, d, false);
  auto theirs = [&](cudaStream_t s) {
    if (!use_graph) return run_cudnn(*legacy, d, d.y_cudnn.data(), s);
    const cudnnStatus_t each = run_cudnn_graph(*graph_plan, pack, s);
    if (each != CUDNN_STATUS_SUCCESS) status = each;
  };
  // Part two: cuDNN's output, both errors on the sample, ours against cuDNN's everywhere.
  if (first_call) {
    theirs(nullptr);
    check(cudaDeviceSynchronize(), "conv2d fp32_emulated rows");
    d.have_cudnn_result = status == CUDNN_STATUS_SUCCESS;
    const error_sample& e = error_sample_for(key, d);
    c.max_error = sampled_error(e, d, d.y.data());
    c.baseline_max_error = sampled_error(e, d, d.y_cudnn.data());
    c.diff = relative_difference(d, d.y.data());
    // The GPU tests' exact fp32 bound (conv2d_fp32_emulated_gpu_test.cpp), and the exact rows' check against cuDNN.
    const double bound = 4 * std::sqrt(static_cast<double>(d.p.in_channels * d.p.filter_height * d.p.filter_width)) *
                         std::ldexp(1.0, -24);
    if (status != CUDNN_STATUS_SUCCESS) {
      c.failure = "cudnnBackendExecute: " + graph::status_text(status);
    } else if (emulated && !(c.max_error <= bound)) {
      c.failure = "max |y - ref| / sum |x| |w| = " + std::to_string(c.max_error) + " over the sample, above " +
                  std::to_string(bound);
    } else if (!(c.diff <= exact_check_tolerance)) {
      c.failure = "result differs from cuDNN by " + std::to_string(c.diff) + " (relative to max |y|)";
    }
  }
  if (!c.failure.empty()) {
    state.SkipWithError(c.failure.c_str());
    return;
  }
  time_gpu_paired(state, ours, theirs);
  if (!cudnn_runs_succeeded(state, status, "conv2d fp32_emulated rows")) return;
  set_flops(state, d.flops());
  const double ours_s = state.counters["gpu_s"], cudnn_s = state.counters["baseline_s"];
  state.counters["cudnn_TFLOP/s"] = cudnn_s > 0 ? d.flops() / cudnn_s / 1e12 : 0;
  state.counters["frac_cudnn"] = ours_s > 0 ? cudnn_s / ours_s : 0;
  state.counters["max_error"] = c.max_error;
  state.counters["baseline_max_error"] = c.baseline_max_error;
  state.counters["diff_vs_cudnn"] = c.diff;
  state.SetLabel(use_graph ? graph_plan->label() : "algo " + std::to_string(static_cast<int>(legacy->algo)));
}

void register_conv2d_fp32_emulated() {
  for (const layer& L : layers()) {
    configure(benchmark::RegisterBenchmark(
        ("conv2d/fp32_emulated/best_vs_cudnn/" + L.name).c_str(),
        [&L](benchmark::State& s) { bm_conv_fp32_vs_cudnn(s, L, kf::math_mode::fp32_emulated); }));
  }
}

}  // namespace kf::bench::conv
