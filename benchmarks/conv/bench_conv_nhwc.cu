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
#include "bench_conv_nhwc.hpp"
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
  set_flops(state, d.flops(), conv_peak_tflops<T>(true));
  state.counters["diff_vs_cudnn"] = result.diff;
  set_frac_cudnn(state, (fused ? "bias_relu/" : "") + key);
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
  }
}

}  // namespace

void register_conv2d_nhwc() {
  register_nhwc<__half>();
  register_nhwc<__nv_bfloat16>();
  register_nhwc<float>();
  register_conv2d_nhwc_pairs();  // bench_conv_nhwc_pairs.cu
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
