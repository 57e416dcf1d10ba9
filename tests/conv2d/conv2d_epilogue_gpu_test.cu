// SPDX-License-Identifier: Apache-2.0
// conv2d_forward with an epilogue, against the double reference, outputs
// poisoned first (NaN never passes). The epilogue is tested on the store paths
// its output goes through, not on every geometry (conv2d_gpu_test.cpp covers
// those): epilogue_layers, eight of conv2d_cases.hpp's cases (two without
// bias), take every store path the whole case list takes, for every variant
// (`best` included) and both kinds of epilogue -- the implicit-GEMM kernels'
// own stores (float4 where P*Q % 4 == 0 and y is 16-byte aligned, else scalar)
// after each block tile, split-K's reduction (common/split_k_reduce.cuh; float4 or
// scalar) after each tile it is planned with, Winograd's output transform
// (steps 6 and 8), the wgmma kernel's stores, naive's and smem_tiled's. Their
// classes: direct stores, split-K, misaligned y, Winograd's layers (3x3,
// stride 1), wgmma's (stride 1), strided ones.
//  - Conv2dEpilogueStorePaths: that claim, checked against the launcher's plan
//    (plan.hpp) for the H200's 132 SMs (no GPU needed) and for this device;
//  - Conv2dFusedRelu: conv2d_options.relu on every variant x every layer, the
//    threshold (-0.5, 0, 0.5) cycling with the layer's index; precompiled in the
//    library;
//  - Conv2dEpilogueFunctor: <kernelforge/conv.cuh> instantiated here with clamp,
//    a residual add (a functor with state that reads a tensor shaped like y by
//    row and column), an extended lambda that depends on row and column (a
//    swapped or wrong index fails), and compose<bias_add, relu_threshold> with
//    a second bias, on every variant that takes a functor x every layer; and
//    the library's own bias_relu_threshold<float> as a functor with that second
//    bias, which implicit_gemm_wgmma takes too (its store stages the functor's
//    bias in shared memory beside the call's, a second slice added after it,
//    and applies the threshold per value: wgmma_store.cuh);
//  - Conv2dEpilogueUnsupported.UnsupportedCombinations: each (variant, kind of
//    epilogue, class of layer) that must raise errc::unsupported, once (the two
//    suites above leave them out): Winograd by name on a layer it does not
//    compute, implicit_gemm_wgmma on a strided layer or with this file's
//    functors (the library's sm_90a object holds its own epilogues only); the
//    message names the variant and y stays unwritten;
//  - Conv2dEpilogueErrors (conv2d_epilogue_errors_test.cu): what the functor overload rejects, with the same
//    validation and messages as the plain overload (no GPU needed).
//
// Tolerance, relative to the error scale of each output (sum |x| |w| + |bias|,
// times what the epilogue multiplies it by, plus |what it adds|): exact fp32
// 4 * sqrt(C*R*S) * 2^-24, TF32 4 * 2^-10, as in conv2d_gpu_test.cpp, plus 4 ulp
// of the result for the epilogue's own rounding. The threshold ReLU jumps at the
// threshold: an output whose reference lies within the tolerance of it may be
// either 0 or the value; every other output below it must be exactly 0.
// implicit_gemm_wgmma (sm_90a) takes the fused ReLU at the TF32 tolerance where it
// runs. Winograd (winograd and winograd_fused by name, and `best` where plan.hpp
// picks either) is held to its own bound, 4 sqrt(C + 12) 2^-24 of its error scale
// (winograd_bound.hpp, justified at the top of conv2d_gpu_test.cpp). Where this
// device cannot run a variant (no TF32, too little shared memory for
// winograd_fused, no sm_90a code for wgmma), it must raise errc::unsupported.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "conv2d_cases.hpp"
#include "kernelforge/conv.cuh"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"
#include "winograd_bound.hpp"

// Functors outside the anonymous namespace: a kernel instantiated for a type
// with internal linkage cannot carry the library kernels' hidden visibility.
namespace conv2d_epilogue_test {
/// y = conv + bias + residual, residual shaped like y (N x K x P x Q).
struct residual_add {
  const float* residual;
  std::int64_t k, pq;
  __host__ __device__ float operator()(float v, std::int64_t row, std::int64_t col) const {
    const std::int64_t n = row / pq, pixel = row % pq;
    return v + residual[(n * k + col) * pq + pixel];
  }
};
}  // namespace conv2d_epilogue_test

// The clamp instantiation, for conv2d_epilogue_errors_test.cu too (it declares it extern: compiled once).
template void kf::detail::conv2d_forward_epilogue<float, kf::epilogue::clamp>(const kf::conv2d_params&, const float*,
                                                                              const float*, const float*, float*,
                                                                              kf::epilogue::clamp,
                                                                              const kf::conv2d_options&);

namespace {

using conv2d_epilogue_test::residual_add;

using namespace kf::test::conv2d;  // conv2d_cases.hpp

/// The problem's host and device tensors and its reference before the epilogue,
/// built once per case.
struct problem {
  std::size_t P = 0, Q = 0, crs = 0, y_n = 0;
  std::vector<float> residual, bias2;
  std::vector<double> expected, scale;  // conv + bias, and its error scale
  std::vector<double> winograd_scale;   // Winograd's error scale, on the layers it computes
  kf::device_buffer<float> x, w, bias, d_residual, d_bias2;
  std::size_t in_offset = 0;  // x, w and bias start this far into their buffers (conv_case::in_offset)
  [[nodiscard]] const float* x_at() const { return x.data() + in_offset; }
  [[nodiscard]] const float* w_at() const { return w.data() + in_offset; }
  /// The bias the call takes: nullptr for cases without.
  [[nodiscard]] const float* bias_for(const conv_case& cc) const { return cc.bias ? bias.data() + in_offset : nullptr; }
};

const problem& problem_for(const conv_case& cc) {
  static std::map<std::string, problem> cache;
  problem& pr = cache[cc.name];
  if (pr.y_n != 0) return pr;
  const kf::conv2d_params& p = cc.p;
  pr.P = kf::conv2d_output_height(p);
  pr.Q = kf::conv2d_output_width(p);
  pr.crs = p.in_channels * p.filter_height * p.filter_width;
  pr.y_n = p.batch * p.out_channels * pr.P * pr.Q;
  const auto x = kf::test::random_vector<float>(p.batch * p.in_channels * p.in_height * p.in_width, 21);
  const auto w = kf::test::random_vector<float>(p.out_channels * pr.crs, 22);
  const auto bias = kf::test::random_vector<float>(p.out_channels, 23);
  pr.residual = kf::test::random_vector<float>(pr.y_n, 24);
  pr.bias2 = kf::test::random_vector<float>(p.out_channels, 25);
  pr.expected.resize(pr.y_n);
  pr.scale.resize(pr.y_n);
  kf::reference::conv2d_forward_exact(p, x.data(), w.data(), cc.bias ? bias.data() : nullptr, pr.expected.data(),
                                      pr.scale.data());
  if (winograd_applies(p)) pr.winograd_scale = kf::test::winograd_scale(p, x, w, cc.bias ? bias.data() : nullptr);
  pr.in_offset = cc.in_offset;
  pr.x = to_device_at(x, cc.in_offset);
  pr.w = to_device_at(w, cc.in_offset);
  pr.bias = to_device_at(bias, cc.in_offset);
  pr.d_residual = kf::to_device(pr.residual);
  pr.d_bias2 = kf::to_device(pr.bias2);
  return pr;
}

// ---- epilogues and their double-precision expectations ---------------------------
enum class epi { relu, clamp, residual, lambda, compose_bias_relu, bias_relu_threshold };

/// The library's own epilogue types (the options' ReLU, or epilogue::bias_relu_threshold<float>
/// passed as a functor): the precompiled kernels, implicit_gemm_wgmma's included, take them.
bool library_epilogue(epi e) { return e == epi::relu || e == epi::bias_relu_threshold; }

constexpr float clamp_lo = -1.5f, clamp_hi = 2.5f;
constexpr float lambda_factor = 0.5f;
constexpr float compose_threshold = 0.25f;

/// The expected value after the epilogue and its error scale; for the ReLUs
/// also the value before the ReLU and the threshold (NaN: no jump).
struct expectation {
  double value, scale, pre, threshold;
};

/// The tolerance: `rel` times the error scale (Winograd's own where it runs).
struct bound {
  double rel;
  bool winograd;
};

expectation expect(epi e, float threshold, const problem& pr, const conv_case& cc, bool winograd, std::size_t i) {
  const double v = pr.expected[i], s = winograd ? pr.winograd_scale[i] : pr.scale[i];
  const std::size_t pq = pr.P * pr.Q, K = cc.p.out_channels;
  const std::size_t n = i / (K * pq), k = i / pq % K, pixel = i % pq;
  const std::int64_t row = static_cast<std::int64_t>(n * pq + pixel), col = static_cast<std::int64_t>(k);
  switch (e) {
    case epi::relu: return {v <= threshold ? 0.0 : v, s, v, threshold};
    case epi::clamp: return {std::fmin(std::fmax(v, clamp_lo), clamp_hi), s, v, NAN};
    case epi::residual: return {v + pr.residual[i], s + std::fabs(pr.residual[i]), v, NAN};
    case epi::lambda: {
      const double extra = static_cast<double>(col % 5) - 0.125 * static_cast<double>(row % 7);
      return {v * lambda_factor + extra, s * lambda_factor + std::fabs(extra), v, NAN};
    }
    case epi::compose_bias_relu:
    case epi::bias_relu_threshold: {
      const double b = v + pr.bias2[k];
      return {b <= compose_threshold ? 0.0 : b, s + std::fabs(pr.bias2[k]), b, compose_threshold};
    }
  }
  return {NAN, 0, NAN, NAN};
}

/// Every output within tolerance of the expectation (see the top of the file).
::testing::AssertionResult check(const std::vector<float>& got, std::size_t offset, epi e, float threshold,
                                 const problem& pr, const conv_case& cc, bound b) {
  std::size_t bad = 0, near_threshold = 0;
  std::ostringstream report;
  for (std::size_t i = 0; i < pr.y_n; ++i) {
    const expectation x = expect(e, threshold, pr, cc, b.winograd, i);
    const double g = got[offset + i];
    const double tol = b.rel * x.scale + 4 * std::ldexp(std::fabs(x.pre), -24);
    bool ok;
    if (std::isnan(g)) {
      ok = false;
    } else if (std::isnan(x.threshold)) {
      ok = std::fabs(g - x.value) <= tol;
    } else if (std::fabs(x.pre - x.threshold) <= tol) {
      ok = g == 0 || std::fabs(g - x.pre) <= tol;  // either side of the jump
      ++near_threshold;
    } else if (x.pre <= x.threshold) {
      ok = g == 0;  // the ReLU stores an exact 0
    } else {
      ok = std::fabs(g - x.pre) <= tol;
    }
    if (!ok && bad++ < 8) report << "\n  [" << i << "] got " << g << ", expected " << x.value;
  }
  // Most outputs must be decided: a band that swallows half of them tests nothing.
  if (bad == 0 && near_threshold * 2 <= pr.y_n) return ::testing::AssertionSuccess();
  if (bad == 0) {
    return ::testing::AssertionFailure() << near_threshold << " of " << pr.y_n
                                         << " outputs lie within the tolerance of the threshold: the test is too loose";
  }
  return ::testing::AssertionFailure() << bad << " of " << pr.y_n << " outputs differ (rel " << b.rel
                                       << (b.winograd ? ", Winograd scale" : "") << "):" << report.str();
}

bound bound_for(const variant_case& vc, const problem& pr, const conv_case& cc) {
  const bool tf32_used = vc.math == kf::math_mode::tf32 && device_has_tf32();
  const bool winograd = is_winograd(vc.variant) ||
                        (!tf32_used && vc.variant == kf::conv2d_variant::best && kf::test::best_runs_winograd(cc.p));
  if (winograd) return {kf::test::winograd_tolerance(cc.p), true};
  return {tf32_used ? 4 * std::ldexp(1.0, -10) : 4 * std::sqrt(static_cast<double>(pr.crs)) * std::ldexp(1.0, -24),
          false};
}

/// y all NaN still: nothing was stored.
void expect_unwritten(const kf::device_buffer<float>& y) {
  std::size_t written = 0;
  for (float v : kf::to_host(y)) written += std::isnan(v) ? 0 : 1;
  EXPECT_EQ(written, 0u) << "y was written";
}

/// Where this device cannot run the variant -- implicit_gemm_tf32 without TF32,
/// winograd_fused without 168 KB of shared memory per block, implicit_gemm_wgmma
/// without the library's sm_90a code for it (wgmma_runs) -- `call` must raise
/// errc::unsupported naming it, and the test ends. (What no device runs, a layer
/// or an epilogue the variant does not take, is left out of the suites:
/// UnsupportedCombinations checks it.)
bool variant_unavailable(const variant_case& vc, const conv_case& cc, const std::function<void()>& call) {
  if (vc.variant == kf::conv2d_variant::implicit_gemm_wgmma && !wgmma_runs(cc.p)) {
    kf::test::expect_error(kf::errc::unsupported, "implicit_gemm_wgmma", call);
    return true;
  }
  if (is_winograd(vc.variant) && !winograd_variant_runs(vc.variant, cc.p)) {
    kf::test::expect_error(kf::errc::unsupported, kf::to_string(vc.variant), call);
    return true;
  }
  if (vc.variant != kf::conv2d_variant::implicit_gemm_tf32 || device_has_tf32()) return false;
  kf::test::expect_error(kf::errc::unsupported, "TF32", call);
  return true;
}

/// Poisons y, runs `call(pr, y)` (the variant's call with epilogue `e`) and
/// checks every output against the reference (or, where this device cannot run
/// the variant, the refusal, y unwritten).
void expect_matches(const variant_case& vc, const conv_case& cc, epi e, float threshold,
                    const std::function<void(const problem&, float*)>& call) {
  const problem& pr = problem_for(cc);
  kf::device_buffer<float> d_y(cc.y_offset + pr.y_n);
  kf::test::poison(d_y.data(), d_y.size_bytes());
  const auto run = [&] { call(pr, d_y.data() + cc.y_offset); };
  if (variant_unavailable(vc, cc, run)) {
    expect_unwritten(d_y);
    return;
  }
  run();
  const auto got = kf::to_host(d_y);
  if (cc.y_offset) ASSERT_TRUE(std::isnan(got[0])) << "the element before y was written";
  EXPECT_TRUE(check(got, cc.y_offset, e, threshold, pr, cc, bound_for(vc, pr, cc)));
}

kf::conv2d_options options_for(const variant_case& vc) {
  kf::conv2d_options options;
  options.variant = vc.variant;
  options.math = vc.math;
  return options;
}

/// kf::conv2d_forward with the options' fused threshold ReLU.
void run_fused_relu(const conv_case& cc, const problem& pr, float* y, kf::conv2d_options options, float threshold) {
  options.relu = true;
  options.relu_threshold = threshold;
  kf::conv2d_forward<float>(cc.p, pr.x_at(), pr.w_at(), pr.bias_for(cc), y, options);
}

/// kf::conv2d_forward with the functor `e` stands for.
void run_functor(epi e, const conv_case& cc, const problem& pr, float* y, const kf::conv2d_options& options) {
  const float* const x = pr.x_at();
  const float* const w = pr.w_at();
  const float* const bias = pr.bias_for(cc);
  switch (e) {
    case epi::clamp: return kf::conv2d_forward(cc.p, x, w, bias, y, kf::epilogue::clamp{clamp_lo, clamp_hi}, options);
    case epi::residual:
      return kf::conv2d_forward(cc.p, x, w, bias, y,
                                residual_add{pr.d_residual.data(), static_cast<std::int64_t>(cc.p.out_channels),
                                             static_cast<std::int64_t>(pr.P * pr.Q)},
                                options);
    case epi::lambda: {
      const float factor = lambda_factor;
      return kf::conv2d_forward(
          cc.p, x, w, bias, y,
          [=] __device__(float v, std::int64_t row, std::int64_t col) {
            return v * factor + static_cast<float>(col % 5) - 0.125f * static_cast<float>(row % 7);
          },
          options);
    }
    case epi::compose_bias_relu:
      return kf::conv2d_forward(cc.p, x, w, bias, y,
                                kf::epilogue::compose<kf::epilogue::bias_add<float>, kf::epilogue::relu_threshold>{
                                    {pr.d_bias2.data()}, {compose_threshold}},
                                options);
    case epi::bias_relu_threshold:
      return kf::conv2d_forward(cc.p, x, w, bias, y,
                                kf::epilogue::bias_relu_threshold<float>{pr.d_bias2.data(), true, compose_threshold},
                                options);
    case epi::relu: break;
  }
  FAIL() << "no functor for this epilogue";
}

const char* epi_name(epi e) {
  switch (e) {
    case epi::relu: return "relu";
    case epi::clamp: return "clamp";
    case epi::residual: return "residual_add";
    case epi::lambda: return "lambda";
    case epi::compose_bias_relu: return "compose_bias_relu";
    case epi::bias_relu_threshold: return "bias_relu_threshold";
  }
  return "unknown";
}

// ---- the layers, and the combinations no device runs ---------------------------------
/// What decides whether winograd, winograd_fused and implicit_gemm_wgmma take a
/// layer: Winograd F(2x2,3x3) computes 3x3 filters at stride 1 and dilation 1,
/// the wgmma kernel stride-1 layers.
enum class layer_class { winograd, not_3x3, dilated, strided };

layer_class class_of(const kf::conv2d_params& p) {
  if (p.stride_h != 1 || p.stride_w != 1) return layer_class::strided;
  if (p.filter_height != 3 || p.filter_width != 3) return layer_class::not_3x3;
  if (p.dilation_h != 1 || p.dilation_w != 1) return layer_class::dilated;
  return layer_class::winograd;
}

const char* class_name(layer_class c) {
  switch (c) {
    case layer_class::winograd: return "3x3 stride 1 (Winograd's)";
    case layer_class::not_3x3: return "stride 1, not 3x3";
    case layer_class::dilated: return "3x3 stride 1, dilated";
    case layer_class::strided: return "strided";
  }
  return "unknown";
}

/// The layers, from conv_cases, and the store path each takes in the
/// implicit-GEMM variants on the H200 (Conv2dEpilogueStorePaths checks that
/// together they take every path the whole list takes). Two have no bias, so
/// that every kind of store (the kernels', split-K's, Winograd's, wgmma's) also
/// runs without one. Conv2dFusedRelu's threshold cycles with the index: each
/// class of layer meets every threshold.
const char* const epilogue_layer_names[] = {
    "boxes_span_images_n9_c40_5x6_k70",       // split-K after 128x128, scalar (P*Q = 30)
    "pointwise_1x1_c67",                      // 64x64, scalar stores (P*Q = 99); not 3x3
    "dilated_3x3_d2_c67",                     // split-K after 128x64, scalar (P*Q = 483); dilated; no bias
    "stride2_pad2_5x5_c19",                   // strided: split-K after 128x64, float4
    "splitk_c128_14x14_k256",                 // split-K after 128x128, float4; best exact: Winograd
    "gemm_tile_128x64_misaligned_y_no_bias",  // 128x64, scalar stores (y misaligned); no bias
    "resnet_stem_7x7_s2_p3",                  // strided: 64x64, float4 stores
    "gemm_tile_128x128",                      // 128x128, float4 stores
};

const std::vector<conv_case>& epilogue_layers() {
  static const std::vector<conv_case> layers = [] {
    std::vector<conv_case> v;
    for (const char* name : epilogue_layer_names) v.push_back(case_named(name));
    return v;
  }();
  return layers;
}

constexpr float relu_thresholds[] = {-0.5f, 0.0f, 0.5f};

/// One combination that must raise errc::unsupported whatever the device.
struct unsupported_combination {
  kf::conv2d_variant variant;
  epi epilogue;  // library_epilogue: the options' fused ReLU; else a functor (it stands for all four)
  layer_class layers;
};

const unsupported_combination unsupported_combinations[] = {
    // Winograd F(2x2,3x3) by name (validation): 3x3 filters at stride 1 and dilation 1 only.
    {kf::conv2d_variant::winograd, epi::relu, layer_class::not_3x3},
    {kf::conv2d_variant::winograd, epi::relu, layer_class::dilated},
    {kf::conv2d_variant::winograd, epi::relu, layer_class::strided},
    {kf::conv2d_variant::winograd, epi::clamp, layer_class::not_3x3},
    {kf::conv2d_variant::winograd, epi::residual, layer_class::dilated},
    {kf::conv2d_variant::winograd, epi::lambda, layer_class::strided},
    {kf::conv2d_variant::winograd_fused, epi::relu, layer_class::not_3x3},
    {kf::conv2d_variant::winograd_fused, epi::relu, layer_class::dilated},
    {kf::conv2d_variant::winograd_fused, epi::relu, layer_class::strided},
    {kf::conv2d_variant::winograd_fused, epi::compose_bias_relu, layer_class::not_3x3},
    {kf::conv2d_variant::winograd_fused, epi::clamp, layer_class::dilated},
    {kf::conv2d_variant::winograd_fused, epi::residual, layer_class::strided},
    // implicit_gemm_wgmma: stride-1 layers only (validation), and the library's
    // own epilogues only (a functor of this translation unit, on any layer).
    {kf::conv2d_variant::implicit_gemm_wgmma, epi::relu, layer_class::strided},
    {kf::conv2d_variant::implicit_gemm_wgmma, epi::clamp, layer_class::winograd},
    {kf::conv2d_variant::implicit_gemm_wgmma, epi::residual, layer_class::not_3x3},
    {kf::conv2d_variant::implicit_gemm_wgmma, epi::lambda, layer_class::dilated},
    {kf::conv2d_variant::implicit_gemm_wgmma, epi::compose_bias_relu, layer_class::strided},
};

/// Whether `variant` with the fused ReLU or a functor (`functor`) must refuse
/// `cc` whatever the device (a row of unsupported_combinations).
bool refused(kf::conv2d_variant variant, bool functor, const conv_case& cc) {
  for (const unsupported_combination& u : unsupported_combinations) {
    if (u.variant == variant && !library_epilogue(u.epilogue) == functor && u.layers == class_of(cc.p)) return true;
  }
  return false;
}

// ---- the options' fused threshold ReLU, every variant --------------------------------
using relu_param = std::tuple<variant_case, conv_case, float>;
class Conv2dFusedRelu : public ::testing::TestWithParam<relu_param> {};

TEST_P(Conv2dFusedRelu, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  const variant_case& vc = std::get<0>(GetParam());
  const conv_case& cc = std::get<1>(GetParam());
  const float threshold = std::get<2>(GetParam());
  const kf::conv2d_options options = options_for(vc);
  expect_matches(vc, cc, epi::relu, threshold,
                 [&](const problem& pr, float* y) { run_fused_relu(cc, pr, y, options, threshold); });
}

/// Every variant x every layer it takes, the threshold cycling with the layer.
std::vector<relu_param> relu_params() {
  std::vector<relu_param> params;
  for (const variant_case& vc : all_variants) {
    for (std::size_t i = 0; i < epilogue_layers().size(); ++i) {
      const conv_case& cc = epilogue_layers()[i];
      if (!refused(vc.variant, false, cc)) params.emplace_back(vc, cc, relu_thresholds[i % std::size(relu_thresholds)]);
    }
  }
  return params;
}

std::string threshold_name(float t) { return t < 0 ? "m0_5" : t > 0 ? "p0_5" : "0"; }

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dFusedRelu, ::testing::ValuesIn(relu_params()),
                         [](const ::testing::TestParamInfo<relu_param>& info) {
                           return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param).name +
                                  "_t" + threshold_name(std::get<2>(info.param));
                         });

// ---- functors instantiated in this translation unit ------------------------------------
using functor_param = std::tuple<variant_case, conv_case, epi>;
class Conv2dEpilogueFunctor : public ::testing::TestWithParam<functor_param> {};

TEST_P(Conv2dEpilogueFunctor, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  const variant_case& vc = std::get<0>(GetParam());
  const conv_case& cc = std::get<1>(GetParam());
  const epi e = std::get<2>(GetParam());
  const kf::conv2d_options options = options_for(vc);
  expect_matches(vc, cc, e, compose_threshold,
                 [&](const problem& pr, float* y) { run_functor(e, cc, pr, y, options); });
}

/// The variants that take a functor (naive and smem_tiled refuse it:
/// Conv2dEpilogueErrors.VariantsWithoutEpilogueAreUnsupported).
std::vector<variant_case> functor_variants() {
  return variants_except({kf::conv2d_variant::naive, kf::conv2d_variant::smem_tiled});
}

/// Every variant that takes a functor x every layer it takes x every functor.
std::vector<functor_param> functor_params() {
  std::vector<functor_param> params;
  for (const variant_case& vc : functor_variants()) {
    for (const conv_case& cc : epilogue_layers()) {
      for (epi e : {epi::clamp, epi::residual, epi::lambda, epi::compose_bias_relu, epi::bias_relu_threshold}) {
        if (!refused(vc.variant, !library_epilogue(e), cc)) params.emplace_back(vc, cc, e);
      }
    }
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dEpilogueFunctor, ::testing::ValuesIn(functor_params()),
                         [](const ::testing::TestParamInfo<functor_param>& info) {
                           return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param).name + "_" +
                                  epi_name(std::get<2>(info.param));
                         });

// ---- the combinations no device runs ---------------------------------------------------
// Each once, on the first layer of its class: errc::unsupported with a message
// that names the variant ("conv2d_variant::<name> "), and y unwritten.
TEST(Conv2dEpilogueUnsupported, UnsupportedCombinations) {
  KF_SKIP_WITHOUT_GPU();
  std::set<std::tuple<kf::conv2d_variant, bool, layer_class>> seen;
  for (const unsupported_combination& u : unsupported_combinations) {
    const bool functor = !library_epilogue(u.epilogue);
    const std::string row = std::string(kf::to_string(u.variant)) + " with " + epi_name(u.epilogue) + " on a " +
                            class_name(u.layers) + " layer";
    SCOPED_TRACE(row);
    EXPECT_TRUE(seen.emplace(u.variant, functor, u.layers).second) << "listed twice";
    const conv_case* layer = nullptr;
    for (const conv_case& cc : epilogue_layers()) {
      if (layer == nullptr && class_of(cc.p) == u.layers) layer = &cc;
    }
    ASSERT_NE(layer, nullptr) << "no layer of this class in epilogue_layers";
    const conv_case& cc = *layer;
    const problem& pr = problem_for(cc);
    kf::device_buffer<float> d_y(cc.y_offset + pr.y_n);
    kf::test::poison(d_y.data(), d_y.size_bytes());
    const variant_case& vc = *std::find_if(std::begin(all_variants), std::end(all_variants),
                                           [&](const variant_case& v) { return v.variant == u.variant; });
    const kf::conv2d_options options = options_for(vc);
    float* const y = d_y.data() + cc.y_offset;
    const std::string names_variant = "conv2d_variant::" + std::string(kf::to_string(u.variant)) + " ";
    kf::test::expect_error(kf::errc::unsupported, names_variant, [&] {
      if (functor) {
        run_functor(u.epilogue, cc, pr, y, options);
      } else {
        run_fused_relu(cc, pr, y, options, 0.0f);
      }
    });
    expect_unwritten(d_y);
  }
}

// The functor overload computes NCHW only: an NHWC call is refused before anything runs
// (it would otherwise read NHWC memory as NCHW).
TEST(Conv2dEpilogueUnsupported, NhwcLayout) {
  KF_SKIP_WITHOUT_GPU();
  kf::conv2d_params p{1, 8, 9, 9, 4, 3, 3};
  p.pad_h = p.pad_w = 1;
  p.layout = kf::conv2d_layout::nhwc;
  kf::device_buffer<float> x(1 * 9 * 9 * 8), w(4 * 3 * 3 * 8), y(1 * 9 * 9 * 4);
  kf::test::poison(y.data(), y.size_bytes());
  kf::test::expect_error(kf::errc::unsupported, "params.layout = nhwc with an epilogue functor", [&] {
    kf::conv2d_forward(p, x.data(), w.data(), nullptr, y.data(), kf::epilogue::clamp{-1.0f, 1.0f});
  });
  expect_unwritten(y);
}

// ---- the store paths --------------------------------------------------------------------
/// A device as the launcher sees it when it picks a kernel and a plan.
struct device_facts {
  std::string name;
  int sm_count = 0;
  bool tf32 = false;            ///< TF32 tensor cores (compute capability 8.0+)
  bool winograd_fused = false;  ///< grants winograd_fused's 168 KB block (sm_90, sm_100)
  bool wgmma = false;           ///< runs the library's sm_90a wgmma kernel
};

device_facts h200() { return {"the H200 (132 SMs)", 132, true, true, true}; }

device_facts this_device() {
  const kf::device_info info = kf::get_device_info();
  return {"this device (" + info.name + ", " + std::to_string(info.sm_count) + " SMs)", info.sm_count,
          device_has_tf32(), winograd_fused_fits(), kf::detail::conv2d_wgmma_available(info.device)};
}

/// Where the implicit-GEMM kernel `kernel` leaves `cc`'s output: its own stores
/// (float4 where it has them and P*Q % 4 == 0 and y is 16-byte aligned, else
/// scalar) or, split-K, the shared split-k reduction's (float4 or scalar, the same rule),
/// after the block tile of the plan.
std::string gemm_store_path(const char* kernel, bool float4_stores, const conv_case& cc, int sm_count) {
  const kf::conv2d_params& p = cc.p;
  const kf::detail::conv2d_gemm_plan plan = gemm_plan(p, sm_count);
  const bool float4 = kf::conv2d_output_height(p) * kf::conv2d_output_width(p) % 4 == 0 && cc.y_offset % 4 == 0;
  const std::string tile = plan.tile == kf::detail::conv2d_gemm_tile::m128_n128  ? "128x128"
                           : plan.tile == kf::detail::conv2d_gemm_tile::m128_n64 ? "128x64"
                                                                                 : "64x64";
  if (plan.split > 1) {
    return std::string("split-K reduction (") + (float4 ? "float4" : "scalar") + ") after " + kernel + " " + tile;
  }
  return std::string(kernel) + " " + tile + ((float4 && float4_stores) ? ", float4 stores" : ", scalar stores");
}

/// The kernel that stores `vc`'s output for `cc` with the fused ReLU or a functor
/// on device `d`, and how (gemm_launch.cuh's dispatch); empty where `d` cannot
/// run the variant.
std::string store_path(const variant_case& vc, bool functor, const conv_case& cc, const device_facts& d) {
  using v = kf::conv2d_variant;
  const kf::conv2d_params& p = cc.p;
  switch (vc.variant) {
    case v::naive: return "naive";
    case v::smem_tiled: return "smem_tiled";
    case v::implicit_gemm: return gemm_store_path("implicit_gemm", true, cc, d.sm_count);
    case v::implicit_gemm_pipelined: return gemm_store_path("implicit_gemm_pipelined", true, cc, d.sm_count);
    case v::implicit_gemm_tf32: return d.tf32 ? gemm_store_path("implicit_gemm_tf32", false, cc, d.sm_count) : "";
    case v::winograd: return "winograd's output transform";
    case v::winograd_fused: return d.winograd_fused ? "winograd_fused" : "";
    case v::implicit_gemm_wgmma: return d.wgmma ? "implicit_gemm_wgmma" : "";
    case v::best: break;
  }
  if (vc.math == kf::math_mode::tf32) {
    // The sm_90a object holds the library's own epilogues: a functor takes mma.sync.
    if (!functor && d.wgmma && kf::detail::conv2d_wgmma_preferred(p.in_channels, p.stride_h, p.stride_w)) {
      return "implicit_gemm_wgmma";
    }
    if (d.tf32) return gemm_store_path("implicit_gemm_tf32", false, cc, d.sm_count);
  }
  switch (kf::detail::choose_conv2d_exact_kernel(p.in_channels, p.out_channels, p.filter_height, p.filter_width,
                                                 p.stride_h, p.stride_w, p.dilation_h, p.dilation_w)) {
    case kf::detail::conv2d_exact_kernel::winograd_fused: {
      const auto l = kf::detail::make_conv2d_winograd_fused_layout(
          p.batch, p.in_channels, p.out_channels, kf::conv2d_output_height(p), kf::conv2d_output_width(p));
      // One 168 KB block per SM at a time.
      const auto sms = static_cast<std::size_t>(d.sm_count);
      if (d.winograd_fused && l.launchable() &&
          kf::detail::conv2d_winograd_fused_fills_waves(l.grid_x * l.grid_y, sms)) {
        return "winograd_fused";
      }
      return "winograd's output transform";
    }
    case kf::detail::conv2d_exact_kernel::winograd: return "winograd's output transform";
    case kf::detail::conv2d_exact_kernel::implicit_gemm_pipelined:
      return gemm_store_path("implicit_gemm_pipelined", true, cc, d.sm_count);
    case kf::detail::conv2d_exact_kernel::implicit_gemm: break;
  }
  return gemm_store_path("implicit_gemm", true, cc, d.sm_count);
}

// The layers take every store path the whole case list takes, for every variant
// and both kinds of epilogue (leaving out what unsupported_combinations refuses):
// on the H200 (no GPU needed: the launcher's plan for 132 SMs) and on this device.
TEST(Conv2dEpilogueStorePaths, LayersTakeEveryPathOfTheCaseList) {
  std::vector<device_facts> devices{h200()};
  if (kf::test::gpu_unavailable_reason().empty()) devices.push_back(this_device());
  for (const device_facts& d : devices) {
    for (const bool functor : {false, true}) {
      for (const variant_case& vc : functor ? functor_variants() : variants_except({})) {
        const auto paths = [&](const auto& cases) {
          std::set<std::string> found;
          for (const conv_case& cc : cases) {
            if (!refused(vc.variant, functor, cc)) found.insert(store_path(vc, functor, cc, d));
          }
          return found;
        };
        const std::set<std::string> tested = paths(epilogue_layers());
        for (const std::string& path : paths(conv_cases)) {
          EXPECT_EQ(tested.count(path), 1u) << vc.name << (functor ? " with a functor" : " with the fused ReLU")
                                            << " on " << d.name << ": no layer takes " << path;
        }
      }
    }
  }
}

}  // namespace
