// SPDX-License-Identifier: Apache-2.0
// bench_conv's conv2d_backward rows (registered by register_conv2d_backward,
// called from bench_conv.cu's registrar): the gradients of the channels_last
// layers against cuDNN's, each row timing ours and cuDNN's in turn
// (time_gpu_paired: one sample of each per iteration, L2 flushed before each,
// so both see the same clocks at the power cap):
//
//   conv2d_backward/<fp16|bf16|tf32>/<data|filter|step>/<layer>
//     data:   kf::conv2d_backward_data (dx from dy and w) against cuDNN's
//             CONVOLUTION_BACKWARD_DATA graph;
//     filter: kf::conv2d_backward_filter (dw from x and dy, no dbias) against
//             CONVOLUTION_BACKWARD_FILTER;
//     step:   the training step's three convolutions back to back (forward,
//             dx, dw) against cuDNN's three graphs.
//   conv2d_backward/tf32/filter_wgmma/<layer>: the filter row on the
//     implicit_gemm_wgmma variant (gradient step 4 wherever it applies, the
//     1x1 stride-1 layer included, which `best` runs on step 9:
//     conv2d_wgrad_tf32_preferred), beside the filter row's best, to settle
//     that route.
//   conv2d_backward/tf32/filter_gemm/<pointwise layer>: the filter row on the
//     implicit_gemm variant (gradient step 2: kf::matmul on x as it lies),
//     the route `best` took for pointwise layers before step 9.
//   conv2d_backward/tf32/<filter|filter_gemm>/n32_c64_56x56_k256_1x1: the same
//     pair on ResNet-50's 1x1 expansion (K = 256: several output tiles, where
//     the reduction layer above has one), which `best` also runs on step 9;
//     these two rows only, to settle the route there.
//   Counters: gpu_s (ours), baseline_s (cuDNN), frac_cudnn (baseline_s /
//   gpu_s), TFLOP/s (the forward's FLOPs per pass, 3x for the step),
//   diff_vs_cudnn (max |ours - cuDNN| / max |cuDNN| of the pass's output);
//   differing_elements (how many output elements differ from cuDNN's at all:
//   0 in bf16, where every product of these inputs -- 8-bit mantissas in
//   [0.5, 1) -- is a multiple of 2^-16 and the fp32 sums stay exact whatever
//   their order; fp16's 11-bit mantissas leave rounding, so some differ);
//   label: the cuDNN engine of the pass (cudnn_graph.hpp's label).
//
// cuDNN's plans come from the same backend-graph engine search as the forward
// rows (cudnn_graph_pass_plan_for: heuristics modes INSTANT, A, B, FALLBACK,
// every plan timed, the fastest kept; TF32 engines allowed for float), on the
// NHWC / KRSC tensors of nhwc_layers() (conv_problem.hpp). x and w are the
// forward rows' tensors; dy is random_values like them (seed dy_seed). tf32 is
// float under math_mode::tf32. The check before timing is a sanity check
// (tolerance by type: a wrong or unwritten output fails it, NaN always); the
// per-element error bounds are the GPU tests'
// (tests/conv2d/conv2d_backward_gpu_test.cpp).
#include <algorithm>
#include <cmath>
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

#include "bench_conv.hpp"
#include "conv_problem.hpp"
#include "cudnn_graph.hpp"
#include "gpu_benchmark.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/conv_backward.hpp"
#include "kernelforge/reference/elementwise.hpp"

namespace kf::bench::conv {
namespace {

constexpr std::uint64_t dy_seed = 4;

/// max |ours - cuDNN| / max |cuDNN| allowed by the sanity check: a few units of
/// the output type's rounding (fp16 2^-11, bf16 2^-8) or of TF32's inputs.
template <class T>
double backward_check_tolerance() {
  if constexpr (std::is_same_v<T, __half>) {
    return 1e-2;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return 4e-2;
  } else {
    return 2e-2;
  }
}

/// The gradients' tensors of one layer in T (the forward's x and w are the
/// conv2d_nhwc rows' own: nhwc/<layer>): dy, and each pass's output for ours
/// and for cuDNN.
template <class T>
struct backward_data_t {
  kf::device_buffer<T> dy, dx, dx_cudnn, dw, dw_cudnn, y_cudnn;
};

template <class T>
problem_data_t<T>& forward_data(const layer& L) {
  return data_for<T>("nhwc/" + L.name, L.p);
}

template <class T>
backward_data_t<T>& backward_data(const layer& L) {
  static std::map<std::string, std::unique_ptr<backward_data_t<T>>> cache;
  auto& slot = cache[L.name];
  if (!slot) {
    const problem_data_t<T>& d = forward_data<T>(L);
    slot = std::make_unique<backward_data_t<T>>();
    slot->dy = kf::to_device(random_values<T>(d.y_size(), dy_seed));
    slot->dx = kf::device_buffer<T>(d.x_size());
    slot->dx_cudnn = kf::device_buffer<T>(d.x_size());
    slot->dw = kf::device_buffer<T>(d.w_size());
    slot->dw_cudnn = kf::device_buffer<T>(d.w_size());
    slot->y_cudnn = kf::device_buffer<T>(d.y_size());
  }
  return *slot;
}

/// max |got - want| / max |want| over n device elements (on the GPU:
/// device_compare.cuh); NaN when got holds a NaN, +inf when want does.
/// `differing` (if given) adds the count of elements whose values differ.
template <class T>
double max_relative_difference(const T* got_device, const T* want_device, std::size_t n,
                               std::size_t* differing = nullptr) {
  const device_difference r = compare_on_device(got_device, want_device, n);
  if (r.nan_in_got) return NAN;
  if (differing != nullptr) *differing += static_cast<std::size_t>(r.differing);
  return r.relative();
}

/// A cuDNN graph plan and its variant pack, ready to run; `error` says why not.
struct cudnn_pass {
  cudnn_graph_plan* plan = nullptr;
  graph::descriptor pack;
  std::string error;
  cudnnStatus_t run(cudaStream_t s) const { return run_cudnn_graph(*plan, pack, s); }
};

/// The plan of `pass` for layer L in T and its pack on (x, w, y) by uid (conv_pass).
template <class T>
cudnn_pass make_cudnn_pass(const layer& L, graph::conv_pass pass, const T* x, const T* w, T* y) {
  problem_data_t<T>& d = forward_data<T>(L);
  cudnn_pass c;
  c.plan = &cudnn_graph_pass_plan_for<T>(std::string("nhwc/") + nhwc_type_name<T>() + "/" + L.name, d, pass, false,
                                         true, x, w, y);
  if (!c.plan->error.empty()) {
    c.error = c.plan->error;
    return c;
  }
  try {
    c.pack = graph::make_variant_pack(x, w, y, nullptr, c.plan->workspace.data());
  } catch (const graph::graph_error& e) {
    c.error = e.what();
  }
  return c;
}

enum class row_kind { data, filter, step, filter_wgmma, filter_gemm };

/// One row: ours and cuDNN's for `kind` on layer L in T, paired; checked first.
template <class T>
void bm_backward(benchmark::State& state, const layer& L, row_kind kind) {
  KF_BENCH_REQUIRE_GPU(state);
  problem_data_t<T>& d = forward_data<T>(L);
  backward_data_t<T>& b = backward_data<T>(L);
  const kf::conv2d_params& p = d.p;

  kf::conv2d_backward_options bo;
  bo.math = kf::math_mode::tf32;  // float: TF32 products; __half, __nv_bfloat16: no effect
  if (kind == row_kind::filter_wgmma || kind == row_kind::filter_gemm) {
    bo.variant = kind == row_kind::filter_wgmma ? kf::conv2d_backward_variant::implicit_gemm_wgmma
                                                : kf::conv2d_backward_variant::implicit_gemm;
    kind = row_kind::filter;  // otherwise the filter row
  }
  kf::conv2d_options fo;
  fo.math = kf::math_mode::tf32;
  auto ours_data = [&](cudaStream_t s) {
    bo.stream = s;
    kf::conv2d_backward_data<T>(p, b.dy.data(), d.w.data(), b.dx.data(), bo);
  };
  auto ours_filter = [&](cudaStream_t s) {
    bo.stream = s;
    kf::conv2d_backward_filter<T>(p, d.x.data(), b.dy.data(), b.dw.data(), nullptr, bo);
  };

  std::vector<cudnn_pass> theirs;
  if (kind == row_kind::step) {
    theirs.push_back(make_cudnn_pass<T>(L, graph::conv_pass::forward, d.x.data(), d.w.data(), b.y_cudnn.data()));
  }
  if (kind != row_kind::filter) {
    theirs.push_back(
        make_cudnn_pass<T>(L, graph::conv_pass::backward_data, b.dx_cudnn.data(), d.w.data(), b.dy.data()));
  }
  if (kind != row_kind::data) {
    theirs.push_back(
        make_cudnn_pass<T>(L, graph::conv_pass::backward_filter, d.x.data(), b.dw_cudnn.data(), b.dy.data()));
  }
  for (const cudnn_pass& c : theirs) {
    if (!c.error.empty()) {
      state.SkipWithError(c.error.c_str());
      return;
    }
  }
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  auto cudnn_all = [&](cudaStream_t s) {
    for (const cudnn_pass& c : theirs) {
      const cudnnStatus_t each = c.run(s);
      if (each != CUDNN_STATUS_SUCCESS) status = each;
    }
  };
  auto ours_all = [&](cudaStream_t s) {
    if (kind == row_kind::step) {
      fo.stream = s;
      kf::conv2d_forward<T>(p, d.x.data(), d.w.data(), nullptr, d.y.data(), fo);
    }
    if (kind != row_kind::filter) ours_data(s);
    if (kind != row_kind::data) ours_filter(s);
  };

  // The check: NaN-poisoned outputs, one run of each, the passes' outputs compared.
  check(cudaMemset(b.dx.data(), 0xFF, d.x_size() * sizeof(T)), "cudaMemset");
  check(cudaMemset(b.dw.data(), 0xFF, d.w_size() * sizeof(T)), "cudaMemset");
  try {
    ours_all(nullptr);
  } catch (const kf::error& e) {
    state.SkipWithError(e.what());
    return;
  }
  cudnn_all(nullptr);
  check(cudaDeviceSynchronize(), "conv2d_backward rows");
  if (status != CUDNN_STATUS_SUCCESS) {
    state.SkipWithError(("cudnnBackendExecute: " + graph::status_text(status)).c_str());
    return;
  }
  double diff = 0;
  std::size_t differing = 0;  // reported: a difference of exactly 0 is itself worth seeing
  if (kind != row_kind::filter) {
    diff = max_relative_difference(b.dx.data(), b.dx_cudnn.data(), d.x_size(), &differing);
  }
  if (kind != row_kind::data) {
    diff = std::max(diff, max_relative_difference(b.dw.data(), b.dw_cudnn.data(), d.w_size(), &differing));
  }
  if (!(diff <= backward_check_tolerance<T>())) {  // false for NaN
    state.SkipWithError(
        ("differs from cuDNN by " + std::to_string(diff) + " (relative to the largest output)").c_str());
    return;
  }

  time_gpu_paired(state, ours_all, cudnn_all);
  if (!cudnn_runs_succeeded(state, status, "conv2d_backward rows")) return;
  const double flops = d.flops() * (kind == row_kind::step ? 3.0 : 1.0);
  set_flops(state, flops, conv_peak_tflops<T>(true));  // float under TF32
  const double ours_s = state.counters["gpu_s"], cudnn_s = state.counters["baseline_s"];
  state.counters["frac_cudnn"] = ours_s > 0 ? cudnn_s / ours_s : 0;
  state.counters["cudnn_TFLOP/s"] = cudnn_s > 0 ? flops / cudnn_s / 1e12 : 0;
  state.counters["diff_vs_cudnn"] = diff;
  state.counters["differing_elements"] = static_cast<double>(differing);
  std::string label;
  for (const cudnn_pass& c : theirs) label += (label.empty() ? "" : " + ") + c.plan->label();
  state.SetLabel(label);
}

/// ResNet-50's 1x1 expansion (C64 56x56 K256), NHWC: a pointwise layer of several
/// output tiles, for the TF32 filter route's rows.
const layer& expansion_layer() {
  static const layer l = [] {
    layer e{"n32_c64_56x56_k256_1x1", params(32, 64, 56, 256, 1, 1, 0)};
    e.p.layout = kf::conv2d_layout::nhwc;
    return e;
  }();
  return l;
}

template <class T>
void register_backward() {
  const std::string type = std::string("conv2d_backward/") + nhwc_type_name<T>() + "/";
  for (const layer& L : nhwc_layers()) {
    for (const auto& [name, kind] : {std::pair{"data/", row_kind::data}, std::pair{"filter/", row_kind::filter},
                                     std::pair{"step/", row_kind::step}}) {
      const row_kind k = kind;
      configure(benchmark::RegisterBenchmark((type + name + L.name).c_str(),
                                             [&L, k](benchmark::State& s) { bm_backward<T>(s, L, k); }));
    }
    if constexpr (std::is_same_v<T, float>) {
      configure(benchmark::RegisterBenchmark((type + "filter_wgmma/" + L.name).c_str(), [&L](benchmark::State& s) {
        bm_backward<T>(s, L, row_kind::filter_wgmma);
      }));
      if (L.p.filter_height == 1 && L.p.filter_width == 1 && L.p.stride_h == 1 && L.p.pad_h == 0) {
        configure(benchmark::RegisterBenchmark((type + "filter_gemm/" + L.name).c_str(), [&L](benchmark::State& s) {
          bm_backward<T>(s, L, row_kind::filter_gemm);
        }));
      }
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    for (const auto& [name, kind] :
         {std::pair{"filter/", row_kind::filter}, std::pair{"filter_gemm/", row_kind::filter_gemm}}) {
      const row_kind k = kind;
      configure(benchmark::RegisterBenchmark((type + name + expansion_layer().name).c_str(),
                                             [k](benchmark::State& s) { bm_backward<T>(s, expansion_layer(), k); }));
    }
  }
}

}  // namespace

void register_conv2d_backward() {
  register_backward<__half>();
  register_backward<__nv_bfloat16>();
  register_backward<float>();
}

}  // namespace kf::bench::conv
