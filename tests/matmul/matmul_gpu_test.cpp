// SPDX-License-Identifier: Apache-2.0
// GPU tests of kf::matmul: every variant on every shape of matmul_shapes(), against the
// double-precision CPU reference (tolerances: matmul_case.hpp). Skipped with
// the reason where there is no GPU.
//
// Covering design (the full product of variants x shapes x transposes x alpha
// x beta x 3 paddings x alignment would be ~10^4 cases): one test case per
// variant x shape runs all four transpose combinations, each with alpha, beta,
// paddings and pointer offset drawn from a seeded generator (reproducible:
// the seed is the variant, shape and transposes). Two of the four cases use an
// "aligned" layout (offset 0, leading dimensions multiples of 4: the 16-byte
// paths of vectorized, warp_tiled and large_tile), two a random one (paddings 0, 1 or 37
// elements, offset 0 or 1 element: the scalar fallbacks); which two alternates
// with the shape, so every transpose meets both. The Scalars tests then run
// every alpha x beta x padding value (alpha 1, -0.5; beta 0, 1, 0.25; padding 0, 1, 37) for every variant.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "matmul_case.hpp"
#include "kernelforge/reference/matmul.hpp"

namespace kf {
// Readable parameters in test output and test names (instead of raw bytes).
inline void PrintTo(matmul_variant v, std::ostream* os) { *os << to_string(v); }
}  // namespace kf

namespace {

using kf::matmul_variant;
using kf::test::matmul_case;
using kf::test::matmul_shape;
using kf::test::precision;

int device_cc() {
  static const int cc = [] {
    const kf::device_info info = kf::get_device_info();
    return info.cc_major * 10 + info.cc_minor;
  }();
  return cc;
}

const std::vector<matmul_variant>& float_variants() {
  static const std::vector<matmul_variant> v = {
      matmul_variant::naive,        matmul_variant::coalesced,    matmul_variant::smem_tiled,
      matmul_variant::blocktile_1d, matmul_variant::blocktile_2d, matmul_variant::vectorized,
      matmul_variant::warp_tiled,   matmul_variant::large_tile,   matmul_variant::tensor_core_tf32,
      matmul_variant::best};
  return v;
}

const std::vector<matmul_variant>& double_variants() {
  static const std::vector<matmul_variant> v = {matmul_variant::naive, matmul_variant::smem_tiled,
                                                matmul_variant::blocktile_2d, matmul_variant::best};
  return v;
}

/// The variants compiled for __half and __nv_bfloat16.
const std::vector<matmul_variant>& half_variants() {
  static const std::vector<matmul_variant> v = {matmul_variant::naive, matmul_variant::tensor_core_f16,
                                                matmul_variant::wgmma_f16, matmul_variant::best};
  return v;
}

template <class T>
constexpr bool is_16bit = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// How a variant runs on this machine: its options and precision, or the error it must raise.
struct variant_plan {
  kf::matmul_options options;
  precision prec = precision::exact;
  bool expect_unsupported = false;
  std::string why;
};

template <class T>
variant_plan plan_for(matmul_variant v) {
  variant_plan p;
  p.options.variant = v;
  if constexpr (is_16bit<T>) {
    p.prec = precision::fp32_accumulate;
    if ((v == matmul_variant::tensor_core_f16 || v == matmul_variant::wgmma_f16) && device_cc() < 80) {
      p.expect_unsupported = true;
      p.why = "fp16 / bf16 tensor cores need compute capability 8.0; this GPU is " + std::to_string(device_cc());
    }
    return p;
  }
  if (v == matmul_variant::tensor_core_tf32) {
    p.options.math = kf::math_mode::tf32;
    p.prec = precision::tf32;
    if (device_cc() < 80) {
      p.expect_unsupported = true;
      p.why = "TF32 tensor cores need compute capability 8.0; this GPU is " + std::to_string(device_cc());
    }
  }
  return p;
}

/// Distinct seeds per element type (__half and __nv_bfloat16 have the same size).
template <class T>
constexpr std::uint64_t type_salt() {
  return sizeof(T) + (std::is_same_v<T, __nv_bfloat16> ? 16 : 0);
}

std::uint64_t seed_of(matmul_variant v, std::size_t shape_index, int transposes, std::uint64_t salt) {
  return kf::test::mix64((static_cast<std::uint64_t>(v) << 32) ^ (shape_index << 8) ^ (std::uint64_t(transposes) << 4) ^
                         salt);
}

/// Padding that makes a row of `cols` elements a whole number of 16-byte
/// chunks (float and double: a multiple of 4 elements; 16-bit types: 8), plus
/// `extra` (32: a multiple of both).
template <class T>
std::size_t aligning_pad(std::size_t cols, std::size_t extra) {
  constexpr std::size_t v = sizeof(T) == 2 ? 8 : 4;
  return (v - cols % v) % v + extra;
}

template <class T>
matmul_case<T> random_case(const matmul_shape& s, int transposes, bool aligned, std::uint64_t seed) {
  static const std::size_t pads[] = {0, 1, 37};
  static const double betas[] = {0.0, 1.0, 0.25};
  std::uint64_t r = kf::test::mix64(seed);
  matmul_case<T> c;
  c.shape = s;
  c.trans_a = transposes & 1 ? kf::op::transpose : kf::op::none;
  c.trans_b = transposes & 2 ? kf::op::transpose : kf::op::none;
  c.alpha = static_cast<kf::compute_t<T>>(r & 1 ? 1.0 : -0.5);
  c.beta = static_cast<kf::compute_t<T>>(betas[(r >> 1) % 3]);
  const std::size_t a_cols = c.trans_a == kf::op::none ? s.k : s.m;
  const std::size_t b_cols = c.trans_b == kf::op::none ? s.n : s.k;
  if (aligned) {
    c.pad_a = aligning_pad<T>(a_cols, (r >> 4) & 1 ? 32 : 0);
    c.pad_b = aligning_pad<T>(b_cols, (r >> 5) & 1 ? 32 : 0);
    c.pad_c = aligning_pad<T>(s.n, (r >> 6) & 1 ? 32 : 0);
    c.offset = 0;
  } else {
    c.pad_a = pads[(r >> 8) % 3];
    c.pad_b = pads[(r >> 12) % 3];
    c.pad_c = pads[(r >> 16) % 3];
    c.offset = (r >> 20) & 1;
  }
  return c;
}

/// Runs the four transpose combinations of one variant x shape.
template <class T>
void run_all_transposes(matmul_variant v, std::size_t shape_index, const matmul_shape& s, bool sampled) {
  const variant_plan p = plan_for<T>(v);
  for (int t = 0; t < 4; ++t) {
    const bool aligned = ((t + shape_index) % 2) == 0;
    const std::uint64_t seed = seed_of(v, shape_index, t, type_salt<T>());
    matmul_case<T> c = random_case<T>(s, t, aligned, seed);
    c.sampled = sampled;
    SCOPED_TRACE(std::string(kf::to_string(v)) + " " + c.describe());
    if (p.expect_unsupported) {
      try {
        kf::test::check_matmul(c, p.options, p.prec, seed);
        ADD_FAILURE() << "expected errc::unsupported (" << p.why << ")";
      } catch (const kf::error& e) {
        EXPECT_EQ(e.code(), kf::errc::unsupported) << e.what();
      }
      continue;
    }
    EXPECT_TRUE(kf::test::check_matmul(c, p.options, p.prec, seed));
  }
}

std::string shape_name(std::size_t index) {
  const matmul_shape s =
      index < kf::test::matmul_shapes().size() ? kf::test::matmul_shapes()[index] : kf::test::huge_shape();
  return kf::test::to_string(s);
}

using variant_shape = std::tuple<matmul_variant, std::size_t>;  // shape index; matmul_shapes().size() = huge

std::string param_name(const ::testing::TestParamInfo<variant_shape>& info) {
  return std::string(kf::to_string(std::get<0>(info.param))) + "_" + shape_name(std::get<1>(info.param));
}

std::vector<variant_shape> product(const std::vector<matmul_variant>& variants, bool with_huge) {
  std::vector<variant_shape> out;
  for (matmul_variant v : variants) {
    for (std::size_t i = 0; i < kf::test::matmul_shapes().size(); ++i) out.emplace_back(v, i);
  }
  if (with_huge) {
    // Every variant, the tutorial steps too: at under 1 s each (naive: ~0.3 s
    // per product on an H200) the 4095 x 4097 x 4093 case is affordable.
    for (matmul_variant v : variants) out.emplace_back(v, kf::test::matmul_shapes().size());
  }
  return out;
}

template <class T>
void run_param(const variant_shape& param) {
  const auto [v, index] = param;
  const bool huge = index == kf::test::matmul_shapes().size();
  run_all_transposes<T>(v, index, huge ? kf::test::huge_shape() : kf::test::matmul_shapes()[index], huge);
}

// ---- every variant x every shape, all four transposes ------------------------
class MatmulFloat : public ::testing::TestWithParam<variant_shape> {};
TEST_P(MatmulFloat, AllTransposes) {
  KF_SKIP_WITHOUT_GPU();
  run_param<float>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, MatmulFloat, ::testing::ValuesIn(product(float_variants(), true)), param_name);

class MatmulDouble : public ::testing::TestWithParam<variant_shape> {};
TEST_P(MatmulDouble, AllTransposes) {
  KF_SKIP_WITHOUT_GPU();
  run_param<double>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, MatmulDouble, ::testing::ValuesIn(product(double_variants(), true)), param_name);

// __half and __nv_bfloat16: fp32 accumulation, one rounding to T (tolerance: matmul_case.hpp).
class MatmulHalf : public ::testing::TestWithParam<variant_shape> {};
TEST_P(MatmulHalf, AllTransposes) {
  KF_SKIP_WITHOUT_GPU();
  run_param<__half>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, MatmulHalf, ::testing::ValuesIn(product(half_variants(), true)), param_name);

class MatmulBfloat16 : public ::testing::TestWithParam<variant_shape> {};
TEST_P(MatmulBfloat16, AllTransposes) {
  KF_SKIP_WITHOUT_GPU();
  run_param<__nv_bfloat16>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Shapes, MatmulBfloat16, ::testing::ValuesIn(product(half_variants(), true)), param_name);

// ---- every alpha x beta x padding value, per variant -------------------------
/// 127 x 129 x 255 crosses a block-tile edge in m, n and k for every tile size;
/// the 18 alpha x beta x padding combinations cycle through the transposes.
template <class T>
void run_scalars(matmul_variant v) {
  const variant_plan p = plan_for<T>(v);
  if (p.expect_unsupported) GTEST_SKIP() << p.why << " (covered by the AllTransposes tests)";
  const matmul_shape s{127, 129, 255};
  int index = 0;
  for (double alpha : {1.0, -0.5}) {
    for (double beta : {0.0, 1.0, 0.25}) {
      for (std::size_t pad : {0, 1, 37}) {
        matmul_case<T> c;
        c.shape = s;
        c.trans_a = index & 1 ? kf::op::transpose : kf::op::none;
        c.trans_b = index & 2 ? kf::op::transpose : kf::op::none;
        c.alpha = static_cast<kf::compute_t<T>>(alpha);
        c.beta = static_cast<kf::compute_t<T>>(beta);
        c.pad_a = c.pad_b = c.pad_c = pad;
        const std::uint64_t seed = seed_of(v, 100 + index, index % 4, type_salt<T>());
        EXPECT_TRUE(kf::test::check_matmul(c, p.options, p.prec, seed)) << kf::to_string(v);
        ++index;
      }
    }
  }
}

class MatmulFloatScalars : public ::testing::TestWithParam<matmul_variant> {};
TEST_P(MatmulFloatScalars, AlphaBetaPadding) {
  KF_SKIP_WITHOUT_GPU();
  run_scalars<float>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Variants, MatmulFloatScalars, ::testing::ValuesIn(float_variants()),
                         [](const auto& info) { return std::string(kf::to_string(info.param)); });

class MatmulDoubleScalars : public ::testing::TestWithParam<matmul_variant> {};
TEST_P(MatmulDoubleScalars, AlphaBetaPadding) {
  KF_SKIP_WITHOUT_GPU();
  run_scalars<double>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Variants, MatmulDoubleScalars, ::testing::ValuesIn(double_variants()),
                         [](const auto& info) { return std::string(kf::to_string(info.param)); });

class MatmulHalfScalars : public ::testing::TestWithParam<matmul_variant> {};
TEST_P(MatmulHalfScalars, AlphaBetaPadding) {
  KF_SKIP_WITHOUT_GPU();
  run_scalars<__half>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Variants, MatmulHalfScalars, ::testing::ValuesIn(half_variants()),
                         [](const auto& info) { return std::string(kf::to_string(info.param)); });

class MatmulBfloat16Scalars : public ::testing::TestWithParam<matmul_variant> {};
TEST_P(MatmulBfloat16Scalars, AlphaBetaPadding) {
  KF_SKIP_WITHOUT_GPU();
  run_scalars<__nv_bfloat16>(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Variants, MatmulBfloat16Scalars, ::testing::ValuesIn(half_variants()),
                         [](const auto& info) { return std::string(kf::to_string(info.param)); });

// ---- edge cases -----------------------------------------------------------
/// k == 0: C = beta * C; beta == 0 writes zeros without reading C (NaN-poisoned here).
template <class T>
void check_k_zero(T beta) {
  const std::size_t m = 37, n = 29, ldc = 31;
  std::vector<T> c0 = kf::test::random_vector<T>(m * ldc, 5);
  kf::device_buffer<T> dc = kf::to_device(c0);
  if (beta == T(0)) kf::test::poison(dc.data(), dc.size_bytes());
  kf::matmul<T>(kf::op::none, kf::op::none, m, n, 0, T(2), nullptr, 0, nullptr, n, beta, dc.data(), ldc);
  const std::vector<T> got = kf::to_host(dc);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < ldc; ++j) {
      const double g = static_cast<double>(got[i * ldc + j]);
      if (j >= n) {  // padding: untouched (NaN when poisoned, else the old value)
        if (beta == T(0))
          ASSERT_TRUE(std::isnan(g)) << i << "," << j;
        else
          ASSERT_EQ(got[i * ldc + j], c0[i * ldc + j]) << i << "," << j;
      } else {
        const double expected = beta == T(0) ? 0.0 : static_cast<double>(beta * c0[i * ldc + j]);
        ASSERT_EQ(g, expected) << "(" << i << ", " << j << ") beta " << beta;
      }
    }
  }
}

TEST(MatmulGpu, KZeroScalesC) {
  KF_SKIP_WITHOUT_GPU();
  check_k_zero<float>(0.0f);
  check_k_zero<float>(0.5f);
  check_k_zero<double>(0.0);
  check_k_zero<double>(-3.0);
}

/// k == 0 for the 16-bit types: C = beta * C computed in fp32, rounded to T
/// (exact here: beta = 0.5 and values in [0.125, 2]); beta == 0 never reads C.
template <class T>
void check_k_zero_16bit(float beta) {
  const std::size_t m = 37, n = 29, ldc = 31;
  const std::vector<T> c0 = kf::test::random_vector<T>(m * ldc, 6);
  kf::device_buffer<T> dc = kf::to_device(c0);
  if (beta == 0.0f) kf::test::poison(dc.data(), dc.size_bytes());
  kf::matmul<T>(kf::op::none, kf::op::none, m, n, 0, 2.0f, nullptr, 0, nullptr, n, beta, dc.data(), ldc);
  const std::vector<T> got = kf::to_host(dc);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < ldc; ++j) {
      const double g = kf::reference::to_double(got[i * ldc + j]);
      const double old = kf::reference::to_double(c0[i * ldc + j]);
      if (j >= n) {
        if (beta == 0.0f)
          ASSERT_TRUE(std::isnan(g)) << i << "," << j;
        else
          ASSERT_EQ(g, old) << i << "," << j;
      } else {
        ASSERT_EQ(g, beta * old) << "(" << i << ", " << j << ") beta " << beta;
      }
    }
  }
}

TEST(MatmulGpu, KZeroScalesC16Bit) {
  KF_SKIP_WITHOUT_GPU();
  check_k_zero_16bit<__half>(0.0f);
  check_k_zero_16bit<__half>(0.5f);
  check_k_zero_16bit<__nv_bfloat16>(0.0f);
  check_k_zero_16bit<__nv_bfloat16>(0.5f);
}

TEST(MatmulGpu, EmptyProductIsANoOp) {
  KF_SKIP_WITHOUT_GPU();
  std::vector<float> c0 = kf::test::random_vector<float>(16, 9);
  kf::device_buffer<float> dc = kf::to_device(c0);
  for (matmul_variant v : float_variants()) {
    kf::matmul_options o;
    o.variant = v;
    o.math = kf::math_mode::tf32;
    kf::matmul<float>(kf::op::none, kf::op::none, 0, 4, 4, 1.f, nullptr, 4, nullptr, 4, 0.f, dc.data(), 4, o);
    kf::matmul<float>(kf::op::none, kf::op::none, 4, 0, 4, 1.f, nullptr, 4, nullptr, 0, 0.f, nullptr, 0, o);
  }
  EXPECT_EQ(kf::to_host(dc), c0);
}

/// A and B may be the same array (both are only read): C = A * A^T.
TEST(MatmulGpu, OperandsMayAlias) {
  KF_SKIP_WITHOUT_GPU();
  const std::size_t m = 70, k = 45;
  const std::vector<float> a = kf::test::random_vector<float>(m * k, 21);
  kf::device_buffer<float> da = kf::to_device(a), dc(m * m);
  std::vector<float> expected(m * m);
  std::vector<double> scale;
  kf::reference::matmul<float>(kf::op::none, kf::op::transpose, m, m, k, 1.f, a.data(), k, a.data(), k, 0.f,
                               expected.data(), m, &scale);
  for (matmul_variant v :
       {matmul_variant::naive, matmul_variant::warp_tiled, matmul_variant::large_tile, matmul_variant::best}) {
    kf::test::poison(dc.data(), dc.size_bytes());
    kf::matmul_options o;
    o.variant = v;
    kf::matmul<float>(kf::op::none, kf::op::transpose, m, m, k, 1.f, da.data(), k, da.data(), k, 0.f, dc.data(), m, o);
    EXPECT_TRUE(kf::test::all_close(kf::to_host(dc), expected,
                                    {kf::test::matmul_tolerance<float>(precision::exact, k), 0.0}, &scale))
        << kf::to_string(v);
  }
}

/// large_tile's 256 x 128 orientation on a fully checked product: on a 132-SM
/// H200, 3329 x 1025 is 126 tiles of 256 x 128 (one wave) against 135 of
/// 128 x 256 (plan.hpp: large_tile_prefers_256x128); k = 37 leaves a partial
/// k-slice. All four transposes, aligned and misaligned layouts.
TEST(MatmulGpu, LargeTileTallOrientation) {
  KF_SKIP_WITHOUT_GPU();
  const matmul_shape s{3329, 1025, 37};
  kf::matmul_options o;
  o.variant = matmul_variant::large_tile;
  for (int t = 0; t < 4; ++t) {
    for (bool aligned : {true, false}) {
      const std::uint64_t seed = seed_of(matmul_variant::large_tile, 200, t, aligned ? 1 : 2);
      const matmul_case<float> c = random_case<float>(s, t, aligned, seed);
      EXPECT_TRUE(kf::test::check_matmul(c, o, precision::exact, seed)) << c.describe();
    }
  }
}

/// Work is enqueued on options.stream (and nothing waits for the legacy stream).
TEST(MatmulGpu, RunsOnTheGivenStream) {
  KF_SKIP_WITHOUT_GPU();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (matmul_variant v : {matmul_variant::smem_tiled, matmul_variant::warp_tiled, matmul_variant::large_tile}) {
    matmul_case<float> c;
    c.shape = {1, 4096, 4096};  // split-k on warp_tiled / large_tile: workspace, product and reduction on `stream`
    c.beta = 0.25f;
    kf::matmul_options o;
    o.stream = stream;
    o.variant = v;
    EXPECT_TRUE(kf::test::check_matmul(c, o, precision::exact, 77)) << kf::to_string(v);
  }
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

/// best with math_mode::tf32 may use tensor cores on sm_80+ (TF32 tolerance);
/// with math_mode::exact it never does (exact tolerance, checked by every
/// MatmulFloat.AllTransposes/best_* test).
TEST(MatmulGpu, BestWithTf32) {
  KF_SKIP_WITHOUT_GPU();
  matmul_case<float> c;
  c.shape = {257, 263, 517};
  c.alpha = -0.5f;
  c.beta = 1.0f;
  kf::matmul_options o;
  o.math = kf::math_mode::tf32;
  EXPECT_TRUE(kf::test::check_matmul(c, o, precision::tf32, 31));
}

/// Faults or errors from a previous call must not be silently swallowed: a
/// variant tensor_core_tf32 call on a device below sm_80 raises unsupported
/// before any launch (and nothing is written).
TEST(MatmulGpu, TensorCoreNeedsSm80) {
  KF_SKIP_WITHOUT_GPU();
  if (device_cc() >= 80) GTEST_SKIP() << "this GPU runs tensor_core_tf32 (tested above)";
  kf::device_buffer<float> a(16), b(16), c(16);
  kf::matmul_options o;
  o.variant = matmul_variant::tensor_core_tf32;
  o.math = kf::math_mode::tf32;
  try {
    kf::matmul<float>(kf::op::none, kf::op::none, 4, 4, 4, 1.f, a.data(), 4, b.data(), 4, 0.f, c.data(), 4, o);
    FAIL() << "expected errc::unsupported";
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), kf::errc::unsupported) << e.what();
  }
}

}  // namespace
