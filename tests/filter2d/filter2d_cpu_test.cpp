// SPDX-License-Identifier: Apache-2.0
// CPU tests of filter2d (no GPU needed): the reference on hand-computed cases,
// the border rule of the kernels against the reference's definition, `best`'s
// selection (plan.hpp), and argument validation (thrown before any CUDA call).
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernelforge/conv.hpp"
#include "kernelforge/error.hpp"
#include "kernelforge/kernels/filter2d/border.cuh"
#include "kernelforge/kernels/filter2d/plan.hpp"
#include "kernelforge/kernels/filter2d/tma_plan.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"

namespace {

namespace ref = kf::reference;

using kf::test::expect_error;
using kf::test::fake;

// ---- best's selection (plan.hpp) ----------------------------------------------

TEST(Filter2dPlan, BestWindowKernelIsRegisterWindowForEverySize) {
  // benchmarks/tuning/filter2d.md#best_window_kernel: register_window beat rolling_window at 3x3 and 5x5.
  static_assert(kf::detail::best_window_kernel(3) == kf::filter2d_variant::register_window);
  EXPECT_EQ(kf::detail::best_window_kernel(3), kf::filter2d_variant::register_window);
  EXPECT_EQ(kf::detail::best_window_kernel(5), kf::filter2d_variant::register_window);
  EXPECT_EQ(kf::detail::best_window_kernel(7), kf::filter2d_variant::register_window);
}

// ---- border rules -------------------------------------------------------------

TEST(ConvBorder, ReflectIsReflect101WithPeriodicRepeat) {
  using kf::border;
  // n = 5: ... 2 1 | 0 1 2 3 4 | 3 2 ...
  EXPECT_EQ(ref::border_index(-1, 5, border::reflect), 1);
  EXPECT_EQ(ref::border_index(-2, 5, border::reflect), 2);
  EXPECT_EQ(ref::border_index(5, 5, border::reflect), 3);
  EXPECT_EQ(ref::border_index(6, 5, border::reflect), 2);
  // Tiny image, filter reaching past the far edge: the mirror repeats (period 2(n-1) = 4).
  EXPECT_EQ(ref::border_index(-3, 3, border::reflect), 1);
  EXPECT_EQ(ref::border_index(-4, 3, border::reflect), 0);
  EXPECT_EQ(ref::border_index(-5, 3, border::reflect), 1);
  EXPECT_EQ(ref::border_index(5, 3, border::reflect), 1);
  EXPECT_EQ(ref::border_index(6, 3, border::reflect), 2);
  // n = 2: 0 1 | 0 1 0 1 ...; n = 1: everything is pixel 0.
  EXPECT_EQ(ref::border_index(-1, 2, border::reflect), 1);
  EXPECT_EQ(ref::border_index(2, 2, border::reflect), 0);
  EXPECT_EQ(ref::border_index(-15, 1, border::reflect), 0);
  EXPECT_EQ(ref::border_index(15, 1, border::reflect), 0);
}

TEST(ConvBorder, ClampAndZero) {
  using kf::border;
  EXPECT_EQ(ref::border_index(-7, 5, border::clamp), 0);
  EXPECT_EQ(ref::border_index(9, 5, border::clamp), 4);
  EXPECT_EQ(ref::border_index(-1, 5, border::zero), -1);
  EXPECT_EQ(ref::border_index(5, 5, border::zero), -1);
  EXPECT_EQ(ref::border_index(3, 5, border::zero), 3);
}

TEST(ConvBorder, KernelRuleMatchesReferenceDefinition) {
  for (kf::border mode : {kf::border::zero, kf::border::clamp, kf::border::reflect}) {
    for (int n = 1; n <= 12; ++n) {
      for (int i = -70; i < n + 70; ++i) {
        EXPECT_EQ(kf::detail::border_map(i, n, mode), ref::border_index(i, n, mode))
            << "i = " << i << ", n = " << n << ", mode " << kf::to_string(mode);
      }
    }
  }
}

// ---- filter2d reference ------------------------------------------------------

TEST(ConvReference, Filter2dHandComputed3x3) {
  // 3 x 3 image 1..9, filter with a single 1 at (0, 0): out[y][x] = in[y - 1][x - 1].
  const std::vector<double> in = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> f(9, 0.0);
  f[0] = 1;
  std::vector<double> out(9);
  ref::filter2d_exact<double>(1, 3, 3, in.data(), 3, f.data(), 3, 3, kf::border::zero, out.data(), 3);
  EXPECT_EQ(out, (std::vector<double>{0, 0, 0, 0, 1, 2, 0, 4, 5}));
  ref::filter2d_exact<double>(1, 3, 3, in.data(), 3, f.data(), 3, 3, kf::border::clamp, out.data(), 3);
  EXPECT_EQ(out, (std::vector<double>{1, 1, 2, 1, 1, 2, 4, 4, 5}));
  ref::filter2d_exact<double>(1, 3, 3, in.data(), 3, f.data(), 3, 3, kf::border::reflect, out.data(), 3);
  EXPECT_EQ(out, (std::vector<double>{5, 4, 5, 2, 1, 2, 5, 4, 5}));
}

TEST(ConvReference, Filter2dEvenFilterAnchorsAtHalf) {
  // 2 x 2 filter: anchor (1, 1), so out[y][x] = f00 in[y-1][x-1] + f01 in[y-1][x] + f10 in[y][x-1] + f11 in[y][x].
  const std::vector<double> in = {1, 2, 3, 4};
  const std::vector<double> f = {1000, 100, 10, 1};
  std::vector<double> out(4), scale(4);
  ref::filter2d_exact<double>(1, 2, 2, in.data(), 2, f.data(), 2, 2, kf::border::zero, out.data(), 2, scale.data());
  EXPECT_EQ(out, (std::vector<double>{1, 12, 103, 1234}));
  EXPECT_EQ(scale, out);  // all terms positive
}

TEST(ConvReference, Filter2dPitchAndChannels) {
  // Two channels, pitch 3 > width 2: padding elements are neither read nor written.
  const double pad = -1e300;
  const std::vector<double> in = {1, 2, pad, 3, 4, pad, 10, 20, pad, 30, 40, pad};
  const std::vector<double> f = {2};
  std::vector<double> out(12, 7.0);
  ref::filter2d_exact<double>(2, 2, 2, in.data(), 3, f.data(), 1, 1, kf::border::zero, out.data(), 3);
  EXPECT_EQ(out, (std::vector<double>{2, 4, 7, 6, 8, 7, 20, 40, 7, 60, 80, 7}));
}

// ---- validation: thrown before any CUDA call, so these run without a GPU ------

TEST(Filter2dValidation, FilterSize) {
  float* in = fake(0x100000);
  float* out = fake(0x200000);
  float* f = fake(0x300000);
  expect_error(kf::errc::invalid_argument, "0 x 3", [&] { kf::filter2d<float>(1, 8, 8, in, 8, f, 0, 3, out, 8); });
  expect_error(kf::errc::invalid_argument, "32 x 3", [&] { kf::filter2d<float>(1, 8, 8, in, 8, f, 32, 3, out, 8); });
  expect_error(kf::errc::invalid_argument, "'filter'",
               [&] { kf::filter2d<float>(1, 8, 8, in, 8, nullptr, 3, 3, out, 8); });
}

TEST(Filter2dValidation, PointersPitchesAndOverlap) {
  float* in = fake(0x100000);
  float* out = fake(0x200000);
  float* f = fake(0x300000);
  expect_error(kf::errc::invalid_argument, "'in'", [&] { kf::filter2d<float>(1, 8, 8, nullptr, 8, f, 3, 3, out, 8); });
  expect_error(kf::errc::invalid_argument, "'out'", [&] { kf::filter2d<float>(1, 8, 8, in, 8, f, 3, 3, nullptr, 8); });
  expect_error(kf::errc::invalid_argument, "in_pitch = 7",
               [&] { kf::filter2d<float>(1, 8, 8, in, 7, f, 3, 3, out, 8); });
  expect_error(kf::errc::invalid_argument, "out_pitch = 5",
               [&] { kf::filter2d<float>(1, 8, 8, in, 8, f, 3, 3, out, 5); });
  expect_error(kf::errc::invalid_argument, "in place",
               [&] { kf::filter2d<float>(2, 8, 8, in, 8, f, 3, 3, in + 100, 8); });
  expect_error(kf::errc::invalid_argument, "'filter' and 'out'",
               [&] { kf::filter2d<float>(1, 8, 8, in, 8, out + 3, 3, 3, out, 8); });
  kf::filter2d_options bad_variant;
  bad_variant.variant = static_cast<kf::filter2d_variant>(42);
  expect_error(kf::errc::invalid_argument, "variant = 42",
               [&] { kf::filter2d<float>(1, 8, 8, in, 8, f, 3, 3, out, 8, bad_variant); });
  kf::filter2d_options bad_border;
  bad_border.mode = static_cast<kf::border>(7);
  expect_error(kf::errc::invalid_argument, "mode = 7",
               [&] { kf::filter2d<float>(1, 8, 8, in, 8, f, 3, 3, out, 8, bad_border); });
}

TEST(Filter2dValidation, DoubleIsNaiveOnly) {
  double* in = reinterpret_cast<double*>(0x100000);
  double* out = reinterpret_cast<double*>(0x200000);
  double* f = reinterpret_cast<double*>(0x300000);
  for (auto v :
       {kf::filter2d_variant::constant_memory, kf::filter2d_variant::smem_tiled, kf::filter2d_variant::register_window,
        kf::filter2d_variant::rolling_window, kf::filter2d_variant::tma_pipeline}) {
    kf::filter2d_options o;
    o.variant = v;
    expect_error(kf::errc::unsupported, kf::to_string(v),
                 [&] { kf::filter2d<double>(1, 8, 8, in, 8, f, 3, 3, out, 8, o); });
  }
  kf::filter2d_options o;
  o.variant = kf::filter2d_variant::register_window;
  expect_error(kf::errc::unsupported, "not double", [&] { kf::filter2d<double>(1, 8, 8, in, 8, f, 3, 3, out, 8, o); });
}

// register_window is float only: __half gets errc::unsupported naming the type
// and smem_tiled, before any device call (these pointers are never dereferenced).
TEST(Filter2dValidation, RegisterWindowIsFloatOnly) {
  __half* in = reinterpret_cast<__half*>(0x100000);
  __half* out = reinterpret_cast<__half*>(0x200000);
  __half* f = reinterpret_cast<__half*>(0x300000);
  kf::filter2d_options o;
  o.variant = kf::filter2d_variant::register_window;
  expect_error(kf::errc::unsupported, "not __half", [&] { kf::filter2d<__half>(1, 8, 8, in, 8, f, 3, 3, out, 8, o); });
  expect_error(kf::errc::unsupported, "smem_tiled", [&] { kf::filter2d<__half>(1, 8, 8, in, 8, f, 3, 3, out, 8, o); });
  EXPECT_STREQ(kf::to_string(kf::filter2d_variant::register_window), "register_window");
}

// rolling_window likewise: float only, errc::unsupported naming the variant,
// the type and the alternative for __half (and for double).
TEST(Filter2dValidation, RollingWindowIsFloatOnly) {
  __half* in = reinterpret_cast<__half*>(0x100000);
  __half* out = reinterpret_cast<__half*>(0x200000);
  __half* f = reinterpret_cast<__half*>(0x300000);
  kf::filter2d_options o;
  o.variant = kf::filter2d_variant::rolling_window;
  expect_error(kf::errc::unsupported, "rolling_window is compiled for float only, not __half",
               [&] { kf::filter2d<__half>(1, 8, 8, in, 8, f, 5, 5, out, 8, o); });
  expect_error(kf::errc::unsupported, "smem_tiled", [&] { kf::filter2d<__half>(1, 8, 8, in, 8, f, 5, 5, out, 8, o); });
  double* din = reinterpret_cast<double*>(0x100000);
  double* dout = reinterpret_cast<double*>(0x200000);
  double* df = reinterpret_cast<double*>(0x300000);
  expect_error(kf::errc::unsupported, "rolling_window is compiled for float only, not double",
               [&] { kf::filter2d<double>(1, 8, 8, din, 8, df, 5, 5, dout, 8, o); });
  EXPECT_STREQ(kf::to_string(kf::filter2d_variant::rolling_window), "rolling_window");
}

// ---- tma_pipeline (step 6): applicability and the grid plan ---------------------

// float only, before any device call, naming the variant, the type and the alternative.
TEST(Filter2dTmaPipeline, IsFloatOnly) {
  EXPECT_STREQ(kf::to_string(kf::filter2d_variant::tma_pipeline), "tma_pipeline");
  __half* in = reinterpret_cast<__half*>(0x100000);
  __half* out = reinterpret_cast<__half*>(0x200000);
  __half* f = reinterpret_cast<__half*>(0x300000);
  kf::filter2d_options o;
  o.variant = kf::filter2d_variant::tma_pipeline;
  expect_error(kf::errc::unsupported, "tma_pipeline is compiled for float only, not __half",
               [&] { kf::filter2d<__half>(1, 8, 8, in, 8, f, 5, 5, out, 8, o); });
}

// Every rule, one at a time, from a call it accepts: aligned rows, zero border, 3x3 / 5x5.
TEST(Filter2dTmaPipeline, UnsupportedReasonNamesTheMissingCondition) {
  using kf::border;
  using kf::detail::filter2d_tma_unsupported_reason;
  const auto* in = reinterpret_cast<const float*>(0x100000);
  const auto* out = reinterpret_cast<const float*>(0x200000);
  EXPECT_EQ(filter2d_tma_unsupported_reason(3, 3, border::zero, in, 8, out, 12), nullptr);
  EXPECT_EQ(filter2d_tma_unsupported_reason(5, 5, border::zero, in, 8196, out, 8192), nullptr);
  for (auto rs : {std::pair<int, int>{1, 1}, {3, 5}, {5, 3}, {4, 4}, {7, 7}, {1, 9}}) {
    EXPECT_STREQ(filter2d_tma_unsupported_reason(rs.first, rs.second, border::zero, in, 8, out, 8),
                 "a 3x3 or 5x5 filter");
  }
  for (border m : {border::clamp, border::reflect}) {
    EXPECT_NE(std::string(filter2d_tma_unsupported_reason(5, 5, m, in, 8, out, 8)).find("border::zero"),
              std::string::npos);
  }
  const auto in_reason = [](const char* r) { return r != nullptr && std::string(r).find("'in'") == 0; };
  const auto out_reason = [](const char* r) { return r != nullptr && std::string(r).find("'out'") == 0; };
  EXPECT_TRUE(in_reason(filter2d_tma_unsupported_reason(5, 5, border::zero, in + 1, 8, out, 8)));  // 4 bytes off
  EXPECT_TRUE(in_reason(filter2d_tma_unsupported_reason(5, 5, border::zero, in + 2, 8, out, 8)));  // 8 bytes off
  EXPECT_TRUE(in_reason(filter2d_tma_unsupported_reason(5, 5, border::zero, in, 9, out, 8)));
  EXPECT_TRUE(in_reason(filter2d_tma_unsupported_reason(3, 3, border::zero, in, 6, out, 8)));
  EXPECT_TRUE(out_reason(filter2d_tma_unsupported_reason(5, 5, border::zero, in, 8, out + 3, 8)));
  EXPECT_TRUE(out_reason(filter2d_tma_unsupported_reason(5, 5, border::zero, in, 8, out, 10)));
}

// The grid: strips of 128 columns, chunks of 32 rows, one wave of ranges per strip.
TEST(Filter2dTmaPipeline, GridPlanCoversTheImageInOneWave) {
  namespace t = kf::detail::filter2d_tma;
  static_assert(t::strip_cols == 128 && t::chunk_rows == 32, "the cases below assume these");
  // 8192^2 on the H200 (132 SMs x 3 blocks): 64 strips x 6 ranges = 384 <= 396.
  const t::grid_plan h200 = t::plan_grid(1, 8192, 8192, 396);
  EXPECT_EQ(h200.strips, 64u);
  EXPECT_EQ(h200.chunks, 256u);
  EXPECT_EQ(h200.parts, 6u);
  EXPECT_EQ(h200.channel_blocks, 1u);
  // Tiny images: 1 strip, 1 chunk, at most one range per chunk.
  const t::grid_plan one = t::plan_grid(1, 1, 1, 396);
  EXPECT_EQ(one.strips, 1u);
  EXPECT_EQ(one.chunks, 1u);
  EXPECT_EQ(one.parts, 1u);
  // Widths and heights one past a strip / chunk.
  const t::grid_plan past = t::plan_grid(2, 33, 129, 396);
  EXPECT_EQ(past.strips, 2u);
  EXPECT_EQ(past.chunks, 2u);
  EXPECT_EQ(past.parts, 2u);
  EXPECT_EQ(past.channel_blocks, 2u);
  // More blocks per wave than the device holds: one range per strip, channels capped at 65535.
  const t::grid_plan wide = t::plan_grid(100000, 64, 4096, 396);
  EXPECT_EQ(wide.parts, 1u);
  EXPECT_EQ(wide.channel_blocks, 65535u);
  // No resident blocks reported: still a valid grid.
  EXPECT_EQ(t::plan_grid(1, 100, 100, 0).parts, 1u);
  // Shared memory: 4 stages of 136 x 32 floats + barriers + alignment slack fit 3 blocks per H200 SM.
  EXPECT_LE(3 * (t::smem_bytes + 1024), 228 * 1024);
}

TEST(Filter2dValidation, EmptyImageIsANoOp) {
  float* f = fake(0x300000);
  EXPECT_NO_THROW(kf::filter2d<float>(0, 8, 8, nullptr, 8, f, 3, 3, nullptr, 8));
  EXPECT_NO_THROW(kf::filter2d<float>(3, 0, 8, nullptr, 8, f, 3, 3, nullptr, 8));
  EXPECT_NO_THROW(kf::filter2d<float>(3, 8, 0, nullptr, 0, f, 3, 3, nullptr, 0));
}

}  // namespace
