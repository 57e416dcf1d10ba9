// SPDX-License-Identifier: Apache-2.0
// The FP8 product's accuracy against cuBLASLt's on the same inputs, the
// library's FP8 accuracy goal: e4m3 x e4m3 with per-tensor scales, D in float (so D's own rounding
// does not hide the accumulation's), TN, m = n = 128, k = 64 ... 16384, randn-like
// values (Box-Muller, x 8, clipped to e4m3's range). Each D(i, j) is compared with
// the double-precision sum of the dequantized products; its error is measured
// relative to the sum of the products' magnitudes (what an accumulation's error
// scales with). Ours (kf::scaled_matmul, best: the wgmma step on Hopper) must be
// no worse than cuBLASLt (fast accumulation off: its partial sums promoted too)
// in both the median and the maximum of that error, at every k. The table is
// printed. Skips without a GPU of compute capability 8.9+; on one, cuBLASLt
// finding no FP8 algorithm is a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include "kernelforge/kernelforge.hpp"
#include "test_support.hpp"

namespace {

using fp8 = __nv_fp8_e4m3;

/// randn x 8, clipped to +-448 and kept off zero, as e4m3 (host: the reference reads the same bytes).
std::vector<fp8> randn_e4m3(std::size_t n, std::uint64_t seed) {
  std::vector<fp8> v(n);
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + 1;
  const auto uniform = [&] {
    z ^= z >> 33;
    z *= 0xFF51AFD7ED558CCDull;
    z ^= z >> 33;
    z *= 0xC4CEB9FE1A85EC53ull;
    z ^= z >> 33;
    return (static_cast<double>(z >> 11) + 0.5) / 9007199254740992.0;  // (0, 1)
  };
  for (std::size_t i = 0; i < n; ++i) {
    const double g = std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
    double x = std::clamp(8.0 * g, -448.0, 448.0);
    if (std::fabs(x) < 0.015625) x = x < 0 ? -0.015625 : 0.015625;
    v[i] = fp8(static_cast<float>(x));
  }
  return v;
}

struct error_stats {
  double median = 0, max = 0;
};

/// Errors of D (m x n, row-major) against the double product of A (m x k) and B (n x k), times `scale`.
error_stats errors(const std::vector<float>& d, const std::vector<fp8>& a, const std::vector<fp8>& b, std::size_t m,
                   std::size_t n, std::size_t k, double scale) {
  std::vector<double> e;
  e.reserve(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (std::size_t p = 0; p < k; ++p) {
        const double t = double(static_cast<float>(a[i * k + p])) * double(static_cast<float>(b[j * k + p]));
        sum += t;
        magnitude += std::fabs(t);
      }
      const double got = d[i * n + j];
      e.push_back(std::isnan(got) ? INFINITY : std::fabs(got - scale * sum) / (scale * magnitude));
    }
  }
  std::sort(e.begin(), e.end());
  return {e[e.size() / 2], e.back()};
}

/// cuBLASLt's D = sA sB A B^T in float (column-major D^T = B A^T: its A is our B, read transposed).
/// False where it has no algorithm (the message in `why`).
bool cublaslt_fp8(const fp8* a, const fp8* b, float* d, std::size_t m, std::size_t n, std::size_t k, const float* sa,
                  const float* sb, std::string& why) {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasStatus_t st = cublasLtCreate(&handle);
  const auto set = [&](cublasLtMatmulDescAttributes_t attribute, const auto& value) {
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value));
  };
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  const std::int8_t fast_accum = 0;
  set(CUBLASLT_MATMUL_DESC_TRANSA, ta);
  set(CUBLASLT_MATMUL_DESC_TRANSB, tb);
  set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accum);
  const void* scale_a = sb;  // its A is our B
  const void* scale_b = sa;
  set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scale_a);
  set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scale_b);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, n, k);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, m, k);
  // FP8 with an fp32 D takes an fp32 C (cuBLASLt's FP8 type table); beta is 0, so C is not read.
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, n, m, n);
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, n, m, n);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceCreate(&pref);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, lc, ld, pref, 1, &result, &found);
  const float alpha = 1.0f, beta = 0.0f;
  bool ok = st == CUBLAS_STATUS_SUCCESS && found > 0;
  if (ok) {
    kf::device_buffer<float> c(m * n);  // never read (beta 0)
    st = cublasLtMatmul(handle, desc, &alpha, b, la, a, lb, &beta, c.data(), lc, d, ld, &result.algo, nullptr, 0,
                        nullptr);
    ok = st == CUBLAS_STATUS_SUCCESS && cudaDeviceSynchronize() == cudaSuccess;
  }
  if (!ok)
    why = std::string("cuBLASLt FP8 (e4m3 TN, float D): ") + (found == 0 ? "no algorithm" : cublasGetStatusName(st));
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  for (cublasLtMatrixLayout_t l : {la, lb, lc, ld})
    if (l) cublasLtMatrixLayoutDestroy(l);
  if (desc) cublasLtMatmulDescDestroy(desc);
  if (handle) cublasLtDestroy(handle);
  return ok;
}

TEST(ScaledMatmulAccuracy, NoWorseThanCublasLt) {
  KF_SKIP_WITHOUT_GPU();
  int device = 0, major = 0, minor = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  if (major * 10 + minor < 89) GTEST_SKIP() << "FP8 needs compute capability 8.9 or newer";
  const std::size_t m = 128, n = 128;
  const float sa = 0.75f, sb = 1.25f;
  kf::device_buffer<float> dsa = kf::to_device(std::vector<float>{sa});
  kf::device_buffer<float> dsb = kf::to_device(std::vector<float>{sb});
  std::printf("| k | ours median | ours max | cuBLASLt median | cuBLASLt max |\n|---|---|---|---|---|\n");
  for (const std::size_t k : {64, 256, 1024, 4096, 16384}) {
    SCOPED_TRACE("k = " + std::to_string(k));
    const std::vector<fp8> a = randn_e4m3(m * k, k), b = randn_e4m3(n * k, k + 1);
    kf::device_buffer<fp8> da = kf::to_device(a), db = kf::to_device(b);
    kf::device_buffer<float> ours(m * n), theirs(m * n);
    ASSERT_EQ(cudaMemset(ours.data(), 0xff, m * n * sizeof(float)), cudaSuccess);  // NaN: unwritten fails
    ASSERT_EQ(cudaMemset(theirs.data(), 0xff, m * n * sizeof(float)), cudaSuccess);
    kf::scaled_matmul(kf::op::none, kf::op::transpose, m, n, k, 1.0f, da.data(), k, db.data(), k,
                      kf::fp8_scales{kf::fp8_scaling::per_tensor, dsa.data(), dsb.data()}, 0.0f, ours.data(), n);
    std::string why;
    // CUDA 13's cuBLASLt has FP8 kernels for every GPU this test reaches (sm_89+): no baseline is a failure.
    ASSERT_TRUE(cublaslt_fp8(da.data(), db.data(), theirs.data(), m, n, k, dsa.data(), dsb.data(), why)) << why;
    const double scale = double(sa) * double(sb);
    const error_stats o = errors(kf::to_host(ours), a, b, m, n, k, scale);
    const error_stats t = errors(kf::to_host(theirs), a, b, m, n, k, scale);
    std::printf("| %zu | %.3g | %.3g | %.3g | %.3g |\n", k, o.median, o.max, t.median, t.max);
    EXPECT_LE(o.median, t.median);
    EXPECT_LE(o.max, t.max);
  }
}

}  // namespace
