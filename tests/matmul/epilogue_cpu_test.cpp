// SPDX-License-Identifier: Apache-2.0
// CPU tests of kf::matmul's fused epilogue options (options.bias / options.relu):
// every check is made before any CUDA call, so these run without a GPU or driver
// (the pointers are fake addresses that are never dereferenced).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "kernelforge/kernels/matmul/validate.hpp"
#include "kernelforge/matmul.hpp"
#include "test_support.hpp"

namespace {

using kf::matmul_variant;
using kf::op;
using kf::test::expect_error;
using kf::test::fake;

constexpr std::uintptr_t a_addr = 0x100000, b_addr = 0x200000, c_addr = 0x300000, bias_addr = 0x400000;

kf::matmul_options fused(matmul_variant v = matmul_variant::best) {
  kf::matmul_options o;
  o.variant = v;
  o.bias = fake(bias_addr);
  o.relu = true;
  return o;
}

void call(std::size_t m, std::size_t n, std::size_t k, std::size_t ldc, float* C, const kf::matmul_options& o) {
  kf::matmul<float>(op::none, op::none, m, n, k, 1.0f, fake(a_addr), k, fake(b_addr), n, 0.0f, C, ldc, o);
}

TEST(MatmulEpilogueCpu, VariantsWithoutEpilogueAreUnsupportedAndNameTheOnesWithIt) {
  for (matmul_variant v : {matmul_variant::naive, matmul_variant::coalesced, matmul_variant::smem_tiled,
                           matmul_variant::blocktile_1d, matmul_variant::blocktile_2d, matmul_variant::vectorized}) {
    SCOPED_TRACE(kf::to_string(v));
    expect_error(kf::errc::unsupported, "warp_tiled, tensor_core_tf32",
                 [&] { call(5, 7, 3, 7, fake(c_addr), fused(v)); });
    // The ReLU alone and the bias alone are fused epilogues too.
    kf::matmul_options relu_only;
    relu_only.variant = v;
    relu_only.relu = true;
    expect_error(kf::errc::unsupported, "has no epilogue support", [&] { call(5, 7, 3, 7, fake(c_addr), relu_only); });
    kf::matmul_options bias_only;
    bias_only.variant = v;
    bias_only.bias = fake(bias_addr);
    expect_error(kf::errc::unsupported, "options.bias", [&] { call(5, 7, 3, 7, fake(c_addr), bias_only); });
  }
}

/// large_tile runs the fused options (precompiled) but not a caller's functor:
/// <kernelforge/matmul.cuh> instantiates warp_tiled and tensor_core_tf32 only.
TEST(MatmulEpilogueCpu, LargeTileTakesFusedOptionsButNoFunctor) {
  kf::matmul_options o;
  o.variant = matmul_variant::large_tile;
  expect_error(kf::errc::unsupported, "warp_tiled, tensor_core_tf32 (with math_mode::tf32) or best", [&] {
    kf::detail::matmul_validate_custom_epilogue(op::none, op::none, 5, 7, 3, fake(a_addr), 3, fake(b_addr), 7,
                                                fake(c_addr), 7, o);
  });
  // Validation of the fused options passes (the call then needs a GPU): only the
  // m == 0 early return is reachable here, after validation.
  EXPECT_NO_THROW(kf::matmul<float>(op::none, op::none, 0, 7, 3, 1.0f, fake(a_addr), 3, fake(b_addr), 7, 0.0f,
                                    fake(c_addr), 7, fused(matmul_variant::large_tile)));
}

TEST(MatmulEpilogueCpu, DoubleHasNoFusedEpilogue) {
  const double* d = reinterpret_cast<const double*>(a_addr);
  for (matmul_variant v : {matmul_variant::best, matmul_variant::blocktile_2d}) {
    kf::matmul_options o = fused(v);
    expect_error(kf::errc::unsupported, "float only", [&] {
      kf::matmul<double>(op::none, op::none, 4, 4, 4, 1.0, d, 4, d, 4, 0.0, reinterpret_cast<double*>(c_addr), 4, o);
    });
  }
}

TEST(MatmulEpilogueCpu, BiasOverlappingCIsAnError) {
  const std::size_t m = 9, n = 7, ldc = 11;
  float* C = fake(c_addr);
  kf::matmul_options o = fused();
  for (std::ptrdiff_t at :
       {std::ptrdiff_t(0), std::ptrdiff_t(3), std::ptrdiff_t((m - 1) * ldc + n - 1), -std::ptrdiff_t(n) + 1}) {
    SCOPED_TRACE(at);
    o.bias = C + at;
    expect_error(kf::errc::invalid_argument, "options.bias (n = 7 elements) overlaps C",
                 [&] { call(m, n, 3, ldc, C, o); });
  }
  // Touching C's span at either end is fine (validation passes; m == 0 then makes it a no-op).
  o.bias = C - n;
  EXPECT_NO_THROW(call(0, n, 3, ldc, C, o));
  // Disjoint, just past the last element of C: passes validation; with k == 0 and m == 0 nothing runs.
  o.bias = C + (m - 1) * ldc + n;
  EXPECT_NO_THROW(call(0, n, 3, ldc, C, o));
}

TEST(MatmulEpilogueCpu, MisalignedBiasIsAnError) {
  kf::matmul_options o = fused();
  o.bias = reinterpret_cast<const char*>(bias_addr) + 2;
  expect_error(kf::errc::invalid_argument, "options.bias", [&] { call(3, 3, 3, 3, fake(c_addr), o); });
}

TEST(MatmulEpilogueCpu, EmptyProductsAreNoOpsWithAFusedEpilogue) {
  kf::matmul_options o = fused();
  EXPECT_NO_THROW(call(0, 5, 3, 5, fake(c_addr), o));
  EXPECT_NO_THROW(call(5, 0, 3, 1, fake(c_addr), o));
}

TEST(MatmulEpilogueCpu, TheUsualChecksStillComeFirst) {
  kf::matmul_options o = fused();
  expect_error(kf::errc::invalid_argument, "'A'", [&] {
    kf::matmul<float>(op::none, op::none, 4, 4, 4, 1.0f, nullptr, 4, fake(b_addr), 4, 0.0f, fake(c_addr), 4, o);
  });
  expect_error(kf::errc::invalid_argument, "ldc", [&] { call(4, 4, 4, 3, fake(c_addr), o); });
  o.variant = matmul_variant::tensor_core_tf32;  // needs math_mode::tf32
  expect_error(kf::errc::invalid_argument, "math_mode::tf32", [&] { call(4, 4, 4, 4, fake(c_addr), o); });
}

}  // namespace
