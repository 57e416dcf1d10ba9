// SPDX-License-Identifier: Apache-2.0
// conv2d's gradients on the GPU (<kernelforge/conv_backward.hpp>):
// conv2d_backward_data (dx) and conv2d_backward_filter (dw, dbias) for every
// layout, type and math mode x every variant (naive, implicit_gemm,
// implicit_gemm_wgmma, best) x the
// cases below, against the double references of
// kernelforge/reference/conv_backward.hpp. Every output buffer is poisoned with
// NaN first (an element no kernel writes can never pass, and NaN never passes),
// with one element past the output that must stay NaN (and one before it where
// the output is misaligned). Inputs: random_vector (magnitudes uniform in
// [1/8, 2], random signs, never zero, fixed seeds), rounded once to T. The
// ReLU mask's relu_y is the forward's own output: kf::conv2d_forward on the
// GPU with options.relu, the same x and weight, no bias, so about half the
// outputs are clipped (checked: 20-80%).
//
// Configurations: float NCHW and NHWC, each under math_mode::exact and tf32;
// __half and __nv_bfloat16 NHWC.
//
// Tolerance, per output, with S the reference's error scale (the sum of |term|
// over its terms: |w| |dy| for dx, |dy| |x| for dw, |dy| for dbias), n the most
// terms any output of the call sums that are not zero (dx: K x the taps of one
// filter that reach one input pixel, at most K R S; dw: N x the output pixels
// whose tap lies inside the image, at most N P Q; dbias: N P Q) and u = 2^-24:
//   fp32 sums (float: naive, and implicit_gemm / implicit_gemm_wgmma / best
//   under exact math, which
//   run dx on the forward's exact kernels and dw on the fp32 SGEMM, or NCHW
//   under best on gradient step 5's fp32 implicit GEMM; dbias always):
//     |got - ref| <= 2 n u S.
//     Recursive summation in fp32 is within gamma_n S ~ n u S of the exact sum
//     whatever the order or tree (Higham, Accuracy and Stability, 4.2: split-k
//     and tiled reductions included), 2x covers round-toward-zero accumulation
//     (a tensor core's). Adding an exact zero is exact: the zeros of the spread
//     dy (stride > 1 or the ReLU mask on the implicit path) and of im2col's
//     padding cost no rounding, so n counts the non-zero terms only.
//   TF32 (float under math_mode::tf32 on implicit_gemm / best: dx on the
//   forward's TF32 kernels, dw on the TF32 tensor-core matmul -- or, NHWC on
//   sm_90 under implicit_gemm_wgmma and best, on gradient step 4, whose x the
//   tensor cores read truncated to TF32 and whose dy_t is rounded:
//   Conv2dBackwardCases.WgmmaWgradTf32Cases lists what those cases cover):
//     |got - ref| <= (2 * 2^-10 + 2^-20 + 2^-18 + 2 n u) S,
//     as conv2d_nhwc_gpu_test.cpp: below 2^-10 per TF32 input (truncated or
//     rounded), 2^-20 for their product, 2^-18 S for the tensor core's
//     alignment of each k-group's products.
//   __half and __nv_bfloat16 (fp32 sums rounded once to T):
//     |got - ref| <= u_T |ref| + (1 + u_T) (2 n u + tc) S + a_T,
//     u_T = 2^-11 or 2^-8, tc = 2^-18 where tensor cores may run (implicit_gemm,
//     implicit_gemm_wgmma and best: dx's forward, or under best gradient
//     step 8's mma.sync by parity classes (Conv2dBackwardCases.DgradParityMmaCases
//     lists its cases), and dw's matmul or wgmma implicit GEMM) else 0, a_T =
//     2^-25 (half's underflow) or 0. dw's sums are
//     rounded to T once per chunk of images (a chunk keeps im2col under 1 GiB;
//     the wgmma wgrad rounds once after its fp32 split-k reduction): every case
//     here is one chunk (Conv2dBackwardCases.OneImageChunk), so once.
//   Winograd (float NCHW and NHWC under exact math, implicit_gemm / best, dx of
//   a 3x3 stride-1 dilation-1 layer with C, K >= 64, where the forward that
//   computes dx takes Winograd F(2x2,3x3); in NHWC through the NCHW kernels,
//   nhwc_launch.cuh): conv2d_gpu_test.cpp's bound
//   4 sqrt(K + 12) 2^-24 E, E the Winograd error scale (winograd_bound.hpp) of
//   that forward: dy (masked, spread) convolved with the filter turned by 180
//   degrees, K and C swapped (computed in NCHW, transposed for NHWC).
// The fp32 bounds are proven worst cases and catch a wrong, lost or repeated
// term, which moves an output by about S / n: every case keeps 2 n^2 u <= 1/2
// (Conv2dBackwardCases.BoundsCanFail). Under TF32 the 2^-9 S term exceeds one
// term once n > 512 (dx of the four K = 64 layers): there a single wrong tap
// may pass, not a wrong filter, channel, pixel or image.
//
// Cases: C and K of 1, 3, 5, 8, 17, 64; prime and odd H, W; N = 0, 1, 2, 3, 5;
// 1x1 (the NHWC x that is its own im2col matrix), 3x3, 5x5, 7x7 stride 2
// pad 3 with C = 3; stride 2 and 3 with input rows and columns no tap reads;
// dilation 2 (with and without stride); pad 0, and pads past the filter's
// reach (dx falls back to naive); the ReLU mask at thresholds 0 and 0.5; dbias
// and none; N = 0 (dw, dbias zeroed) and K = 0 (dx zeroed); inputs (dy, x,
// weight, relu_y) and outputs (dx, dw, dbias) one element off alignment; two
// N = 2, C = K = 64, 14x14 layers (with and without the mask) for the tensor
// cores' real tiles and Winograd; for the wgmma filter gradient (NHWC 16-bit,
// C and K multiples of 8, aligned x and dy: Conv2dBackwardCases.WgmmaWgradCases),
// K = 72 and C = 128 (a 128 x 128 tile, rows past K), K = C = 136 (two tiles
// each way, the second's boxes partly past K and C), C = 24 (a 64-wide tile
// mostly past C), stride 2 and 3 with overhanging patches, a 40 x 40 image (a
// split reduction), dw one element off alignment (element stores); for dx's
// forward reading the weight unturned (16-bit NHWC, C and K multiples of 8,
// dy and the weight aligned: Conv2dBackwardCases.DxUnturnedFilterCases) 1x1 at
// stride 2 and masked at stride 1, 5x5 and 7x7, R = 6 and 3 x 1 filters
// (filter-column k-steps, the latter cooperative), dilation 2 at stride 1,
// stride 2 over 13 x 11 with the mask at 0.5, with misaligned inputs keeping
// the turned copy. The references' cost: 1.2e8 multiply-adds in double per
// type and layout (5e8 in all, over the hardware threads).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conv2d_backward_cases.hpp"
#include "conv2d_bounds.hpp"
#include "conv2d_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/conv_backward.hpp"
#include "kernelforge/reference/conv.hpp"
#include "kernelforge/reference/conv_backward.hpp"
#include "test_support.hpp"
#include "winograd_bound.hpp"

namespace {

using namespace kf::test::conv2d_backward;  // the cases (conv2d_backward_cases.hpp)
using kf::test::conv2d::dtype;
using kf::test::conv2d::dtype_of;
using kf::test::conv2d::fp32_u;
using kf::test::conv2d::sum_tolerance;
using kf::test::conv2d::to_device_at;

// ---- configurations and variants ----------------------------------------------------

struct config {
  const char* name;
  dtype type;
  kf::conv2d_layout layout;
  kf::math_mode math;
};

const config configs[] = {
    {"f32_nchw_exact", dtype::f32, kf::conv2d_layout::nchw, kf::math_mode::exact},
    {"f32_nchw_tf32", dtype::f32, kf::conv2d_layout::nchw, kf::math_mode::tf32},
    {"f32_nhwc_exact", dtype::f32, kf::conv2d_layout::nhwc, kf::math_mode::exact},
    {"f32_nhwc_tf32", dtype::f32, kf::conv2d_layout::nhwc, kf::math_mode::tf32},
    // 16-bit inputs are what the tensor cores multiply: the math mode does not matter.
    {"f16_nhwc", dtype::f16, kf::conv2d_layout::nhwc, kf::math_mode::exact},
    {"bf16_nhwc", dtype::bf16, kf::conv2d_layout::nhwc, kf::math_mode::exact},
};

struct variant {
  const char* name;
  kf::conv2d_backward_variant value;
};

const variant variants[] = {
    {"naive", kf::conv2d_backward_variant::naive},
    {"implicit_gemm", kf::conv2d_backward_variant::implicit_gemm},
    {"implicit_gemm_wgmma", kf::conv2d_backward_variant::implicit_gemm_wgmma},
    {"best", kf::conv2d_backward_variant::best},
};

// ---- one case's inputs and references, per type and layout ------------------------

template <class T>
struct problem {
  const grad_case* c = nullptr;
  kf::conv2d_params p;  // in the layout
  std::size_t x_n = 0, w_n = 0, y_n = 0;
  term_counts terms;
  std::vector<double> dx, dx_scale, dw, dw_scale, db, db_scale;
  std::vector<double> dx_winograd_scale;  // float where dx_may_run_winograd, in the layout's order
  std::vector<double> dw_winograd_scale;  // float NCHW where best_runs_wgrad_winograd (gradient step 6)
  kf::device_buffer<T> x, w, dy, relu_y;
  [[nodiscard]] const T* x_at() const { return x.data() + c->in_offset; }
  [[nodiscard]] const T* w_at() const { return w.data() + c->in_offset; }
  [[nodiscard]] const T* dy_at() const { return dy.data() + c->in_offset; }
  [[nodiscard]] const T* relu_y_at() const { return c->relu ? relu_y.data() + c->in_offset : nullptr; }
};

/// Fraction of relu_y's values the mask clips (<= threshold).
template <class T>
double clipped_fraction(const std::vector<T>& relu_y, float threshold) {
  std::size_t clipped = 0;
  for (const T& v : relu_y) clipped += kf::reference::to_double(v) <= threshold ? 1 : 0;
  return relu_y.empty() ? 0.0 : static_cast<double>(clipped) / static_cast<double>(relu_y.size());
}

/// The inputs on the host and the device (each at the case's in_offset), the
/// forward's relu_y (on the GPU) and the references: built once per type,
/// layout and case.
template <class T>
const problem<T>& problem_for(kf::conv2d_layout layout, const grad_case& c) {
  static std::map<std::string, problem<T>> cache;
  problem<T>& pr = cache[std::string(c.name) + "/" + kf::to_string(layout)];
  if (pr.c != nullptr) return pr;
  kf::conv2d_params p = c.p;
  p.layout = layout;
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  pr.p = p;
  pr.x_n = p.batch * p.in_channels * p.in_height * p.in_width;
  pr.w_n = p.out_channels * p.in_channels * p.filter_height * p.filter_width;
  pr.y_n = p.batch * p.out_channels * P * Q;
  pr.terms = terms_of(p);
  const std::uint64_t seed =
      4100 + 10 * static_cast<std::uint64_t>(dtype_of<T>()) + (layout == kf::conv2d_layout::nhwc ? 5 : 0);
  const auto x = kf::test::random_vector<T>(pr.x_n, seed + 1);
  const auto w = kf::test::random_vector<T>(pr.w_n, seed + 2);
  const auto dy = kf::test::random_vector<T>(pr.y_n, seed + 3);
  pr.x = to_device_at(x, c.in_offset);
  pr.w = to_device_at(w, c.in_offset);
  pr.dy = to_device_at(dy, c.in_offset);
  std::vector<T> relu_y;
  if (c.relu) {
    pr.relu_y = kf::device_buffer<T>(c.in_offset + pr.y_n);
    kf::test::poison(pr.relu_y.data(), pr.relu_y.size_bytes());
    kf::conv2d_options forward;
    forward.relu = true;
    forward.relu_threshold = c.threshold;
    kf::conv2d_forward<T>(p, pr.x.data() + c.in_offset, pr.w.data() + c.in_offset, nullptr,
                          pr.relu_y.data() + c.in_offset, forward);
    const auto all = kf::to_host(pr.relu_y);
    relu_y.assign(all.begin() + static_cast<std::ptrdiff_t>(c.in_offset), all.end());
    const double clipped = clipped_fraction(relu_y, c.threshold);
    EXPECT_TRUE(clipped >= 0.2 && clipped <= 0.8)
        << c.name << ": the forward clips " << clipped << " of its outputs; the mask needs both kinds";
  }
  const kf::reference::conv2d_relu_mask<T> mask{c.relu ? relu_y.data() : nullptr, c.threshold};
  pr.dx.resize(pr.x_n);
  pr.dx_scale.resize(pr.x_n);
  kf::reference::conv2d_backward_data_exact(p, dy.data(), w.data(), pr.dx.data(), pr.dx_scale.data(), mask);
  pr.dw.resize(pr.w_n);
  pr.dw_scale.resize(pr.w_n);
  pr.db.resize(p.out_channels);
  pr.db_scale.resize(p.out_channels);
  kf::reference::conv2d_backward_filter_exact(p, x.data(), dy.data(), pr.dw.data(), pr.db.data(), pr.dw_scale.data(),
                                              pr.db_scale.data(), mask);
  if constexpr (std::is_same_v<T, float>) {
    if (layout == kf::conv2d_layout::nchw && kf::test::best_runs_wgrad_winograd(p)) {
      std::vector<float> masked = dy;  // as the kernels read dy: 0 where the forward's ReLU clipped
      for (std::size_t i = 0; i < masked.size() && !relu_y.empty(); ++i) {
        if (relu_y[i] <= c.threshold) masked[i] = 0.0f;
      }
      pr.dw_winograd_scale = kf::test::wgrad_winograd_scale(p, x, masked);
    }
    if (layout == kf::conv2d_layout::nchw && dx_may_run_winograd(p)) {
      const forward_inputs in = dx_forward_inputs(p, dy, w, relu_y, c.threshold);
      pr.dx_winograd_scale = kf::test::winograd_scale(dx_forward(p), in.spread, in.turned, nullptr);
    } else if (dx_may_run_winograd(p)) {  // NHWC: the same scale from the NCHW orders, transposed back
      using kf::test::transpose_inner;
      const std::size_t N = p.batch, C = p.in_channels, K = p.out_channels;
      const std::size_t hw = p.in_height * p.in_width, rs = p.filter_height * p.filter_width, pq = P * Q;
      kf::conv2d_params nchw = p;
      nchw.layout = kf::conv2d_layout::nchw;
      const std::vector<float> relu_y_nchw = relu_y.empty() ? relu_y : transpose_inner(relu_y, N, pq, K);
      const forward_inputs in = dx_forward_inputs(nchw, transpose_inner(dy, N, pq, K), transpose_inner(w, K, rs, C),
                                                  relu_y_nchw, c.threshold);
      pr.dx_winograd_scale =
          transpose_inner(kf::test::winograd_scale(dx_forward(nchw), in.spread, in.turned, nullptr), N, C, hw);
    }
  }
  pr.c = &c;
  return pr;
}

// ---- tolerances (top of file) ----------------------------------------------------------

/// Whether tensor cores may compute this call's products (float: only under
/// math_mode::tf32) on a path other than naive.
template <class T>
bool tensor_cores_may_run(const config& cfg, bool implicit_path) {
  return implicit_path && (!std::is_same_v<T, float> || cfg.math == kf::math_mode::tf32);
}

// ---- the runs ---------------------------------------------------------------------

struct grad_param {
  config cfg;
  variant v;
  std::size_t case_index;
};

void PrintTo(const grad_param& g, std::ostream* os) {
  *os << g.cfg.name << "/" << g.v.name << "/" << grad_cases()[g.case_index].name;
}

kf::conv2d_backward_options options_for(const grad_param& g, const grad_case& c) {
  kf::conv2d_backward_options o;
  o.variant = g.v.value;
  o.math = g.cfg.math;
  o.relu = c.relu;
  o.relu_threshold = c.threshold;
  return o;
}

/// A poisoned device buffer for an output of n elements at `offset`, with one
/// element past it (and `offset` before it) that must stay NaN.
template <class T>
kf::device_buffer<T> poisoned_output(std::size_t offset, std::size_t n) {
  kf::device_buffer<T> buffer(offset + n + 1);
  kf::test::poison(buffer.data(), buffer.size_bytes());
  return buffer;
}

/// `got` (an output at `offset` of n elements, from poisoned_output) has its
/// guard elements untouched.
template <class T>
::testing::AssertionResult guards_untouched(const std::vector<T>& got, std::size_t offset, std::size_t n) {
  for (std::size_t i = 0; i < offset; ++i) {
    if (!std::isnan(kf::reference::to_double(got[i]))) {
      return ::testing::AssertionFailure() << "element " << i << " before the output was written";
    }
  }
  if (!std::isnan(kf::reference::to_double(got[offset + n]))) {
    return ::testing::AssertionFailure() << "the element after the output was written";
  }
  return ::testing::AssertionSuccess();
}

template <class T>
void run_data(const grad_param& g) {
  const grad_case& c = grad_cases()[g.case_index];
  const problem<T>& pr = problem_for<T>(g.cfg.layout, c);
  kf::device_buffer<T> d_dx = poisoned_output<T>(c.out_offset, pr.x_n);
  kf::conv2d_backward_data<T>(pr.p, pr.dy_at(), pr.w_at(), d_dx.data() + c.out_offset, options_for(g, c),
                              pr.relu_y_at());
  const auto got = kf::to_host(d_dx);
  ASSERT_TRUE(guards_untouched(got, c.out_offset, pr.x_n));
  const bool implicit = g.v.value != kf::conv2d_backward_variant::naive && dx_runs_as_forward(pr.p);
  if (implicit && !pr.dx_winograd_scale.empty() && g.cfg.math == kf::math_mode::exact) {
    const double tol = kf::test::winograd_tolerance(dx_forward(pr.p));
    EXPECT_TRUE(kf::test::all_close(got, pr.dx, {tol, 0}, &pr.dx_winograd_scale, c.out_offset)) << "Winograd bound";
    return;
  }
  const kf::test::tolerance tol = sum_tolerance<T>(pr.terms.dx, tensor_cores_may_run<T>(g.cfg, implicit));
  EXPECT_TRUE(kf::test::all_close(got, pr.dx, tol, &pr.dx_scale, c.out_offset));
}

template <class T>
void run_filter(const grad_param& g) {
  const grad_case& c = grad_cases()[g.case_index];
  const problem<T>& pr = problem_for<T>(g.cfg.layout, c);
  const std::size_t k = pr.p.out_channels;
  kf::device_buffer<T> d_dw = poisoned_output<T>(c.out_offset, pr.w_n);
  kf::device_buffer<T> d_db = poisoned_output<T>(c.out_offset, k);
  kf::conv2d_backward_filter<T>(pr.p, pr.x_at(), pr.dy_at(), d_dw.data() + c.out_offset,
                                c.dbias ? d_db.data() + c.out_offset : nullptr, options_for(g, c), pr.relu_y_at());
  const auto got_dw = kf::to_host(d_dw);
  const auto got_db = kf::to_host(d_db);
  ASSERT_TRUE(guards_untouched(got_dw, c.out_offset, pr.w_n));
  const bool implicit = g.v.value != kf::conv2d_backward_variant::naive;
  if (g.v.value == kf::conv2d_backward_variant::best && g.cfg.math == kf::math_mode::exact &&
      !pr.dw_winograd_scale.empty()) {
    const double tol = kf::test::wgrad_winograd_tolerance(pr.p);
    EXPECT_TRUE(kf::test::all_close(got_dw, pr.dw, {tol, 0}, &pr.dw_winograd_scale, c.out_offset))
        << "dweight, Winograd bound";
  } else {
    const kf::test::tolerance tol = sum_tolerance<T>(pr.terms.dw, tensor_cores_may_run<T>(g.cfg, implicit));
    EXPECT_TRUE(kf::test::all_close(got_dw, pr.dw, tol, &pr.dw_scale, c.out_offset)) << "dweight";
  }
  if (!c.dbias) {
    for (const T& v : got_db) ASSERT_TRUE(std::isnan(kf::reference::to_double(v))) << "dbias = nullptr was written";
    return;
  }
  ASSERT_TRUE(guards_untouched(got_db, c.out_offset, k)) << "dbias";
  EXPECT_TRUE(kf::test::all_close(got_db, pr.db, sum_tolerance<T>(pr.terms.dbias, false), &pr.db_scale, c.out_offset))
      << "dbias";
}

std::vector<grad_param> grad_params() {
  std::vector<grad_param> params;
  for (const config& cfg : configs) {
    for (const variant& v : variants) {
      for (std::size_t i = 0; i < grad_cases().size(); ++i) params.push_back({cfg, v, i});
    }
  }
  return params;
}

std::string param_name(const ::testing::TestParamInfo<grad_param>& info) {
  return std::string(info.param.cfg.name) + "_" + info.param.v.name + "_" + grad_cases()[info.param.case_index].name;
}

class Conv2dBackwardData : public ::testing::TestWithParam<grad_param> {};
class Conv2dBackwardFilter : public ::testing::TestWithParam<grad_param> {};

TEST_P(Conv2dBackwardData, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  switch (GetParam().cfg.type) {
    case dtype::f32: return run_data<float>(GetParam());
    case dtype::f16: return run_data<__half>(GetParam());
    case dtype::bf16: return run_data<__nv_bfloat16>(GetParam());
  }
}

TEST_P(Conv2dBackwardFilter, MatchesReference) {
  KF_SKIP_WITHOUT_GPU();
  switch (GetParam().cfg.type) {
    case dtype::f32: return run_filter<float>(GetParam());
    case dtype::f16: return run_filter<__half>(GetParam());
    case dtype::bf16: return run_filter<__nv_bfloat16>(GetParam());
  }
}

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dBackwardData, ::testing::ValuesIn(grad_params()), param_name);
INSTANTIATE_TEST_SUITE_P(Conv, Conv2dBackwardFilter, ::testing::ValuesIn(grad_params()), param_name);

}  // namespace
