// SPDX-License-Identifier: Apache-2.0
// CPU tests of dx's route (kernels/conv2d/backward/dgrad_plan.hpp): which path
// computes conv2d's data gradient, and where its forward reads the layer's
// filter unturned on step 7 (conv2d_wgmma_filter::dgrad_unturned) rather than
// a turned copy. The gradient suite's cases that take each route:
// conv2d_backward_cases_test.cpp and conv2d_backward_dx_cases_test.cpp. Part of
// test_conv2d.
#include <gtest/gtest.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "conv2d_cases.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/backward/dgrad_plan.hpp"

namespace {

using kf::detail::conv2d_dgrad_filter;
using kf::detail::conv2d_dgrad_path;
using kf::detail::conv2d_wgmma_filter;
using kf::detail::plan_conv2d_dgrad;
using kf::test::conv2d::make;

kf::conv2d_params nhwc(kf::conv2d_params p) {
  p.layout = kf::conv2d_layout::nhwc;
  return p;
}

TEST(Conv2dDgradPlan, Paths) {
  // Padding past the filter's reach: naive, whatever the rest.
  EXPECT_EQ(plan_conv2d_dgrad(nhwc(make(2, 64, 9, 9, 64, 3, 3, 1, 3, 1)), 2, false), conv2d_dgrad_path::naive);
  EXPECT_EQ(plan_conv2d_dgrad(make(2, 8, 7, 9, 3, 1, 1, 1, 1, 1), 4, false), conv2d_dgrad_path::naive);
  // 1x1 stride 1 NHWC, unmasked: kf::matmul; masked, NCHW or strided: the forward.
  EXPECT_EQ(plan_conv2d_dgrad(nhwc(make(2, 64, 9, 9, 64, 1, 1, 1, 0, 1)), 2, false), conv2d_dgrad_path::matmul);
  EXPECT_EQ(plan_conv2d_dgrad(nhwc(make(2, 64, 9, 9, 64, 1, 1, 1, 0, 1)), 2, true), conv2d_dgrad_path::forward);
  EXPECT_EQ(plan_conv2d_dgrad(make(2, 64, 9, 9, 64, 1, 1, 1, 0, 1), 4, false), conv2d_dgrad_path::forward);
  EXPECT_EQ(plan_conv2d_dgrad(nhwc(make(2, 64, 9, 9, 64, 1, 1, 2, 0, 1)), 2, false), conv2d_dgrad_path::forward);
  // Strided with few input channels (the stem): NHWC C * bytes not a multiple of 16, NCHW C < 16.
  EXPECT_EQ(plan_conv2d_dgrad(nhwc(make(2, 3, 23, 19, 64, 7, 7, 2, 3, 1)), 2, false), conv2d_dgrad_path::gemm_col2im);
  EXPECT_EQ(plan_conv2d_dgrad(nhwc(make(2, 8, 23, 19, 64, 7, 7, 2, 3, 1)), 2, false), conv2d_dgrad_path::forward);
  EXPECT_EQ(plan_conv2d_dgrad(nhwc(make(2, 8, 23, 19, 64, 7, 7, 2, 3, 1)), 4, false), conv2d_dgrad_path::forward);
  EXPECT_EQ(plan_conv2d_dgrad(nhwc(make(2, 6, 23, 19, 64, 7, 7, 2, 3, 1)), 4, false), conv2d_dgrad_path::gemm_col2im);
  EXPECT_EQ(plan_conv2d_dgrad(make(2, 15, 23, 19, 64, 7, 7, 2, 3, 1), 4, false), conv2d_dgrad_path::gemm_col2im);
  EXPECT_EQ(plan_conv2d_dgrad(make(2, 16, 23, 19, 64, 7, 7, 2, 3, 1), 4, false), conv2d_dgrad_path::forward);
  EXPECT_EQ(plan_conv2d_dgrad(nhwc(make(2, 3, 23, 19, 64, 7, 7, 1, 3, 1)), 2, false), conv2d_dgrad_path::forward);
}

/// The unturned filter: 16-bit NHWC on a device that runs step 7, K and C
/// multiples of 8 (TMA's 16-byte rows: dy's K channels a pixel, the filter's C
/// a tap), dy's source and the filter 16-byte aligned. Everything else turns.
TEST(Conv2dDgradPlan, FilterReadInPlaceWhereTmaCan) {
  alignas(16) static unsigned char buffer[64];
  const void* aligned = buffer;
  const void* off = buffer + 2;  // one 16-bit element
  const kf::conv2d_params p = nhwc(make(32, 64, 56, 56, 64, 3, 3, 1, 1, 1));
  constexpr auto unturned = conv2d_wgmma_filter::dgrad_unturned;
  constexpr auto turned = conv2d_wgmma_filter::forward;
  EXPECT_EQ(conv2d_dgrad_filter(p, 2, true, aligned, aligned), unturned);
  EXPECT_EQ(conv2d_dgrad_filter(p, 2, false, aligned, aligned), turned);  // no sm_90a here
  EXPECT_EQ(conv2d_dgrad_filter(p, 4, true, aligned, aligned), turned);   // float: TF32 has no transpose bit
  kf::conv2d_params nchw = p;
  nchw.layout = kf::conv2d_layout::nchw;
  EXPECT_EQ(conv2d_dgrad_filter(nchw, 2, true, aligned, aligned), turned);
  EXPECT_EQ(conv2d_dgrad_filter(p, 2, true, off, aligned), turned);  // dy misaligned (read in place, unspread)
  EXPECT_EQ(conv2d_dgrad_filter(p, 2, true, aligned, off), turned);  // the filter misaligned
  for (const std::size_t channels : {std::size_t{8}, std::size_t{24}, std::size_t{72}, std::size_t{136}}) {
    kf::conv2d_params q = p;
    q.in_channels = channels;
    EXPECT_EQ(conv2d_dgrad_filter(q, 2, true, aligned, aligned), unturned) << "C " << channels;
    q = p;
    q.out_channels = channels;
    EXPECT_EQ(conv2d_dgrad_filter(q, 2, true, aligned, aligned), unturned) << "K " << channels;
  }
  for (const std::size_t channels : {std::size_t{1}, std::size_t{3}, std::size_t{17}, std::size_t{68}}) {
    kf::conv2d_params q = p;
    q.in_channels = channels;  // the filter's rows (C a tap) are not 16-byte multiples
    EXPECT_EQ(conv2d_dgrad_filter(q, 2, true, aligned, aligned), turned) << "C " << channels;
    q = p;
    q.out_channels = channels;  // dy's pixels (K channels) are not
    EXPECT_EQ(conv2d_dgrad_filter(q, 2, true, aligned, aligned), turned) << "K " << channels;
  }
  // Any filter shape, stride, dilation or padding: the forward runs at stride 1 on dy (or its spread).
  for (const kf::conv2d_params& q :
       {nhwc(make(1, 16, 13, 11, 24, 1, 1, 2, 0, 1)), nhwc(make(2, 24, 9, 11, 40, 5, 5, 1, 2, 1)),
        nhwc(make(2, 16, 15, 13, 24, 7, 7, 1, 3, 1)), nhwc(make(2, 16, 13, 12, 72, 6, 3, 1, 2, 1)),
        nhwc(make(2, 8, 13, 11, 8, 3, 3, 2, 1, 2)), nhwc(make(3, 16, 17, 14, 16, 5, 5, 3, 1, 1))}) {
    EXPECT_EQ(conv2d_dgrad_filter(q, 2, true, aligned, aligned), unturned);
  }
}

/// bench_conv's conv2d_backward/<fp16|bf16>/data rows: the three 3x3 layers'
/// dx reads the filter where it lies (cudaMalloc'd tensors); the 1x1 one is a
/// GEMM and the stem takes col2im.
TEST(Conv2dDgradPlan, BenchLayers) {
  alignas(16) static unsigned char buffer[16];
  for (const kf::conv2d_params& p :
       {nhwc(make(32, 64, 56, 56, 64, 3, 3, 1, 1, 1)), nhwc(make(32, 128, 28, 28, 128, 3, 3, 1, 1, 1)),
        nhwc(make(32, 256, 14, 14, 256, 3, 3, 1, 1, 1))}) {
    EXPECT_EQ(plan_conv2d_dgrad(p, 2, false), conv2d_dgrad_path::forward);
    EXPECT_EQ(conv2d_dgrad_filter(p, 2, true, buffer, buffer), conv2d_wgmma_filter::dgrad_unturned);
  }
  EXPECT_EQ(plan_conv2d_dgrad(nhwc(make(32, 256, 56, 56, 64, 1, 1, 1, 0, 1)), 2, false), conv2d_dgrad_path::matmul);
  EXPECT_EQ(plan_conv2d_dgrad(nhwc(make(16, 3, 224, 224, 64, 7, 7, 2, 3, 1)), 2, false),
            conv2d_dgrad_path::gemm_col2im);
}

TEST(Conv2dDgradParity, WhichLayersFitTheTensorCores) {
  using kf::detail::conv2d_dgrad_parity_mma_fits;
  constexpr kf::math_mode exact = kf::math_mode::exact, tf32 = kf::math_mode::tf32;
  const kf::conv2d_params stem = make(16, 3, 224, 224, 64, 7, 7, 2, 3, 1);
  EXPECT_TRUE(conv2d_dgrad_parity_mma_fits(nhwc(stem), 2, exact));  // 16-bit: any math mode
  EXPECT_TRUE(conv2d_dgrad_parity_mma_fits(nhwc(stem), 4, tf32));
  EXPECT_FALSE(conv2d_dgrad_parity_mma_fits(nhwc(stem), 4, exact));  // exact float: not on TF32
  EXPECT_FALSE(conv2d_dgrad_parity_mma_fits(stem, 2, exact));        // NCHW
  EXPECT_TRUE(conv2d_dgrad_parity_mma_fits(nhwc(make(2, 5, 17, 14, 8, 5, 5, 3, 1, 1)), 2, exact));
  EXPECT_FALSE(conv2d_dgrad_parity_mma_fits(nhwc(make(2, 3, 23, 19, 8, 9, 9, 2, 4, 1)), 2, exact));  // 5 taps a class
  EXPECT_FALSE(conv2d_dgrad_parity_mma_fits(nhwc(make(2, 8, 13, 11, 8, 3, 3, 2, 1, 2)), 2, exact));  // dilation
  // Classes x groups of 8 channels past the grid's y: 150 x 150 strides, three groups of C = 17.
  EXPECT_FALSE(conv2d_dgrad_parity_mma_fits(nhwc(make(1, 17, 600, 600, 8, 3, 3, 150, 0, 1)), 2, exact));
  EXPECT_TRUE(conv2d_dgrad_parity_mma_fits(nhwc(make(1, 17, 600, 600, 8, 3, 3, 147, 0, 1)), 2, exact));
}

}  // namespace

namespace {

// Gradient step 7's class algebra (dgrad_parity_of): for every input row h the
// taps the class decomposition visits, (r0 + u stride, i + e - u) for u below its
// taps with the dy row inside [0, P), are exactly the (r, p) with h = p stride -
// pad + r of the forward's definition -- over strides 1-4, filters 1-9, pads up
// to the reach and odd sizes. A wrong first tap, offset or count fails it.
TEST(Conv2dDgradParity, ClassesVisitEveryTapOnce) {
  int checked = 0;
  for (int stride = 1; stride <= 4; ++stride) {
    for (int filter = 1; filter <= 9; ++filter) {
      for (int pad = 0; pad < filter; ++pad) {
        for (int in : {1, 2, 7, 13, 23}) {
          if (in + 2 * pad < filter) continue;
          const int out = (in + 2 * pad - filter) / stride + 1;
          for (int h = 0; h < in; ++h) {
            const int a = h % stride, i = h / stride;
            const kf::detail::dgrad_parity_dim d = kf::detail::dgrad_parity_of(a, stride, pad, filter, in);
            ASSERT_EQ(d.size, (in - a + stride - 1) / stride);
            std::vector<std::pair<int, int>> want, got;
            for (int r = 0; r < filter; ++r) {
              const int num = h + pad - r;
              if (num >= 0 && num % stride == 0 && num / stride < out) want.emplace_back(r, num / stride);
            }
            for (int u = 0; u < d.taps; ++u) {
              const int r = d.first + u * stride, p = i + d.offset - u;
              ASSERT_LT(r, filter);
              if (p >= 0 && p < out) got.emplace_back(r, p);
            }
            ASSERT_EQ(got, want) << "stride " << stride << " filter " << filter << " pad " << pad << " h " << h;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(Conv2dDgradParity, WhichLayersFit) {
  using kf::detail::conv2d_dgrad_parity_fits;
  EXPECT_TRUE(conv2d_dgrad_parity_fits(make(16, 3, 224, 224, 64, 7, 7, 2, 3, 1)));  // the stem: 4 x 4 taps a class
  EXPECT_TRUE(conv2d_dgrad_parity_fits(make(2, 5, 17, 14, 8, 5, 5, 3, 1, 1)));
  EXPECT_FALSE(conv2d_dgrad_parity_fits(make(2, 3, 23, 19, 8, 9, 9, 2, 4, 1)));  // 5 taps a class
  EXPECT_FALSE(conv2d_dgrad_parity_fits(make(2, 8, 13, 11, 8, 3, 3, 2, 1, 2)));  // dilation
  EXPECT_FALSE(conv2d_dgrad_parity_fits(nhwc(make(16, 3, 224, 224, 64, 7, 7, 2, 3, 1))));
  // More classes than the grid's z holds (256 x 256 strides): col2im, not step 7.
  // The channel groups ride in x, so three groups no longer count against it.
  EXPECT_FALSE(conv2d_dgrad_parity_fits(make(1, 3, 600, 600, 8, 3, 3, 256, 0, 1)));
  EXPECT_TRUE(conv2d_dgrad_parity_fits(make(1, 3, 600, 600, 8, 3, 3, 255, 0, 1)));
  EXPECT_TRUE(conv2d_dgrad_parity_fits(make(1, 9, 600, 600, 8, 3, 3, 150, 0, 1)));
  EXPECT_TRUE(conv2d_dgrad_parity_fits(make(1, 9, 600, 600, 8, 3, 3, 147, 0, 1)));
}

// Step 7's grid order (dgrad_parity_class_of_rank): the ranks are a permutation
// of the classes, their taps never grow along it, and ties keep the classes'
// order. The stem (7x7, stride 2, pad 3): classes (a, b) = (1, 1) with 4 x 4
// taps, then (0, 1) and (1, 0) with 3 x 4 and 4 x 3, then (0, 0) with 3 x 3.
TEST(Conv2dDgradParity, ClassesRunHeaviestFirst) {
  using kf::detail::dgrad_parity_class_of_rank;
  using kf::detail::dgrad_parity_of;
  const int stem[4] = {dgrad_parity_class_of_rank(0, 2, 2, 3, 3, 7, 7, 224, 224),
                       dgrad_parity_class_of_rank(1, 2, 2, 3, 3, 7, 7, 224, 224),
                       dgrad_parity_class_of_rank(2, 2, 2, 3, 3, 7, 7, 224, 224),
                       dgrad_parity_class_of_rank(3, 2, 2, 3, 3, 7, 7, 224, 224)};
  EXPECT_EQ(stem[0], 3);
  EXPECT_EQ(stem[1], 1);
  EXPECT_EQ(stem[2], 2);
  EXPECT_EQ(stem[3], 0);
  int checked = 0;
  for (int sh = 1; sh <= 4; ++sh) {  // up to 16 classes: the sorted range
    for (int sw = 1; sw <= 4; ++sw) {
      for (int filter : {1, 2, 3, 5, 7}) {
        for (int pad = 0; pad < filter; ++pad) {
          for (int in : {1, 3, 8, 13}) {
            if (in + 2 * pad < filter) continue;
            const int classes = sh * sw;
            std::vector<int> order(classes), seen(classes, 0);
            int last = 1 << 30;
            for (int rank = 0; rank < classes; ++rank) {
              const int cls = dgrad_parity_class_of_rank(rank, sh, sw, pad, pad, filter, filter, in, in + 1);
              ASSERT_GE(cls, 0);
              ASSERT_LT(cls, classes);
              ++seen[cls];
              const auto dh = dgrad_parity_of(cls / sw, sh, pad, filter, in);
              const auto dw = dgrad_parity_of(cls % sw, sw, pad, filter, in + 1);
              const int weight = dh.size > 0 && dw.size > 0 ? dh.taps * dw.taps : 0;
              ASSERT_LE(weight, last) << "stride " << sh << "x" << sw << " filter " << filter << " rank " << rank;
              if (weight == last) ASSERT_GT(cls, order[rank - 1]);  // ties in the classes' order
              last = weight;
              order[rank] = cls;
            }
            for (int cls = 0; cls < classes; ++cls) ASSERT_EQ(seen[cls], 1);
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 500);
  // Above 16 classes, the classes' own order.
  for (int rank = 0; rank < 25; ++rank) EXPECT_EQ(dgrad_parity_class_of_rank(rank, 5, 5, 0, 0, 3, 3, 9, 9), rank);
}

}  // namespace
