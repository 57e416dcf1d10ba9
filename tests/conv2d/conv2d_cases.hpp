// SPDX-License-Identifier: Apache-2.0
// The conv2d_forward cases and variants the GPU suites share
// (conv2d_gpu_test.cpp: every variant x every case against the reference;
// conv2d_epilogue_gpu_test.cu: the fused ReLU and the epilogue functors on the
// cases that take every store path the list takes).
//
// The cases: pointwise, 3x3, 5x5, 7x7 (the ResNet stem), strides, dilation,
// padding 0-3, odd shapes and channel counts, single output rows and columns,
// N = 1, every implicit-GEMM tile (64 x 64, 128 x 64, 128 x 128 on 132 SMs),
// with and without bias, misaligned y (scalar stores), misaligned x, weight and
// bias (4-byte filter copies), implicit_gemm_wgmma's pixel boxes (resnet_*,
// boxes_span_images_*), and layers small enough that plan.hpp splits
// C*R*S (splitk_*; expect_splitk_cases_split checks that they do on the device
// the tests run on).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/conv.hpp"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "test_support.hpp"

namespace kf::test::conv2d {

struct conv_case {
  const char* name;
  kf::conv2d_params p;
  bool bias;
  std::size_t y_offset;       // elements: a misaligned y forces the scalar store path
  std::size_t in_offset = 0;  // elements: x, weight and bias start this far into their buffers
};

inline kf::conv2d_params make(std::size_t n, std::size_t c, std::size_t h, std::size_t w, std::size_t k, std::size_t r,
                              std::size_t s, std::size_t stride, std::size_t pad, std::size_t dilation) {
  kf::conv2d_params p{n, c, h, w, k, r, s};
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  p.dilation_h = p.dilation_w = dilation;
  return p;
}

/// A layer with its own stride and padding along each direction (dilation
/// both ways) in `layout` (conv2d_nhwc_gpu_test.cpp, conv2d_fp32_emulated_gpu_test.cpp).
inline kf::conv2d_params make_layer(std::size_t n, std::size_t c, std::size_t h, std::size_t w, std::size_t k,
                                    std::size_t r, std::size_t s, std::size_t stride_h, std::size_t stride_w,
                                    std::size_t pad_h, std::size_t pad_w, std::size_t dilation = 1,
                                    kf::conv2d_layout layout = kf::conv2d_layout::nchw) {
  kf::conv2d_params p{n, c, h, w, k, r, s};
  p.stride_h = stride_h;
  p.stride_w = stride_w;
  p.pad_h = pad_h;
  p.pad_w = pad_w;
  p.dilation_h = p.dilation_w = dilation;
  p.layout = layout;
  return p;
}

inline const conv_case conv_cases[] = {
    {"pointwise_1x1_c67", make(2, 67, 9, 11, 13, 1, 1, 1, 0, 1), true, 0},
    {"same_3x3_pad1_c3_n5", make(5, 3, 17, 19, 20, 3, 3, 1, 1, 1), false, 0},
    {"resnet_stem_7x7_s2_p3", make(1, 3, 224, 224, 64, 7, 7, 2, 3, 1), true, 0},
    {"dilated_3x3_d2_c67", make(2, 67, 23, 21, 35, 3, 3, 1, 2, 2), false, 0},
    {"stride2_pad0_odd_3x5", make(5, 3, 31, 29, 7, 3, 5, 2, 0, 1), true, 0},
    {"stride2_pad0_odd_3x5_no_bias", make(5, 3, 31, 29, 7, 3, 5, 2, 0, 1), false, 0},
    {"stride2_pad2_5x5_c19", make(2, 19, 33, 31, 21, 5, 5, 2, 2, 1), true, 0},
    {"single_output_row_p1", make(1, 67, 5, 40, 9, 5, 3, 1, 0, 1), true, 0},
    {"single_output_column_q1", make(5, 3, 12, 3, 17, 3, 3, 1, 0, 1), false, 0},
    {"gemm_edges_k130_c67", make(5, 67, 14, 14, 130, 3, 3, 1, 1, 1), true, 0},
    {"gemm_tile_128x128", make(8, 16, 64, 64, 256, 3, 3, 1, 1, 1), true, 0},
    {"gemm_tile_128x64_misaligned_y", make(3, 5, 112, 112, 48, 3, 3, 1, 1, 1), true, 1},
    {"gemm_tile_128x64_misaligned_y_no_bias", make(3, 5, 112, 112, 48, 3, 3, 1, 1, 1), false, 1},
    // Split-K (144 BK slices; 128 x 128 tiles, P*Q % 4 == 0: float4 reduction with bias), N = 2 and N = 1.
    {"splitk_c128_14x14_k256", make(2, 128, 14, 14, 256, 3, 3, 1, 1, 1), true, 0},
    {"splitk_n1_c128_14x14_k256", make(1, 128, 14, 14, 256, 3, 3, 1, 1, 1), true, 0},
    // Split-K, N = 1, P*Q = 63 and y misaligned: scalar stores and reduction; K = 67 edges.
    {"splitk_c131_9x7_k67_misaligned_y", make(1, 131, 9, 7, 67, 3, 3, 1, 1, 1), true, 1},
    {"splitk_c131_9x7_k67_misaligned_y_no_bias", make(1, 131, 9, 7, 67, 3, 3, 1, 1, 1), false, 1},
    // Split-K with K <= 64 (128 x 64 tiles), float4 reduction.
    {"splitk_c96_8x8_k40", make(2, 96, 8, 8, 40, 3, 3, 1, 1, 1), true, 0},
    {"splitk_c96_8x8_k40_no_bias", make(2, 96, 8, 8, 40, 3, 3, 1, 1, 1), false, 0},
    // Misaligned x, weight, bias and y; C*R*S = 180 (a multiple of 4: only the
    // offset keeps the pipelined kernel off its 16-byte filter copies).
    {"misaligned_inputs_c20_15x13_k33", make(3, 20, 15, 13, 33, 3, 3, 1, 1, 1), true, 1, 1},
    // implicit_gemm_wgmma's pixel boxes (wgmma_plan.hpp): 8 x 8 x 2 boxes with
    // 64-channel tiles (bench_conv's first ResNet layer at N = 2); boxes of 4
    // whole 5 x 6 images (the last one overhangs N = 9), C = 40 (a half-empty
    // second 32-channel stage), K = 70 (one 128-channel tile, mostly past K);
    // 14 x 3 x 3 boxes (the last overhangs P) with two 128-channel tiles (the
    // third ResNet layer at N = 3); 42 x 3 boxes (the last overhangs Q), C = 33.
    {"resnet_c64_56x56_k64_n2", make(2, 64, 56, 56, 64, 3, 3, 1, 1, 1), true, 0},
    {"boxes_span_images_n9_c40_5x6_k70", make(9, 40, 5, 6, 70, 3, 3, 1, 1, 1), true, 0},
    {"resnet_c256_14x14_k256_n3_no_bias", make(3, 256, 14, 14, 256, 3, 3, 1, 1, 1), false, 0},
    {"boxes_past_q_c33_3x200_k20", make(1, 33, 3, 200, 20, 3, 3, 1, 1, 1), true, 0},
};

/// How many conv_cases are named splitk_*.
constexpr int splitk_case_count = 6;

/// The conv_cases entry named `name` (a test's failure if there is none).
inline const conv_case& case_named(const char* name) {
  for (const conv_case& cc : conv_cases) {
    if (std::strcmp(cc.name, name) == 0) return cc;
  }
  ADD_FAILURE() << "no conv_case named " << name;
  return conv_cases[0];
}

struct variant_case {
  const char* name;
  kf::conv2d_variant variant;
  kf::math_mode math;
};

inline const variant_case all_variants[] = {
    {"naive", kf::conv2d_variant::naive, kf::math_mode::exact},
    {"smem_tiled", kf::conv2d_variant::smem_tiled, kf::math_mode::exact},
    {"implicit_gemm", kf::conv2d_variant::implicit_gemm, kf::math_mode::exact},
    {"implicit_gemm_tf32", kf::conv2d_variant::implicit_gemm_tf32, kf::math_mode::tf32},
    {"implicit_gemm_pipelined", kf::conv2d_variant::implicit_gemm_pipelined, kf::math_mode::exact},
    {"winograd", kf::conv2d_variant::winograd, kf::math_mode::exact},
    {"winograd_fused", kf::conv2d_variant::winograd_fused, kf::math_mode::exact},
    {"implicit_gemm_wgmma", kf::conv2d_variant::implicit_gemm_wgmma, kf::math_mode::tf32},
    {"best_exact", kf::conv2d_variant::best, kf::math_mode::exact},
    {"best_tf32", kf::conv2d_variant::best, kf::math_mode::tf32},
};

/// all_variants but `left_out`, in the same order.
inline std::vector<variant_case> variants_except(std::initializer_list<kf::conv2d_variant> left_out) {
  std::vector<variant_case> kept;
  for (const variant_case& vc : all_variants) {
    bool keep = true;
    for (kf::conv2d_variant v : left_out) keep = keep && vc.variant != v;
    if (keep) kept.push_back(vc);
  }
  return kept;
}

inline bool device_has_tf32() { return kf::get_device_info().cc_major >= 8; }

/// Whether conv2d_variant::implicit_gemm_wgmma runs `p` here (through the
/// library's own epilogues): a stride-1 layer, the sm_90a kernel compiled into
/// the library and a compute capability 9.0 device. Elsewhere it must raise
/// errc::unsupported.
inline bool wgmma_runs(const kf::conv2d_params& p) {
  return kf::detail::conv2d_wgmma_unsupported_reason(p.stride_h, p.stride_w) == nullptr &&
         kf::detail::conv2d_wgmma_available(kf::get_device_info().device);
}

/// Whether Winograd F(2x2,3x3) (winograd, winograd_fused) computes `p`: 3x3,
/// stride 1, dilation 1. Asked for by name elsewhere: errc::unsupported.
inline bool winograd_applies(const kf::conv2d_params& p) {
  return kf::detail::conv2d_winograd_unsupported_reason(p.filter_height, p.filter_width, p.stride_h, p.stride_w,
                                                        p.dilation_h, p.dilation_w) == nullptr;
}

inline bool is_winograd(kf::conv2d_variant v) {
  return v == kf::conv2d_variant::winograd || v == kf::conv2d_variant::winograd_fused;
}

/// Whether this device grants conv2d_variant::winograd_fused's block its shared
/// memory (sm_90, sm_100).
inline bool winograd_fused_fits() {
  int optin = 0;
  if (cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, kf::get_device_info().device) !=
      cudaSuccess) {
    return false;
  }
  return static_cast<std::size_t>(optin) >= kf::detail::conv2d_winograd_fused_layout::smem_bytes;
}

/// Whether conv2d_variant::winograd_fused runs `p` here: a layer Winograd
/// computes, on a device that grants its block's shared memory (sm_90, sm_100).
/// Elsewhere it must raise errc::unsupported.
inline bool winograd_fused_runs(const kf::conv2d_params& p) { return winograd_applies(p) && winograd_fused_fits(); }

/// Whether `variant` runs `p` (as far as Winograd's conditions go; the other
/// variants' own conditions are checked where they are tested).
inline bool winograd_variant_runs(kf::conv2d_variant variant, const kf::conv2d_params& p) {
  if (variant == kf::conv2d_variant::winograd) return winograd_applies(p);
  if (variant == kf::conv2d_variant::winograd_fused) return winograd_fused_runs(p);
  return true;
}

/// `host` on the device, starting `offset` elements into its buffer (the
/// elements before it: NaN, never read). T: float, __half or __nv_bfloat16.
template <class T>
kf::device_buffer<T> to_device_at(const std::vector<T>& host, std::size_t offset) {
  std::vector<T> shifted(offset, kf::reference::from_double<T>(std::nan("")));
  shifted.insert(shifted.end(), host.begin(), host.end());
  return kf::to_device(shifted);
}

// Readable parameter values in test names.
inline void PrintTo(const conv_case& c, std::ostream* os) { *os << c.name; }
inline void PrintTo(const variant_case& v, std::ostream* os) { *os << v.name; }

/// The implicit-GEMM plan (tile, split-K) the launcher makes for `p` on a
/// device of `sm_count` SMs (plan.hpp, from the same inputs).
inline kf::detail::conv2d_gemm_plan gemm_plan(const kf::conv2d_params& p, int sm_count) {
  const std::size_t m = p.batch * kf::conv2d_output_height(p) * kf::conv2d_output_width(p);
  return kf::detail::choose_conv2d_gemm_plan(m, p.out_channels, p.in_channels * p.filter_height * p.filter_width,
                                             sm_count);
}

/// The splitk_* cases must take the split-K path on this device (else the
/// suites would not cover it): the launcher's plan, from the same inputs.
inline void expect_splitk_cases_split() {
  const int sm_count = kf::get_device_info().sm_count;
  int checked = 0;
  for (const conv_case& cc : conv_cases) {
    if (std::strncmp(cc.name, "splitk_", 7) != 0) continue;
    EXPECT_GT(gemm_plan(cc.p, sm_count).split, 1u) << cc.name << " does not split on " << sm_count << " SMs";
    ++checked;
  }
  EXPECT_EQ(checked, splitk_case_count);
}

}  // namespace kf::test::conv2d
