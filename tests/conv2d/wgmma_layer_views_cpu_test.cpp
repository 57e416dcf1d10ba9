// SPDX-License-Identifier: Apache-2.0
// CPU tests of the layer as conv2d's wgmma kernels read it: the NHWC column
// fold (its index arithmetic, wgmma_nhwc_fold_index.hpp, against the fold's
// definition) and pointwise layers as one row of pixels (args.cuh:
// conv2d_one_row_if_pointwise). Part of test_conv2d; step 7's plans and rules
// are in wgmma_cpu_test.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/common/fast_divmod.cuh"
#include "kernelforge/kernels/conv2d/args.cuh"
#include "kernelforge/kernels/conv2d/wgmma_nhwc_fold_index.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"

namespace {

/// The column fold by its definition (wgmma_nhwc_fold.cuh): x N x H x W x C,
/// the result N x H x Q x C', 0 outside the image and past S C.
template <class T>
std::vector<T> fold_columns_by_definition(const std::vector<T>& x, std::size_t n, std::size_t h, std::size_t w,
                                          std::size_t c, std::size_t q, std::size_t s, std::size_t stride_w,
                                          std::size_t pad_w, std::size_t dilation_w, std::size_t c_folded) {
  std::vector<T> dst(n * h * q * c_folded, T{});
  for (std::size_t nh = 0; nh < n * h; ++nh) {
    for (std::size_t qq = 0; qq < q; ++qq) {
      for (std::size_t j = 0; j < s * c; ++j) {
        const std::size_t tap = j / c, ch = j % c;
        const std::size_t iw_padded = qq * stride_w + tap * dilation_w;  // iw + pad_w
        if (iw_padded < pad_w || iw_padded - pad_w >= w) continue;
        dst[(nh * q + qq) * c_folded + j] = x[(nh * w + iw_padded - pad_w) * c + ch];
      }
    }
  }
  return dst;
}

/// The fold kernel's index arithmetic (wgmma_nhwc_fold_index.hpp), run vector
/// by vector on the CPU as the kernel's threads do, against the definition:
/// C from 1 to 12 (taps split across vectors, several taps in one), S up to 7,
/// stride, padding and dilation along w, Q = 1, for 2- and 4-byte elements.
template <class T>
void expect_fold_matches_definition() {
  using kf::detail::conv2d_nhwc_fold_geometry;
  constexpr std::size_t lanes = 16 / sizeof(T);
  constexpr std::size_t n = 2, h = 3;
  int layers = 0;
  for (std::size_t c : {1u, 2u, 3u, 5u, 7u, 12u}) {
    for (std::size_t s : {1u, 3u, 7u}) {
      for (std::size_t stride : {1u, 2u, 3u}) {
        for (std::size_t pad : {0u, 1u, 3u}) {
          for (std::size_t dilation : {1u, 2u, 3u}) {
            for (std::size_t w : {1u, 4u, 13u}) {
              const std::size_t span = dilation * (s - 1) + 1;
              if (w + 2 * pad < span) continue;  // no output column
              const std::size_t q = (w + 2 * pad - span) / stride + 1;
              const std::size_t c_folded = kf::detail::conv2d_nhwc_folded_channels(s, c, sizeof(T));
              SCOPED_TRACE("C " + std::to_string(c) + " S " + std::to_string(s) + " stride " + std::to_string(stride) +
                           " pad " + std::to_string(pad) + " dilation " + std::to_string(dilation) + " W " +
                           std::to_string(w));
              conv2d_nhwc_fold_geometry g;
              ASSERT_TRUE(kf::detail::make_conv2d_nhwc_fold_geometry(n, h, w, c, q, s, stride, pad, dilation, c_folded,
                                                                     sizeof(T), g));
              ASSERT_EQ(static_cast<std::size_t>(g.vectors) * lanes, n * h * q * c_folded);
              std::vector<T> x(n * h * w * c);
              for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(i + 1);  // never 0
              std::vector<T> folded(n * h * q * c_folded, static_cast<T>(-1));
              for (int v = 0; v < g.vectors; ++v) {
                kf::detail::conv2d_nhwc_fold_vector(x.data(), g, v, T{}, folded.data() + v * lanes);
              }
              ASSERT_EQ(folded, fold_columns_by_definition(x, n, h, w, c, q, s, stride, pad, dilation, c_folded));
              ++layers;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(layers, 900);  // 990 of the 1458 combinations have an output column
}

/// conv2d_one_row_if_pointwise: a pointwise layer (1 x 1, stride 1, no padding; any dilation)
/// becomes one image of one row of N P Q pixels -- the same GEMM rows, so the same memory and
/// the epilogue's same row argument -- and any other layer is returned as it is.
TEST(Conv2dWgmma, PointwiseLayersAsOneRow) {
  using kf::detail::conv2d_args;
  const auto layer = [](std::size_t n, std::size_t c, std::size_t h, std::size_t w, std::size_t k, std::size_t stride,
                        std::size_t pad, std::size_t dilation) {
    kf::conv2d_params p{n, c, h, w, k, 1, 1, stride, stride, pad, pad, dilation, dilation, kf::conv2d_layout::nhwc};
    return kf::detail::make_conv2d_args<float>(p, kf::conv2d_output_height(p), kf::conv2d_output_width(p), nullptr,
                                               nullptr, nullptr, nullptr);
  };
  // Ragged and whole, one image and several, dilated: as the GPU suites' pointwise cases.
  for (const conv2d_args<float>& a :
       {layer(3, 24, 11, 13, 257, 1, 0, 1), layer(1, 128, 8, 8, 257, 1, 0, 1), layer(2, 256, 14, 14, 64, 1, 0, 1),
        layer(2, 32, 9, 11, 67, 1, 0, 1), layer(2, 8, 5, 7, 4, 1, 0, 2)}) {
    ASSERT_TRUE(kf::detail::conv2d_is_pointwise(a)) << a.n << " x " << a.h << " x " << a.w;
    const conv2d_args<float> f = kf::detail::conv2d_one_row_if_pointwise(a);
    const auto m = static_cast<std::size_t>(a.n) * static_cast<std::size_t>(a.p) * static_cast<std::size_t>(a.q);
    EXPECT_EQ(std::vector<int>({f.n, f.h, f.p, f.dilation_h, f.dilation_w}), (std::vector<int>{1, 1, 1, 1, 1}));
    EXPECT_EQ(std::vector<std::size_t>({static_cast<std::size_t>(f.w), static_cast<std::size_t>(f.q),
                                        static_cast<std::size_t>(f.hw), static_cast<std::size_t>(f.pq),
                                        static_cast<std::size_t>(f.m)}),
              std::vector<std::size_t>(5, m));
    EXPECT_EQ(std::vector<int>({f.c, f.k, f.r, f.s, f.crs, f.rs}), (std::vector<int>{a.c, a.k, a.r, a.s, a.crs, a.rs}));
    EXPECT_EQ(f.div_q.divisor, static_cast<unsigned>(m));
    EXPECT_EQ(f.div_pq.divisor, static_cast<unsigned>(m));
  }
  // A stride or padding reads other pixels: those layers stay as they are.
  for (const conv2d_args<float>& a : {layer(2, 8, 5, 7, 4, 2, 0, 1), layer(2, 8, 5, 7, 4, 1, 1, 1)}) {
    EXPECT_FALSE(kf::detail::conv2d_is_pointwise(a));
    const conv2d_args<float> f = kf::detail::conv2d_one_row_if_pointwise(a);
    EXPECT_EQ(std::vector<int>({f.n, f.h, f.w, f.p, f.q, f.hw, f.pq}),
              (std::vector<int>{a.n, a.h, a.w, a.p, a.q, a.hw, a.pq}));
  }
}

TEST(Conv2dWgmma, NhwcColumnFoldIndexing) {
  expect_fold_matches_definition<std::uint16_t>();  // __half, __nv_bfloat16: 8 values a vector
  expect_fold_matches_definition<float>();          // 4 values a vector
  // The stem (N16 C3 224x224 7x7 s2 p3): 24 channels, 3 vectors of 16-bit values a pixel.
  kf::detail::conv2d_nhwc_fold_geometry stem;
  ASSERT_TRUE(kf::detail::make_conv2d_nhwc_fold_geometry(16, 224, 224, 3, 112, 7, 2, 3, 1, 24, 2, stem));
  EXPECT_EQ(stem.vectors, 16 * 224 * 112 * 3);
  EXPECT_EQ(stem.per_pixel.divisor, 3u);
  EXPECT_EQ(stem.row, 224 * 3);
  EXPECT_EQ(stem.data, 21);
  EXPECT_EQ(stem.tap_gap, 0);
  // Refused: dst past the kernel's ints, C' not whole vectors or short of S C, nothing to fold.
  kf::detail::conv2d_nhwc_fold_geometry g;
  EXPECT_FALSE(kf::detail::make_conv2d_nhwc_fold_geometry(1024, 1024, 1024, 3, 1024, 1, 1, 0, 1, 8, 2, g));
  EXPECT_FALSE(kf::detail::make_conv2d_nhwc_fold_geometry(1, 1, 1 << 29, 8, 1, 1, 1, 0, 1, 8, 2, g));
  EXPECT_FALSE(kf::detail::make_conv2d_nhwc_fold_geometry(1, 1, 7, 3, 1, 7, 1, 0, 1, 20, 2, g));
  EXPECT_FALSE(kf::detail::make_conv2d_nhwc_fold_geometry(1, 1, 7, 3, 1, 7, 1, 0, 1, 16, 2, g));
  EXPECT_FALSE(kf::detail::make_conv2d_nhwc_fold_geometry(0, 1, 7, 3, 1, 7, 1, 0, 1, 24, 2, g));
}

}  // namespace
