// SPDX-License-Identifier: Apache-2.0
// bench_conv's paired conv2d_nhwc rows: one of our kernels or routes against
// another, sample by sample (time_gpu_paired), both checked against cuDNN first
// (bench_conv_nhwc.hpp); registered by register_conv2d_nhwc_pairs, called from
// register_conv2d_nhwc (bench_conv_nhwc.cu):
//
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
#include <string>
#include <type_traits>

#include <benchmark/benchmark.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "bench_conv.hpp"
#include "bench_conv_nhwc.hpp"

namespace kf::bench::conv {
namespace {

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

/// The paired rows of T on the layers each applies to.
template <class T>
void register_pairs() {
  const std::string type = std::string("conv2d_nhwc/") + nhwc_type_name<T>() + "/";
  for (const layer& L : nhwc_layers()) {
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

void register_conv2d_nhwc_pairs() {
  register_pairs<__half>();
  register_pairs<__nv_bfloat16>();
}

}  // namespace kf::bench::conv
