// SPDX-License-Identifier: Apache-2.0
// conv2d_forward in the channels_last layout (params.layout = nhwc: x NHWC,
// weight KRSC, y NPQK) on the GPU, for float, __half and __nv_bfloat16, against
// the double reference (kernelforge/reference/conv.hpp), every output poisoned
// with NaN first (an element no kernel writes can never pass), plus one element
// past y that must stay NaN. Inputs: random_vector (magnitudes uniform in
// [1/8, 2], random signs, never zero, fixed seeds), rounded once to T.
//
// Variants: naive, best and implicit_gemm_wgmma for every type; float runs best
// twice, under math_mode::exact (the NCHW kernels through transposed copies:
// nhwc_launch.cuh) and tf32 (the wgmma kernel where it applies, else the same
// NCHW route, whose best takes mma.sync on sm_80+), and implicit_gemm_wgmma
// under tf32 (it refuses exact float math).
// implicit_gemm_wgmma by name:
//  - on a layer it does not compute (a stride above 8: none of the cases)
//    raises errc::unsupported naming the unmet condition, on every device, and
//    writes nothing;
//  - on a device other than sm_90, or from a library without sm_90a code
//    (conv2d_wgmma_available), raises errc::unsupported naming the variant and
//    writes nothing; the numeric check is then skipped with that reason;
//  - elsewhere runs and is checked like the others.
// Steps 10 and 11 (few_channels_mma, few_channels_persistent: 16-bit, C <= 4,
// R x S <= 64; few_channel_cases below) by force
// (conv2d_nhwc_few_channels_try_launch and
// conv2d_nhwc_few_channels_persistent_try_launch, variant rows "few_channels",
// "few_channels_persistent" and "few_channels_persistent_5_ctas": step 11 on
// the device's own grid, and on a grid of persistent_small_grid CTAs that loop
// over many bands each), on their cases only:
//  - on a layer its plan refuses (the few_refused_* cases) returns false and
//    writes nothing, on every device;
//  - on a device below sm_80 or a library without sm_80+ code returns false
//    and writes nothing; the numeric check is then skipped with that reason;
//  - elsewhere runs and is checked like the others (the tensor-core bound).
// best takes step 11 on the 16-bit layers its plan takes, else step 10 where
// its plan takes them, on sm_80+.
// best takes the wgmma kernel wherever it applies (strides up to 8; misaligned
// x or weight and channel counts off 16 bytes through its column fold) and
// falls back elsewhere (float: the NCHW kernels; 16-bit: naive), so it must give
// the right result on every case. A y one element off alignment
// must work on every variant (the wgmma kernel's stores included).
// Float's best under exact math runs the NCHW kernels of `best` on transposed
// copies (Conv2dNhwcFloatBest, conv2d_nhwc_float_route_test.cpp, checks it bit for bit against the NCHW call on
// the same data, and fp32_emulated's stem, which step 9 leaves to it): the
// implicit GEMM (fp32 FMA sums, the bound below), or Winograd F(2x2,3x3) on
// 3x3 stride-1 layers with C, K >= 64 (plan.hpp; 7 of the cases), held to its
// own worst case: every term of the algorithm (magnitudes summed: E, from
// winograd_bound.hpp, >= S) passes at most C + 12 roundings
// (conv2d_gpu_test.cpp counts them), so |y - ref| <= 2 (C + 12) u E. With E
// 5-16x S on these inputs (conv2d_gpu_test.cpp), that stays below half of one
// term's size S / (9 C) up to the cases' C = 136 (2.8e-4 S against 4.1e-4 S).
//
// Tolerance, per output, with S = sum |w| |x| + |bias| (the reference's error
// scale), n = C*R*S + 1 rounding steps (one per product-sum, one for the bias)
// and u = 2^-24 (fp32's unit roundoff):
//   fp32 sums (float under exact math: naive, the implicit GEMM):
//     |y - ref| <= 2 n u S.
//     Recursive summation in fp32 is within gamma_n S ~ n u S of the exact sum
//     whatever the order (Higham, Accuracy and Stability, 4.2); 2x covers
//     round-toward-zero accumulation (a tensor core's, up to 1 ulp an add).
//   TF32 (float under math_mode::tf32 where the wgmma kernel may run):
//     |y - ref| <= (2 * 2^-10 + 2^-20 + 2^-18 + 2 n u) S.
//     The kernel keeps the top 10 mantissa bits of each input (TF32), a
//     relative error below 2^-10 per input, so below 2 * 2^-10 + 2^-20 per
//     product; the products of TF32 values are exact in fp32 and summed as
//     above. 2^-18 S: the tensor core aligns the products of each k-group
//     (8 TF32, 16 f16/bf16) to the largest before adding, truncating each at
//     2^-23 of it: at most 16 * 2^-23 of the group's largest term.
//   __half and __nv_bfloat16 (fp32 accumulation, one rounding at the end):
//     |y - ref| <= u_T |ref| + (1 + u_T) (2 n u + tc) S + a_T,
//     u_T = 2^-11 (half) or 2^-8 (bf16), tc = 2^-18 where tensor cores may run
//     (as above) and 0 on naive, a_T = 2^-25 (half's underflow: half its
//     smallest subnormal) or 0 (bf16 has float's range). The inputs are T
//     exactly, their products exact in fp32 (11 x 11 or 8 x 8 significant bits),
//     the fp32 sum within (2 n u + tc) S, and the one rounding to T within
//     u_T of the fp32 sum.
// These bounds are proven worst cases, not random-sign estimates, so they
// cannot flake; they still catch wrong indexing: a wrong, lost or repeated
// tap, channel or filter moves an output by about |w| |x| ~ S / (n - 1), and
// every case keeps the fp32 bound below half that (2 n^2 u <= 1/2 for n <= 2048;
// Conv2dNhwcCases.BoundsCanFail checks it). Under TF32 the 2^-9 S term exceeds
// one term once C*R*S > 512 (seven cases): there a single wrong tap may pass, but
// not a wrong filter, pixel or image, which moves every term.
//
// The fused threshold ReLU (options.relu; y = v <= threshold ? 0 : v after the
// bias): an output whose reference lies within the tolerance of the threshold
// may be 0 or the value; every other one below it must be exactly 0, above it
// within the tolerance; at most half the outputs may lie in that band.
//
// The cases: conv2d_nhwc_cases.hpp (what they cover); the CPU checks that they
// do: conv2d_nhwc_cases_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conv2d_bounds.hpp"
#include "conv2d_cases.hpp"
#include "conv2d_nhwc_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/epilogue.cuh"
#include "kernelforge/kernels/conv2d/few_channels.hpp"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"
#include "winograd_bound.hpp"

namespace {

/// A few-channel step forced on the validated call (16-bit types and few_channel_cases() only).
enum class few_channels_step { none, one_band, persistent };

struct nhwc_variant {
  const char* name;
  kf::conv2d_variant variant;
  kf::math_mode math;
  /// Step 10 (conv2d_nhwc_few_channels_try_launch) or step 11
  /// (conv2d_nhwc_few_channels_persistent_try_launch) forced.
  few_channels_step few_channels = few_channels_step::none;
  /// Step 11: the most CTAs of its grid (0: the device's resident CTAs).
  std::size_t max_ctas = 0;
};

const nhwc_variant float_variants[] = {
    {"naive", kf::conv2d_variant::naive, kf::math_mode::exact},
    {"best_exact", kf::conv2d_variant::best, kf::math_mode::exact},
    {"best_tf32", kf::conv2d_variant::best, kf::math_mode::tf32},
    {"implicit_gemm_wgmma", kf::conv2d_variant::implicit_gemm_wgmma, kf::math_mode::tf32},
};
// 16-bit inputs are what the tensor cores multiply: the math mode does not matter.
const nhwc_variant half_variants[] = {
    {"naive", kf::conv2d_variant::naive, kf::math_mode::exact},
    {"best", kf::conv2d_variant::best, kf::math_mode::exact},
    {"implicit_gemm_wgmma", kf::conv2d_variant::implicit_gemm_wgmma, kf::math_mode::exact},
};
const nhwc_variant few_channels_forced[] = {
    {"few_channels", kf::conv2d_variant::best, kf::math_mode::exact, few_channels_step::one_band},
    {"few_channels_persistent", kf::conv2d_variant::best, kf::math_mode::exact, few_channels_step::persistent},
    {"few_channels_persistent_5_ctas", kf::conv2d_variant::best, kf::math_mode::exact, few_channels_step::persistent,
     persistent_small_grid},
};
static_assert(persistent_small_grid == 5, "the variant's name says its grid");

/// Whether the wgmma kernel is in this library and this device runs it.
bool wgmma_available() { return kf::detail::conv2d_wgmma_available(kf::get_device_info().device); }

/// Whether steps 10 and 11 are in this library and this device runs them (sm_80+).
bool few_channels_available() { return kf::detail::conv2d_few_channels_available(kf::get_device_info().device); }

/// |y - ref| <= rel_ref |ref| + rel_scale S + abs (top of file); S from
/// `scale` (Winograd's E) where set, else the problem's sum |w| |x| + |bias|.
struct bound {
  double rel_ref = 0, rel_scale = 0, abs = 0;
  const std::vector<double>* scale = nullptr;
};

/// Whether tensor cores may compute the call (then the TF32 and alignment
/// terms apply): the wgmma kernel by name where it runs, or best where the
/// layer, the pointers, the math mode and the device allow it.
template <class T>
bool tensor_cores_may_run(const nhwc_variant& v, const problem<T>& pr) {
  if (v.variant == kf::conv2d_variant::implicit_gemm_wgmma || v.few_channels != few_channels_step::none) return true;
  if (v.variant != kf::conv2d_variant::best) return false;
  if (std::is_same_v<T, float>) return v.math == kf::math_mode::tf32;  // wgmma, else the NCHW route's mma.sync
  const kf::conv2d_params& p = pr.c->p;
  if (!std::is_same_v<T, float> && kf::detail::conv2d_best_takes_few_channels(few_channels_plan(p)) &&
      few_channels_available()) {
    return true;
  }
  return kf::detail::conv2d_nhwc_wgmma_unsupported_reason(p.stride_h, p.stride_w) == nullptr && wgmma_available();
}

template <class T>
bound bound_for(const nhwc_variant& v, const problem<T>& pr) {
  if (std::is_same_v<T, float> && v.variant == kf::conv2d_variant::best && v.math == kf::math_mode::exact &&
      !pr.winograd.empty()) {  // Winograd: 2 (C + 12) u E (top of file)
    return {0, 2 * (static_cast<double>(pr.c->p.in_channels) + 12) * fp32_u, 0, &pr.winograd};
  }
  // n = C*R*S products and the bias.
  const kf::test::tolerance t = kf::test::conv2d::sum_tolerance<T>(pr.crs + 1, tensor_cores_may_run(v, pr));
  return {t.rel_ref, t.rel, t.abs};
}

/// Every output of `got` (y starting at `offset`) against the reference, with
/// the case's ReLU (top of file).
template <class T>
::testing::AssertionResult check(const std::vector<T>& got, std::size_t offset, const problem<T>& pr, bound b) {
  const nhwc_case& c = *pr.c;
  const std::vector<double>& scale = b.scale != nullptr ? *b.scale : pr.scale;
  std::size_t bad = 0, near_threshold = 0;
  std::ostringstream report;
  for (std::size_t i = 0; i < pr.y_n; ++i) {
    const double g = kf::reference::to_double(got[offset + i]);
    const double pre = pr.expected[i];
    const double tol = b.rel_ref * std::fabs(pre) + b.rel_scale * scale[i] + b.abs;
    bool ok;
    if (std::isnan(g)) {
      ok = false;  // the reference is never NaN: a NaN is an unwritten or broken output
    } else if (!c.relu) {
      ok = std::fabs(g - pre) <= tol;
    } else if (std::fabs(pre - c.threshold) <= tol) {
      ok = g == 0 || std::fabs(g - pre) <= tol;  // either side of the jump
      ++near_threshold;
    } else if (pre <= c.threshold) {
      ok = g == 0;  // the ReLU stores an exact 0
    } else {
      ok = std::fabs(g - pre) <= tol;
    }
    if (!ok && bad++ < 8) {
      report << "\n  [" << i << "] got " << g << ", expected " << (c.relu && pre <= c.threshold ? 0.0 : pre)
             << " (tolerance " << tol << ")";
    }
  }
  if (bad == 0 && near_threshold * 2 <= pr.y_n) return ::testing::AssertionSuccess();
  if (bad == 0) {
    return ::testing::AssertionFailure() << near_threshold << " of " << pr.y_n
                                         << " outputs lie within the tolerance of the threshold: the test is too loose";
  }
  return ::testing::AssertionFailure() << bad << " of " << pr.y_n << " outputs differ (|ref| x " << b.rel_ref
                                       << " + scale x " << b.rel_scale << " + " << b.abs << "):" << report.str();
}

/// Elements of `y` that are not NaN (written by someone).
template <class T>
std::size_t written(const kf::device_buffer<T>& y) {
  std::size_t n = 0;
  for (const T& v : kf::to_host(y)) n += std::isnan(kf::reference::to_double(v)) ? 0 : 1;
  return n;
}

/// What forcing step 10 or 11 on a case did.
enum class few_channels_outcome { launched, refused, unavailable };

/// Step v.few_channels forced on case `c` with epilogue `ep`; true once enqueued.
template <class T, class Epilogue>
bool try_few_channels(const nhwc_variant& v, const kf::detail::conv2d_args<T>& a, const Epilogue& ep) {
  const int device = kf::get_device_info().device;
  if (v.few_channels == few_channels_step::persistent) {
    return kf::detail::conv2d_nhwc_few_channels_persistent_try_launch(device, a, ep, nullptr, v.max_ctas);
  }
  return kf::detail::conv2d_nhwc_few_channels_try_launch(device, a, ep, nullptr);
}

/// Step v.few_channels forced on case `c` (its y: d_y at the case's offset).
/// Where its plan refuses the layer the launcher must return false on every
/// device, and where it returns false otherwise the device or the build must
/// lack the kernel; either way nothing may be written.
template <class T>
few_channels_outcome run_few_channels(const nhwc_variant& v, const nhwc_case& c, const problem<T>& pr,
                                      kf::device_buffer<T>& d_y) {
  const kf::conv2d_params& p = c.p;
  const kf::detail::conv2d_args<T> a =
      kf::detail::make_conv2d_args<T>(p, kf::conv2d_output_height(p), kf::conv2d_output_width(p), pr.x_at(), pr.w_at(),
                                      pr.bias_at(), d_y.data() + c.y_offset);
  const bool launched =
      c.relu ? try_few_channels(v, a, kf::epilogue::bias_relu_threshold<float>{nullptr, true, c.threshold})
             : try_few_channels(v, a, kf::epilogue::identity{});
  const char* refused = v.few_channels == few_channels_step::persistent
                            ? persistent_plan(p, persistent_small_grid).unsupported
                            : few_channels_plan(p).unsupported;
  if (launched && refused == nullptr) return few_channels_outcome::launched;
  EXPECT_FALSE(launched) << "launched a layer its plan refuses: " << refused;
  EXPECT_EQ(written(d_y), 0u) << "y was written";
  if (refused != nullptr) return few_channels_outcome::refused;
  EXPECT_FALSE(few_channels_available()) << "the launcher refused a layer its plan takes on a device that runs it";
  return few_channels_outcome::unavailable;
}

template <class T>
void run_case(const nhwc_variant& v, const nhwc_case& c) {
  const problem<T>& pr = problem_for<T>(c);
  const kf::conv2d_params& p = c.p;
  kf::device_buffer<T> d_y(c.y_offset + pr.y_n + 1);  // one element past y: must stay NaN
  kf::test::poison(d_y.data(), d_y.size_bytes());
  kf::conv2d_options options;
  options.variant = v.variant;
  options.math = v.math;
  options.relu = c.relu;
  options.relu_threshold = c.threshold;
  const auto call = [&] {
    kf::conv2d_forward<T>(p, pr.x_at(), pr.w_at(), pr.bias_at(), d_y.data() + c.y_offset, options);
  };
  if constexpr (!std::is_same_v<T, float>) {
    const few_channels_outcome forced =
        v.few_channels != few_channels_step::none ? run_few_channels(v, c, pr, d_y) : few_channels_outcome::launched;
    if (forced == few_channels_outcome::refused) return;
    if (forced == few_channels_outcome::unavailable) {
      const kf::device_info dev = kf::get_device_info();
      GTEST_SKIP() << v.name << " needs compute capability 8.0 and the library's sm_80+ code (this device: sm_"
                   << dev.cc_major << dev.cc_minor << "); checked that it refuses and writes nothing";
    }
  }
  if (v.variant == kf::conv2d_variant::implicit_gemm_wgmma) {
    const char* reason = kf::detail::conv2d_nhwc_wgmma_unsupported_reason(p.stride_h, p.stride_w);
    if (reason != nullptr) {  // the layer: refused on every device
      kf::test::expect_error(kf::errc::unsupported, reason, call);
      EXPECT_EQ(written(d_y), 0u) << "y was written";
      return;
    }
    if (!wgmma_available()) {
      kf::test::expect_error(kf::errc::unsupported, "implicit_gemm_wgmma", call);
      EXPECT_EQ(written(d_y), 0u) << "y was written";
      const kf::device_info dev = kf::get_device_info();
      GTEST_SKIP() << "implicit_gemm_wgmma needs compute capability 9.0 and a library built with 90 in "
                      "CMAKE_CUDA_ARCHITECTURES (this device: sm_"
                   << dev.cc_major << dev.cc_minor << "); checked that it refuses with errc::unsupported";
    }
  }
  if (v.few_channels == few_channels_step::none) call();
  const auto got = kf::to_host(d_y);
  if (c.y_offset) {
    ASSERT_TRUE(std::isnan(kf::reference::to_double(got[0]))) << "the element before y was written";
  }
  ASSERT_TRUE(std::isnan(kf::reference::to_double(got[c.y_offset + pr.y_n]))) << "the element after y was written";
  EXPECT_TRUE(check(got, c.y_offset, pr, bound_for<T>(v, pr)));
}

struct nhwc_param {
  dtype type;
  nhwc_variant variant;
  const nhwc_case* c;
};

void PrintTo(const nhwc_param& p, std::ostream* os) {
  *os << dtype_name(p.type) << "/" << p.variant.name << "/" << p.c->name;
}

/// Every type x its variants x every case: each case is a geometry or pointer
/// condition the variants' dispatch or indexing branches on. The 16-bit types
/// also run the few-channel cases on their variants and on steps 10 and 11 forced.
std::vector<nhwc_param> nhwc_params() {
  std::vector<nhwc_param> params;
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
    const nhwc_variant* begin = t == dtype::f32 ? std::begin(float_variants) : std::begin(half_variants);
    const nhwc_variant* end = t == dtype::f32 ? std::end(float_variants) : std::end(half_variants);
    for (const nhwc_variant* v = begin; v != end; ++v) {
      for (const nhwc_case& c : nhwc_cases()) params.push_back({t, *v, &c});
    }
    if (t == dtype::f32) continue;
    for (const nhwc_case& c : few_channel_cases()) {
      for (const nhwc_variant* v = begin; v != end; ++v) params.push_back({t, *v, &c});
      for (const nhwc_variant& f : few_channels_forced) params.push_back({t, f, &c});
    }
  }
  return params;
}

class Conv2dNhwc : public ::testing::TestWithParam<nhwc_param> {};

TEST_P(Conv2dNhwc, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  const nhwc_param& param = GetParam();
  const nhwc_case& c = *param.c;
  switch (param.type) {
    case dtype::f32: return run_case<float>(param.variant, c);
    case dtype::f16: return run_case<__half>(param.variant, c);
    case dtype::bf16: return run_case<__nv_bfloat16>(param.variant, c);
  }
}

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dNhwc, ::testing::ValuesIn(nhwc_params()),
                         [](const ::testing::TestParamInfo<nhwc_param>& info) {
                           return std::string(dtype_name(info.param.type)) + "_" + info.param.variant.name + "_" +
                                  info.param.c->name;
                         });

// N = 0 and K = 0 are no-ops on every variant and type (before any device
// check: implicit_gemm_wgmma by name too): nothing thrown, nothing written.
template <class T>
void expect_empty_calls_are_no_ops(const nhwc_variant* begin, const nhwc_variant* end) {
  const kf::conv2d_params full = nhwc(2, 16, 9, 9, 8, 3, 3, 1, 1, 1, 1);
  kf::device_buffer<T> x(2 * 9 * 9 * 16), w(8 * 9 * 16), y(2 * 9 * 9 * 8);
  kf::test::poison(y.data(), y.size_bytes());
  for (const nhwc_variant* v = begin; v != end; ++v) {
    for (bool empty_batch : {true, false}) {
      SCOPED_TRACE(std::string(dtype_name(dtype_of<T>())) + " " + v->name + (empty_batch ? ", N = 0" : ", K = 0"));
      kf::conv2d_params p = full;
      (empty_batch ? p.batch : p.out_channels) = 0;
      kf::conv2d_options options;
      options.variant = v->variant;
      options.math = v->math;
      EXPECT_NO_THROW(kf::conv2d_forward<T>(p, x.data(), w.data(), nullptr, y.data(), options));
    }
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(written(y), 0u) << "an empty call wrote y";
}

TEST(Conv2dNhwcEmpty, BatchOrOutputChannelsZeroIsANoOp) {
  KF_SKIP_WITHOUT_GPU();
  expect_empty_calls_are_no_ops<float>(std::begin(float_variants), std::end(float_variants));
  expect_empty_calls_are_no_ops<__half>(std::begin(half_variants), std::end(half_variants));
  expect_empty_calls_are_no_ops<__nv_bfloat16>(std::begin(half_variants), std::end(half_variants));
}

}  // namespace
