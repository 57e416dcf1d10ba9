// SPDX-License-Identifier: Apache-2.0
// bench_conv's filter2d rows on 8192 x 8192 single-channel images (registered
// by register_filter2d, called last from bench_conv.cu's registrar):
//
//   filter2d/fp32/<impl>/8192x8192_<r>x<s>   impl: copy (cudaMemcpyAsync of the image:
//                                  the floor), cudnn (as a 1-channel convolution), best,
//                                  naive, constant_memory, smem_tiled, register_window,
//                                  rolling_window, tma_pipeline (sm_90 only: skipped elsewhere)
//   filter2d/fp32/register_window_cfg/<name>/8192x8192_<r>x<s>   register_window's candidate
//                                  configurations (include/kernelforge/kernels/filter2d/tuning.hpp; the
//                                  first, rows8_cols4, is the library's), launched directly
//
// The copy row runs first and sets the copy rate that the others' frac_copy
// divides by; the cudnn row (the image filter as a 1-channel convolution, its
// algorithm from cudnnFindConvolutionForwardAlgorithm) is the baseline of
// frac_cudnn, and every kernelforge row's output (into a NaN-poisoned y) is
// checked against its output before it is timed. Counters: GB/s (image read
// + written), frac_peak (of the datasheet bandwidth), frac_copy, frac_cudnn.
#include <cstddef>
#include <string>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "bench_conv.hpp"
#include "conv_problem.hpp"
#include "cudnn_baseline.hpp"
#include "cudnn_timing.hpp"
#include "gpu_benchmark.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/filter2d/window_candidates.cuh"

namespace kf::bench::conv {
namespace {

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

}  // namespace

void register_filter2d() {
  for (std::size_t taps : {std::size_t{3}, std::size_t{5}}) {
    const std::string suffix = "/" + filter_name(taps);
    configure(benchmark::RegisterBenchmark(("filter2d/fp32/copy" + suffix).c_str(),
                                           [taps](benchmark::State& s) { bm_filter_copy(s, taps); }));
    configure(benchmark::RegisterBenchmark(("filter2d/fp32/cudnn" + suffix).c_str(),
                                           [taps](benchmark::State& s) { bm_filter_cudnn(s, taps); }));
    for (kf::filter2d_variant v :
         {kf::filter2d_variant::best, kf::filter2d_variant::naive, kf::filter2d_variant::constant_memory,
          kf::filter2d_variant::smem_tiled, kf::filter2d_variant::register_window, kf::filter2d_variant::rolling_window,
          kf::filter2d_variant::tma_pipeline}) {
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

}  // namespace kf::bench::conv
