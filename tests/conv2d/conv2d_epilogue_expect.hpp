// SPDX-License-Identifier: Apache-2.0
// What conv2d_epilogue_gpu_test.cu holds each output to: the problem of a case
// (its tensors on the host and the device, its double-precision reference
// before the epilogue, built once per case), each kind of epilogue's expected
// value and error scale, the tolerance of a variant (exact fp32, TF32 or
// Winograd's own bound) and the check of a whole output against them; the
// tolerances are argued at the top of conv2d_epilogue_gpu_test.cu. Included by
// that file only (problem_for caches the problems it builds).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "conv2d_cases.hpp"
#include "conv2d_epilogue_layers.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"
#include "winograd_bound.hpp"

namespace kf::test::conv2d_epilogue {

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

inline const problem& problem_for(const conv_case& cc) {
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
inline constexpr float clamp_lo = -1.5f, clamp_hi = 2.5f;
inline constexpr float lambda_factor = 0.5f;
inline constexpr float compose_threshold = 0.25f;

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

inline expectation expect(epi e, float threshold, const problem& pr, const conv_case& cc, bool winograd,
                          std::size_t i) {
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
inline ::testing::AssertionResult check(const std::vector<float>& got, std::size_t offset, epi e, float threshold,
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

inline bound bound_for(const variant_case& vc, const problem& pr, const conv_case& cc) {
  const bool tf32_used = vc.math == kf::math_mode::tf32 && device_has_tf32();
  const bool winograd = is_winograd(vc.variant) ||
                        (!tf32_used && vc.variant == kf::conv2d_variant::best && kf::test::best_runs_winograd(cc.p));
  if (winograd) return {kf::test::winograd_tolerance(cc.p), true};
  return {tf32_used ? 4 * std::ldexp(1.0, -10) : 4 * std::sqrt(static_cast<double>(pr.crs)) * std::ldexp(1.0, -24),
          false};
}

/// y all NaN still: nothing was stored.
inline void expect_unwritten(const kf::device_buffer<float>& y) {
  std::size_t written = 0;
  for (float v : kf::to_host(y)) written += std::isnan(v) ? 0 : 1;
  EXPECT_EQ(written, 0u) << "y was written";
}

}  // namespace kf::test::conv2d_epilogue
