// SPDX-License-Identifier: Apache-2.0
// How bench_conv times cuDNN and checks against it, shared by its row files
// (bench_conv.cu, bench_conv_nhwc.cu, bench_filter2d.cu): the check
// tolerances, cuDNN's time per problem key (cudnn_seconds, read by every
// row's frac_cudnn), the once-per-row check of a result (checked_difference),
// and the timed cuDNN calls: the legacy API (time_cudnn: cudnnConvolutionForward
// or, fused, cudnnConvolutionBiasActivationForward) and the backend graph
// (time_cudnn_graph). Inline, in kf::bench::conv: one map of times and checks
// for the whole binary.
#pragma once

#include <map>
#include <string>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "conv_problem.hpp"
#include "cudnn_baseline.hpp"
#include "cudnn_graph.hpp"
#include "gpu_benchmark.hpp"

namespace kf::bench::conv {

// Sanity check against cuDNN before timing: max |ours - cuDNN| / max |cuDNN|.
// cuDNN may pick Winograd or FFT (a few 1e-6 apart from direct summation), and
// TF32 results differ by ~1e-3.
constexpr double exact_check_tolerance = 1e-4;
constexpr double tf32_check_tolerance = 2e-2;

/// cuDNN's time per problem key, stored by its benchmark for frac_cudnn.
inline std::map<std::string, double>& cudnn_seconds() {
  static std::map<std::string, double> times;
  return times;
}

/// relative_difference of d.y, computed once per benchmark (Google Benchmark
/// may call a benchmark function several times while it sizes the run).
inline double checked_difference(const std::string& benchmark_name, const problem_data& d) {
  static std::map<std::string, double> done;
  const auto it = done.find(benchmark_name);
  if (it != done.end()) return it->second;
  return done[benchmark_name] = relative_difference(d, d.y.data());
}

inline void set_frac_cudnn(benchmark::State& state, const std::string& key) {
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
  set_flops(state, d.flops(), conv_peak_tflops<T>(tensor_ops));
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
  if (!cudnn_runs_succeeded(state, status, "cuDNN graph")) return;
  (fused ? d.have_cudnn_fused_result : d.have_cudnn_result) = true;
  cudnn_seconds()[seconds_key] = state.counters["gpu_s"];
  set_flops(state, d.flops(), conv_peak_tflops<T>(true));  // TF32 allowed for float
  state.SetLabel(plan.label());
  const auto legacy = cudnn_seconds().find("legacy/" + seconds_key);
  if (legacy != cudnn_seconds().end() && state.counters["gpu_s"] > 0) {
    state.counters["speedup_vs_legacy"] = legacy->second / state.counters["gpu_s"];
  }
}

}  // namespace kf::bench::conv
