// SPDX-License-Identifier: Apache-2.0
// Float's `best` in NHWC runs the NCHW kernels on transposed copies
// (nhwc_launch.cuh, nhwc_plan.hpp): checked bit for bit against the same call
// in NCHW on the same data, under exact math and for the layers fp32_emulated
// leaves to it (the stem), on the cases of each condition the route branches
// on (conv2d_nhwc_cases.hpp).
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

/// Whether the wgmma kernel is in this library and this device runs it.
bool wgmma_available() { return kf::detail::conv2d_wgmma_available(kf::get_device_info().device); }

/// Float's best in NHWC under `math` against the same call in NCHW on the same
/// data (x, the filter and y transposed on the host): bit for bit, since the
/// NHWC call runs the very NCHW kernels on transposed copies (the same plan:
/// it depends on the extents and the device only). The naive kernel, which
/// the NHWC call ran before, sums in another order and differs in the last
/// bits on most outputs of these cases.
void expect_nhwc_equals_nchw(const nhwc_case& c, kf::math_mode math) {
  const problem<float>& pr = problem_for<float>(c);
  const kf::conv2d_params& p = c.p;
  const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
  const std::size_t hw = p.in_height * p.in_width, rs = p.filter_height * p.filter_width;
  kf::conv2d_options options;
  options.math = math;
  options.relu = c.relu;
  options.relu_threshold = c.threshold;
  kf::device_buffer<float> y(c.y_offset + pr.y_n + 1);
  kf::test::poison(y.data(), y.size_bytes());
  kf::conv2d_forward<float>(p, pr.x_at(), pr.w_at(), pr.bias_at(), y.data() + c.y_offset, options);
  kf::conv2d_params nchw = p;
  nchw.layout = kf::conv2d_layout::nchw;
  const kf::device_buffer<float> x_nchw =
      kf::to_device(kf::test::transpose_inner(pr.x_host, p.batch, hw, p.in_channels));
  const kf::device_buffer<float> w_kcrs =
      kf::to_device(kf::test::transpose_inner(pr.w_host, p.out_channels, rs, p.in_channels));
  kf::device_buffer<float> y_nchw(pr.y_n);
  kf::test::poison(y_nchw.data(), y_nchw.size_bytes());
  kf::conv2d_forward<float>(nchw, x_nchw.data(), w_kcrs.data(), pr.bias_at(), y_nchw.data(), options);
  const std::vector<float> got = kf::to_host(y);
  const std::vector<float> want = kf::test::transpose_inner(kf::to_host(y_nchw), p.batch, p.out_channels, P * Q);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < pr.y_n; ++i) {
    if (std::memcmp(&got[c.y_offset + i], &want[i], sizeof(float)) != 0 && differ++ < 8) {
      ADD_FAILURE() << "y[" << i << "] = " << got[c.y_offset + i] << " in NHWC, " << want[i] << " in NCHW";
    }
  }
  EXPECT_EQ(differ, 0u) << "outputs differ from the NCHW call's";
  EXPECT_TRUE(std::isnan(got[c.y_offset + pr.y_n])) << "the element after y was written";
}

/// The cases of each condition the route branches on: all three copies (the
/// stem, C = 3, stride 2; Winograd with the ReLU; a split over C*R*S), the
/// filter used where it lies (1x1), x and the filter where they lie (C = 1), y
/// written where it lies (K = 1), a misaligned y the last transpose writes.
const char* const nchw_route_cases[] = {
    "stem_c3_29x29_k64_7x7_s2_p3_n3",
    "resnet_c64_28x28_k64_3x3_p1_n2_relu",
    "c72_9x9_k130_3x3_p1_n1",
    "c24_11x13_k257_1x1_n3",
    "c1_9x11_k16_3x3_p1",
    "c8_17x19_k1_3x3_p1",
    "misaligned_y_c16_9x7_k130_relu",
    "c16_23x21_k3_3x3_d2_p2",
};

const nhwc_case& case_named(const std::string& name) {
  for (const nhwc_case& c : nhwc_cases()) {
    if (name == c.name) return c;
  }
  ADD_FAILURE() << "no case " << name;
  return nhwc_cases().front();
}

TEST(Conv2dNhwcFloatBest, ExactRunsTheNchwKernels) {
  KF_SKIP_WITHOUT_GPU();
  for (const char* name : nchw_route_cases) {
    SCOPED_TRACE(name);
    expect_nhwc_equals_nchw(case_named(name), kf::math_mode::exact);
  }
}

// fp32_emulated hands the layers step 9 leaves (the stem: C < 32) to the exact
// kernels: in NHWC now the NCHW ones through the copies, as in NCHW.
TEST(Conv2dNhwcFloatBest, Fp32EmulatedStemRunsTheNchwKernels) {
  KF_SKIP_WITHOUT_GPU();
  if (!wgmma_available()) GTEST_SKIP() << "fp32_emulated runs on compute capability 9.0 with sm_90a code only";
  const nhwc_case& stem = case_named("stem_c3_29x29_k64_7x7_s2_p3_n3");
  ASSERT_NE(kf::detail::conv2d_fp32_emulated_unsupported_reason(
                stem.p.in_channels, stem.p.filter_height * stem.p.filter_width, stem.p.stride_h, stem.p.stride_w),
            nullptr)
      << "step 9 takes the stem: this test no longer tests the fallback";
  expect_nhwc_equals_nchw(stem, kf::math_mode::fp32_emulated);
}

}  // namespace
