// SPDX-License-Identifier: Apache-2.0
// What bench_conv's conv2d_nhwc rows share (bench_conv_nhwc.cu: the rows against
// cuDNN; bench_conv_nhwc_pairs.cu: ours against ours): each layer's NHWC data
// and key, the check of a run against cuDNN's output before it is timed
// (check_nhwc, once per row and key), and the paired rows' check (check_pair).
// Templates in a named namespace, so that their caches are one per program.
#pragma once

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
const kf::device_buffer<T>& nhwc_error_scale(const std::string& key, problem_data_t<T>& d) {
  static std::map<std::string, kf::device_buffer<T>> cache;
  const auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const auto abs_x = kf::to_device(random_values<T>(d.x_size(), x_seed, true));
  const auto abs_w = kf::to_device(random_values<T>(d.w_size(), w_seed, true));
  kf::device_buffer<T> out(d.y_size());
  cudnn_graph_plan& plan = cudnn_graph_plan_for(key, d, false, true);
  if (!run_cudnn_graph_once<T>(plan, abs_x.data(), abs_w.data(), out.data(), nullptr).empty()) {
    run_cudnn(cudnn_plan_for(key, d, true), abs_x.data(), abs_w.data(), out.data(), nullptr);
  }
  check(cudaDeviceSynchronize(), "cuDNN (error scale)");
  return cache.emplace(key, std::move(out)).first->second;
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
  const kf::device_buffer<T>& scale = nhwc_error_scale(key, d);
  const nhwc_bound b = nhwc_bound_for<T>(d.p);
  const double bias_magnitude = fused ? 1.0 : 0.0;  // random_values: |bias| < 1
  // |ours - cuDNN| <= 2 (rel_ref |cuDNN| + rel_scale (scale + bias) + abs), on the GPU
  const element_bound bound{2 * b.rel_ref, 2 * b.rel_scale, 2 * (b.rel_scale * bias_magnitude + b.abs)};
  const device_difference r = compare_on_device(d.y.data(), want_device, d.y_size(), &bound, scale.data());
  const std::size_t bad = static_cast<std::size_t>(r.outside);
  result.diff = r.relative();
  if (bad != 0) {
    const std::size_t first = static_cast<std::size_t>(r.first_outside);
    const double got = kf::reference::to_double(copy_to_host(d.y.data() + first, 1)[0]);
    const double want = kf::reference::to_double(copy_to_host(want_device + first, 1)[0]);
    const double tol = bound.at(want, kf::reference::to_double(copy_to_host(scale.data() + first, 1)[0]));
    result.failure = std::to_string(bad) + " of " + std::to_string(d.y_size()) + " outputs differ from cuDNN's; [" +
                     std::to_string(first) + "]: " + std::to_string(got) + " vs " + std::to_string(want) + " (bound " +
                     std::to_string(tol) + ")";
  } else if (std::is_same_v<T, float> && !(result.diff <= tf32_check_tolerance)) {
    result.failure = "result differs from cuDNN by " + std::to_string(result.diff) + " (relative to max |y|)";
  }
  return result;
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

}  // namespace kf::bench::conv
