// SPDX-License-Identifier: Apache-2.0
// conv2d_forward with an epilogue, against the double reference, outputs
// poisoned first (NaN never passes):
//  - Conv2dFusedRelu: conv2d_options.relu (thresholds -0.5, 0, 0.5) on every
//    variant, precompiled in the library;
//  - Conv2dEpilogueFunctor: <kernelforge/conv.cuh> instantiated here with clamp,
//    a residual add (a functor with state that reads a tensor shaped like y by
//    row and column), an extended lambda that depends on row and column (a
//    swapped or wrong index fails), and compose<bias_add, relu_threshold> with
//    a second bias;
//  - Conv2dEpilogueErrors: what the functor overload rejects, with the same
//    validation and messages as the plain overload (no GPU needed).
// Cases: conv2d_cases.hpp, shared with conv2d_gpu_test.cpp (strides, dilation,
// padding, odd channel counts, misaligned y, misaligned x, weight and bias, N = 1
// and small layers that take the split-K path, checked on this device), with and
// without bias.
//
// Tolerance, relative to the error scale of each output (sum |x| |w| + |bias|,
// times what the epilogue multiplies it by, plus |what it adds|): exact fp32
// 4 * sqrt(C*R*S) * 2^-24, TF32 4 * 2^-10, as in conv2d_gpu_test.cpp, plus 4 ulp
// of the result for the epilogue's own rounding. The threshold ReLU jumps at the
// threshold: an output whose reference lies within the tolerance of it may be
// either 0 or the value; every other output below it must be exactly 0.
// implicit_gemm_wgmma (sm_90a) takes the fused ReLU at the TF32 tolerance where it
// runs; with this file's functors (or a strided layer, or another device) it
// must raise errc::unsupported.
// Winograd (winograd and winograd_fused by name, and `best` where tuning.hpp picks
// either) is held to its own
// bound, 4 sqrt(C + 12) 2^-24 of its error scale (winograd_bound.hpp, justified
// at the top of conv2d_gpu_test.cpp); asked for by name on a layer it does not
// compute, it must raise errc::unsupported.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "conv2d_cases.hpp"
#include "kernelforge/conv.cuh"
#include "kernelforge/kernels/conv2d/tuning.hpp"
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
enum class epi { relu, clamp, residual, lambda, compose_bias_relu };

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
    case epi::compose_bias_relu: {
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

/// implicit_gemm_tf32 on a device without TF32, winograd or winograd_fused on a
/// layer it does not compute (winograd_fused also on a device without 168 KB of
/// shared memory per block), implicit_gemm_wgmma where it does not run (wgmma_runs) or with
/// a functor of this translation unit (`own_functor`; the library's sm_90a
/// object holds its own epilogues only): errc::unsupported, and the test ends.
bool variant_unavailable(const variant_case& vc, const conv_case& cc, const std::function<void()>& call,
                         bool own_functor = false) {
  if (vc.variant == kf::conv2d_variant::implicit_gemm_wgmma && (own_functor || !wgmma_runs(cc.p))) {
    kf::test::expect_error(kf::errc::unsupported, "implicit_gemm_wgmma", call);
    return true;
  }
  if (is_winograd(vc.variant) && !winograd_variant_runs(vc.variant, cc.p)) {
    // A layer Winograd does not compute; winograd_fused on a device without its shared memory.
    kf::test::expect_error(kf::errc::unsupported, kf::to_string(vc.variant), call);
    return true;
  }
  if (vc.variant != kf::conv2d_variant::implicit_gemm_tf32 || device_has_tf32()) return false;
  kf::test::expect_error(kf::errc::unsupported, "TF32", call);
  return true;
}

// ---- the options' fused threshold ReLU, every variant --------------------------------
using relu_param = std::tuple<variant_case, conv_case, float>;
class Conv2dFusedRelu : public ::testing::TestWithParam<relu_param> {};

TEST_P(Conv2dFusedRelu, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  const variant_case& vc = std::get<0>(GetParam());
  const conv_case& cc = std::get<1>(GetParam());
  const float threshold = std::get<2>(GetParam());
  const problem& pr = problem_for(cc);
  kf::device_buffer<float> d_y(cc.y_offset + pr.y_n);
  kf::test::poison(d_y.data(), d_y.size_bytes());
  kf::conv2d_options options;
  options.variant = vc.variant;
  options.math = vc.math;
  options.relu = true;
  options.relu_threshold = threshold;
  const auto run = [&] {
    kf::conv2d_forward<float>(cc.p, pr.x_at(), pr.w_at(), pr.bias_for(cc), d_y.data() + cc.y_offset, options);
  };
  if (variant_unavailable(vc, cc, run)) return;
  run();
  const auto got = kf::to_host(d_y);
  if (cc.y_offset) ASSERT_TRUE(std::isnan(got[0])) << "the element before y was written";
  EXPECT_TRUE(check(got, cc.y_offset, epi::relu, threshold, pr, cc, bound_for(vc, pr, cc)));
}

std::string threshold_name(float t) { return t < 0 ? "m0_5" : t > 0 ? "p0_5" : "0"; }

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dFusedRelu,
                         ::testing::Combine(::testing::ValuesIn(all_variants), ::testing::ValuesIn(conv_cases),
                                            ::testing::Values(-0.5f, 0.0f, 0.5f)),
                         [](const ::testing::TestParamInfo<relu_param>& info) {
                           return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param).name +
                                  "_t" + threshold_name(std::get<2>(info.param));
                         });

// ---- functors instantiated in this translation unit ------------------------------------
using functor_param = std::tuple<variant_case, conv_case, epi>;
class Conv2dEpilogueFunctor : public ::testing::TestWithParam<functor_param> {};

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
    case epi::relu: break;
  }
  FAIL() << "no functor for this epilogue";
}

TEST_P(Conv2dEpilogueFunctor, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  const variant_case& vc = std::get<0>(GetParam());
  const conv_case& cc = std::get<1>(GetParam());
  const epi e = std::get<2>(GetParam());
  const problem& pr = problem_for(cc);
  kf::device_buffer<float> d_y(cc.y_offset + pr.y_n);
  kf::test::poison(d_y.data(), d_y.size_bytes());
  kf::conv2d_options options;
  options.variant = vc.variant;
  options.math = vc.math;
  const auto run = [&] { run_functor(e, cc, pr, d_y.data() + cc.y_offset, options); };
  if (variant_unavailable(vc, cc, run, true)) {
    for (float v : kf::to_host(d_y)) ASSERT_TRUE(std::isnan(v)) << "y was written";
    return;
  }
  run();
  const auto got = kf::to_host(d_y);
  if (cc.y_offset) ASSERT_TRUE(std::isnan(got[0])) << "the element before y was written";
  EXPECT_TRUE(check(got, cc.y_offset, e, compose_threshold, pr, cc, bound_for(vc, pr, cc)));
}

const char* epi_name(epi e) {
  switch (e) {
    case epi::relu: return "relu";
    case epi::clamp: return "clamp";
    case epi::residual: return "residual_add";
    case epi::lambda: return "lambda";
    case epi::compose_bias_relu: return "compose_bias_relu";
  }
  return "unknown";
}

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dEpilogueFunctor,
                         ::testing::Combine(::testing::ValuesIn(variants_except({kf::conv2d_variant::naive,
                                                                                 kf::conv2d_variant::smem_tiled})),
                                            ::testing::ValuesIn(conv_cases),
                                            ::testing::Values(epi::clamp, epi::residual, epi::lambda,
                                                              epi::compose_bias_relu)),
                         [](const ::testing::TestParamInfo<functor_param>& info) {
                           return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param).name + "_" +
                                  epi_name(std::get<2>(info.param));
                         });

// The splitk_* cases must take the split-K path on this device (else the
// epilogue-after-reduction path would be untested): the launcher's plan.
TEST(Conv2dEpilogueSplitK, CasesSplitOnThisDevice) {
  KF_SKIP_WITHOUT_GPU();
  expect_splitk_cases_split();
}

// ---- errors (validation only: no GPU needed) --------------------------------------------
using kf::test::fake;

const kf::conv2d_params small = make(1, 3, 8, 8, 4, 3, 3, 1, 1, 1);

TEST(Conv2dEpilogueErrors, VariantsWithoutEpilogueAreUnsupported) {
  for (kf::conv2d_variant v : {kf::conv2d_variant::naive, kf::conv2d_variant::smem_tiled}) {
    kf::conv2d_options options;
    options.variant = v;
    kf::test::expect_error(
        kf::errc::unsupported,
        "implicit_gemm, implicit_gemm_tf32, implicit_gemm_pipelined, winograd, winograd_fused and best", [&] {
          kf::conv2d_forward(small, fake(0x1000), fake(0x2000), nullptr, fake(0x3000), kf::epilogue::clamp{0, 1},
                             options);
        });
  }
}

TEST(Conv2dEpilogueErrors, OptionsReluWithFunctorIsRejected) {
  kf::conv2d_options options;
  options.relu = true;
  kf::test::expect_error(kf::errc::invalid_argument, "options.relu", [&] {
    kf::conv2d_forward(small, fake(0x1000), fake(0x2000), nullptr, fake(0x3000), kf::epilogue::identity{}, options);
  });
}

/// The message after "<what>: ", for comparing the two overloads' texts.
std::string reason(const std::function<void()>& call) {
  try {
    call();
  } catch (const kf::error& e) {
    const std::string text = e.what();
    const std::size_t at = text.find("): ");
    return at != std::string::npos ? text.substr(at + 3) : text.substr(text.find(": ") + 2);
  }
  return "no exception";
}

TEST(Conv2dEpilogueErrors, SameValidationAsThePlainOverload) {
  kf::conv2d_options tf32_exact;
  tf32_exact.variant = kf::conv2d_variant::implicit_gemm_tf32;  // with math exact: invalid
  const kf::conv2d_params zero_c = make(1, 0, 8, 8, 4, 3, 3, 1, 1, 1);
  const kf::conv2d_params no_output = make(1, 3, 2, 2, 4, 5, 5, 1, 0, 1);
  struct bad_call {
    const char* name;
    kf::conv2d_params p;
    float *x, *w, *y;
    kf::conv2d_options options;
  } calls[] = {
      {"null x", small, nullptr, fake(0x2000), fake(0x3000), {}},
      {"null weight", small, fake(0x1000), nullptr, fake(0x3000), {}},
      {"null y", small, fake(0x1000), fake(0x2000), nullptr, {}},
      {"y overlaps x", small, fake(0x1000), fake(0x200000), fake(0x1004), {}},
      {"tf32 with exact math", small, fake(0x1000), fake(0x2000), fake(0x3000), tf32_exact},
      {"zero channels", zero_c, fake(0x1000), fake(0x2000), fake(0x3000), {}},
      {"no output pixels", no_output, fake(0x1000), fake(0x2000), fake(0x3000), {}},
  };
  for (const bad_call& c : calls) {
    const std::string plain = reason([&] { kf::conv2d_forward<float>(c.p, c.x, c.w, nullptr, c.y, c.options); });
    const std::string functor =
        reason([&] { kf::conv2d_forward<float>(c.p, c.x, c.w, nullptr, c.y, kf::epilogue::identity{}, c.options); });
    EXPECT_NE(plain, "no exception") << c.name;
    EXPECT_EQ(plain, functor) << c.name;
    kf::test::expect_error(kf::errc::invalid_argument, "", [&] {
      kf::conv2d_forward<float>(c.p, c.x, c.w, nullptr, c.y, kf::epilogue::identity{}, c.options);
    });
  }
}

TEST(Conv2dEpilogueErrors, EmptyBatchIsANoOp) {
  const kf::conv2d_params empty = make(0, 3, 8, 8, 4, 3, 3, 1, 1, 1);
  kf::conv2d_forward(empty, fake(0x1000), fake(0x2000), nullptr, fake(0x3000), kf::epilogue::clamp{0, 1});
  kf::conv2d_options relu;
  relu.relu = true;
  kf::conv2d_forward<float>(empty, fake(0x1000), fake(0x2000), nullptr, fake(0x3000), relu);
}

}  // namespace
