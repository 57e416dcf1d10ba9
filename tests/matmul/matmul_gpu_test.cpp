// SPDX-License-Identifier: Apache-2.0
// GPU tests of kf::matmul: every variant on every shape of matmul_shapes(), against the
// double-precision CPU reference (tolerances: matmul_case.hpp). Skipped with
// the reason where there is no GPU.
//
// Covering design (the full product of variants x shapes x transposes x alpha
// x beta x 3 paddings x alignment would be ~10^4 checks): one typed suite over
// float, double, __half and __nv_bfloat16 (matmul_traits: each type's
// variants and tolerance), whose sweeps run, for every variant x shape, all
// four transpose combinations, each with alpha, beta,
// paddings and pointer offset drawn from a seeded generator (reproducible:
// the seed is the variant, shape and transposes). Two of the four cases use an
// "aligned" layout (offset 0, leading dimensions multiples of 4: the 16-byte
// paths of vectorized, warp_tiled and large_tile), two a random one (paddings 0, 1 or 37
// elements, offset 0 or 1 element: the scalar fallbacks); which two alternates
// with the shape, so every transpose meets both. AlphaBetaPadding then runs
// every alpha x beta x padding value (alpha 1, -0.5; beta 0, 1, 0.25; padding 0, 1, 37) for every variant.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "matmul_case.hpp"
#include "kernelforge/reference/matmul.hpp"

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

/// What the typed suite needs to know of each element type: the variants
/// compiled for it, the tolerance each runs under (matmul_case.hpp:
/// matmul_tolerance) and the compute capability it needs, and a seed salt
/// (__half and __nv_bfloat16 have the same size, so the salt is not sizeof).
template <class T>
struct matmul_traits;

template <>
struct matmul_traits<float> {
  static const std::vector<matmul_variant>& variants() {
    static const std::vector<matmul_variant> v = {
        matmul_variant::naive,        matmul_variant::coalesced,    matmul_variant::smem_tiled,
        matmul_variant::blocktile_1d, matmul_variant::blocktile_2d, matmul_variant::vectorized,
        matmul_variant::warp_tiled,   matmul_variant::large_tile,   matmul_variant::tensor_core_tf32,
        matmul_variant::best};
    return v;
  }
  static bool tensor_cores(matmul_variant v) { return v == matmul_variant::tensor_core_tf32; }
  static precision precision_of(matmul_variant v) { return tensor_cores(v) ? precision::tf32 : precision::exact; }
  static constexpr const char* tensor_core_name = "TF32";
  static constexpr std::uint64_t salt = 4;
};

template <>
struct matmul_traits<double> {
  static const std::vector<matmul_variant>& variants() {
    static const std::vector<matmul_variant> v = {matmul_variant::naive, matmul_variant::smem_tiled,
                                                  matmul_variant::blocktile_2d, matmul_variant::best};
    return v;
  }
  static bool tensor_cores(matmul_variant) { return false; }
  static precision precision_of(matmul_variant) { return precision::exact; }
  static constexpr const char* tensor_core_name = "";
  static constexpr std::uint64_t salt = 8;
};

/// __half and __nv_bfloat16: fp32 accumulation, one rounding to T (tolerance: matmul_case.hpp).
template <std::uint64_t Salt>
struct matmul_traits_16bit {
  static const std::vector<matmul_variant>& variants() {
    static const std::vector<matmul_variant> v = {matmul_variant::naive, matmul_variant::tensor_core_f16,
                                                  matmul_variant::wgmma_f16, matmul_variant::best};
    return v;
  }
  static bool tensor_cores(matmul_variant v) {
    return v == matmul_variant::tensor_core_f16 || v == matmul_variant::wgmma_f16;
  }
  static precision precision_of(matmul_variant) { return precision::fp32_accumulate; }
  static constexpr const char* tensor_core_name = "fp16 / bf16";
  static constexpr std::uint64_t salt = Salt;
};
template <>
struct matmul_traits<__half> : matmul_traits_16bit<2> {};
template <>
struct matmul_traits<__nv_bfloat16> : matmul_traits_16bit<18> {};

/// How a variant runs on this machine: its options and precision, or the error it must raise.
struct variant_plan {
  kf::matmul_options options;
  precision prec = precision::exact;
  bool expect_unsupported = false;
  std::string why;
};

template <class T>
variant_plan plan_for(matmul_variant v) {
  using traits = matmul_traits<T>;
  variant_plan p;
  p.options.variant = v;
  p.prec = traits::precision_of(v);
  if (p.prec == precision::tf32) p.options.math = kf::math_mode::tf32;
  if (traits::tensor_cores(v) && device_cc() < 80) {
    p.expect_unsupported = true;
    p.why = std::string(traits::tensor_core_name) + " tensor cores need compute capability 8.0; this GPU is " +
            std::to_string(device_cc());
  }
  return p;
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

/// The variants a sweep runs: the type's list, or those of it named in the
/// environment variable KF_MATMUL_VARIANTS (comma-separated, e.g.
/// "large_tile,best": how scripts/gpu_check.sh runs one variant under a
/// sanitizer). A sweep left with none skips (it cannot pass by running nothing).
template <class T>
std::vector<matmul_variant> selected_variants() {
  const std::vector<matmul_variant>& all = matmul_traits<T>::variants();
  const char* env = std::getenv("KF_MATMUL_VARIANTS");
  if (env == nullptr || *env == '\0') return all;
  const std::string wanted = "," + std::string(env) + ",";
  std::vector<matmul_variant> out;
  for (matmul_variant v : all) {
    if (wanted.find("," + std::string(kf::to_string(v)) + ",") != std::string::npos) out.push_back(v);
  }
  return out;
}

/// Runs the four transpose combinations of one variant x shape; `shape_index`
/// seeds the data (matmul_shapes().size(): the huge shape).
template <class T>
void run_all_transposes(matmul_variant v, std::size_t shape_index, const matmul_shape& s, bool sampled) {
  const variant_plan p = plan_for<T>(v);
  for (int t = 0; t < 4; ++t) {
    const bool aligned = ((t + shape_index) % 2) == 0;
    const std::uint64_t seed = seed_of(v, shape_index, t, matmul_traits<T>::salt);
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

/// Every alpha x beta x padding value on 127 x 129 x 255, which crosses a
/// block-tile edge in m, n and k for every tile size; the 18 combinations
/// cycle through the transposes.
template <class T>
void run_scalars(matmul_variant v) {
  const variant_plan p = plan_for<T>(v);
  if (p.expect_unsupported) return;  // covered by AllTransposes
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
        const std::uint64_t seed = seed_of(v, 100 + index, index % 4, matmul_traits<T>::salt);
        EXPECT_TRUE(kf::test::check_matmul(c, p.options, p.prec, seed)) << kf::to_string(v) << " " << c.describe();
        ++index;
      }
    }
  }
}

// ---- the typed suite: float, double, __half, __nv_bfloat16 --------------------
// Each case sweeps every variant of its type (matmul_traits) and reports every
// failing variant x shape x transposes (the SCOPED_TRACE of each check).
template <class T>
class Matmul : public ::testing::Test {};

struct type_names {
  template <class T>
  static std::string GetName(int) {
    if (std::is_same_v<T, float>) return "float";
    if (std::is_same_v<T, double>) return "double";
    if (std::is_same_v<T, __half>) return "half";
    return "bfloat16";
  }
};

using element_types = ::testing::Types<float, double, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(Matmul, element_types, type_names);

/// Every variant x every shape of matmul_shapes(), all four transposes.
TYPED_TEST(Matmul, AllTransposes) {
  KF_SKIP_WITHOUT_GPU();
  const std::vector<matmul_variant> variants = selected_variants<TypeParam>();
  if (variants.empty()) GTEST_SKIP() << "KF_MATMUL_VARIANTS names none of this type's variants";
  for (matmul_variant v : variants) {
    for (std::size_t i = 0; i < kf::test::matmul_shapes().size(); ++i) {
      run_all_transposes<TypeParam>(v, i, kf::test::matmul_shapes()[i], false);
    }
  }
}

/// Every variant, the tutorial steps too, on huge_shape() (checked on a sample of
/// entries): at under 1 s each (naive: ~0.3 s per product on an H200) the
/// 4095 x 4097 x 4093 case is affordable. (The name carries the shape, so that
/// a gtest filter such as -*4095* leaves it out.)
TYPED_TEST(Matmul, AllTransposes4095x4097x4093) {
  KF_SKIP_WITHOUT_GPU();
  const std::vector<matmul_variant> variants = selected_variants<TypeParam>();
  if (variants.empty()) GTEST_SKIP() << "KF_MATMUL_VARIANTS names none of this type's variants";
  for (matmul_variant v : variants) {
    run_all_transposes<TypeParam>(v, kf::test::matmul_shapes().size(), kf::test::huge_shape(), true);
  }
}

/// Every alpha x beta x padding value, per variant.
TYPED_TEST(Matmul, AlphaBetaPadding) {
  KF_SKIP_WITHOUT_GPU();
  const std::vector<matmul_variant> variants = selected_variants<TypeParam>();
  if (variants.empty()) GTEST_SKIP() << "KF_MATMUL_VARIANTS names none of this type's variants";
  for (matmul_variant v : variants) run_scalars<TypeParam>(v);
}

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
  for (matmul_variant v : matmul_traits<float>::variants()) {
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
/// Matmul/float.AllTransposes sweep).
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
