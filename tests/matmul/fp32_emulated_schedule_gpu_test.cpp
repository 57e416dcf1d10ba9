// SPDX-License-Identifier: Apache-2.0
// GPU test of fp32 emulation step 17's two k-loop schedules
// (17_wgmma_fp32_emulated_skinny.cuh: SplitAhead, the next k-block split while
// this one's products run; serial, split after they complete): the same
// products, order and sums, so C agrees bit for bit. Part of
// test_fp32_emulated_gpu (fp32_emulated_path.hpp: the suite's helpers); on
// compute capability 9.0 with the sm_90a image (elsewhere it skips).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <cuda_runtime_api.h>

#include "fp32_emulated_path.hpp"
#include "kernelforge/kernelforge.hpp"

namespace {

using namespace kf::test::fp32_emulated;  // NOLINT(google-build-using-namespace): the suite's own helpers

/// One case of SplitAheadMatchesTheSerialScheduleBitForBit: shape, transposes
/// (bit 0: A, bit 1: B; they choose X's layout), beta (0: C poisoned).
struct schedule_case {
  matmul_shape shape;
  int t;
  float beta;
};

/// Values +-[0.1, 2) x 2^[-8, 8]: sums whose bits move with any change of order.
std::vector<float> spread_inputs(std::size_t n, std::uint64_t seed) {
  std::vector<float> v = plain_inputs(n, seed);
  std::uint64_t z = seed ^ 0x5bd1e995u;
  for (float& x : v) {
    z = kf::test::mix64(z);
    x = std::ldexp(x, static_cast<int>(z % 17) - 8);
  }
  return v;
}

/// C of case c by step 17 forced with `kernel` (skinny or skinny_serial), from
/// A, B and C's starting values a, b, c0 (leading dimensions multiples of 4:
/// the large operand's rows 16-byte aligned, as step 17 needs).
std::vector<float> skinny_product(const schedule_case& c, const std::vector<float>& a, const std::vector<float>& b,
                                  const std::vector<float>& c0, kf::detail::fp32_emulated_wgmma_kernel kernel) {
  const std::size_t m = c.shape.m, n = c.shape.n, k = c.shape.k;
  const kf::op ta = (c.t & 1) ? kf::op::transpose : kf::op::none, tb = (c.t & 2) ? kf::op::transpose : kf::op::none;
  const auto ld = [](std::size_t cols) { return (cols + 3) / 4 * 4; };
  const std::size_t lda = ld(ta == kf::op::none ? k : m), ldb = ld(tb == kf::op::none ? n : k);
  const kf::device_buffer<float> da = kf::to_device(a), db = kf::to_device(b);
  kf::device_buffer<float> dc = kf::to_device(c0);
  const kf::detail::gemm_args<float> g = kf::detail::make_gemm_args<float>(ta, tb, m, n, k, 1.5f, da.data(), lda,
                                                                           db.data(), ldb, c.beta, dc.data(), ld(n));
  int device = 0;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_TRUE(kf::detail::wgmma_fp32_emulated_try_launch(g, {}, device, nullptr, kernel))
      << "step 17 did not run (" << m << " x " << n << " x " << k << ")";
  return kf::to_host(dc);
}

/// Step 17's two k-loop schedules (the next k-block split while this one's
/// products run, and split after they complete) issue the same products in
/// the same order into the same sums: C must agree bit for bit. Both
/// orientations (m small: swapped) and X's layouts, clusters of 1 (small side
/// <= 64) and 2 (a ragged last cluster at 150), k ragged (509, 131, 2053) and
/// 32 x odd (96, 1056: the two-set loop's odd tail), split-k where one 64-wide
/// tile column leaves the GPU short (64 x 4099, 4099 x 40, 7 x 2053), more
/// cluster tiles than an H200 holds clusters at 150 x 4481 (72: the ring's
/// parity carried across tiles after an odd 33 k-blocks), beta 0 and not; an
/// inf and a NaN in X in one case (hi_c). Small enough for sm90a_sanitize.
TEST(Fp32EmulatedSkinny, SplitAheadMatchesTheSerialScheduleBitForBit) {
  KF_SKIP_UNLESS_PATH_RUNS(path::skinny);
  const schedule_case cases[] = {{{64, 4099, 509}, 0, 0.0f},  {{4099, 40, 509}, 0, 0.5f}, {{150, 4481, 1056}, 2, 0.0f},
                                 {{4481, 128, 96}, 1, 0.5f},  {{7, 2053, 2053}, 3, 0.0f}, {{256, 1031, 131}, 0, 0.5f},
                                 {{1031, 200, 1056}, 1, 0.0f}};
  std::uint64_t seed = 1717;
  int index = 0;
  for (const schedule_case& c : cases) {
    const std::size_t m = c.shape.m, n = c.shape.n, k = c.shape.k;
    const auto ld = [](std::size_t cols) { return (cols + 3) / 4 * 4; };
    const std::size_t a_rows = (c.t & 1) ? k : m, a_cols = (c.t & 1) ? m : k;
    const std::size_t b_rows = (c.t & 2) ? n : k, b_cols = (c.t & 2) ? k : n;
    std::vector<float> a = spread_inputs(a_rows * ld(a_cols), seed++), b = spread_inputs(b_rows * ld(b_cols), seed++);
    std::vector<float> c0 = spread_inputs(m * ld(n), seed++);
    if (c.beta == 0.0f) std::fill(c0.begin(), c0.end(), std::numeric_limits<float>::quiet_NaN());
    if (index == 2) {  // X is B (m small): an inf and a NaN in it
      b[3] = std::numeric_limits<float>::infinity();
      b[b.size() / 2 + 1] = std::numeric_limits<float>::quiet_NaN();
    }
    ++index;
    const std::vector<float> ahead = skinny_product(c, a, b, c0, kf::detail::fp32_emulated_wgmma_kernel::skinny);
    const std::vector<float> serial =
        skinny_product(c, a, b, c0, kf::detail::fp32_emulated_wgmma_kernel::skinny_serial);
    int differ = 0;
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        std::uint32_t x = 0, y = 0;
        std::memcpy(&x, &ahead[i * ld(n) + j], sizeof x);
        std::memcpy(&y, &serial[i * ld(n) + j], sizeof y);
        if (x != y && differ++ < 5) {
          ADD_FAILURE() << "C(" << i << ", " << j << "): split ahead " << ahead[i * ld(n) + j] << " (0x" << std::hex
                        << x << "), serial " << serial[i * ld(n) + j] << " (0x" << y << std::dec << "), " << m << " x "
                        << n << " x " << k << ", transposes " << c.t;
        }
      }
    }
    EXPECT_EQ(differ, 0) << m << " x " << n << " x " << k;
  }
}

}  // namespace
