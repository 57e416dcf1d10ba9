// SPDX-License-Identifier: Apache-2.0
// GPU tests of math_mode::fp32_emulated (kf::matmul steps 15, 16 and 17: three
// TF32 products per pair on wgmma or mma.sync, partial sums promoted into
// fp32), each test run per path (Fp32EmulatedPath/<test>/<path>):
//  * Library: kf::matmul with math_mode::fp32_emulated, what the library
//    runs here (step 15 on compute capability 9.0 with the sm_90a image -- step
//    17 for skinny shapes where tuning.hpp's best_uses_fp32_emulated_skinny is
//    on --, step 16 on other GPUs of 8.0 or newer);
//  * MmaSync: step 16 through its launcher (mma_sync_fp32_emulated_try_launch)
//    as kf::matmul runs it where wgmma does not (the exact steps below
//    fp32_emulated_min_k), on the GPUs whose library path is step 15 (on the
//    others the Library cases run step 16 already; these skip);
//  * Skinny: step 17 forced at every shape (wgmma_fp32_emulated_try_launch
//    with fp32_emulated_wgmma_kernel::skinny; its large operand is the larger
//    side's), which must run wherever that operand's rows are 16-byte aligned
//    (elsewhere kf::matmul runs, as the library falls back to step 15); on
//    compute capability 9.0 with the sm_90a image (elsewhere these skip). Its
//    own test adds the small sides 1 ... 256 against large prime ones, both
//    orientations (m small: the swapped product; n small), every transpose.
// What each checks:
//  * Reference: every shape of matmul_shapes() plus tile-edge shapes, all four
//    transposes, alpha / beta, padded leading dimensions and misaligned
//    pointers, C NaN-poisoned where beta == 0, checked against the double
//    reference at the EXACT fp32 steps' tolerance (matmul_case.hpp), never TF32's.
//  * The fused bias and threshold ReLU against a CPU model of them, below and
//    above fp32_emulated_min_k, with m > n and m < n.
//  * inf / NaN in A alone, in B alone and in both (step 17 meets the large
//    operand's in registers, the small one's through its pre-pass's flag).
//  * Step 17's two k-loop schedules agree bit for bit: fp32_emulated_schedule_gpu_test.cpp.
//  * Accuracy against cuBLAS SGEMM and our exact step: fp32_emulated_accuracy_gpu_test.cpp.
// Below compute capability 8.0 the call must raise errc::unsupported, which is
// what those GPUs check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "fp32_emulated_path.hpp"
#include "kernelforge/kernelforge.hpp"

namespace {

using namespace kf::test::fp32_emulated;  // NOLINT(google-build-using-namespace): the suite's own helpers

TEST(Fp32EmulatedSupport, UnsupportedBelowComputeCapability8) {
  KF_SKIP_WITHOUT_GPU();
  if (runs_emulation()) GTEST_SKIP() << "this GPU runs the emulation (compute capability 8.0 or newer)";
  kf::device_buffer<float> a(64), b(64), c(64);
  for (const std::size_t k : {std::size_t{8}, std::size_t{256}}) {  // for every k, the short ones too
    try {
      kf::matmul<float>(kf::op::none, kf::op::none, 8, 8, k, 1.0f, a.data(), k, b.data(), 8, 0.0f, c.data(), 8,
                        emulated());
      FAIL() << "expected errc::unsupported";
    } catch (const kf::error& e) {
      EXPECT_EQ(e.code(), kf::errc::unsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find("compute capability 8.0"), std::string::npos) << e.what();
    }
  }
}

/// The shapes: the family's list, and edges of the 128 x 128 / 128 x 64 tiles
/// and of the 32-wide k-blocks (k = 1, 31, 33), a shape in clusters of 2 (two
/// tile rows) with a ragged last cluster, one big enough for 128-wide tiles,
/// and skinny ones step 17 is for (plan.hpp: choose_fp32_emulated_large; the library
/// runs them on step 17 where tuning.hpp's best_uses_fp32_emulated_skinny is on).
std::vector<matmul_shape> emulated_shapes() {
  std::vector<matmul_shape> s = kf::test::matmul_shapes();
  for (const matmul_shape& extra : std::vector<matmul_shape>{{128, 128, 32},
                                                             {129, 65, 31},
                                                             {200, 136, 33},
                                                             {385, 191, 97},
                                                             {1090, 2900, 40},
                                                             {64, 64, 65536},
                                                             {128, 1031, 300},
                                                             {1100, 64, 257},
                                                             {7, 2053, 131}}) {
    s.push_back(extra);
  }
  return s;
}

/// One case of the reference checks through path `p`.
::testing::AssertionResult check_emulated(path p, const matmul_case<float>& c, std::uint64_t seed) {
  const kf::matmul_options o = emulated();
  return kf::test::check_matmul_with(
      c,
      [&](const float* a, std::size_t lda, const float* b, std::size_t ldb, float* cc, std::size_t ldc) {
        emulated_matmul(p, c.trans_a, c.trans_b, c.shape.m, c.shape.n, c.shape.k, c.alpha, a, lda, b, ldb, c.beta, cc,
                        ldc, o);
      },
      o.stream, precision::exact, seed);
}

/// The paddings of a case's misaligned layout.
struct padding {
  std::size_t a, b, c, offset;
};

/// The case of shape s with transposes t (bit 0: A, bit 1: B): the aligned
/// layout (beta 0: C poisoned, the staged epilogue where n % 4 == 0) where
/// `aligned`, else the padded one (beta != 0). Sampled past 2^27 products.
matmul_case<float> emulated_case(const matmul_shape& s, int t, bool aligned, const padding& padded) {
  matmul_case<float> c;
  c.shape = s;
  c.trans_a = (t & 1) ? kf::op::transpose : kf::op::none;
  c.trans_b = (t & 2) ? kf::op::transpose : kf::op::none;
  if (aligned) {
    c.alpha = 1.0f, c.beta = 0.0f;
  } else {
    c.alpha = -0.5f, c.beta = 0.25f;
    c.pad_a = padded.a, c.pad_b = padded.b, c.pad_c = padded.c, c.offset = padded.offset;
  }
  c.sampled = s.m * s.n * s.k > (std::size_t{1} << 27);
  return c;
}

TEST_P(Fp32Emulated, MatchesTheReferenceAtTheExactTolerance) {
  KF_SKIP_UNLESS_PATH_RUNS(GetParam());
  std::uint64_t seed = 150;
  int index = 0;
  for (const matmul_shape& s : emulated_shapes()) {
    // The aligned layout and a padded, misaligned one (every pointer one element off) in turn.
    for (int t = 0; t < 4; ++t) {
      EXPECT_TRUE(check_emulated(GetParam(), emulated_case(s, t, (t + index) % 2 == 0, {1, 37, 1, 1}), seed++));
    }
    ++index;
  }
}

TEST_P(Fp32Emulated, HugeShapeOnASample) {
  KF_SKIP_UNLESS_PATH_RUNS(GetParam());
  matmul_case<float> c;
  c.shape = kf::test::huge_shape();
  c.trans_b = kf::op::transpose;
  c.sampled = true;
  EXPECT_TRUE(check_emulated(GetParam(), c, 77));
}

/// The fused bias and threshold ReLU on an m x n x k product through path `which`.
void fused_bias_relu_case(path which, std::size_t m, std::size_t n, std::size_t k) {
  std::vector<float> a(m * k), b(k * n), bias(n);
  std::uint64_t z = 12345;
  const auto uniform = [&] {
    z = kf::test::mix64(z);
    return static_cast<float>(static_cast<double>(z >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  };
  for (float& v : a) v = uniform();
  for (float& v : b) v = uniform();
  for (float& v : bias) v = uniform();
  const kf::device_buffer<float> da = kf::to_device(a), db = kf::to_device(b), dbias = kf::to_device(bias);
  for (const float threshold : {-0.25f, 0.0f, 0.5f}) {
    for (const bool with_bias : {true, false}) {
      kf::device_buffer<float> dc(m * n);
      ASSERT_EQ(cudaMemset(dc.data(), 0xFF, m * n * sizeof(float)), cudaSuccess);  // NaN: unwritten entries fail
      kf::matmul_options o = emulated();
      o.bias = with_bias ? dbias.data() : nullptr;
      o.relu = true;
      o.relu_threshold = threshold;
      emulated_matmul(which, kf::op::none, kf::op::none, m, n, k, 0.75f, da.data(), k, db.data(), n, 0.0f, dc.data(), n,
                      o);
      const std::vector<float> got = kf::to_host(dc);
      int bad = 0;
      for (std::size_t i = 0; i < m; ++i) {
        for (std::size_t j = 0; j < n; ++j) {
          double sum = 0, scale = 0;
          for (std::size_t p = 0; p < k; ++p) {
            sum += static_cast<double>(a[i * k + p]) * b[p * n + j];
            scale += std::fabs(static_cast<double>(a[i * k + p]) * b[p * n + j]);
          }
          double v = 0.75 * sum + (with_bias ? bias[j] : 0.0);
          const double tol = 4.0 * std::sqrt(static_cast<double>(k)) * 0x1.0p-24 * (scale + 1.0);
          if (std::fabs(v - threshold) <= tol) continue;  // either side of the threshold is right
          if (v <= threshold) v = 0;
          const double g = got[i * n + j];
          if (!(std::fabs(g - v) <= tol) && bad++ < 5) {
            ADD_FAILURE() << "C(" << i << ", " << j << ") = " << g << ", want " << v << " (tolerance " << tol
                          << ", threshold " << threshold << ", bias " << with_bias << ", k " << k << ")";
          }
        }
      }
      EXPECT_EQ(bad, 0);
    }
  }
}

/// k = 72: below fp32_emulated_min_k (the exact steps' epilogue); k = 200: the
/// emulation's; m > n and m < n (step 17: C, and C^T stored transposed).
TEST_P(Fp32Emulated, FusedBiasAndThresholdRelu) {
  KF_SKIP_UNLESS_PATH_RUNS(GetParam());
  for (const std::size_t k : {std::size_t{72}, std::size_t{200}}) {
    fused_bias_relu_case(GetParam(), 200, 136, k);
    fused_bias_relu_case(GetParam(), 136, 200, k);
  }
}

/// C = A B (m x n x k, row-major) on the GPU: math_mode::fp32_emulated by path
/// `which`, or math_mode::exact (the exact steps) where `which` is null.
std::vector<float> product(const std::vector<float>& a, const std::vector<float>& b, std::size_t m, std::size_t n,
                           std::size_t k, const path* which) {
  const kf::device_buffer<float> da = kf::to_device(a), db = kf::to_device(b);
  kf::device_buffer<float> dc(m * n);
  if (which != nullptr) {
    emulated_matmul(*which, kf::op::none, kf::op::none, m, n, k, 1.0f, da.data(), k, db.data(), n, 0.0f, dc.data(), n,
                    emulated());
  } else {
    kf::matmul<float>(kf::op::none, kf::op::none, m, n, k, 1.0f, da.data(), k, db.data(), n, 0.0f, dc.data(), n);
  }
  return kf::to_host(dc);
}

/// Which operand holds the non-finite values of InfAndNanGiveTheExactStepsResult.
enum class nonfinite_in { a, b, both };

/// m x n x 300 (k >= fp32_emulated_min_k: the emulation runs; m, n >= 36) with
/// infinities and NaNs in A, B or both, against the exact steps' result.
void inf_and_nan_case(path which, std::size_t m, std::size_t n, nonfinite_in where) {
  const std::size_t k = 300;
  std::vector<float> a = plain_inputs(m * k, 5), b = plain_inputs(k * n, 6);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const bool in_a = where != nonfinite_in::b, in_b = where != nonfinite_in::a;
  if (in_a) {
    a[3 * k + 5] = inf;    // row 3: +-inf by B(5, j)'s sign ...
    b[5 * n + 7] = 0.0f;   // ... and inf * 0 = NaN at (3, 7)
    a[20 * k + 50] = nan;  // row 20: NaN
  }
  if (in_b) {
    b[10 * n + 2] = -inf;    // column 2: +-inf, and inf - inf at (3, 2) if signs meet
    a[30 * k + 100] = 1.0f;  // exact in TF32 (its lo part is 0) ...
    b[100 * n + 11] = inf;   // ... times inf: +inf, not NaN, at (30, 11)
  }
  a[35 * k + 0] = std::numeric_limits<float>::max();  // rounds past TF32's largest: hi stays finite
  for (std::size_t j = 0; j < n; ++j) b[0 * n + j] = 0.5f;
  const std::vector<float> ours = product(a, b, m, n, k, &which);
  const std::vector<float> exact = product(a, b, m, n, k, nullptr);
  int bad = 0, non_finite = 0;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const float o = ours[i * n + j], e = exact[i * n + j];
      bool same;
      if (std::isnan(e) || std::isinf(e)) {
        ++non_finite;
        same = std::isnan(e) ? std::isnan(o) : o == e;
      } else {
        double scale = 0;
        for (std::size_t p = 0; p < k; ++p) scale += std::fabs(static_cast<double>(a[i * k + p]) * b[p * n + j]);
        same = std::fabs(static_cast<double>(o) - e) <= 8.0 * std::sqrt(static_cast<double>(k)) * 0x1.0p-24 * scale;
      }
      if (!same && bad++ < 8) {
        ADD_FAILURE() << "C(" << i << ", " << j << ") = " << o << ", exact step: " << e << " (" << m << " x " << n
                      << ", non-finite in "
                      << (where == nonfinite_in::a   ? "A"
                          : where == nonfinite_in::b ? "B"
                                                     : "both")
                      << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0);
  // Rows 3 and 20 (A), columns 2 and 11 (B).
  EXPECT_GE(non_finite, static_cast<int>((in_a ? 2 * n : 0) + (in_b ? 2 * m : 0) - (in_a && in_b ? 4 : 0)));
}

TEST_P(Fp32Emulated, InfAndNanGiveTheExactStepsResult) {
  KF_SKIP_UNLESS_PATH_RUNS(GetParam());
  // m < n: step 17's large operand is B (the swapped product); m > n: A.
  for (const auto& [m, n] : {std::pair<std::size_t, std::size_t>{40, 48}, {48, 40}}) {
    for (const nonfinite_in where : {nonfinite_in::a, nonfinite_in::b, nonfinite_in::both}) {
      inf_and_nan_case(GetParam(), m, n, where);
    }
  }
}

// Subnormal inputs (|x| < 2^-126) are the emulation's known gap: TF32 keeps the
// same 10 mantissa bit positions as fp32's top ones, so a subnormal's hi and lo
// together hold only the bits in those positions -- fewer the smaller x is.
// This pins the gap where it is documented (math_mode.hpp, tuning notes): for
// A's rows entirely in 2^-130 * [0.1, 2), ours stays within 2^-8 of sum |a b|
// (the exact steps: ~2e-7); a change that lost more would fail here.
TEST_P(Fp32Emulated, SubnormalInputsWithinTheDocumentedBound) {
  KF_SKIP_UNLESS_PATH_RUNS(GetParam());
  const path which = GetParam();
  const std::size_t m = 64, n = 32, k = 256;
  std::vector<float> a = plain_inputs(m * k, 7), b = plain_inputs(k * n, 8);
  for (std::size_t i = 0; i < m * k / 2; ++i) a[i] = std::ldexp(a[i], -130);  // A's first half rows: subnormal
  for (std::size_t i = 0; i < k * n; i += 3) b[i] = std::ldexp(b[i], 20);     // products from 2^-133 to 2^-110
  const std::vector<float> ours = product(a, b, m, n, k, &which);
  const std::vector<float> exact = product(a, b, m, n, k, nullptr);
  double ours_err = 0, exact_err = 0, normal_rows_err = 0;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double ref = 0, scale = 0;
      for (std::size_t p = 0; p < k; ++p) {
        ref += static_cast<double>(a[i * k + p]) * b[p * n + j];
        scale += std::fabs(static_cast<double>(a[i * k + p]) * b[p * n + j]);
      }
      const double e = std::fabs(ours[i * n + j] - ref) / scale;
      ours_err = std::max(ours_err, e);
      if (i >= m / 2) normal_rows_err = std::max(normal_rows_err, e);
      exact_err = std::max(exact_err, std::fabs(exact[i * n + j] - ref) / scale);
    }
  }
  std::printf("subnormal rows: max error / sum |a b|: ours %.3g, exact step %.3g; normal rows: ours %.3g\n", ours_err,
              exact_err, normal_rows_err);
  EXPECT_LE(ours_err, std::ldexp(1.0, -8));
  EXPECT_LE(normal_rows_err, std::max(2.0 * exact_err, 8.0 * std::sqrt(static_cast<double>(k)) * 0x1.0p-24));
}

// ---- step 17 at awkward sizes --------------------------------------------------------

/// Step 17 forced on products with one small side (1, 7, 128, 150, 200, 256:
/// one tile column, a single row, whole and ragged clusters of two 64-wide
/// tiles) against large prime sides and prime k (one k-block's worth ragged),
/// in both orientations (m small: C^T computed and stored transposed; n
/// small), every transpose, alternating beta == 0 (C poisoned; staged stores
/// where the swapped product's C allows) with beta != 0 and padded rows: the
/// small operand's and C's rows misaligned, the large one's aligned (a
/// misaligned large operand makes step 17 decline: emulated_matmul then runs
/// kf::matmul, and the MatchesTheReference cases with offset 1 cover that).
/// Split-k where the tiles are few (one 64-wide column); unsplit at 128 x
/// 9000 x 257 (the swapped product's staged stores) and 9001 x 128 x 256.
TEST(Fp32EmulatedSkinny, MatchesTheReferenceAtAwkwardSizes) {
  KF_SKIP_UNLESS_PATH_RUNS(path::skinny);
  const std::size_t larges[] = {1031, 2053, 4099}, ks[] = {131, 509, 2053};
  std::uint64_t seed = 1700;
  int index = 0;
  for (const std::size_t small : {1, 7, 128, 150, 200, 256}) {
    for (const bool m_small : {true, false}) {
      for (int t = 0; t < 4; ++t, ++index) {
        const std::size_t large = larges[index % 3], k = ks[(index / 3) % 3];
        // Padded: the small operand's rows misaligned (pad 1), C's too (pad 3).
        const padding padded{m_small ? 1u : 0u, m_small ? 0u : 1u, 3, 0};
        const matmul_case<float> c = emulated_case(
            m_small ? matmul_shape{small, large, k} : matmul_shape{large, small, k}, t, (t + index) % 2 == 0, padded);
        EXPECT_TRUE(check_emulated(path::skinny, c, seed++)) << c.describe();
      }
    }
  }
  for (const matmul_shape s : {matmul_shape{128, 9000, 257}, matmul_shape{9001, 128, 256}}) {
    matmul_case<float> c;
    c.shape = s;
    c.sampled = true;
    EXPECT_TRUE(check_emulated(path::skinny, c, seed++)) << c.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(Fp32EmulatedPath, Fp32Emulated, ::testing::Values(path::library, path::mma_sync, path::skinny),
                         path_name);

}  // namespace
