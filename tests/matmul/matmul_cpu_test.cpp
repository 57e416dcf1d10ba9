// SPDX-License-Identifier: Apache-2.0
// CPU tests of the matrix-product family: argument validation (every error is
// thrown before any CUDA call, so these run without a GPU or driver) and the CPU
// reference itself. The selection rules: matmul_tuning_test.cpp (same binary).
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "kernelforge/matmul.hpp"
#include "kernelforge/reference/matmul.hpp"
#include "test_support.hpp"

namespace {

using kf::matmul_variant;
using kf::op;

/// Any non-null pointer: validation must fail before anything dereferences it.
float* fake_ptr() {
  static float storage[64];
  return storage;
}

/// Calls kf::matmul<T> with m x n x k and the given leading dimensions and
/// options; returns the error it raised (fails the test if none).
template <class T>
struct same {  // keeps T out of deduction, so nullptr arguments work
  using type = T;
};

template <class T = float>
kf::error matmul_error(op ta, op tb, std::size_t m, std::size_t n, std::size_t k, const typename same<T>::type* A,
                       std::size_t lda, const typename same<T>::type* B, std::size_t ldb, typename same<T>::type* C,
                       std::size_t ldc, kf::matmul_options o = {}) {
  try {
    kf::matmul<T>(ta, tb, m, n, k, kf::compute_t<T>(1), A, lda, B, ldb, kf::compute_t<T>(0), C, ldc, o);
  } catch (const kf::error& e) {
    return e;
  }
  ADD_FAILURE() << "kf::matmul did not throw";
  return kf::error(kf::errc::cuda_runtime, "(none)");
}

void expect_message(const kf::error& e, kf::errc code, const std::vector<std::string>& parts) {
  EXPECT_EQ(e.code(), code) << e.what();
  for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
}

TEST(MatmulValidation, NullOperandsWithNonzeroSizes) {
  float* p = fake_ptr();
  expect_message(matmul_error(op::none, op::none, 4, 4, 4, nullptr, 4, p, 4, p, 4), kf::errc::invalid_argument,
                 {"'A'"});
  expect_message(matmul_error(op::none, op::none, 4, 4, 4, p, 4, nullptr, 4, p, 4), kf::errc::invalid_argument,
                 {"'B'"});
  expect_message(matmul_error(op::none, op::none, 4, 4, 4, p, 4, p, 4, nullptr, 4), kf::errc::invalid_argument,
                 {"'C'"});
  // k == 0: A and B hold nothing and may be null, C may not.
  expect_message(matmul_error(op::none, op::none, 4, 4, 0, nullptr, 0, nullptr, 4, nullptr, 4),
                 kf::errc::invalid_argument, {"'C'"});
}

TEST(MatmulValidation, LeadingDimensionsNameTheArgumentAndTheNumbers) {
  float* p = fake_ptr();
  // A is m x k (row length k = 7) or, transposed, stored k x m (row length m = 5).
  expect_message(matmul_error(op::none, op::none, 5, 3, 7, p, 6, p, 3, p, 3), kf::errc::invalid_argument,
                 {"lda = 6", "k = 7", ">= 7"});
  expect_message(matmul_error(op::transpose, op::none, 5, 3, 7, p, 4, p, 3, p, 3), kf::errc::invalid_argument,
                 {"lda = 4", "m = 5", ">= 5"});
  // B is k x n (row length n = 3) or, transposed, stored n x k (row length k = 7).
  expect_message(matmul_error(op::none, op::none, 5, 3, 7, p, 7, p, 2, p, 3), kf::errc::invalid_argument,
                 {"ldb = 2", "n = 3"});
  expect_message(matmul_error(op::none, op::transpose, 5, 3, 7, p, 7, p, 6, p, 3), kf::errc::invalid_argument,
                 {"ldb = 6", "k = 7"});
  expect_message(matmul_error(op::none, op::none, 5, 3, 7, p, 7, p, 3, p, 2), kf::errc::invalid_argument,
                 {"ldc = 2", "n = 3"});
}

TEST(MatmulValidation, InvalidEnums) {
  float* p = fake_ptr();
  expect_message(matmul_error(static_cast<op>(7), op::none, 2, 2, 2, p, 2, p, 2, p, 2), kf::errc::invalid_argument,
                 {"trans_a"});
  expect_message(matmul_error(op::none, static_cast<op>(-1), 2, 2, 2, p, 2, p, 2, p, 2), kf::errc::invalid_argument,
                 {"trans_b"});
  kf::matmul_options o;
  o.variant = static_cast<matmul_variant>(99);
  expect_message(matmul_error(op::none, op::none, 2, 2, 2, p, 2, p, 2, p, 2, o), kf::errc::invalid_argument,
                 {"options.variant"});
  o = {};
  o.math = static_cast<kf::math_mode>(5);
  expect_message(matmul_error(op::none, op::none, 2, 2, 2, p, 2, p, 2, p, 2, o), kf::errc::invalid_argument,
                 {"options.math"});
}

TEST(MatmulValidation, TensorCoreNeedsTf32MathMode) {
  float* p = fake_ptr();
  kf::matmul_options o;
  o.variant = matmul_variant::tensor_core_tf32;
  expect_message(matmul_error(op::none, op::none, 2, 2, 2, p, 2, p, 2, p, 2, o), kf::errc::invalid_argument,
                 {"tensor_core_tf32", "math_mode::tf32"});
}

TEST(MatmulValidation, Fp32EmulatedRunsWithVariantBestOnly) {
  float* p = fake_ptr();
  kf::matmul_options o;
  o.math = kf::math_mode::fp32_emulated;
  for (const matmul_variant v : {matmul_variant::warp_tiled, matmul_variant::tensor_core_tf32, matmul_variant::naive}) {
    o.variant = v;
    expect_message(matmul_error(op::none, op::none, 2, 2, 2, p, 2, p, 2, p, 2, o), kf::errc::invalid_argument,
                   {"fp32_emulated", "variant best", kf::to_string(v)});
  }
  EXPECT_STREQ(kf::to_string(kf::math_mode::fp32_emulated), "fp32_emulated");
}

TEST(MatmulValidation, DoubleHasNaiveSmemTiledAndBlocktile2dOnly) {
  static double storage[64];
  double* p = storage;
  for (matmul_variant v : {matmul_variant::coalesced, matmul_variant::blocktile_1d, matmul_variant::vectorized,
                           matmul_variant::warp_tiled, matmul_variant::large_tile, matmul_variant::tensor_core_tf32}) {
    kf::matmul_options o;
    o.variant = v;
    o.math = kf::math_mode::tf32;  // so that tensor_core_tf32 fails for the type, not the math mode
    expect_message(matmul_error<double>(op::none, op::none, 2, 2, 2, p, 2, p, 2, p, 2, o), kf::errc::unsupported,
                   {kf::to_string(v), "double"});
  }
}

TEST(MatmulValidation, SixteenBitTypesHaveNaiveAndTheF16TensorCoreStepsOnly) {
  static __half h_storage[64];
  static __nv_bfloat16 b_storage[64];
  for (matmul_variant v : {matmul_variant::coalesced, matmul_variant::smem_tiled, matmul_variant::blocktile_1d,
                           matmul_variant::blocktile_2d, matmul_variant::vectorized, matmul_variant::warp_tiled,
                           matmul_variant::tensor_core_tf32}) {
    kf::matmul_options o;
    o.variant = v;
    o.math = kf::math_mode::tf32;
    expect_message(matmul_error<__half>(op::none, op::none, 2, 2, 2, h_storage, 2, h_storage, 2, h_storage, 2, o),
                   kf::errc::unsupported, {kf::to_string(v), "__half", "naive, tensor_core_f16 and wgmma_f16"});
    expect_message(
        matmul_error<__nv_bfloat16>(op::none, op::none, 2, 2, 2, b_storage, 2, b_storage, 2, b_storage, 2, o),
        kf::errc::unsupported, {kf::to_string(v), "__nv_bfloat16", "naive, tensor_core_f16 and wgmma_f16"});
  }
  // Validation runs for the 16-bit types as for the others: lda < k names lda.
  expect_message(matmul_error<__half>(op::none, op::none, 4, 4, 4, h_storage, 3, h_storage, 4, h_storage, 4),
                 kf::errc::invalid_argument, {"lda"});
}

TEST(MatmulValidation, F16StepsAreNotCompiledForFloatOrDouble) {
  static double d_storage[64];
  float* p = fake_ptr();
  for (matmul_variant v : {matmul_variant::tensor_core_f16, matmul_variant::wgmma_f16}) {
    kf::matmul_options o;
    o.variant = v;
    expect_message(matmul_error<float>(op::none, op::none, 2, 2, 2, p, 2, p, 2, p, 2, o), kf::errc::unsupported,
                   {kf::to_string(v), "float"});
    expect_message(matmul_error<double>(op::none, op::none, 2, 2, 2, d_storage, 2, d_storage, 2, d_storage, 2, o),
                   kf::errc::unsupported, {kf::to_string(v), "double"});
  }
}

/// m == 0 or n == 0 returns before any CUDA call (so it works here, without a GPU).
TEST(MatmulValidation, EmptyProductsReturnWithoutTouchingTheGpu) {
  EXPECT_NO_THROW(kf::matmul<float>(op::none, op::none, 0, 5, 5, 1.f, nullptr, 5, fake_ptr(), 5, 0.f, nullptr, 5));
  EXPECT_NO_THROW(kf::matmul<float>(op::none, op::none, 5, 0, 5, 1.f, fake_ptr(), 5, nullptr, 0, 0.f, nullptr, 0));
  EXPECT_NO_THROW(
      kf::matmul<double>(op::transpose, op::transpose, 0, 0, 0, 1.0, nullptr, 0, nullptr, 0, 0.0, nullptr, 0));
}

TEST(MatmulValidation, VariantNames) {
  EXPECT_STREQ(kf::to_string(matmul_variant::best), "best");
  EXPECT_STREQ(kf::to_string(matmul_variant::naive), "naive");
  EXPECT_STREQ(kf::to_string(matmul_variant::coalesced), "coalesced");
  EXPECT_STREQ(kf::to_string(matmul_variant::smem_tiled), "smem_tiled");
  EXPECT_STREQ(kf::to_string(matmul_variant::blocktile_1d), "blocktile_1d");
  EXPECT_STREQ(kf::to_string(matmul_variant::blocktile_2d), "blocktile_2d");
  EXPECT_STREQ(kf::to_string(matmul_variant::vectorized), "vectorized");
  EXPECT_STREQ(kf::to_string(matmul_variant::warp_tiled), "warp_tiled");
  EXPECT_STREQ(kf::to_string(matmul_variant::large_tile), "large_tile");
  EXPECT_STREQ(kf::to_string(matmul_variant::tensor_core_tf32), "tensor_core_tf32");
  EXPECT_STREQ(kf::to_string(matmul_variant::tensor_core_f16), "tensor_core_f16");
  EXPECT_STREQ(kf::to_string(matmul_variant::wgmma_f16), "wgmma_f16");
}

// ---- the CPU reference ------------------------------------------------------
TEST(MatmulReference, SmallProductByHandForEveryTranspose) {
  // op(A) = [[1, 2], [3, 4], [5, 6]] (3 x 2), op(B) = [[1, -1, 2], [0, 3, -2]] (2 x 3).
  const std::vector<double> a_n = {1, 2, 3, 4, 5, 6}, a_t = {1, 3, 5, 2, 4, 6};
  const std::vector<double> b_n = {1, -1, 2, 0, 3, -2}, b_t = {1, 0, -1, 3, 2, -2};
  const std::vector<double> product = {1, 5, -2, 3, 9, -2, 5, 13, -2};  // op(A) op(B)
  for (int t = 0; t < 4; ++t) {
    const op ta = t & 1 ? op::transpose : op::none, tb = t & 2 ? op::transpose : op::none;
    const std::vector<double>& a = ta == op::none ? a_n : a_t;
    const std::vector<double>& b = tb == op::none ? b_n : b_t;
    std::vector<double> c = {10, 20, 30, 40, 50, 60, 70, 80, 90};
    const std::vector<double> c0 = c;
    std::vector<double> scale;
    kf::reference::matmul<double>(ta, tb, 3, 3, 2, 2.0, a.data(), ta == op::none ? 2 : 3, b.data(),
                                  tb == op::none ? 3 : 2, 0.5, c.data(), 3, &scale);
    for (std::size_t i = 0; i < 9; ++i) {
      EXPECT_EQ(c[i], 2.0 * product[i] + 0.5 * c0[i]) << "transposes " << t << " [" << i << "]";
    }
    // scale(0, 1) = 2 * (|1 * -1| + |2 * 3|) + |0.5 * 20| = 24
    EXPECT_EQ(scale[1], 24.0);
    const kf::reference::matmul_entry e = kf::reference::matmul_element<double>(
        ta, tb, 2, 2.0, a.data(), ta == op::none ? 2 : 3, b.data(), tb == op::none ? 3 : 2, 0.5, 20.0, 0, 1);
    EXPECT_EQ(e.value, c[1]);
    EXPECT_EQ(e.scale, 24.0);
  }
}

TEST(MatmulReference, BetaZeroDoesNotReadC) {
  const std::vector<float> a = {1, 2}, b = {3, 4};
  std::vector<float> c = {std::numeric_limits<float>::quiet_NaN()};
  kf::reference::matmul<float>(op::none, op::none, 1, 1, 2, 1.f, a.data(), 2, b.data(), 1, 0.f, c.data(), 1);
  EXPECT_EQ(c[0], 11.f);
  const auto e = kf::reference::matmul_element<float>(op::none, op::none, 2, 1.f, a.data(), 2, b.data(), 1, 0.f,
                                                      std::numeric_limits<float>::quiet_NaN(), 0, 0);
  EXPECT_EQ(e.value, 11.0);
}

/// Above the threading threshold the parallel path must agree with matmul_element.
TEST(MatmulReference, ParallelPathMatchesSingleEntries) {
  const std::size_t m = 67, n = 129, k = 600;  // m * n * k > 2^22
  const auto a = kf::test::random_vector<float>(k * m, 1), b = kf::test::random_vector<float>(n * k, 2);
  auto c = kf::test::random_vector<float>(m * n, 3);
  const auto c0 = c;
  kf::reference::matmul<float>(op::transpose, op::transpose, m, n, k, -0.5f, a.data(), m, b.data(), k, 0.25f, c.data(),
                               n);
  for (std::size_t i = 0; i < m; i += 11) {
    for (std::size_t j = 0; j < n; j += 7) {
      const auto e = kf::reference::matmul_element<float>(op::transpose, op::transpose, k, -0.5f, a.data(), m, b.data(),
                                                          k, 0.25f, c0[i * n + j], i, j);
      EXPECT_EQ(c[i * n + j], static_cast<float>(e.value)) << i << "," << j;
    }
  }
}

}  // namespace
