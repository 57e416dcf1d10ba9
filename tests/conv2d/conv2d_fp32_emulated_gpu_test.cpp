// SPDX-License-Identifier: Apache-2.0
// GPU tests of math_mode::fp32_emulated for kf::conv2d_forward (float, NCHW and
// NHWC; conv2d step 9: the implicit GEMM on wgmma with each fp32 operand split
// into TF32 hi + lo, three products per k-block promoted into fp32 registers,
// as matmul step 15; at stride 1 and dilation 1 with filters up to 3 x 3 --
// most 3x3 cases below -- step 13, the same on halo tiles). Modelled on
// tests/matmul/fp32_emulated_gpu_test.cpp.
//
// The contract tested:
//  * options.variant = best only: another variant is errc::invalid_argument
//    naming "fp32_emulated" and "best"; float only (__half, __nv_bfloat16:
//    errc::invalid_argument naming "fp32_emulated"). Both checked before the
//    device, so on every GPU, y left unwritten.
//  * On a device other than compute capability 9.0 (or a library without
//    sm_90a): errc::unsupported mentioning "compute capability 9.0", y
//    unwritten -- for every layer, as matmul raises it below its short-k bound.
//  * On the H200: every output within the EXACT fp32 tolerance of the double
//    reference (conv2d_gpu_test.cpp's for direct summation, which Winograd's
//    own bound is looser than: exact_tolerance below), in both layouts, on
//    layers around the kernel's tiles (C = 32, 64, 96, 130, K = 7 ... 200, N =
//    1 ... 3, prime H and W, a 1 x 1 output, stride 2, 3 and 1 x 2, dilation 2,
//    1x1, 3x5, 5x5 and 7x7 filters, pad_h != pad_w), with and without bias,
//    x, weight, bias and y one float off alignment on some; y NaN-poisoned
//    first (NaN never passes) with one element past it (and one before it
//    where misaligned) that must stay NaN. Layers the wgmma kernel does not
//    take (C < 32, a stride above 8, C*R*S < 128: the exact_* cases) run the
//    exact kernels and are held to the same bound.
//  * The fused bias and threshold ReLU (thresholds 0 and 0.25) against a CPU
//    model of them.
//  * The last round split over the CTAs that would wait (2, 3 and 4 parts a
//    tile, on layers sized from the GPU's SM count), both layouts, and with a NaN.
//  * Infinities and NaNs, and the accuracy against the exact mode:
//    conv2d_fp32_emulated_accuracy_gpu_test.cpp (the same binary).
// Runtime: the double references on the CPU dominate (about 4e8 multiply-adds
// in the binary, on all cores).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "conv2d_cases.hpp"
#include "conv2d_fp32_emulated_support.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/reference/conv.hpp"
#include "test_support.hpp"

namespace {

using namespace kf::test::conv2d_fp32_emulated;  // the helpers both files share
using kf::test::conv2d::make_layer;
using kf::test::conv2d::to_device_at;

// ---- errors before any work ---------------------------------------------------------

TEST(Conv2dFp32Emulated, UnsupportedWithoutWgmma) {
  KF_SKIP_WITHOUT_GPU();
  if (runs_emulation()) GTEST_SKIP() << "this GPU runs the emulation (compute capability 9.0, sm_90a)";
  // A layer the wgmma kernel takes and one it leaves to the exact kernels: the
  // device is refused first on both (as matmul's below its short-k bound).
  for (const kf::conv2d_params& base :
       {make_layer(2, 64, 9, 9, 64, 3, 3, 1, 1, 1, 1), make_layer(2, 3, 9, 9, 8, 3, 3, 1, 1, 1, 1)}) {
    for (const kf::conv2d_layout layout : {kf::conv2d_layout::nchw, kf::conv2d_layout::nhwc}) {
      const kf::conv2d_params p = in_layout(base, layout);
      SCOPED_TRACE(std::string(layout_name(layout)) + ", C = " + std::to_string(p.in_channels));
      kf::device_buffer<float> x(x_size(p)), w(w_size(p)), y(y_size(p));
      kf::test::poison(y.data(), y.size_bytes());
      kf::test::expect_error(kf::errc::unsupported, "compute capability 9.0",
                             [&] { kf::conv2d_forward<float>(p, x.data(), w.data(), nullptr, y.data(), emulated()); });
      EXPECT_EQ(written(y), 0u) << "y was written";
    }
  }
}

// Every variant but best, and the 16-bit types: errc::invalid_argument before
// the device is looked at (so on every GPU), nothing written.
TEST(Conv2dFp32Emulated, InvalidVariantAndType) {
  KF_SKIP_WITHOUT_GPU();
  using v = kf::conv2d_variant;
  const kf::conv2d_params nchw = make_layer(2, 64, 9, 9, 64, 3, 3, 1, 1, 1, 1);
  const kf::conv2d_params nhwc = in_layout(nchw, kf::conv2d_layout::nhwc);
  kf::device_buffer<float> x(x_size(nchw)), w(w_size(nchw)), y(y_size(nchw));
  kf::test::poison(y.data(), y.size_bytes());
  for (const v variant : {v::naive, v::smem_tiled, v::implicit_gemm, v::implicit_gemm_tf32, v::implicit_gemm_pipelined,
                          v::winograd, v::winograd_fused, v::implicit_gemm_wgmma}) {
    // NHWC reads naive and implicit_gemm_wgmma only (the others: the layout's errc::unsupported).
    const bool in_nhwc = variant == v::naive || variant == v::implicit_gemm_wgmma;
    for (const kf::conv2d_params* p : {&nchw, &nhwc}) {
      if (p == &nhwc && !in_nhwc) continue;
      SCOPED_TRACE(std::string(kf::to_string(variant)) + ", " + layout_name(p->layout));
      kf::conv2d_options o = emulated();
      o.variant = variant;
      for (const char* named : {"fp32_emulated", "best"}) {
        kf::test::expect_error(kf::errc::invalid_argument, named,
                               [&] { kf::conv2d_forward<float>(*p, x.data(), w.data(), nullptr, y.data(), o); });
      }
    }
  }
  EXPECT_EQ(written(y), 0u) << "y was written";
  // __half and __nv_bfloat16 (NHWC, the only layout they convolve in) under best.
  kf::device_buffer<__half> xh(x_size(nhwc)), wh(w_size(nhwc)), yh(y_size(nhwc));
  kf::device_buffer<__nv_bfloat16> xb(x_size(nhwc)), wb(w_size(nhwc)), yb(y_size(nhwc));
  kf::test::poison(yh.data(), yh.size_bytes());
  kf::test::poison(yb.data(), yb.size_bytes());
  kf::test::expect_error(kf::errc::invalid_argument, "fp32_emulated", [&] {
    kf::conv2d_forward<__half>(nhwc, xh.data(), wh.data(), nullptr, yh.data(), emulated());
  });
  kf::test::expect_error(kf::errc::invalid_argument, "fp32_emulated", [&] {
    kf::conv2d_forward<__nv_bfloat16>(nhwc, xb.data(), wb.data(), nullptr, yb.data(), emulated());
  });
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (const __half& e : kf::to_host(yh)) ASSERT_TRUE(std::isnan(kf::reference::to_double(e))) << "y was written";
  for (const __nv_bfloat16& e : kf::to_host(yb)) {
    ASSERT_TRUE(std::isnan(kf::reference::to_double(e))) << "y was written";
  }
}

// ---- against the double reference ---------------------------------------------------

struct emulated_case {
  const char* name;
  kf::conv2d_params p;  // the layout is the test's parameter
  bool bias;
  std::size_t offset;  // x, weight, bias and y start this many floats into their buffers (1: misaligned)
};

/// The layers (top of file). exact_*: layers the wgmma kernel does not take
/// (Conv2dFp32EmulatedCases.ExactCasesAreTheOnesTheKernelLeaves checks the names).
const std::vector<emulated_case>& emulated_cases() {
  static const std::vector<emulated_case> cases = {
      // 3x3 pad 1: C around the 32-channel k-blocks (32, 64, 96 = 1.5 x 64, 130 = 4 x 32 + 2),
      // K around the 64- and 128-wide tiles (7, 64, 128, 200), N = 1, 2, 3, prime H and W.
      {"c32_13x17_k64_3x3_p1_n2", make_layer(2, 32, 13, 17, 64, 3, 3, 1, 1, 1, 1), true, 0},
      {"c64_17x13_k128_3x3_p1_n1", make_layer(1, 64, 17, 13, 128, 3, 3, 1, 1, 1, 1), false, 0},
      {"c96_11x7_k200_3x3_p1_n3", make_layer(3, 96, 11, 7, 200, 3, 3, 1, 1, 1, 1), true, 0},
      {"c130_7x11_k7_3x3_p1_n2_misaligned", make_layer(2, 130, 7, 11, 7, 3, 3, 1, 1, 1, 1), true, 1},
      {"c64_28x28_k64_3x3_p1_n2", make_layer(2, 64, 28, 28, 64, 3, 3, 1, 1, 1, 1), false, 0},
      // A 1 x 1 output: one pixel padded all round, and a 3x3 input at pad 0.
      {"c64_1x1_k65_3x3_p1_n3", make_layer(3, 64, 1, 1, 65, 3, 3, 1, 1, 1, 1), true, 0},
      {"c48_3x3_k64_3x3_p0_to_1x1", make_layer(2, 48, 3, 3, 64, 3, 3, 1, 1, 0, 0), false, 1},
      // Strides 2, 3 and 1 x 2; dilation 2.
      {"c64_17x19_k128_3x3_s2_p1_n2_misaligned", make_layer(2, 64, 17, 19, 128, 3, 3, 2, 2, 1, 1), true, 1},
      {"c40_23x19_k64_5x5_s3_p2", make_layer(2, 40, 23, 19, 64, 5, 5, 3, 3, 2, 2), false, 0},
      {"c32_19x17_k40_3x3_s1x2_p1", make_layer(2, 32, 19, 17, 40, 3, 3, 1, 2, 1, 1), true, 0},
      {"c64_13x11_k72_3x3_d2_p2", make_layer(2, 64, 13, 11, 72, 3, 3, 1, 1, 2, 2, 2), true, 0},
      // 1x1 filters (C*R*S = C >= 128), at stride 1 and 2.
      {"c128_9x7_k200_1x1_n2", make_layer(2, 128, 9, 7, 200, 1, 1, 1, 1, 0, 0), true, 0},
      {"c256_11x13_k64_1x1_s2_misaligned", make_layer(2, 256, 11, 13, 64, 1, 1, 2, 2, 0, 0), false, 1},
      // 5x5 and 7x7 with C >= 32.
      {"c32_11x13_k64_5x5_p2", make_layer(2, 32, 11, 13, 64, 5, 5, 1, 1, 2, 2), true, 0},
      {"c32_15x13_k33_7x7_s2_p3", make_layer(2, 32, 15, 13, 33, 7, 7, 2, 2, 3, 3), false, 0},
      // Rectangular padding and filters.
      {"c64_12x10_k64_3x3_p2x0", make_layer(2, 64, 12, 10, 64, 3, 3, 1, 1, 2, 0), true, 0},
      {"c33_9x14_k70_3x5_p1x2_n1_misaligned", make_layer(1, 33, 9, 14, 70, 3, 5, 1, 1, 1, 2), true, 1},
      // Left to the exact kernels: C < 32 (the RGB stem, C = 16), C*R*S < 128, a stride above 8.
      {"exact_c3_29x29_k64_7x7_s2_p3_stem", make_layer(2, 3, 29, 29, 64, 7, 7, 2, 2, 3, 3), true, 0},
      {"exact_c16_13x11_k40_3x3_p1_misaligned", make_layer(2, 16, 13, 11, 40, 3, 3, 1, 1, 1, 1), false, 1},
      {"exact_c100_9x9_k96_1x1", make_layer(2, 100, 9, 9, 96, 1, 1, 1, 1, 0, 0), true, 0},
      {"exact_c32_40x37_k16_3x3_s9_p1", make_layer(2, 32, 40, 37, 16, 3, 3, 9, 9, 1, 1), false, 0},
  };
  return cases;
}

struct reference_param {
  kf::conv2d_layout layout;
  std::size_t case_index;
};

void PrintTo(const reference_param& p, std::ostream* os) {
  *os << layout_name(p.layout) << "/" << emulated_cases()[p.case_index].name;
}

class Conv2dFp32EmulatedReference : public ::testing::TestWithParam<reference_param> {};

TEST_P(Conv2dFp32EmulatedReference, MatchesTheReference) {
  KF_SKIP_WITHOUT_EMULATION();
  const emulated_case& c = emulated_cases()[GetParam().case_index];
  const kf::conv2d_params p = in_layout(c.p, GetParam().layout);
  const std::uint64_t seed = 900 + 10 * GetParam().case_index + (p.layout == kf::conv2d_layout::nhwc ? 5 : 0);
  const std::vector<float> x = uniform_inputs(x_size(p), seed), w = uniform_inputs(w_size(p), seed + 1),
                           bias = uniform_inputs(p.out_channels, seed + 2);
  const std::size_t y_n = y_size(p);
  std::vector<double> expected(y_n), scale(y_n);
  kf::reference::conv2d_forward_exact(p, x.data(), w.data(), c.bias ? bias.data() : nullptr, expected.data(),
                                      scale.data());
  const auto d_x = to_device_at(x, c.offset), d_w = to_device_at(w, c.offset), d_bias = to_device_at(bias, c.offset);
  kf::device_buffer<float> d_y(c.offset + y_n + 1);  // one element past y: must stay NaN
  kf::test::poison(d_y.data(), d_y.size_bytes());
  kf::conv2d_forward<float>(p, d_x.data() + c.offset, d_w.data() + c.offset,
                            c.bias ? d_bias.data() + c.offset : nullptr, d_y.data() + c.offset, emulated());
  const std::vector<float> got = kf::to_host(d_y);
  if (c.offset) {
    ASSERT_TRUE(std::isnan(got[0])) << "the element before y was written";
  }
  ASSERT_TRUE(std::isnan(got[c.offset + y_n])) << "the element after y was written";
  EXPECT_TRUE(kf::test::all_close(got, expected, {exact_tolerance(p), 0}, &scale, c.offset));
}

std::vector<reference_param> reference_params() {
  std::vector<reference_param> params;
  for (const kf::conv2d_layout layout : {kf::conv2d_layout::nchw, kf::conv2d_layout::nhwc}) {
    for (std::size_t i = 0; i < emulated_cases().size(); ++i) params.push_back({layout, i});
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Conv, Conv2dFp32EmulatedReference, ::testing::ValuesIn(reference_params()),
                         [](const ::testing::TestParamInfo<reference_param>& info) {
                           return std::string(layout_name(info.param.layout)) + "_" +
                                  emulated_cases()[info.param.case_index].name;
                         });

// The case list covers what it claims (no GPU needed): the exact_* cases are
// the ones the contract leaves to the exact kernels, and the others are most.
TEST(Conv2dFp32EmulatedCases, ExactCasesAreTheOnesTheKernelLeaves) {
  int kernel = 0, exact = 0;
  for (const emulated_case& c : emulated_cases()) {
    const bool named_exact = std::strncmp(c.name, "exact_", 6) == 0;
    EXPECT_EQ(emulation_takes(c.p), !named_exact) << c.name;
    (named_exact ? exact : kernel) += 1;
    // A wrong tap moves an output by about S / (C*R*S): the bound must stay below half of that.
    const double crs = static_cast<double>(c.p.in_channels * c.p.filter_height * c.p.filter_width);
    EXPECT_LE(exact_tolerance(c.p), 0.5 / crs) << c.name;
  }
  EXPECT_EQ(exact, 4);
  EXPECT_GE(kernel, 15);
}

// ---- the persistent grid's last round, split -------------------------------------------

// Layers whose last round on this GPU would leave most CTAs idle, so that step 9
// splits each of its tiles over 2, 3 and 4 CTAs (plan_conv2d_wgmma_last_round,
// wgmma_last_round.cuh; the grid is one CTA an SM: the kernel's ~200 KB of shared
// memory): C 64 (18 k-blocks of 32 channels, hi and lo), 8x8 images two to a
// tile (the last tile half empty), K 12, 3x3 dilated 2, pad 2 (at dilation 1
// step 13's halo tiles would take it, which do not split), the bias on, in both
// layouts, against the double reference, y NaN-poisoned with one element past
// it. Once with a NaN in an image of a split tile, which runs the kernel's inf /
// NaN instance: NaN exactly at the 9 x K outputs that read it.
TEST(Conv2dFp32Emulated, LastRoundSplitOverIdleCtas) {
  KF_SKIP_WITHOUT_EMULATION();
  int device = 0, sms = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), cudaSuccess);
  const auto grid = static_cast<std::size_t>(sms);
  std::uint64_t seed = 6000;
  for (const std::size_t parts : {2u, 3u, 4u}) {
    const std::size_t tiles = grid + grid / parts;  // grid / parts tiles in the last round
    const std::size_t n = 2 * tiles - 1, k = 12;
    const kf::conv2d_params base = make_layer(n, 64, 8, 8, k, 3, 3, 1, 1, 2, 2, 2);
    ASSERT_EQ(kf::detail::choose_conv2d_wgmma_tile(n, 8, 8, k).tiles(), tiles);
    ASSERT_EQ(kf::detail::plan_conv2d_wgmma_last_round(tiles, grid, 18, 2).parts, parts) << "not split as meant";
    for (const kf::conv2d_layout layout : {kf::conv2d_layout::nchw, kf::conv2d_layout::nhwc}) {
      for (const bool with_nan : {false, true}) {
        if (with_nan && (parts != 3 || layout != kf::conv2d_layout::nhwc)) continue;  // once
        const kf::conv2d_params p = in_layout(base, layout);
        SCOPED_TRACE(std::string(layout_name(layout)) + ", " + std::to_string(parts) + " parts" +
                     (with_nan ? ", a NaN in x" : ""));
        std::vector<float> x = uniform_inputs(x_size(p), seed), w = uniform_inputs(w_size(p), seed + 1);
        const std::vector<float> bias = uniform_inputs(k, seed + 2);
        seed += 3;
        if (with_nan) {
          x[kf::reference::conv2d_reference_indexer(p, "last_round").x(n - 2, 5, 3, 4)] =
              std::numeric_limits<float>::quiet_NaN();
        }
        const std::size_t y_n = y_size(p);
        std::vector<double> ref(y_n), scale(y_n);
        kf::reference::conv2d_forward_exact(p, x.data(), w.data(), bias.data(), ref.data(), scale.data());
        const auto d_x = kf::to_device(x), d_w = kf::to_device(w), d_bias = kf::to_device(bias);
        kf::device_buffer<float> d_y(y_n + 1);  // one element past y: must stay NaN
        kf::test::poison(d_y.data(), d_y.size_bytes());
        kf::conv2d_forward<float>(p, d_x.data(), d_w.data(), d_bias.data(), d_y.data(), emulated());
        const std::vector<float> got = kf::to_host(d_y);
        ASSERT_TRUE(std::isnan(got[y_n])) << "the element after y was written";
        const double tol = exact_tolerance(p);
        std::size_t bad = 0, nans = 0;
        for (std::size_t i = 0; i < y_n; ++i) {
          const bool ok = std::isnan(ref[i]) ? std::isnan(got[i])
                                             : std::isfinite(got[i]) && std::fabs(got[i] - ref[i]) <= tol * scale[i];
          nans += std::isnan(ref[i]) ? 1 : 0;
          if (!ok && bad++ < 5) ADD_FAILURE() << "y[" << i << "] = " << got[i] << ", want " << ref[i];
        }
        EXPECT_EQ(bad, 0u);
        EXPECT_EQ(nans, with_nan ? 9 * k : 0u);
      }
    }
  }
}

// ---- the fused epilogue ----------------------------------------------------------------

// y = v <= threshold ? 0 : v, v = conv + bias. An output whose reference lies
// within the tolerance of the threshold may be 0 or the value; every other one
// below it must be exactly 0, above it within the tolerance; at most half the
// outputs may lie in that band (else the test is too loose to mean anything).
TEST(Conv2dFp32Emulated, FusedBiasAndThresholdRelu) {
  KF_SKIP_WITHOUT_EMULATION();
  const kf::conv2d_params layers[] = {make_layer(2, 64, 13, 11, 72, 3, 3, 1, 1, 1, 1),
                                      make_layer(2, 128, 9, 12, 65, 1, 1, 2, 2, 0, 0)};
  std::uint64_t seed = 4000;
  for (const kf::conv2d_params& base : layers) {
    for (const kf::conv2d_layout layout : {kf::conv2d_layout::nchw, kf::conv2d_layout::nhwc}) {
      const kf::conv2d_params p = in_layout(base, layout);
      const std::vector<float> x = uniform_inputs(x_size(p), seed), w = uniform_inputs(w_size(p), seed + 1),
                               bias = uniform_inputs(p.out_channels, seed + 2);
      seed += 3;
      const std::size_t y_n = y_size(p);
      const kf::device_buffer<float> d_x = kf::to_device(x), d_w = kf::to_device(w), d_bias = kf::to_device(bias);
      for (const bool with_bias : {true, false}) {
        std::vector<double> ref(y_n), scale(y_n);
        kf::reference::conv2d_forward_exact(p, x.data(), w.data(), with_bias ? bias.data() : nullptr, ref.data(),
                                            scale.data());
        for (const float threshold : {0.0f, 0.25f}) {
          SCOPED_TRACE(std::string(layout_name(layout)) + ", C = " + std::to_string(p.in_channels) + ", bias " +
                       (with_bias ? "on" : "off") + ", threshold " + std::to_string(threshold));
          kf::device_buffer<float> d_y(y_n);
          kf::test::poison(d_y.data(), d_y.size_bytes());
          kf::conv2d_options o = emulated();
          o.relu = true;
          o.relu_threshold = threshold;
          kf::conv2d_forward<float>(p, d_x.data(), d_w.data(), with_bias ? d_bias.data() : nullptr, d_y.data(), o);
          const std::vector<float> got = kf::to_host(d_y);
          std::size_t bad = 0, near = 0;
          for (std::size_t i = 0; i < y_n; ++i) {
            const double tol = exact_tolerance(p) * scale[i], v = ref[i], g = got[i];
            bool ok;
            if (std::isnan(g)) {
              ok = false;
            } else if (std::fabs(v - threshold) <= tol) {
              ok = g == 0 || std::fabs(g - v) <= tol;  // either side of the jump
              ++near;
            } else if (v <= threshold) {
              ok = g == 0;  // the ReLU stores an exact 0
            } else {
              ok = std::fabs(g - v) <= tol;
            }
            if (!ok && bad++ < 5) {
              ADD_FAILURE() << "y[" << i << "] = " << g << ", want " << (v <= threshold ? 0.0 : v) << " (tolerance "
                            << tol << ")";
            }
          }
          EXPECT_EQ(bad, 0u);
          EXPECT_LE(2 * near, y_n) << "too many outputs near the threshold: the test is too loose";
        }
      }
    }
  }
}

}  // namespace
