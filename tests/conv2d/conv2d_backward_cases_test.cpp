// SPDX-License-Identifier: Apache-2.0
// The gradient suite's cases cover what conv2d_backward_gpu_test.cpp's top of
// file says they cover, and its bounds can fail (no GPU needed; part of
// test_conv2d_backward_gpu). The cases of dx's own kernels (gradient step 8,
// the unturned filter): conv2d_backward_dx_cases_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_fp16.h>

#include "conv2d_backward_cases.hpp"
#include "winograd_bound.hpp"
#include "conv2d_bounds.hpp"
#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/backward/dgrad_plan.hpp"
#include "kernelforge/kernels/conv2d/backward/wgrad_pointwise_plan.hpp"
#include "kernelforge/kernels/conv2d/backward/wgrad_wgmma_plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_plan.hpp"
#include "kernelforge/reference/conv.hpp"
#include "kernelforge/reference/conv_backward.hpp"
#include "test_support.hpp"

namespace {

using namespace kf::test::conv2d_backward;
using kf::test::conv2d::fp32_u;

/// Every case's fp32 bound stays below half of one term's typical size S / n,
/// so a wrong, lost or repeated term fails (top of file).
TEST(Conv2dBackwardCases, BoundsCanFail) {
  for (const grad_case& c : grad_cases()) {
    const term_counts t = terms_of(c.p);
    for (std::size_t n : {t.dx, t.dw, t.dbias}) {
      const double terms = static_cast<double>(n);
      EXPECT_LE(2 * terms * terms * fp32_u, 0.5) << c.name << ": " << n << " terms";
    }
  }
}

/// 16-bit dw is rounded once per chunk of images (~1 GiB of im2col,
/// src/conv2d/backward_filter.cu): every case must be one chunk for the bound above.
TEST(Conv2dBackwardCases, OneImageChunk) {
  for (const grad_case& c : grad_cases()) {
    const std::size_t pq = kf::conv2d_output_height(c.p) * kf::conv2d_output_width(c.p);
    const std::size_t crs = c.p.in_channels * c.p.filter_height * c.p.filter_width;
    EXPECT_LE(c.p.batch * pq * crs * sizeof(__half), std::size_t{1} << 30) << c.name;
  }
}

/// dx_forward and dx_forward_inputs, which the Winograd bound builds on, are
/// what conv_backward.hpp says: the forward reference of the spread, masked dy
/// and the turned filter is the gradient reference (the same products, summed in
/// double: within 1e-12 of the error scale) on every case it applies to.
TEST(Conv2dBackwardCases, DxIsTheForwardOfTheTurnedFilter) {
  std::uint64_t seed = 4200;
  int checked = 0;
  for (const grad_case& c : grad_cases()) {
    const kf::conv2d_params& p = c.p;  // NCHW
    if (p.batch == 0 || p.out_channels == 0 || !dx_runs_as_forward(p)) continue;
    SCOPED_TRACE(c.name);
    const std::size_t y_n = p.batch * p.out_channels * kf::conv2d_output_height(p) * kf::conv2d_output_width(p);
    const std::size_t x_n = p.batch * p.in_channels * p.in_height * p.in_width;
    const auto dy = kf::test::random_vector<float>(y_n, ++seed);
    const auto w =
        kf::test::random_vector<float>(p.out_channels * p.in_channels * p.filter_height * p.filter_width, ++seed);
    const auto relu_y = c.relu ? kf::test::random_vector<float>(y_n, ++seed) : std::vector<float>();
    const forward_inputs in = dx_forward_inputs(p, dy, w, relu_y, c.threshold);
    std::vector<double> as_forward(x_n), dx(x_n), scale(x_n);
    kf::reference::conv2d_forward_exact(dx_forward(p), in.spread.data(), in.turned.data(), nullptr, as_forward.data());
    kf::reference::conv2d_backward_data_exact(p, dy.data(), w.data(), dx.data(), scale.data(),
                                              {c.relu ? relu_y.data() : nullptr, c.threshold});
    EXPECT_TRUE(kf::test::all_close(as_forward, dx, {1e-12, 0}, &scale));
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(grad_cases().size()) - 4);  // not the two empty and two pad_past_reach cases
}

/// The cases take the paths the top of file lists.
TEST(Conv2dBackwardCases, CoverTheirPaths) {
  int pad_past_reach = 0, untouched_rows = 0, untouched_cols = 0, winograd = 0, relu_zero = 0, relu_positive = 0,
      no_dbias = 0, empty_batch = 0, no_filters = 0, in_misaligned = 0, out_misaligned = 0, strided_relu = 0,
      wgrad_winograd = 0, wgrad_winograd_masked = 0;
  for (const grad_case& c : grad_cases()) {
    const term_counts t = terms_of(c.p);
    pad_past_reach += dx_runs_as_forward(c.p) ? 0 : 1;
    untouched_rows += t.untouched_rows > 0 && dx_runs_as_forward(c.p) ? 1 : 0;
    untouched_cols += t.untouched_cols > 0 && dx_runs_as_forward(c.p) ? 1 : 0;
    winograd += dx_may_run_winograd(c.p) ? 1 : 0;
    wgrad_winograd += kf::test::best_runs_wgrad_winograd(c.p) ? 1 : 0;
    wgrad_winograd_masked += kf::test::best_runs_wgrad_winograd(c.p) && c.relu ? 1 : 0;
    relu_zero += c.relu && c.threshold == 0.0f ? 1 : 0;
    relu_positive += c.relu && c.threshold > 0.0f ? 1 : 0;
    strided_relu += c.relu && c.p.stride_h > 1 ? 1 : 0;
    no_dbias += c.dbias ? 0 : 1;
    empty_batch += c.p.batch == 0 ? 1 : 0;
    no_filters += c.p.out_channels == 0 ? 1 : 0;
    in_misaligned += c.in_offset > 0 ? 1 : 0;
    out_misaligned += c.out_offset > 0 ? 1 : 0;
  }
  EXPECT_EQ(pad_past_reach, 2);
  EXPECT_GE(untouched_rows, 3);  // stride 2 pad 0, stride 3, 1x1 stride 2
  EXPECT_GE(untouched_cols, 2);
  // the two 14x14 layers, the misaligned 7x7 one, C128 K72, C136 K136, the filter-column 19x21,
  // the Winograd dw case and the strided 128 x 256 case (its dx: dy spread, stride 1)
  EXPECT_EQ(winograd, 8);
  // float NCHW dw under best by Winograd (gradient step 6): C136 K136 and C130 K129 (masked)
  EXPECT_EQ(wgrad_winograd, 2);
  EXPECT_EQ(wgrad_winograd_masked, 1);
  EXPECT_GE(relu_zero, 2);
  EXPECT_GE(relu_positive, 2);
  EXPECT_GE(strided_relu, 2);
  EXPECT_GE(no_dbias, 2);
  EXPECT_EQ(empty_batch, 1);
  EXPECT_EQ(no_filters, 1);
  EXPECT_EQ(in_misaligned, 4);
  EXPECT_EQ(out_misaligned, 6);
}

/// The cases the wgmma filter gradient computes on sm_90 in __half and
/// __nv_bfloat16 NHWC (implicit_gemm_wgmma and best; elsewhere they run as
/// implicit_gemm): C and K multiples of 8, strides up to 8, x and dy 16-byte
/// aligned (no in_offset), something to sum. Among them the shapes the top of
/// file lists: a 128-row tile, two tiles along K and C, a 1x1 layer, strides,
/// the mask, a split (more than 16 patches: 64 pixels each) and misaligned dw;
/// and both tilings of 3 x 3 stride-1 layers (wgrad_wgmma_plan.hpp): one-tap
/// tiles, and filter-column tiles -- with two K tiles, C tiles past C, the mask,
/// a split and misaligned dw. And layers it computes as their column fold (x
/// not readable in place: C * 2 bytes not a multiple of 16, as the stem's, or
/// x misaligned): the stem, and a misaligned 3 x 3 one.
TEST(Conv2dBackwardCases, WgmmaWgradCases) {
  int runs = 0, wide_k = 0, two_tiles = 0, one_by_one = 0, strided = 0, masked = 0, split = 0, out_misaligned = 0;
  int folded_stem = 0, folded_misaligned = 0;
  for (const grad_case& c : grad_cases()) {
    const kf::conv2d_params& p = c.p;
    const bool narrow = p.in_channels * 2 % 16 != 0;
    if (!narrow && c.in_offset == 0) continue;  // read in place (above)
    const std::size_t folded = kf::detail::conv2d_nhwc_folded_channels(p.filter_width, p.in_channels, 2);
    if (kf::detail::conv2d_wgrad_wgmma_unsupported_reason(folded, p.out_channels, 2, p.stride_h, 1) != nullptr ||
        p.batch == 0) {
      continue;
    }
    folded_stem += narrow && p.filter_width == 7 && p.stride_w == 2 ? 1 : 0;
    folded_misaligned += c.in_offset > 0 ? 1 : 0;
  }
  EXPECT_GE(folded_stem, 1);
  EXPECT_GE(folded_misaligned, 1);
  int one_tap_3x3 = 0, columns = 0, columns_wide_k = 0, columns_partial_c = 0, columns_masked = 0, columns_split = 0,
      columns_out_misaligned = 0;
  int rows_split = 0, rows_split_slices = 0, rows_split_masked = 0, rows_split_k_one_block = 0,
      rows_split_partial_c = 0;
  for (const grad_case& c : grad_cases()) {
    const kf::conv2d_params& p = c.p;
    const bool applies = kf::detail::conv2d_wgrad_wgmma_unsupported_reason(p.in_channels, p.out_channels, 2, p.stride_h,
                                                                           p.stride_w) == nullptr &&
                         c.in_offset == 0 && p.batch > 0 && p.out_channels > 0;
    if (!applies) continue;
    ++runs;
    wide_k += p.out_channels > 64 ? 1 : 0;
    two_tiles += p.out_channels > 128 && p.in_channels > 128 ? 1 : 0;
    one_by_one += p.filter_height * p.filter_width == 1 ? 1 : 0;
    strided += p.stride_h > 1 ? 1 : 0;
    masked += c.relu ? 1 : 0;
    split += p.batch * kf::conv2d_output_height(p) * kf::conv2d_output_width(p) > 16 * 64 ? 1 : 0;
    out_misaligned += c.out_offset > 0 ? 1 : 0;
    const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
    const kf::detail::conv2d_wgrad_wgmma_plan plan =
        kf::detail::plan_conv2d_wgrad_wgmma(p.batch, P, Q, p.out_channels, p.in_channels, p.filter_height,
                                            p.filter_width, p.stride_h, p.stride_w, p.dilation_h, 132);
    const bool three_by_three = p.filter_height == 3 && p.filter_width == 3 && p.stride_h == 1;
    one_tap_3x3 += three_by_three && plan.filter_rows == 1 ? 1 : 0;
    if (plan.bn == kf::detail::conv2d_wgrad_wgmma_split_bn) {  // 128 x 256, split by rows
      ++rows_split;
      rows_split_slices += plan.split > 1 ? 1 : 0;
      rows_split_masked += c.relu ? 1 : 0;
      rows_split_k_one_block += p.out_channels % 128 != 0 && p.out_channels % 128 <= 64 ? 1 : 0;  // consumer 1 idle
      rows_split_partial_c += p.in_channels % 256 != 0 ? 1 : 0;
    }
    if (plan.filter_rows > 1) {
      ++columns;
      columns_wide_k += plan.tiles_k > 1 ? 1 : 0;
      columns_partial_c += plan.tiles_c > 1 && p.in_channels % 64 != 0 ? 1 : 0;
      columns_masked += c.relu ? 1 : 0;
      columns_split += plan.split > 1 ? 1 : 0;
      columns_out_misaligned += c.out_offset > 0 ? 1 : 0;
    }
  }
  EXPECT_GE(rows_split, 2);
  EXPECT_GE(rows_split_slices, 1);
  EXPECT_GE(rows_split_masked, 1);
  EXPECT_GE(rows_split_k_one_block, 1);
  EXPECT_GE(rows_split_partial_c, 1);
  EXPECT_GE(one_tap_3x3, 1);
  EXPECT_GE(columns, 4);
  EXPECT_GE(columns_wide_k, 1);
  EXPECT_GE(columns_partial_c, 1);
  EXPECT_GE(columns_masked, 1);
  EXPECT_GE(columns_split, 1);
  EXPECT_GE(columns_out_misaligned, 1);
  EXPECT_GE(runs, 10);
  EXPECT_GE(wide_k, 2);
  EXPECT_GE(two_tiles, 1);
  EXPECT_GE(one_by_one, 1);
  EXPECT_GE(strided, 3);
  EXPECT_GE(masked, 1);
  EXPECT_GE(split, 1);
  EXPECT_GE(out_misaligned, 1);
}

/// The cases the TF32 filter gradient (gradient step 4, 04_wgrad_wgmma_tf32.cuh)
/// computes on sm_90 for float NHWC under math_mode::tf32 (implicit_gemm_wgmma;
/// best too but for 1x1 stride-1 unpadded layers, conv2d_wgrad_tf32_preferred:
/// step 9 there, PointwiseWgradTf32Cases below, else step 2):
/// every layer with something to sum (K is free: dy_t; strides up to 8), x read
/// in place where C is a multiple of 4 and x aligned, else its column fold. Among
/// them the shapes the brief of that step lists: 3 x 3 pad 1, stride 2 over odd
/// sizes, dilation, 1x1 (best's route and the wgmma variant's), the 7 x 7 stem
/// (folded), N = 1, C and K off the tiles (x boxes and dy_t rows partly past
/// them), patches short of 32 pixels (x's zeroed tail), the mask, a split, and
/// filter-column tiles (with two K tiles and a split); dw is poisoned in every case.
TEST(Conv2dBackwardCases, WgmmaWgradTf32Cases) {
  int runs = 0, in_place = 0, folded = 0, pad1_3x3 = 0, strided_odd = 0, dilated = 0, one_by_one_best = 0,
      one_by_one_variant = 0, stem = 0, single_image = 0, c_off_tile = 0, k_off_tile = 0, short_patch = 0, masked = 0,
      split = 0, columns = 0, columns_wide_k = 0, columns_split = 0, columns_masked = 0;
  for (const grad_case& c : grad_cases()) {
    const kf::conv2d_params& p = c.p;
    if (p.batch == 0 || p.out_channels == 0) continue;
    const bool fold = p.in_channels * 4 % 16 != 0 || c.in_offset > 0;
    const std::size_t channels =
        fold ? kf::detail::conv2d_nhwc_folded_channels(p.filter_width, p.in_channels, 4) : p.in_channels;
    const std::size_t s = fold ? 1 : p.filter_width, stride_w = fold ? 1 : p.stride_w;
    if (kf::detail::conv2d_wgrad_wgmma_unsupported_reason(channels, p.out_channels, 4, p.stride_h, stride_w) !=
        nullptr) {
      continue;
    }
    ++runs;
    (fold ? folded : in_place) += 1;
    const std::size_t P = kf::conv2d_output_height(p), Q = kf::conv2d_output_width(p);
    const kf::detail::conv2d_wgrad_wgmma_plan plan = kf::detail::plan_conv2d_wgrad_wgmma(
        p.batch, P, Q, p.out_channels, channels, p.filter_height, s, p.stride_h, stride_w, p.dilation_h, 132, false, 4);
    const bool best = kf::detail::conv2d_wgrad_tf32_preferred(p.in_channels, p.filter_height, p.filter_width,
                                                              p.stride_h, p.stride_w, p.pad_h, p.pad_w);
    pad1_3x3 += p.filter_height == 3 && p.filter_width == 3 && p.pad_h == 1 && p.stride_h == 1 ? 1 : 0;
    strided_odd += p.stride_h > 1 && (p.in_height % 2 == 1 || p.in_width % 2 == 1) ? 1 : 0;
    dilated += p.dilation_h > 1 ? 1 : 0;
    const bool one_by_one = p.filter_height * p.filter_width == 1;
    one_by_one_best += one_by_one && best ? 1 : 0;
    one_by_one_variant += one_by_one && !best ? 1 : 0;
    stem += p.filter_height == 7 && p.in_channels == 3 && fold ? 1 : 0;
    single_image += p.batch == 1 ? 1 : 0;
    c_off_tile += channels % 32 != 0 ? 1 : 0;
    k_off_tile += p.out_channels % 64 != 0 ? 1 : 0;
    short_patch += plan.patch_pixels() < plan.step_pixels ? 1 : 0;
    masked += c.relu ? 1 : 0;
    split += plan.split > 1 ? 1 : 0;
    if (plan.filter_rows > 1) {
      ++columns;
      columns_wide_k += plan.tiles_k > 1 ? 1 : 0;
      columns_split += plan.split > 1 ? 1 : 0;
      columns_masked += c.relu ? 1 : 0;
    }
  }
  EXPECT_GE(runs, 30);
  EXPECT_GE(in_place, 10);
  EXPECT_GE(folded, 5);
  EXPECT_GE(pad1_3x3, 5);
  EXPECT_GE(strided_odd, 3);
  EXPECT_GE(dilated, 2);
  EXPECT_GE(one_by_one_best, 1);
  EXPECT_GE(one_by_one_variant, 1);
  EXPECT_GE(stem, 1);
  EXPECT_GE(single_image, 5);
  EXPECT_GE(c_off_tile, 5);
  EXPECT_GE(k_off_tile, 5);
  EXPECT_GE(short_patch, 1);
  EXPECT_GE(masked, 3);
  EXPECT_GE(split, 3);
  EXPECT_GE(columns, 2);
  EXPECT_GE(columns_wide_k, 1);
  EXPECT_GE(columns_split, 1);
  EXPECT_GE(columns_masked, 1);
}

/// The cases gradient step 9 (09_wgrad_mma_tf32_pointwise.cuh) computes on sm_90
/// for float NHWC under math_mode::tf32 and best: pointwise layers (1x1, stride
/// 1, no padding) with C and K multiples of 4 and x, dy and relu_y 16-byte
/// aligned (no in_offset), something to sum. Among them: unsplit and split
/// launches (the slabs summed in the kernel), K and C past their 32-channel
/// boxes, a second tile along K and along C, the mask (split too), and dw off
/// 16 bytes. Splits of more slices than the suite's bounds allow (n <= 2048)
/// are checked exactly on integer data: conv2d_backward_pointwise_gpu_test.cpp.
TEST(Conv2dBackwardCases, PointwiseWgradTf32Cases) {
  int runs = 0, unsplit = 0, split = 0, k_off_box = 0, c_off_box = 0, two_k_tiles = 0, two_c_tiles = 0, masked = 0,
      masked_split = 0, out_misaligned = 0;
  for (const grad_case& c : grad_cases()) {
    const kf::conv2d_params& p = c.p;
    const bool pointwise = p.filter_height == 1 && p.filter_width == 1 && p.stride_h == 1 && p.stride_w == 1 &&
                           p.pad_h == 0 && p.pad_w == 0;
    const std::size_t pixels = p.batch * kf::conv2d_output_height(p) * kf::conv2d_output_width(p);
    if (!pointwise || c.in_offset > 0 || pixels == 0 || p.out_channels == 0 ||
        kf::detail::conv2d_wgrad_pointwise_unsupported_reason(p.in_channels, p.out_channels, pixels) != nullptr) {
      continue;
    }
    ++runs;
    const kf::detail::conv2d_wgrad_wgmma_plan plan =
        kf::detail::plan_conv2d_wgrad_pointwise(pixels, p.out_channels, p.in_channels, 132);
    (plan.split > 1 ? split : unsplit) += 1;
    k_off_box += p.out_channels % 32 != 0 ? 1 : 0;
    c_off_box += p.in_channels % 32 != 0 ? 1 : 0;
    two_k_tiles += plan.tiles_k > 1 ? 1 : 0;
    two_c_tiles += plan.tiles_c > 1 ? 1 : 0;
    masked += c.relu ? 1 : 0;
    masked_split += c.relu && plan.split > 1 ? 1 : 0;
    out_misaligned += c.out_offset > 0 ? 1 : 0;
  }
  EXPECT_GE(runs, 4);
  EXPECT_GE(unsplit, 2);
  EXPECT_GE(split, 2);
  EXPECT_GE(k_off_box, 2);
  EXPECT_GE(c_off_box, 2);
  EXPECT_GE(two_k_tiles, 1);
  EXPECT_GE(two_c_tiles, 1);
  EXPECT_GE(masked, 2);
  EXPECT_GE(masked_split, 1);
  EXPECT_GE(out_misaligned, 1);
}

}  // namespace
