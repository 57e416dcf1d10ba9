// SPDX-License-Identifier: Apache-2.0
// bench_conv's cuDNN baseline through the backend (graph) API of cuDNN 9, the
// path PyTorch takes with torch.backends.cudnn.benchmark: the legacy
// cudnnFindConvolutionForwardAlgorithm (cudnn_baseline.hpp) picks engines up
// to 4x slower for NHWC fp16/bf16/TF32 on the H200 (N32 C256 56x56 K64 1x1
// fp16: 36 TFLOP/s against torch's 139), and the benchmark standard wants the
// vendor on its best path. Only the C backend API of <cudnn.h> is used (the
// cudnn_frontend headers are not installed here).
//
// The graph of one problem, x (N,C,H,W) in NHWC strides, w (K,C,R,S) in KRSC
// strides, y (N,K,P,Q) in NHWC strides, every tensor of element type T (half,
// bfloat16 or float), 16-byte aligned:
//   plain:  y = conv(x, w)                          (CONVOLUTION_FORWARD, alpha 1, beta 0)
//   fused:  C = conv(x, w); B = C + bias; y = relu(B)  (the graph form of
//           cudnnConvolutionBiasActivationForward: bias 1xKx1x1 in T, C and B
//           virtual float tensors, POINTWISE ADD then RELU_FWD, math in float)
// The convolution's compute type is float for every T: fp32 accumulation.
// bench_conv_backward.cu searches the gradients' graphs the same way
// (cudnn_graph_pass_plan_for): one CONVOLUTION_BACKWARD_DATA (dx from dy and
// w) or CONVOLUTION_BACKWARD_FILTER (dw from x and dy) operation on the same
// NHWC / KRSC tensors.
//
// Math (TF32 against FMA): the backend has no math type. Each engine lists
// numerical notes; for float data an engine noted TENSOR_CORE rounds its
// inputs to TF32. allow_tf32 keeps those engines, else they are filtered out
// (FMA only), as PyTorch does with allow_tf32. Always filtered out:
// DOWN_CONVERT_INPUTS (inputs converted below T, e.g. float to half: PyTorch
// drops them too) and REDUCED_PRECISION_REDUCTION (sums below fp32: the rows'
// error bounds assume fp32 sums).
//
// The search, like torch's benchmark mode: the engine configurations of the
// heuristics in modes INSTANT, A, B and FALLBACK (deduplicated by engine index
// and knob choices; a mode that fails is skipped), an execution plan finalized
// for each (those that do not finalize are skipped), those with a workspace
// above 1 GiB dropped, one workspace for the largest of the rest; then each
// plan runs once untimed (a failed execute drops it) and is timed
// cudnn_graph_search_samples (5) times with CUDA events on the problem's own buffers, L2
// flushed before each sample (gpu_benchmark.hpp's sample_timer); the median
// decides. The fastest plan, its configuration and its descriptors are kept
// per problem key with a workspace of its own size.
//
// Every call is checked; a failure of the graph as a whole (a descriptor that
// does not finalize, no plan that runs) is a message in cudnn_graph_plan::error
// for the benchmark to report (SkipWithError), never an exit (a CUDA error
// that poisons the context still ends the run, as everywhere in bench_conv).
// One line per search goes to stderr (the plan picked, its time, the search's
// wall time, the counts); with KF_CUDNN_GRAPH_VERBOSE=1 also every
// candidate's time and the chosen plan's JSON
// (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "conv_problem.hpp"
#include "cudnn_backend.hpp"
#include "gpu_benchmark.hpp"

namespace kf::bench::conv {

/// Workspaces above this are not tried (torch's search takes what its allocator has).
constexpr std::int64_t cudnn_graph_workspace_cap = std::int64_t{1} << 30;
/// Timed samples per candidate plan in the search (after one untimed run); the median decides.
constexpr int cudnn_graph_search_samples = 5;

/// The plan the search picked for one problem, with everything it refers to.
struct cudnn_graph_plan {
  std::string error;  // non-empty: no plan (the search's failure); nothing below is set
  bool fused = false;
  graph::conv_pass pass = graph::conv_pass::forward;
  std::vector<graph::descriptor> graph;  // tensors, operations, the operation graph (kept alive with the plan)
  graph::descriptor config, plan;        // the fastest engine configuration and its execution plan
  graph::engine_info engine;
  std::int64_t workspace_bytes = 0;
  kf::device_buffer<unsigned char> workspace;
  double search_seconds = 0;  // its median time in the search
  std::string counts;         // the search's counts, for the stderr line

  /// The row's label: "graph eng<i> <knobs> [<notes>] ws=<bytes>".
  [[nodiscard]] std::string label() const {
    const std::string notes = engine.note_text();
    return "graph " + engine.tag + (notes.empty() ? "" : " [" + notes + "]") + " ws=" + std::to_string(workspace_bytes);
  }
};

namespace graph {

/// One candidate of the search.
struct candidate {
  descriptor config, plan;
  engine_info engine;
  std::int64_t workspace = 0;
  double seconds = INFINITY;
};

/// The search of the file comment for the graph of problem d (c.pass; plain or
/// fused), timed on the variant pack's buffers x, w, y (by uid: the pass's
/// inputs and output, conv_pass) and d's bias; fills c or throws graph_error.
template <class T>
void search(cudnn_graph_plan& c, const std::string& key, const problem_data_t<T>& d, const T* x, const T* w, T* y,
            bool allow_tf32) {
  make_conv_graph(d.p, d.P, d.Q, cudnn_type<T>(), c.fused, cudnn(), c.graph, c.pass);
  const descriptor& op_graph = c.graph.back();

  // Engine configurations of every heuristic mode, once each, filtered by numerical notes.
  std::vector<candidate> candidates;
  std::set<std::string> seen;
  std::string mode_failures;
  int filtered = 0;
  for (cudnnBackendHeurMode_t mode :
       {CUDNN_HEUR_MODE_INSTANT, CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B, CUDNN_HEUR_MODE_FALLBACK}) {
    std::string failure;
    std::vector<descriptor> configs = heuristic_configs(op_graph, mode, failure);
    if (!failure.empty()) mode_failures += std::string(" ") + heur_mode_name(mode) + ": " + failure + ";";
    for (descriptor& config : configs) {
      engine_info info;
      try {
        info = describe(config);
      } catch (const graph_error& e) {
        mode_failures += std::string(" ") + heur_mode_name(mode) + ": " + e.what() + ";";
        continue;
      }
      if (!seen.insert(info.tag).second) continue;
      const bool tf32 = std::is_same_v<T, float> && info.has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
      if ((tf32 && !allow_tf32) || info.has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) ||
          info.has(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)) {
        ++filtered;
        continue;
      }
      candidates.push_back({std::move(config), descriptor(), std::move(info), 0, INFINITY});
    }
  }
  if (candidates.empty()) {
    throw graph_error("the heuristics gave no usable engine configuration (" + std::to_string(filtered) +
                      " filtered out by numerical notes;" + mode_failures + ")");
  }

  // An execution plan for each; those that do not finalize, or want too much workspace, drop out.
  int not_finalized = 0, over_cap = 0;
  std::string first_plan_failure;
  std::vector<candidate> planned;
  for (candidate& each : candidates) {
    try {
      each.plan = KF_GRAPH_DESCRIPTOR(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      KF_GRAPH_SET(each.plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                   each.config.address());
      finalize(each.plan, "execution plan");
      KF_GRAPH_GET(each.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &each.workspace);
    } catch (const graph_error& e) {
      if (first_plan_failure.empty()) first_plan_failure = each.engine.tag + ": " + e.what();
      ++not_finalized;
      continue;
    }
    if (each.workspace < 0 || each.workspace > cudnn_graph_workspace_cap) {
      ++over_cap;
      continue;
    }
    planned.push_back(std::move(each));
  }
  if (planned.empty()) {
    throw graph_error("no execution plan finalized within the workspace cap (" + std::to_string(candidates.size()) +
                      " configurations, " + std::to_string(not_finalized) + " did not finalize, " +
                      std::to_string(over_cap) + " over the cap; first failure: " + first_plan_failure + ")");
  }

  // One workspace for the largest; when it cannot be had, the plans that need the most drop out.
  kf::device_buffer<unsigned char> workspace;
  for (;;) {
    std::int64_t largest = 0;
    for (const candidate& each : planned) largest = std::max(largest, each.workspace);
    try {
      workspace = kf::device_buffer<unsigned char>(static_cast<std::size_t>(largest));
      break;
    } catch (const kf::error&) {
      (void)cudaGetLastError();
      const auto dropped = std::remove_if(planned.begin(), planned.end(),
                                          [largest](const candidate& each) { return each.workspace == largest; });
      over_cap += static_cast<int>(planned.end() - dropped);
      planned.erase(dropped, planned.end());
      if (planned.empty()) throw graph_error("no workspace could be allocated for any plan");
    }
  }

  // Time each on the problem's buffers: one untimed run (a failure drops the plan), then the median of the samples.
  const descriptor pack = make_variant_pack(x, w, y, c.fused ? d.bias.data() : nullptr, workspace.data());
  ok(cudnnSetStream(cudnn(), nullptr), "cudnnSetStream");
  sample_timer timer;
  int failed_runs = 0;
  std::string first_run_failure;
  for (candidate& each : planned) {
    const cudnnStatus_t status = cudnnBackendExecute(cudnn(), each.plan.get(), pack.get());
    if (status != CUDNN_STATUS_SUCCESS) {
      if (first_run_failure.empty()) first_run_failure = each.engine.tag + ": " + status_text(status);
      ++failed_runs;
      (void)cudaGetLastError();  // a launch error that is not sticky
      continue;
    }
    check(cudaStreamSynchronize(nullptr), "cudnnBackendExecute (search)");
    std::vector<double> samples;
    cudnnStatus_t timed_status = CUDNN_STATUS_SUCCESS;
    auto run = [&](cudaStream_t) {
      const cudnnStatus_t s = cudnnBackendExecute(cudnn(), each.plan.get(), pack.get());
      if (s != CUDNN_STATUS_SUCCESS) timed_status = s;
    };
    for (int k = 0; k < cudnn_graph_search_samples; ++k) samples.push_back(timer.seconds(run, nullptr));
    if (timed_status != CUDNN_STATUS_SUCCESS) {
      if (first_run_failure.empty()) first_run_failure = each.engine.tag + ": " + status_text(timed_status);
      ++failed_runs;
      continue;
    }
    std::sort(samples.begin(), samples.end());
    each.seconds = samples[samples.size() / 2];
  }
  std::stable_sort(planned.begin(), planned.end(),
                   [](const candidate& a, const candidate& b) { return a.seconds < b.seconds; });
  const int timed = static_cast<int>(
      std::count_if(planned.begin(), planned.end(), [](const candidate& each) { return std::isfinite(each.seconds); }));
  if (timed == 0) {
    throw graph_error("none of " + std::to_string(planned.size()) + " plans ran; first failure: " + first_run_failure);
  }
  if (verbose()) {
    for (const candidate& each : planned) {
      std::fprintf(stderr, "  cudnn graph %s: %-60s ws=%lld %s\n", key.c_str(), each.engine.tag.c_str(),
                   static_cast<long long>(each.workspace),
                   std::isfinite(each.seconds) ? (std::to_string(each.seconds * 1e3) + " ms").c_str() : "failed");
    }
  }

  candidate& best = planned.front();
  c.config = std::move(best.config);
  c.plan = std::move(best.plan);
  c.engine = std::move(best.engine);
  c.workspace_bytes = best.workspace;
  c.search_seconds = best.seconds;
  workspace = kf::device_buffer<unsigned char>();  // the search's, before the plan's own
  c.workspace = kf::device_buffer<unsigned char>(static_cast<std::size_t>(c.workspace_bytes));
  c.counts = std::to_string(timed) + " timed of " + std::to_string(candidates.size() + filtered) +
             " distinct configurations (" + std::to_string(filtered) + " filtered out by notes, " +
             std::to_string(not_finalized) + " not finalized, " + std::to_string(over_cap) +
             " over the workspace cap or unallocatable, " + std::to_string(failed_runs) + " failed to run)" +
             (mode_failures.empty() ? "" : ";" + mode_failures);
}

}  // namespace graph

/// The graph plan of problem `key` for `pass` (d's layout must be NHWC; fused,
/// forward only: conv + bias + ReLU), searched on the first call on the buffers
/// x, w, y (by uid, conv_pass) and kept; allow_tf32: float may use TF32
/// tensor-core engines (the 16-bit types always use tensor cores). On failure,
/// .error says why (and the search is not repeated).
template <class T>
cudnn_graph_plan& cudnn_graph_pass_plan_for(const std::string& key, problem_data_t<T>& d, graph::conv_pass pass,
                                            bool fused, bool allow_tf32, const T* x, const T* w, T* y) {
  static std::map<std::string, std::unique_ptr<cudnn_graph_plan>> cache;
  const char* pass_name = pass == graph::conv_pass::forward         ? ""
                          : pass == graph::conv_pass::backward_data ? "/backward_data"
                                                                    : "/backward_filter";
  const std::string full_key = key + pass_name + (fused ? "/fused" : "") + (allow_tf32 ? "" : "/fma");
  auto& slot = cache[full_key];
  if (slot) return *slot;
  slot = std::make_unique<cudnn_graph_plan>();
  cudnn_graph_plan& c = *slot;
  c.fused = fused;
  c.pass = pass;
  if (d.p.layout != kf::conv2d_layout::nhwc) {
    c.error = "the cuDNN graph baseline builds NHWC graphs only";
    return c;
  }
  const auto start = std::chrono::steady_clock::now();
  std::string failure;
  try {
    graph::search(c, full_key, d, x, w, y, allow_tf32);
  } catch (const graph::graph_error& e) {
    failure = e.what();
  } catch (const kf::error& e) {
    failure = e.what();
  }
  if (!failure.empty()) {
    c = cudnn_graph_plan();  // drops what the failed search built
    c.fused = fused;
    c.pass = pass;
    c.error = "cuDNN graph plan for " + full_key + ": " + failure;
    std::fprintf(stderr, "%s\n", c.error.c_str());
    return c;
  }
  const double search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "cudnn graph %s: %s, %.4f ms in the search (%.1f s); %s\n", full_key.c_str(), c.label().c_str(),
               c.search_seconds * 1e3, search_s, c.counts.c_str());
  if (graph::verbose()) std::fprintf(stderr, "  plan JSON: %s\n", graph::plan_json(c.plan).c_str());
  return c;
}

/// The forward graph plan of problem `key` (fused: conv + bias + ReLU), searched on d's x, w and its cuDNN output.
template <class T>
cudnn_graph_plan& cudnn_graph_plan_for(const std::string& key, problem_data_t<T>& d, bool fused, bool allow_tf32) {
  return cudnn_graph_pass_plan_for<T>(key, d, graph::conv_pass::forward, fused, allow_tf32, d.x.data(), d.w.data(),
                                      fused ? d.y_cudnn_fused.data() : d.y_cudnn.data());
}

/// The variant pack of plan c on these buffers (bias: the fused graph's, else nullptr); throws graph::graph_error.
template <class T>
graph::descriptor make_cudnn_graph_pack(cudnn_graph_plan& c, const T* x, const T* w, T* y, const T* bias) {
  return graph::make_variant_pack(x, w, y, c.fused ? bias : nullptr, c.workspace.data());
}

/// Runs plan c with variant pack `pack` on stream s.
inline cudnnStatus_t run_cudnn_graph(const cudnn_graph_plan& c, const graph::descriptor& pack, cudaStream_t s) {
  const cudnnStatus_t status = cudnnSetStream(cudnn(), s);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  return cudnnBackendExecute(cudnn(), c.plan.get(), pack.get());
}

/// After timed runs of a cuDNN graph plan (`status`: a failing run's, else success):
/// waits for the GPU (`what` names the rows) and, where a run failed, skips the row
/// with cuDNN's message. Returns whether every run succeeded.
inline bool cudnn_runs_succeeded(benchmark::State& state, cudnnStatus_t status, const char* what) {
  check(cudaDeviceSynchronize(), what);
  if (status == CUDNN_STATUS_SUCCESS) return true;
  state.SkipWithError(("cudnnBackendExecute: " + graph::status_text(status)).c_str());
  return false;
}

/// One run of plan c on these buffers, synchronized: empty, or why it failed.
template <class T>
std::string run_cudnn_graph_once(cudnn_graph_plan& c, const T* x, const T* w, T* y, const T* bias) {
  if (!c.error.empty()) return c.error;
  try {
    const graph::descriptor pack = make_cudnn_graph_pack(c, x, w, y, bias);
    const cudnnStatus_t status = run_cudnn_graph(c, pack, nullptr);
    if (status != CUDNN_STATUS_SUCCESS) return "cudnnBackendExecute failed: " + graph::status_text(status);
  } catch (const graph::graph_error& e) {
    return e.what();
  }
  check(cudaDeviceSynchronize(), "cudnnBackendExecute");
  return std::string();
}

}  // namespace kf::bench::conv
