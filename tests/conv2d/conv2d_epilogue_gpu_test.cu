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
//  - Conv2dEpilogueStorePaths (conv2d_epilogue_store_paths_test.cpp): that claim,
//    checked against the launcher's plan (plan.hpp) for the H200's 132 SMs (no GPU
//    needed) and for this device; the layers, the kinds of epilogue and the
//    combinations every device refuses: conv2d_epilogue_layers.hpp;
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
#include "conv2d_epilogue_expect.hpp"
#include "conv2d_epilogue_layers.hpp"
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

using namespace kf::test::conv2d;           // conv2d_cases.hpp
using namespace kf::test::conv2d_epilogue;  // conv2d_epilogue_layers.hpp

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

constexpr float relu_thresholds[] = {-0.5f, 0.0f, 0.5f};

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

}  // namespace
