// SPDX-License-Identifier: Apache-2.0
// GPU tests of matmul epilogues: the fused options (options.bias, options.relu:
// kf::epilogue::bias_relu_threshold on the library's precompiled kernels, wgmma
// included on an H100/H200) and user functors through <kernelforge/matmul.cuh>
// instantiated here, as in a user's .cu: clamp, a residual add with state, an
// extended lambda that depends on the row and column, and compose().
//
// Every case: random inputs with random signs (never zero), A, B, C offset by
// `offset` elements (1: every row misaligned for 16-byte paths) with padded
// leading dimensions, C poisoned with NaN when beta == 0 (unwritten elements and
// a read of C both fail), the padding of C checked untouched, and every element
// compared with a double CPU model: the reference product (kf::reference) then
// the epilogue in double. Tolerance: the matmul's (tests/matmul/matmul_case.hpp),
// 4 sqrt(k) 2^-24 (fp32) or 4 * 2^-10 (TF32) times the error scale, which here
// also counts the magnitudes the epilogue adds (bias, residual, the lambda's
// offset). The threshold ReLU jumps at its threshold: within the tolerance of the
// jump, either side's value is accepted (the GPU's float sum may fall either way).
// Shapes: 1, primes, non-multiples of every tile, and split-k ones (small m x n,
// large k: the epilogue must run once, after the reduction); all four transposes.
// Compiled with --extended-lambda. Validation tests of the functor path
// (MatmulEpilogueValidation) run without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/device.hpp"
#include "kernelforge/device_buffer.hpp"
#include "kernelforge/matmul.cuh"
#include "kernelforge/reference/matmul.hpp"
#include "test_support.hpp"

// ---- user functors, as a user would write them --------------------------------
namespace user_ops {

/// C = A B + R (R m x n with leading dimension ldr): state, and reads by row and column.
struct residual_add {
  const float* r;
  std::size_t ldr;
  __device__ float operator()(float v, std::int64_t i, std::int64_t j) const {
    return v + r[static_cast<std::size_t>(i) * ldr + static_cast<std::size_t>(j)];
  }
};

// Extended lambdas may not live in a gtest TestBody (a private member): free functions.
/// v + 0.25 (i mod 7) - 0.125 (j mod 5): checks that row and column reach the functor.
void lambda_matmul(kf::op ta, kf::op tb, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* A,
                   std::size_t lda, const float* B, std::size_t ldb, float beta, float* C, std::size_t ldc,
                   const kf::matmul_options& o) {
  kf::matmul<float>(
      ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc,
      [] __device__(float v, std::int64_t i, std::int64_t j) {
        return v + 0.25f * static_cast<float>(i % 7) - 0.125f * static_cast<float>(j % 5);
      },
      o);
}

}  // namespace user_ops

namespace {

using kf::matmul_variant;
using kf::op;
using kf::test::random_vector;

struct shape {
  std::size_t m, n, k;
};

std::string str(const shape& s) { return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k); }

/// Awkward shapes, and split-k ones (few tiles, long k) for warp_tiled.
const std::vector<shape>& shapes() {
  static const std::vector<shape> s = {{1, 1, 1},    {7, 13, 5},     {33, 65, 17},    {131, 257, 139}, {127, 129, 255},
                                       {1, 1, 4096}, {64, 96, 8191}, {33, 200, 4099}, {257, 129, 1031}};
  return s;
}

int device_cc() {
  static const int cc = [] {
    const kf::device_info info = kf::get_device_info();
    return info.cc_major * 10 + info.cc_minor;
  }();
  return cc;
}

/// The host model of an epilogue: value, the magnitude it adds to the error
/// scale, and whether it jumps (then values within the tolerance of the jump
/// may land on either side).
struct model {
  std::function<double(double v, std::size_t i, std::size_t j)> f;
  std::function<double(std::size_t i, std::size_t j)> extra_scale = [](std::size_t, std::size_t) { return 0.0; };
  bool jumps = false;
};

struct layout {
  op ta = op::none, tb = op::none;
  shape s{};
  float alpha = 1, beta = 0;
  std::size_t offset = 0, pad = 0;
  bool tf32 = false;

  std::string describe() const {
    std::ostringstream o;
    o << str(s) << (ta == op::none ? " N" : " T") << (tb == op::none ? "N" : "T") << " alpha=" << alpha
      << " beta=" << beta << " offset=" << offset << " pad=" << pad << (tf32 ? " tf32" : " fp32");
    return o.str();
  }
};

using launch_fn = std::function<void(const layout&, const float* A, std::size_t lda, const float* B, std::size_t ldb,
                                     float* C, std::size_t ldc)>;

constexpr float c_sentinel = 12345.0f;

/// Runs one case through `launch` and checks every element against `mdl`.
::testing::AssertionResult check(const layout& c, const launch_fn& launch, const model& mdl, std::uint64_t seed) {
  const std::size_t m = c.s.m, n = c.s.n, k = c.s.k;
  const bool ta = c.ta == op::transpose, tb = c.tb == op::transpose;
  const std::size_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
  const std::size_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = n + c.pad;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = random_vector<float>(c.offset + a_rows * lda, seed * 3 + 1);
  std::vector<float> b = random_vector<float>(c.offset + b_rows * ldb, seed * 3 + 2);
  std::vector<float> c0 = random_vector<float>(c.offset + m * ldc, seed * 3 + 3);
  for (std::size_t i = 0; i < c.offset; ++i) a[i] = b[i] = nan, c0[i] = c_sentinel;
  for (std::size_t r = 0; r < a_rows; ++r)
    for (std::size_t j = a_cols; j < lda; ++j) a[c.offset + r * lda + j] = nan;
  for (std::size_t r = 0; r < b_rows; ++r)
    for (std::size_t j = b_cols; j < ldb; ++j) b[c.offset + r * ldb + j] = nan;
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t j = n; j < ldc; ++j) c0[c.offset + r * ldc + j] = c_sentinel;

  kf::device_buffer<float> da = kf::to_device(a), db = kf::to_device(b), dc = kf::to_device(c0);
  if (c.beta == 0.0f) {
    for (std::size_t r = 0; r < m; ++r) {
      if (cudaMemset(dc.data() + c.offset + r * ldc, 0xFF, n * sizeof(float)) != cudaSuccess)
        return ::testing::AssertionFailure() << "cudaMemset failed";
    }
  }
  if (cudaDeviceSynchronize() != cudaSuccess) return ::testing::AssertionFailure() << "cudaDeviceSynchronize failed";
  launch(c, da.data() + c.offset, lda, db.data() + c.offset, ldb, dc.data() + c.offset, ldc);
  if (cudaDeviceSynchronize() != cudaSuccess) return ::testing::AssertionFailure() << "kernel failed";
  const std::vector<float> got = kf::to_host(dc);

  for (std::size_t i = 0; i < c.offset; ++i)
    if (got[i] != c_sentinel) return ::testing::AssertionFailure() << "wrote before C; case " << c.describe();
  for (std::size_t r = 0; r < m; ++r)
    for (std::size_t j = n; j < ldc; ++j)
      if (got[c.offset + r * ldc + j] != c_sentinel)
        return ::testing::AssertionFailure()
               << "wrote into C's padding at (" << r << ", " << j << "); " << c.describe();

  std::vector<float> expected(c0.begin() + c.offset, c0.end());
  std::vector<double> scale;
  kf::reference::matmul<float>(c.ta, c.tb, m, n, k, c.alpha, a.data() + c.offset, lda, b.data() + c.offset, ldb, c.beta,
                               expected.data(), ldc, &scale);
  // The reference rounds its result to float; recompute the pre-epilogue value in
  // double from the entry function where that matters (it does not: the float
  // rounding, 2^-24 |v|, is far inside the tolerance).
  const double rel =
      c.tf32 ? 4.0 / 1024.0 : 4.0 * std::sqrt(static_cast<double>(std::max<std::size_t>(k, 1))) * 0x1p-24;
  std::size_t bad = 0;
  std::ostringstream report;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const double pre = expected[i * ldc + j];
      const double g = got[c.offset + i * ldc + j];
      const double d = rel * (scale[i * n + j] + mdl.extra_scale(i, j)) + 1e-30;
      const double want = mdl.f(pre, i, j);
      bool ok = !std::isnan(g) && std::fabs(g - want) <= d;
      if (!ok && mdl.jumps && !std::isnan(g)) {
        ok = std::fabs(g - mdl.f(pre - d, i, j)) <= 2 * d || std::fabs(g - mdl.f(pre + d, i, j)) <= 2 * d;
      }
      if (!ok && bad++ < 8) report << "\n  (" << i << ", " << j << ") got " << g << ", expected " << want;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << m * n << " elements differ (rel " << rel
                                       << "):" << report.str() << "\n  case: " << c.describe();
}

/// The layouts a case runs in: all four transposes, aligned and misaligned,
/// beta 0 (NaN-poisoned C) and beta != 0, drawn from the seed.
std::vector<layout> layouts(const shape& s, bool tf32, std::uint64_t seed) {
  std::vector<layout> v;
  for (int t = 0; t < 4; ++t) {
    layout l;
    l.ta = t & 1 ? op::transpose : op::none;
    l.tb = t & 2 ? op::transpose : op::none;
    l.s = s;
    l.tf32 = tf32;
    const std::uint64_t r = kf::test::mix64(seed * 31 + t);
    const bool aligned = (t + s.m) % 2 == 0;
    l.offset = aligned ? 0 : 1;
    l.pad = aligned ? 4 * (r % 2) : (r % 3 == 0 ? 0 : r % 3 == 1 ? 1 : 37);
    l.alpha = r & 4 ? 1.0f : -0.75f;
    l.beta = r & 8 ? 0.0f : 0.5f;
    v.push_back(l);
  }
  return v;
}

/// Per-column bias values (random signs, never zero) on the device, past a 1-element offset.
struct bias_array {
  std::vector<float> host;
  kf::device_buffer<float> storage;
  const float* data;
  bias_array(std::size_t n, std::uint64_t seed) : host(random_vector<float>(n, seed)), storage(n + 1) {
    data = storage.data() + 1;  // misaligned for 16-byte access on purpose
    EXPECT_EQ(cudaMemcpy(storage.data() + 1, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  }
};

model bias_relu_model(const std::vector<float>* bias, bool relu, float threshold) {
  model mdl;
  mdl.f = [bias, relu, threshold](double v, std::size_t, std::size_t j) {
    if (bias != nullptr) v += (*bias)[j];
    if (relu && v <= threshold) v = 0;
    return v;
  };
  if (bias != nullptr) mdl.extra_scale = [bias](std::size_t, std::size_t j) { return std::fabs((*bias)[j]); };
  mdl.jumps = relu && threshold != 0.0f;
  return mdl;
}

// ---- the fused options -------------------------------------------------------

struct fused_param {
  matmul_variant variant;
  bool tf32;
};

std::string name_of(const ::testing::TestParamInfo<fused_param>& info) {
  return std::string(kf::to_string(info.param.variant)) + (info.param.tf32 ? "_tf32" : "_fp32");
}

class MatmulEpilogueFused : public ::testing::TestWithParam<fused_param> {};

TEST_P(MatmulEpilogueFused, BiasAndThresholdReluAgainstTheReference) {
  KF_SKIP_WITHOUT_GPU();
  const fused_param p = GetParam();
  if (p.tf32 && device_cc() < 80) GTEST_SKIP() << "TF32 tensor cores need compute capability 8.0";
  const float thresholds[] = {-0.25f, 0.0f, 0.25f};
  std::uint64_t seed = 1 + static_cast<std::uint64_t>(p.variant) * 1000 + p.tf32;
  // Plus one shape whose wgmma tiles are 128 x 256 (9 x 12 = 108 tiles: the
  // others run 128 x 64; tuning.hpp: choose_wgmma_block_n), and one unsplit
  // 128 x 64 shape (2 x 3 tiles, k too short to split): with n % 4 == 0, the
  // layouts with beta 0 and offset 0 run the wgmma kernel's staged epilogue
  // (shared memory + TMA stores), ragged in m and n.
  std::vector<shape> all = shapes();
  all.push_back({1090, 2900, 40});
  all.push_back({200, 136, 72});
  for (const shape& s : all) {
    const bias_array bias(s.n, seed);
    int t = 0;
    std::vector<layout> ls = layouts(s, p.tf32, seed);
    if (s.n % 4 == 0) {
      // One more: beta 0 (C NaN-poisoned) with 16-byte aligned rows of C, which
      // the wgmma kernel stores through shared memory and TMA.
      layout l = ls[0];
      l.offset = 0, l.pad = 4, l.beta = 0.0f, l.alpha = -0.75f;
      ls.push_back(l);
    }
    for (const layout& l : ls) {
      // Rotate through bias + ReLU, ReLU only, bias only, with thresholds around 0.
      const int form = (t + static_cast<int>(s.k)) % 3;
      const bool with_bias = form != 1, relu = form != 2;
      const float threshold = thresholds[(t + s.m) % 3];
      kf::matmul_options o;
      o.variant = p.variant;
      o.math = p.tf32 ? kf::math_mode::tf32 : kf::math_mode::exact;
      o.bias = with_bias ? bias.data : nullptr;
      o.relu = relu;
      o.relu_threshold = threshold;
      const launch_fn run = [&](const layout& c, const float* A, std::size_t lda, const float* B, std::size_t ldb,
                                float* C, std::size_t ldc) {
        kf::matmul<float>(c.ta, c.tb, c.s.m, c.s.n, c.s.k, c.alpha, A, lda, B, ldb, c.beta, C, ldc, o);
      };
      EXPECT_TRUE(check(l, run, bias_relu_model(with_bias ? &bias.host : nullptr, relu, threshold), seed++))
          << "bias=" << with_bias << " relu=" << relu << " threshold=" << threshold;
      ++t;
    }
  }
}

TEST_P(MatmulEpilogueFused, EmptyProductAppliesTheEpilogueToBetaC) {
  KF_SKIP_WITHOUT_GPU();
  const fused_param p = GetParam();
  if (p.tf32 && device_cc() < 80) GTEST_SKIP() << "TF32 tensor cores need compute capability 8.0";
  const shape s{37, 41, 0};
  const bias_array bias(s.n, 77);
  for (float beta : {0.0f, 0.5f}) {
    layout l;
    l.s = s, l.beta = beta, l.offset = 1, l.pad = 3, l.tf32 = p.tf32;
    kf::matmul_options o;
    o.variant = p.variant;
    o.math = p.tf32 ? kf::math_mode::tf32 : kf::math_mode::exact;
    o.bias = bias.data;
    o.relu = true;
    o.relu_threshold = 0.25f;
    const launch_fn run = [&](const layout& c, const float* A, std::size_t lda, const float* B, std::size_t ldb,
                              float* C, std::size_t ldc) {
      kf::matmul<float>(c.ta, c.tb, c.s.m, c.s.n, 0, c.alpha, A, lda, B, ldb, c.beta, C, ldc, o);
    };
    EXPECT_TRUE(check(l, run, bias_relu_model(&bias.host, true, 0.25f), 5));
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, MatmulEpilogueFused,
                         ::testing::Values(fused_param{matmul_variant::warp_tiled, false},
                                           fused_param{matmul_variant::large_tile, false},
                                           fused_param{matmul_variant::best, false},
                                           fused_param{matmul_variant::tensor_core_tf32, true},
                                           fused_param{matmul_variant::best, true}),
                         name_of);

// ---- user functors through <kernelforge/matmul.cuh> ------------------------------

class MatmulEpilogueFunctor : public ::testing::TestWithParam<fused_param> {
 protected:
  void SetUp() override {
    if (!kf::test::gpu_unavailable_reason().empty()) GTEST_SKIP() << kf::test::gpu_unavailable_reason();
    if (GetParam().tf32 && device_cc() < 80) GTEST_SKIP() << "TF32 tensor cores need compute capability 8.0";
  }
  kf::matmul_options options() const {
    kf::matmul_options o;
    o.variant = GetParam().variant;
    o.math = GetParam().tf32 ? kf::math_mode::tf32 : kf::math_mode::exact;
    return o;
  }
  /// Runs `launch` over every shape and layout (k == 0 included) against `mdl`.
  void run_all(const std::function<launch_fn(const shape&)>& launch_for,
               const std::function<model(const shape&)>& mdl) {
    std::uint64_t seed = 100 + static_cast<std::uint64_t>(GetParam().variant) * 1000 + GetParam().tf32;
    std::vector<shape> all = shapes();
    all.push_back({29, 31, 0});
    for (const shape& s : all) {
      for (const layout& l : layouts(s, GetParam().tf32, seed)) EXPECT_TRUE(check(l, launch_for(s), mdl(s), seed++));
    }
  }
};

TEST_P(MatmulEpilogueFunctor, Clamp) {
  const kf::matmul_options o = options();
  const kf::epilogue::clamp ep{-0.5f, 1.5f};
  run_all(
      [&](const shape&) -> launch_fn {
        return [&](const layout& c, const float* A, std::size_t lda, const float* B, std::size_t ldb, float* C,
                   std::size_t ldc) {
          kf::matmul<float>(c.ta, c.tb, c.s.m, c.s.n, c.s.k, c.alpha, A, lda, B, ldb, c.beta, C, ldc, ep, o);
        };
      },
      [](const shape&) {
        model mdl;  // clamp is 1-Lipschitz: no jump
        mdl.f = [](double v, std::size_t, std::size_t) { return std::min(std::max(v, -0.5), 1.5); };
        return mdl;
      });
}

TEST_P(MatmulEpilogueFunctor, ResidualAddWithState) {
  const kf::matmul_options o = options();
  std::vector<float> r_host;
  kf::device_buffer<float> r_dev(1);
  std::size_t ldr = 0;
  run_all(
      [&](const shape& s) -> launch_fn {
        ldr = s.n + 3;
        r_host = random_vector<float>(std::max<std::size_t>(s.m * ldr, 1), s.m * 7 + s.n);
        r_dev = kf::to_device(r_host);
        return [&](const layout& c, const float* A, std::size_t lda, const float* B, std::size_t ldb, float* C,
                   std::size_t ldc) {
          kf::matmul<float>(c.ta, c.tb, c.s.m, c.s.n, c.s.k, c.alpha, A, lda, B, ldb, c.beta, C, ldc,
                            user_ops::residual_add{r_dev.data(), ldr}, o);
        };
      },
      [&](const shape&) {
        model mdl;
        mdl.f = [&](double v, std::size_t i, std::size_t j) { return v + r_host[i * ldr + j]; };
        mdl.extra_scale = [&](std::size_t i, std::size_t j) { return std::fabs(r_host[i * ldr + j]); };
        return mdl;
      });
}

TEST_P(MatmulEpilogueFunctor, ExtendedLambdaSeesRowAndColumn) {
  const kf::matmul_options o = options();
  run_all(
      [&](const shape&) -> launch_fn {
        return [&](const layout& c, const float* A, std::size_t lda, const float* B, std::size_t ldb, float* C,
                   std::size_t ldc) {
          user_ops::lambda_matmul(c.ta, c.tb, c.s.m, c.s.n, c.s.k, c.alpha, A, lda, B, ldb, c.beta, C, ldc, o);
        };
      },
      [](const shape&) {
        model mdl;
        mdl.f = [](double v, std::size_t i, std::size_t j) {
          return v + 0.25 * static_cast<double>(i % 7) - 0.125 * static_cast<double>(j % 5);
        };
        mdl.extra_scale = [](std::size_t, std::size_t) { return 2.0; };  // |offset| <= 1.5
        return mdl;
      });
}

TEST_P(MatmulEpilogueFunctor, ComposedBiasReluThenClamp) {
  const kf::matmul_options o = options();
  std::vector<float> bias_host;
  kf::device_buffer<float> bias_dev(1);
  using composed = kf::epilogue::compose<kf::epilogue::bias_relu_threshold<float>, kf::epilogue::clamp>;
  run_all(
      [&](const shape& s) -> launch_fn {
        bias_host = random_vector<float>(s.n, s.n + 3);
        bias_dev = kf::to_device(bias_host);
        return [&](const layout& c, const float* A, std::size_t lda, const float* B, std::size_t ldb, float* C,
                   std::size_t ldc) {
          const composed ep{{bias_dev.data(), true, -0.25f}, {-1.0f, 2.0f}};
          kf::matmul<float>(c.ta, c.tb, c.s.m, c.s.n, c.s.k, c.alpha, A, lda, B, ldb, c.beta, C, ldc, ep, o);
        };
      },
      [&](const shape&) {
        model mdl = bias_relu_model(&bias_host, true, -0.25f);
        const auto inner = mdl.f;
        mdl.f = [inner](double v, std::size_t i, std::size_t j) {
          return std::min(std::max(inner(v, i, j), -1.0), 2.0);
        };
        return mdl;
      });
}

INSTANTIATE_TEST_SUITE_P(Variants, MatmulEpilogueFunctor,
                         ::testing::Values(fused_param{matmul_variant::warp_tiled, false},
                                           fused_param{matmul_variant::tensor_core_tf32, true},
                                           fused_param{matmul_variant::best, true}),
                         name_of);

// ---- validation of the functor path (no GPU needed: thrown before any CUDA call) ----

using kf::test::expect_error;
using kf::test::fake;

void call_clamp(std::size_t m, std::size_t n, std::size_t k, const float* A, std::size_t lda, const float* B,
                std::size_t ldb, float* C, std::size_t ldc, const kf::matmul_options& o) {
  kf::matmul<float>(op::none, op::none, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc, kf::epilogue::clamp{0.0f, 1.0f},
                    o);
}

TEST(MatmulEpilogueValidation, VariantsWithoutEpilogueAreUnsupported) {
  for (matmul_variant v : {matmul_variant::naive, matmul_variant::coalesced, matmul_variant::smem_tiled,
                           matmul_variant::blocktile_1d, matmul_variant::blocktile_2d, matmul_variant::vectorized}) {
    kf::matmul_options o;
    o.variant = v;
    expect_error(kf::errc::unsupported, "has no epilogue support",
                 [&] { call_clamp(4, 4, 4, fake(0x1000), 4, fake(0x2000), 4, fake(0x3000), 4, o); });
    expect_error(kf::errc::unsupported, "warp_tiled, tensor_core_tf32",
                 [&] { call_clamp(4, 4, 4, fake(0x1000), 4, fake(0x2000), 4, fake(0x3000), 4, o); });
  }
}

TEST(MatmulEpilogueValidation, FusedOptionsWithAFunctorAreAnError) {
  kf::matmul_options o;
  o.relu = true;
  expect_error(kf::errc::invalid_argument, "cannot be combined with an epilogue functor",
               [&] { call_clamp(4, 4, 4, fake(0x1000), 4, fake(0x2000), 4, fake(0x3000), 4, o); });
  o.relu = false;
  o.bias = fake(0x4000);
  expect_error(kf::errc::invalid_argument, "options.bias",
               [&] { call_clamp(4, 4, 4, fake(0x1000), 4, fake(0x2000), 4, fake(0x3000), 4, o); });
}

TEST(MatmulEpilogueValidation, SameArgumentChecksAsMatmul) {
  const kf::matmul_options o;
  expect_error(kf::errc::invalid_argument, "'A'",
               [&] { call_clamp(4, 4, 4, nullptr, 4, fake(0x2000), 4, fake(0x3000), 4, o); });
  expect_error(kf::errc::invalid_argument, "'C'",
               [&] { call_clamp(4, 4, 4, fake(0x1000), 4, fake(0x2000), 4, nullptr, 4, o); });
  expect_error(kf::errc::invalid_argument, "lda = 3",
               [&] { call_clamp(4, 4, 4, fake(0x1000), 3, fake(0x2000), 4, fake(0x3000), 4, o); });
  kf::matmul_options tc;
  tc.variant = matmul_variant::tensor_core_tf32;  // needs math_mode::tf32
  expect_error(kf::errc::invalid_argument, "math_mode::tf32",
               [&] { call_clamp(4, 4, 4, fake(0x1000), 4, fake(0x2000), 4, fake(0x3000), 4, tc); });
  // Empty products are no-ops: nothing is touched, no device needed.
  EXPECT_NO_THROW(call_clamp(0, 4, 4, nullptr, 4, nullptr, 4, nullptr, 4, o));
  EXPECT_NO_THROW(call_clamp(4, 0, 4, nullptr, 4, nullptr, 4, nullptr, 1, o));
}

}  // namespace
