// SPDX-License-Identifier: Apache-2.0
// bench_conv's baseline: cuDNN's handle, and per problem the descriptors (in
// the problem's layout, NCHW or NHWC, and element type: float, or __half and
// __nv_bfloat16 with fp32 accumulation), the fastest algorithm of those
// cudnnFindConvolutionForwardAlgorithm returns, timed again here (FMA math for
// the exact rows, tensor-op math for TF32 and the 16-bit types), its workspace, and the
// bias + ReLU descriptors of the fused call. The conv2d_nhwc rows time this
// legacy path as cudnn_legacy and cudnn_legacy_fused; their cudnn and
// cudnn_fused rows go through the backend graph API (cudnn_graph.hpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "conv_problem.hpp"
#include "gpu_benchmark.hpp"

namespace kf::bench::conv {

inline void cudnn_check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, cudnnGetErrorString(status));
    std::exit(1);
  }
}

inline cudnnHandle_t cudnn() {
  static cudnnHandle_t handle = [] {
    cudnnHandle_t h = nullptr;
    cudnn_check(cudnnCreate(&h), "cudnnCreate");
    return h;
  }();
  return handle;
}

/// cuDNN's name for the element type T.
template <class T>
constexpr cudnnDataType_t cudnn_type() {
  if constexpr (std::is_same_v<T, __half>) {
    return CUDNN_DATA_HALF;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return CUDNN_DATA_BFLOAT16;
  } else {
    return CUDNN_DATA_FLOAT;
  }
}

/// cuDNN's name for the memory order of x and y (and, for the filter, KCRS or KRSC).
inline cudnnTensorFormat_t cudnn_format(kf::conv2d_layout layout) {
  return layout == kf::conv2d_layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
}

/// cuDNN descriptors, the algorithm cudnnFind picked, and its workspace.
struct cudnn_plan {
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t conv_desc = nullptr;
  cudnnConvolutionFwdAlgo_t algo{};
  kf::device_buffer<unsigned char> workspace;
  std::size_t workspace_bytes = 0;
};

/// Plan c set to run `perf`'s algorithm in its math (its workspace as it was).
inline void use_algorithm(cudnn_plan& c, const cudnnConvolutionFwdAlgoPerf_t& perf) {
  c.algo = perf.algo;
  cudnn_check(cudnnSetConvolutionMathType(c.conv_desc, perf.mathType), "cudnnSetConvolutionMathType");
}

/// The workspace plan c's algorithm needs.
inline std::size_t algorithm_workspace_bytes(const cudnn_plan& c) {
  std::size_t bytes = 0;
  cudnn_check(
      cudnnGetConvolutionForwardWorkspaceSize(cudnn(), c.x_desc, c.w_desc, c.conv_desc, c.y_desc, c.algo, &bytes),
      "cudnnGetConvolutionForwardWorkspaceSize");
  return bytes;
}

/// use_algorithm, with the algorithm's own workspace allocated into c.
inline void use_algorithm_with_workspace(cudnn_plan& c, const cudnnConvolutionFwdAlgoPerf_t& perf) {
  use_algorithm(c, perf);
  c.workspace_bytes = algorithm_workspace_bytes(c);
  c.workspace = kf::device_buffer<unsigned char>(c.workspace_bytes);
}

template <class T>
void run_cudnn(cudnn_plan& c, const T* x, const T* w, T* y, cudaStream_t stream);

/// Samples per candidate when cudnn_plan_for times cudnnFind's algorithms again,
/// after warm_up_ms of untimed calls.
constexpr int retime_samples = 25;
constexpr int warm_up_ms = 100;

/// Which of `candidates` (cudnnFind's results) runs fastest on d in the rows'
/// timing: the candidates' calls taken in turn, one L2-flushed sample of each a
/// round (as time_gpu_paired: the same clocks for each), after one untimed round;
/// the median of each. Writes a scratch output (d's outputs keep the checked
/// results) and one line on stderr with every candidate's time; plan c is left
/// set to the winner, with its own workspace.
template <class T>
void fastest_retimed(cudnn_plan& c, const problem_data_t<T>& d, const std::string& key,
                     const std::vector<cudnnConvolutionFwdAlgoPerf_t>& candidates) {
  std::size_t most_bytes = 0;  // one workspace, the largest of the candidates'
  for (const auto& perf : candidates) {
    use_algorithm(c, perf);
    most_bytes = std::max(most_bytes, algorithm_workspace_bytes(c));
  }
  c.workspace = kf::device_buffer<unsigned char>(most_bytes);
  c.workspace_bytes = most_bytes;
  kf::device_buffer<T> scratch_y(d.y_size());
  const std::size_t n = candidates.size();
  std::vector<std::vector<double>> samples(n);
  sample_timer timer;
  // The GPU at its working clock first: a process's first plans otherwise time
  // their candidates on a GPU still clocking up (H100, 2026-12-06: the same
  // algorithm at 124 us in one process and 138 us in the next).
  use_algorithm(c, candidates.front());
  const auto warm_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(warm_up_ms);
  while (std::chrono::steady_clock::now() < warm_until) {
    for (int i = 0; i < 10; ++i) run_cudnn(c, d.x.data(), d.w.data(), scratch_y.data(), nullptr);
    check(cudaStreamSynchronize(nullptr), "cudnn plan warm-up");
  }
  for (int round = 0; round <= retime_samples; ++round) {
    for (std::size_t i = 0; i < n; ++i) {
      use_algorithm(c, candidates[i]);
      const auto call = [&](cudaStream_t s) { run_cudnn(c, d.x.data(), d.w.data(), scratch_y.data(), s); };
      const double s = timer.seconds(call, nullptr);
      if (round > 0) samples[i].push_back(s);  // round 0: first-call costs out
    }
  }
  std::size_t best = 0;
  double best_median = 0;
  std::string report = "cudnn plan " + key + ":";
  for (std::size_t i = 0; i < n; ++i) {
    std::nth_element(samples[i].begin(), samples[i].begin() + retime_samples / 2, samples[i].end());
    const double median = samples[i][retime_samples / 2];
    if (i == 0 || median < best_median) best = i, best_median = median;
    report += " algo " + std::to_string(static_cast<int>(candidates[i].algo)) + " " +
              std::to_string(median * 1e6).substr(0, 6) + " us;";
  }
  std::fprintf(stderr, "%s fastest: algo %d\n", report.c_str(), static_cast<int>(candidates[best].algo));
  use_algorithm_with_workspace(c, candidates[best]);
}

/// The plan for problem `key`: d's layout and element type, fp32 accumulation;
/// tensor_ops: tensor-op math allowed (TF32 for float; the 16-bit types always
/// pass true), else FMA math only.
template <class T>
cudnn_plan& cudnn_plan_for(const std::string& key, const problem_data_t<T>& d, bool tensor_ops) {
  static std::map<std::string, std::unique_ptr<cudnn_plan>> cache;
  auto& slot = cache[key];
  if (slot) return *slot;
  slot = std::make_unique<cudnn_plan>();
  cudnn_plan& c = *slot;
  const kf::conv2d_params& p = d.p;
  const auto i = [](std::size_t v) { return static_cast<int>(v); };
  cudnn_check(cudnnCreateTensorDescriptor(&c.x_desc), "cudnnCreateTensorDescriptor");
  cudnn_check(cudnnCreateTensorDescriptor(&c.y_desc), "cudnnCreateTensorDescriptor");
  cudnn_check(cudnnCreateFilterDescriptor(&c.w_desc), "cudnnCreateFilterDescriptor");
  cudnn_check(cudnnCreateConvolutionDescriptor(&c.conv_desc), "cudnnCreateConvolutionDescriptor");
  const cudnnTensorFormat_t format = cudnn_format(p.layout);
  cudnn_check(cudnnSetTensor4dDescriptor(c.x_desc, format, cudnn_type<T>(), i(p.batch), i(p.in_channels),
                                         i(p.in_height), i(p.in_width)),
              "cudnnSetTensor4dDescriptor(x)");
  cudnn_check(cudnnSetFilter4dDescriptor(c.w_desc, cudnn_type<T>(), format, i(p.out_channels), i(p.in_channels),
                                         i(p.filter_height), i(p.filter_width)),
              "cudnnSetFilter4dDescriptor");
  // Compute type float for every element type: fp32 accumulation (cuDNN's
  // PSEUDO_HALF_CONFIG and PSEUDO_BFLOAT16_CONFIG for the 16-bit types), as kernelforge's.
  cudnn_check(
      cudnnSetConvolution2dDescriptor(c.conv_desc, i(p.pad_h), i(p.pad_w), i(p.stride_h), i(p.stride_w),
                                      i(p.dilation_h), i(p.dilation_w), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
      "cudnnSetConvolution2dDescriptor");
  // FMA math forbids TF32 (CUDNN_DEFAULT_MATH would allow it for fp32 on sm_80+).
  cudnn_check(cudnnSetConvolutionMathType(c.conv_desc, tensor_ops ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
              "cudnnSetConvolutionMathType");
  cudnn_check(
      cudnnSetTensor4dDescriptor(c.y_desc, format, cudnn_type<T>(), i(p.batch), i(p.out_channels), i(d.P), i(d.Q)),
      "cudnnSetTensor4dDescriptor(y)");
  constexpr int requested = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  cudnnConvolutionFwdAlgoPerf_t perf[requested];
  int returned = 0;
  cudnn_check(cudnnFindConvolutionForwardAlgorithm(cudnn(), c.x_desc, c.w_desc, c.conv_desc, c.y_desc, requested,
                                                   &returned, perf),
              "cudnnFindConvolutionForwardAlgorithm");
  // cudnnFind times each algorithm once, without flushing L2, and its order of
  // algorithms within a few percent of each other changes from run to run (the
  // H100, 2026-12-06, NCHW fp32 C128 28x28: FFT_TILING at 125 us in one run of
  // the binary, WINOGRAD_NONFUSED at 112 us in the next). So every usable
  // algorithm within 1.5x of its fastest is timed again (fastest_retimed), and
  // the fastest of the rows' own timing is the baseline: cuDNN at its best,
  // whatever cudnnFind's noise.
  std::vector<cudnnConvolutionFwdAlgoPerf_t> candidates;
  for (int k = 0; k < returned; ++k) {
    const bool usable =
        perf[k].status == CUDNN_STATUS_SUCCESS && (tensor_ops || perf[k].mathType != CUDNN_TENSOR_OP_MATH);
    if (usable && (candidates.empty() || perf[k].time <= 1.5f * candidates.front().time)) {
      candidates.push_back(perf[k]);
    }
  }
  if (candidates.empty()) {
    std::fprintf(stderr, "cudnnFindConvolutionForwardAlgorithm found no usable algorithm for %s\n", key.c_str());
    std::exit(1);
  }
  fastest_retimed(c, d, key, candidates);
  return c;
}

/// y = conv(x, w) with plan c (alpha and beta are float for every element type).
template <class T>
void run_cudnn(cudnn_plan& c, const T* x, const T* w, T* y, cudaStream_t stream) {
  cudnn_check(cudnnSetStream(cudnn(), stream), "cudnnSetStream");
  const float one = 1.0f, zero = 0.0f;
  cudnn_check(cudnnConvolutionForward(cudnn(), &one, c.x_desc, x, c.w_desc, w, c.conv_desc, c.algo, c.workspace.data(),
                                      c.workspace_bytes, &zero, c.y_desc, y),
              "cudnnConvolutionForward");
}

template <class T>
void run_cudnn(cudnn_plan& c, const problem_data_t<T>& d, T* y, cudaStream_t stream) {
  run_cudnn(c, d.x.data(), d.w.data(), y, stream);
}

/// cuDNN's bias (1 x K x 1 x 1) and ReLU descriptors for one problem.
struct cudnn_bias_relu {
  cudnnTensorDescriptor_t bias_desc = nullptr;
  cudnnActivationDescriptor_t relu = nullptr;
};

/// The bias (d's element type, as cuDNN wants it for y's) and ReLU descriptors of problem `key`.
template <class T>
cudnn_bias_relu& cudnn_bias_relu_for(const std::string& key, const problem_data_t<T>& d) {
  static std::map<std::string, std::unique_ptr<cudnn_bias_relu>> cache;
  auto& slot = cache[key];
  if (slot) return *slot;
  slot = std::make_unique<cudnn_bias_relu>();
  cudnn_check(cudnnCreateTensorDescriptor(&slot->bias_desc), "cudnnCreateTensorDescriptor");
  cudnn_check(cudnnSetTensor4dDescriptor(slot->bias_desc, CUDNN_TENSOR_NCHW, cudnn_type<T>(), 1,
                                         static_cast<int>(d.p.out_channels), 1, 1),
              "cudnnSetTensor4dDescriptor(bias)");
  cudnn_check(cudnnCreateActivationDescriptor(&slot->relu), "cudnnCreateActivationDescriptor");
  cudnn_check(cudnnSetActivationDescriptor(slot->relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
              "cudnnSetActivationDescriptor");
  return *slot;
}

}  // namespace kf::bench::conv
