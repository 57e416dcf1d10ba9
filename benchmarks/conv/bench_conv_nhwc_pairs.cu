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
//                                  (the RGB stem): best (step 11, few_channels_persistent, or step
//                                  10, few_channels_mma, where their plans take the layer and the
//                                  device runs them) paired with the route they replaced, step 7
//                                  behind its column fold (conv2d_nhwc_wgmma_try_launch, fold pass
//                                  included); fold_over_few_channels = the fold route's time /
//                                  best's (> 1: best is faster). Both checked as best is; skipped
//                                  where either cannot run (step 7 needs sm_90).
//   conv2d_nhwc/<fp16|bf16>/persistent_vs_one_band/<layer>   the same layers: best (step 11,
//                                  few_channels_persistent, where its plan takes the layer) paired
//                                  with step 10 forced (conv2d_nhwc_few_channels_try_launch: one CTA
//                                  a band, patch and filter loaded before its products);
//                                  one_band_over_persistent = step 10's time / best's (> 1: step 11
//                                  is faster). Both checked as best is; skipped below sm_80 or where
//                                  step 11's plan refuses the layer.
#include <string>
#include <type_traits>

#include <benchmark/benchmark.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "bench_conv.hpp"
#include "bench_conv_nhwc.hpp"

namespace kf::bench::conv {
namespace {

/// The kernels' arguments for the layer data d (no bias).
template <class T>
kf::detail::conv2d_args<T> args_of(problem_data_t<T>& d) {
  return kf::detail::make_conv2d_args<T>(d.p, kf::conv2d_output_height(d.p), kf::conv2d_output_width(d.p), d.x.data(),
                                         d.w.data(), nullptr, d.y.data());
}

/// best (the library's route) paired, sample by sample, with `launch` (one of
/// our launchers, which may decline: false), both first checked against cuDNN
/// (check_pair, under "/best" and `name`); `counter` = launch's time / best's.
/// False, the row skipped, where a check fails or `launch` declined.
template <class T, class Launch>
bool time_best_against(benchmark::State& state, const layer& L, const char* name, const Launch& launch,
                       const char* counter) {
  const std::string key = nhwc_key<T>(L);
  problem_data_t<T>& d = nhwc_data<T>(L);
  kf::conv2d_options options;
  auto best = [&](cudaStream_t s) {
    options.stream = s;
    kf::conv2d_forward<T>(d.p, d.x.data(), d.w.data(), nullptr, d.y.data(), options);
  };
  bool launched = true;
  auto other = [&](cudaStream_t s) { launched = launched && launch(s); };
  if (!check_pair(state, d, key, {{"/best", best}, {name, other}}, launched)) return false;
  time_gpu_paired(state, best, other);
  set_flops(state, d.flops(), conv_peak_tflops<T>(true));
  state.counters[counter] = state.counters["baseline_s"] / state.counters["gpu_s"];
  return true;
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
  const kf::detail::conv2d_args<T> args = args_of(nhwc_data<T>(L));
  const auto one_tap = [&](cudaStream_t s) {
    return kf::detail::conv2d_nhwc_wgmma_try_launch(device, args, kf::epilogue::identity{}, s,
                                                    kf::detail::conv2d_nhwc_k_steps::one_tap);
  };
  if (!time_best_against<T>(state, L, "/one_tap", one_tap, "one_tap_over_planned")) return;
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
  set_flops(state, d.flops(), conv_peak_tflops<T>(true));
  state.counters["best_over_gemm"] = state.counters["gpu_s"] / state.counters["baseline_s"];
}

/// best (step 11, else step 10, on few-channel layers) against step 7 behind
/// its column fold, the route such layers took before, timed in turn; both
/// checked against cuDNN first.
template <class T>
void bm_nhwc_few_channels_vs_fold(benchmark::State& state, const layer& L) {
  KF_BENCH_REQUIRE_GPU(state);
  const int device = kf::detail::current_device("bench_conv");
  const kf::detail::conv2d_args<T> args = args_of(nhwc_data<T>(L));
  if (!kf::detail::conv2d_wgmma_available(device) || !kf::detail::conv2d_few_channels_available(device) ||
      !kf::detail::conv2d_best_takes_few_channels(kf::detail::plan_conv2d_few_channels_of(args))) {
    state.SkipWithError("needs step 10 taking the layer (sm_80+) and step 7 (compute capability 9.0, sm_90a image)");
    return;
  }
  const auto fold = [&](cudaStream_t s) {
    return kf::detail::conv2d_nhwc_wgmma_try_launch(device, args, kf::epilogue::identity{}, s);
  };
  time_best_against<T>(state, L, "/fold", fold, "fold_over_few_channels");
}

/// best (step 11 on few-channel layers) against step 10 forced, timed in turn;
/// both checked against cuDNN first.
template <class T>
void bm_nhwc_persistent_vs_one_band(benchmark::State& state, const layer& L) {
  KF_BENCH_REQUIRE_GPU(state);
  const int device = kf::detail::current_device("bench_conv");
  const kf::detail::conv2d_args<T> args = args_of(nhwc_data<T>(L));
  if (!kf::detail::conv2d_few_channels_available(device) ||
      !kf::detail::conv2d_best_takes_few_channels_persistent(
          kf::detail::plan_conv2d_few_channels_persistent_of(args, 1))) {
    state.SkipWithError("needs step 11 taking the layer and step 10 (sm_80+, the library's sm_80+ image)");
    return;
  }
  const auto one_band = [&](cudaStream_t s) {
    return kf::detail::conv2d_nhwc_few_channels_try_launch(device, args, kf::epilogue::identity{}, s);
  };
  time_best_against<T>(state, L, "/one_band", one_band, "one_band_over_persistent");
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
      configure(benchmark::RegisterBenchmark((type + "persistent_vs_one_band/" + L.name).c_str(),
                                             [&L](benchmark::State& s) { bm_nhwc_persistent_vs_one_band<T>(s, L); }));
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
