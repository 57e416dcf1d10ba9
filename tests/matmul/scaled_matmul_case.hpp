// SPDX-License-Identifier: Apache-2.0
// One kf::scaled_matmul GPU test case, described as data and checked completely
// (the FP8 counterpart of matmul_case.hpp):
//  * A and B are random FP8 values (kf::test::random_vector, never zero:
//    magnitudes in [0.25, 8] or, with `saturating`, up to the type's largest
//    finite value), stored `pad` columns
//    wide with NaN in the pad (a kernel that reads it fails) and `offset`
//    elements into their allocations; the scales are random in [2^-4, 2^2].
//  * D sits `offset` elements into its allocation (offset 1: rows misaligned for
//    16-byte access) with a sentinel in its pad columns that must survive; its
//    m x n area is poisoned with NaN when beta == 0, random otherwise.
//  * The result is compared with the double CPU reference of the dequantized
//    operands (kernelforge/reference/scaled_matmul.hpp) relative to the error scale
//      |got - ref| <= (4 sqrt(k) + 8) 2^-23 * scale + 2 u_D |ref|
//    -- every product of two FP8 values is exact in fp32, so the error is the
//    fp32 summation (random-sign roundings grow like sqrt(k)), a few roundings
//    for the scales, alpha, beta and the bias (8 x 2^-23), and the one rounding
//    of the result to D (u_D = 2^-8 bf16, 2^-11 fp16, 2^-24 float), doubled
//    because the reference itself is rounded to D. The tensor-core steps
//    (variant wgmma, and best, which runs it on Hopper) add a term for their
//    partial sums over each 128 of k, which keep only about 14 bits before the
//    promotion into fp32: 2^-11 * scale (four additions a block at 2^-13 each).
//  * With options.amax set, the amax must equal max |D| over the stored m x n
//    values, bit for bit (NaN when any is NaN).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include "kernelforge/kernels/matmul/scaled/forced_tile.hpp"
#include "kernelforge/reference/scaled_matmul.hpp"
#include "kernelforge/scaled_matmul.hpp"
#include "test_support.hpp"

namespace kf::test {

template <class T>
constexpr double fp8_max_finite() {
  return std::is_same_v<T, __nv_fp8_e4m3> ? 448.0 : 57344.0;
}

template <class T>
constexpr const char* fp8_name() {
  return std::is_same_v<T, __nv_fp8_e4m3> ? "e4m3" : "e5m2";
}

/// n scales in [2^-4, 2^2] (never zero, positive).
inline std::vector<float> random_scales(std::size_t n, std::uint64_t seed) {
  std::vector<float> v = random_vector<float>(n, seed, 1.0 / 16, 4.0);
  for (float& x : v) x = std::fabs(x);
  return v;
}

/// How many scales of A and B `mode` reads.
inline std::size_t scale_count_a(fp8_scaling mode, std::size_t m, std::size_t k) {
  const std::size_t kb = (k + 127) / 128;
  return mode == fp8_scaling::per_tensor ? 1 : mode == fp8_scaling::rowwise ? m : m * kb;
}
inline std::size_t scale_count_b(fp8_scaling mode, std::size_t n, std::size_t k) {
  const std::size_t kb = (k + 127) / 128;
  return mode == fp8_scaling::per_tensor ? 1 : mode == fp8_scaling::rowwise ? n : ((n + 127) / 128) * kb;
}

struct scaled_case {
  std::size_t m = 0, n = 0, k = 0;
  op trans_a = op::none, trans_b = op::transpose;  ///< TN: both operands k-major, the FP8 tensor cores' layout
  fp8_scaling mode = fp8_scaling::per_tensor;
  float alpha = 1, beta = 0;
  std::size_t pad = 0, offset = 0;
  bool bias = false, relu = false, amax = false, saturating = false;
  /// Where to put a NaN into op(A) (row nan_row, column 0): that row of D must be NaN.
  std::size_t nan_row = static_cast<std::size_t>(-1);
  /// The wgmma step's tile: by shape (kf::scaled_matmul), or forced (kf::detail::scaled_matmul_forced_tile:
  /// variant wgmma, whatever the variant passed).
  kf::detail::scaled_wgmma_tile tile = kf::detail::scaled_wgmma_tile::by_shape;

  std::string describe() const {
    std::ostringstream o;
    o << m << "x" << n << "x" << k << (trans_a == op::none ? " N" : " T") << (trans_b == op::none ? "N " : "T ")
      << to_string(mode) << " alpha=" << alpha << " beta=" << beta << " pad=" << pad << " offset=" << offset
      << (bias ? " bias" : "") << (relu ? " relu" : "") << (amax ? " amax" : "") << (saturating ? " saturating" : "")
      << (tile == kf::detail::scaled_wgmma_tile::wide           ? " tile=128x192"
          : tile == kf::detail::scaled_wgmma_tile::two_partials ? " tile=128x128_two_partials"
                                                                : "");
    return o.str();
  }
};

/// Runs `c` through kf::scaled_matmul<TA, TB, TD> with `variant` and checks D, its
/// padding and the amax.
template <class TA, class TB, class TD>
::testing::AssertionResult check_scaled_matmul(const scaled_case& c, scaled_matmul_variant variant,
                                               std::uint64_t seed) {
  const std::size_t m = c.m, n = c.n, k = c.k;
  const bool ta = c.trans_a == op::transpose, tb = c.trans_b == op::transpose;
  const std::size_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
  const std::size_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldd = n + c.pad;

  const double hi_a = c.saturating ? fp8_max_finite<TA>() : 8.0, hi_b = c.saturating ? fp8_max_finite<TB>() : 8.0;
  std::vector<TA> a = random_vector<TA>(c.offset + a_rows * lda, seed * 5 + 1, 0.25, hi_a);
  std::vector<TB> b = random_vector<TB>(c.offset + b_rows * ldb, seed * 5 + 2, 0.25, hi_b);
  const TA nan_a(std::numeric_limits<float>::quiet_NaN());
  const TB nan_b(std::numeric_limits<float>::quiet_NaN());
  for (std::size_t r = 0; r < a_rows; ++r)
    for (std::size_t j = a_cols; j < lda; ++j) a[c.offset + r * lda + j] = nan_a;
  for (std::size_t r = 0; r < b_rows; ++r)
    for (std::size_t j = b_cols; j < ldb; ++j) b[c.offset + r * ldb + j] = nan_b;
  if (c.nan_row < m && k > 0) a[c.offset + (ta ? c.nan_row : c.nan_row * lda)] = nan_a;

  fp8_scales scales;
  scales.mode = c.mode;
  const std::vector<float> sa = random_scales(scale_count_a(c.mode, m, k), seed * 5 + 3);
  const std::vector<float> sb = random_scales(scale_count_b(c.mode, n, k), seed * 5 + 4);

  // A sentinel D's type holds exactly (12345 is 12352 in bf16, 12344 in fp16).
  const double sentinel = reference::to_double(reference::from_double<TD>(12345.0));
  std::vector<TD> d0 = random_vector<TD>(c.offset + m * ldd, seed * 5 + 5);
  for (std::size_t i = 0; i < c.offset; ++i) d0[i] = reference::from_double<TD>(sentinel);
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t j = n; j < ldd; ++j) d0[c.offset + r * ldd + j] = reference::from_double<TD>(sentinel);
  const std::vector<TD> bias = random_vector<TD>(n, seed * 5 + 6);

  device_buffer<TA> da = to_device(a);
  device_buffer<TB> db = to_device(b);
  device_buffer<TD> dd = to_device(d0);
  device_buffer<float> dsa = to_device(sa), dsb = to_device(sb);
  device_buffer<TD> dbias = to_device(bias);
  device_buffer<float> damax(1);
  if (c.beta == 0.0f) {
    for (std::size_t r = 0; r < m; ++r) {
      if (cudaMemset(dd.data() + c.offset + r * ldd, 0xFF, n * sizeof(TD)) != cudaSuccess) {
        return ::testing::AssertionFailure() << "cudaMemset failed";
      }
    }
  }
  if (cudaMemset(damax.data(), 0xFF, sizeof(float)) != cudaSuccess) {  // NaN: the call must write it
    return ::testing::AssertionFailure() << "cudaMemset failed";
  }
  scales.a = dsa.data();
  scales.b = dsb.data();
  scaled_matmul_options options;
  options.variant = variant;
  options.bias = c.bias ? dbias.data() : nullptr;
  options.relu = c.relu;
  options.relu_threshold = 0.25f;
  options.amax = c.amax ? damax.data() : nullptr;
  if (c.tile != kf::detail::scaled_wgmma_tile::by_shape) {
    kf::detail::scaled_matmul_forced_tile(c.trans_a, c.trans_b, m, n, k, c.alpha, da.data() + c.offset, lda,
                                          db.data() + c.offset, ldb, scales, c.beta, dd.data() + c.offset, ldd, options,
                                          c.tile);
  } else {
    scaled_matmul(c.trans_a, c.trans_b, m, n, k, c.alpha, da.data() + c.offset, lda, db.data() + c.offset, ldb, scales,
                  c.beta, dd.data() + c.offset, ldd, options);
  }
  const std::vector<TD> got = to_host(dd);
  const std::vector<float> got_amax = to_host(damax);

  for (std::size_t i = 0; i < c.offset; ++i) {
    if (reference::to_double(got[i]) != sentinel) return ::testing::AssertionFailure() << "wrote before D";
  }
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t j = n; j < ldd; ++j)
      if (reference::to_double(got[c.offset + r * ldd + j]) != sentinel)
        return ::testing::AssertionFailure() << "wrote into D's padding at row " << r << ", column " << j;

  std::vector<TD> expected(d0.begin() + c.offset, d0.end());
  std::vector<double> scale, pre;
  reference::scaled_matmul<TA, TB, TD>(c.trans_a, c.trans_b, m, n, k, c.alpha, a.data() + c.offset, lda,
                                       b.data() + c.offset, ldb, scales, sa.data(), sb.data(), c.beta, expected.data(),
                                       ldd, c.bias ? bias.data() : nullptr, c.relu, 0.25f, &scale, &pre);
  // Compare the m x n area (dense copies; scale is m x n dense).
  std::vector<TD> got_area, ref_area;
  for (std::size_t r = 0; r < m; ++r) {
    for (std::size_t j = 0; j < n; ++j) {
      got_area.push_back(got[c.offset + r * ldd + j]);
      ref_area.push_back(expected[r * ldd + j]);
    }
  }
  const double kd = static_cast<double>(std::max<std::size_t>(k, 1));
  const double partial_sums = variant == scaled_matmul_variant::naive ? 0.0 : std::ldexp(1.0, -11);
  std::vector<double> bound(scale.size());
  for (std::size_t i = 0; i < scale.size(); ++i) {
    bound[i] = ((4.0 * std::sqrt(kd) + 8.0) * std::ldexp(1.0, -23) + partial_sums) * scale[i] +
               2.0 * unit_roundoff<TD>() * std::fabs(reference::to_double(ref_area[i]));
  }
  if (c.relu) {
    // The threshold ReLU jumps at 0.25: where the exact pre-activation lies
    // within the error bound of it, the GPU's sum may fall either side, so
    // either 0 or the pre-activation (within the bound) is right. Few outputs
    // may be that close, or the check would stop testing the ReLU.
    std::size_t near = 0;
    for (std::size_t i = 0; i < ref_area.size(); ++i) {
      if (!(std::fabs(pre[i] - 0.25) <= bound[i])) continue;
      ++near;
      const double g = reference::to_double(got_area[i]);
      if (g == 0.0 || std::fabs(g - pre[i]) <= bound[i] + 2.0 * unit_roundoff<TD>() * std::fabs(pre[i])) {
        ref_area[i] = got_area[i];
      }
    }
    if (near * 20 > ref_area.size() + 20) {
      return ::testing::AssertionFailure()
             << near << " of " << ref_area.size()
             << " outputs lie within the error bound of the ReLU threshold: too loose [" << c.describe() << "]";
    }
  }
  auto close = all_close(got_area, ref_area, tolerance{1.0, 0.0}, &bound);
  if (!close) return close << " [" << c.describe() << " " << to_string(variant) << "]";

  if (c.amax) {
    float want = 0.0f;
    for (const TD& v : got_area) {
      const float x = std::fabs(static_cast<float>(reference::to_double(v)));
      want = std::isnan(x) || std::isnan(want) ? std::numeric_limits<float>::quiet_NaN() : std::max(want, x);
    }
    const bool same = (std::isnan(want) && std::isnan(got_amax[0])) || want == got_amax[0];
    if (!same) {
      return ::testing::AssertionFailure()
             << "amax " << got_amax[0] << ", max |D| " << want << " [" << c.describe() << "]";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kf::test
