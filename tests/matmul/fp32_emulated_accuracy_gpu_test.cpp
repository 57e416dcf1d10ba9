// SPDX-License-Identifier: Apache-2.0
// GPU tests of math_mode::fp32_emulated's accuracy, per path (Fp32EmulatedPath/
// AccuracyNoWorseThanTheExactStepBesideSgemm/<path>; the paths and the suite:
// fp32_emulated_path.hpp, the rest of the suite: fp32_emulated_gpu_test.cpp, the
// same binary):
//  * Accuracy: the error of 64 x 64 entries of a product against the double
//    reference (64 x 64 x k, k = 16 ... 65536, split-k from k = 512 on step 15;
//    and 1152 x 1152 x k, unsplit), for three kinds of input (uniform in
//    [-1, 1], randn, and rows of A / columns of B scaled by 2^e, e uniform in
//    [-20, 20]), next to cuBLAS SGEMM's (pedantic fp32 math) and our exact
//    fp32 step's on the same inputs. Errors are measured two ways: against
//    |ref| (relative error) and against sum_p |a_ip b_pj| (what a sum's
//    rounding error scales with, finite where ref cancels to ~0). Ours must be
//    no worse than our exact step's in the median of both and the maximum of
//    the second (the maximum relative error is set by the few entries that
//    cancel to nearly zero, so it is printed, not compared); SGEMM's are
//    printed beside them (the goal: no worse than SGEMM). Below fp32_emulated_min_k the
//    library runs the exact step itself. The table is printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "fp32_emulated_path.hpp"
#include "kernelforge/kernelforge.hpp"

namespace {

using namespace kf::test::fp32_emulated;  // NOLINT(google-build-using-namespace): the suite's own helpers

enum class inputs { uniform, randn, wide };

const char* name_of(inputs d) {
  return d == inputs::uniform ? "uniform" : d == inputs::randn ? "randn" : "wide 2^-20..2^20";
}

/// rows x cols values of kind d; `scale_rows`: the wide kind scales whole rows
/// (A), else whole columns (B), so a product's terms keep a common magnitude.
std::vector<float> make_inputs(inputs d, std::size_t rows, std::size_t cols, bool scale_rows, std::uint64_t seed) {
  std::vector<float> v(rows * cols);
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + 7;
  const auto uniform01 = [&] {
    z = kf::test::mix64(z);
    return (static_cast<double>(z >> 11) + 0.5) * 0x1.0p-53;  // (0, 1)
  };
  std::vector<double> line_scale(scale_rows ? rows : cols, 1.0);
  if (d == inputs::wide) {
    for (double& s : line_scale) s = std::ldexp(1.0, static_cast<int>(std::floor(uniform01() * 41.0)) - 20);
  }
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      double x;
      if (d == inputs::randn) {
        x = std::sqrt(-2.0 * std::log(uniform01())) * std::cos(6.283185307179586 * uniform01());
      } else {
        x = 2.0 * uniform01() - 1.0;
      }
      v[r * cols + c] = static_cast<float>(x * line_scale[scale_rows ? r : c]);
    }
  }
  return v;
}

struct error_stats {
  double median_rel = 0, max_rel = 0, median_sum = 0, max_sum = 0;
};

/// Errors of got (m x n) against ref: relative to |ref| and to sum |a b|.
error_stats errors_of(const std::vector<float>& got, const std::vector<double>& ref, const std::vector<double>& mag) {
  std::vector<double> rel(got.size()), sum(got.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - ref[i]);
    rel[i] = std::isnan(got[i]) ? std::numeric_limits<double>::infinity() : ref[i] != 0 ? e / std::fabs(ref[i]) : e;
    sum[i] = std::isnan(got[i]) ? std::numeric_limits<double>::infinity() : e / mag[i];
  }
  error_stats s;
  const auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  s.median_rel = median(rel);
  s.median_sum = median(sum);
  s.max_rel = *std::max_element(rel.begin(), rel.end());
  s.max_sum = *std::max_element(sum.begin(), sum.end());
  return s;
}

/// Ours, SGEMM's and our exact step's errors on the m x n x k product of
/// inputs d, on 64 x 64 entries (every row and column when m, n = 64, else
/// evenly spaced ones); prints a table row and checks ours against SGEMM's.
void compare_with_sgemm(path which, cublasHandle_t handle, inputs d, std::size_t m, std::size_t n, std::size_t k) {
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(d) + k + m;
  const std::vector<float> a = make_inputs(d, m, k, true, seed), b = make_inputs(d, k, n, false, seed + 1);
  constexpr std::size_t sample = 64;
  std::vector<std::size_t> rows(sample), cols(sample);
  for (std::size_t q = 0; q < sample; ++q) rows[q] = q * m / sample, cols[q] = q * n / sample;
  std::vector<double> ref(sample * sample, 0.0), mag(sample * sample, 0.0);
  for (std::size_t r = 0; r < sample; ++r) {
    for (std::size_t p = 0; p < k; ++p) {
      const double ai = a[rows[r] * k + p];
      for (std::size_t c = 0; c < sample; ++c) {
        const double t = ai * static_cast<double>(b[p * n + cols[c]]);
        ref[r * sample + c] += t;
        mag[r * sample + c] += std::fabs(t);
      }
    }
  }
  const kf::device_buffer<float> da = kf::to_device(a), db = kf::to_device(b);
  kf::device_buffer<float> dc(m * n);
  const auto sampled = [&] {
    const std::vector<float> all = kf::to_host(dc);
    std::vector<float> v(sample * sample);
    for (std::size_t r = 0; r < sample; ++r) {
      for (std::size_t c = 0; c < sample; ++c) v[r * sample + c] = all[rows[r] * n + cols[c]];
    }
    return v;
  };
  emulated_matmul(which, kf::op::none, kf::op::none, m, n, k, 1.0f, da.data(), k, db.data(), n, 0.0f, dc.data(), n,
                  emulated());
  const std::vector<float> ours = sampled();
  kf::matmul<float>(kf::op::none, kf::op::none, m, n, k, 1.0f, da.data(), k, db.data(), n, 0.0f, dc.data(), n);
  const std::vector<float> exact = sampled();
  // cuBLAS SGEMM, row-major C = A B as column-major C^T = B^T A^T.
  const float one = 1.0f, zero = 0.0f;
  ASSERT_EQ(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                        &one, db.data(), static_cast<int>(n), da.data(), static_cast<int>(k), &zero, dc.data(),
                        static_cast<int>(n)),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<float> sgemm = sampled();
  const error_stats o = errors_of(ours, ref, mag), s = errors_of(sgemm, ref, mag), e = errors_of(exact, ref, mag);
  const std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                            (which == path::library    ? ""
                             : which == path::mma_sync ? " step16"
                                                       : " step17");
  std::printf("%-17s %-22s | %10.3g %10.3g  | %10.3g %10.3g  | %10.3g %10.3g  | %.3g / %.3g / %.3g\n", name_of(d),
              shape.c_str(), o.median_rel, o.median_sum, s.median_rel, s.median_sum, e.median_rel, e.median_sum,
              o.max_sum, s.max_sum, e.max_sum);
  // The library's promise: as accurate as its exact fp32 steps (below
  // fp32_emulated_min_k it runs them). SGEMM's figures are the goal beyond that,
  // printed for the record.
  EXPECT_LE(o.median_rel, e.median_rel) << name_of(d) << " " << shape;
  EXPECT_LE(o.median_sum, e.median_sum) << name_of(d) << " " << shape;
  EXPECT_LE(o.max_sum, e.max_sum) << name_of(d) << " " << shape;
}

TEST_P(Fp32Emulated, AccuracyNoWorseThanTheExactStepBesideSgemm) {
  KF_SKIP_UNLESS_PATH_RUNS(GetParam());
  const path which = GetParam();
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH), CUBLAS_STATUS_SUCCESS);  // fp32 FMA, no TF32
  std::printf("%-17s %-22s | %-23s | %-23s | %-23s | %s\n", "inputs", "m x n x k", "ours: median rel, sum",
              "SGEMM: median rel, sum", "exact: median rel, sum", "max sum-relative: ours / SGEMM / exact");
  for (const inputs d : {inputs::uniform, inputs::randn, inputs::wide}) {
    // 64 x 64: one tile, which step 15 splits in k from 512 on (split-k's slices add in fp32);
    // 1152 x 1152: 81 tiles, unsplit (the two-level sum alone).
    for (const std::size_t k : {16, 32, 64, 256, 1024, 4096, 16384, 65536})
      compare_with_sgemm(which, handle, d, 64, 64, k);
    for (const std::size_t k : {1024, 16384}) compare_with_sgemm(which, handle, d, 1152, 1152, k);
  }
  cublasDestroy(handle);
}

}  // namespace
