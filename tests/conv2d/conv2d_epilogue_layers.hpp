// SPDX-License-Identifier: Apache-2.0
// What the conv2d epilogue suites share (conv2d_epilogue_gpu_test.cu runs the
// layers, conv2d_epilogue_store_paths_test.cpp checks which store paths they
// take): the kinds of epilogue, the classes of layer, the layers, and the
// combinations that must raise errc::unsupported whatever the device.
#pragma once

#include <vector>

#include "conv2d_cases.hpp"

namespace kf::test::conv2d_epilogue {

using namespace kf::test::conv2d;  // conv2d_cases.hpp

// ---- the kinds of epilogue ------------------------------------------------------------
enum class epi { relu, clamp, residual, lambda, compose_bias_relu, bias_relu_threshold };

/// The library's own epilogue types (the options' ReLU, or epilogue::bias_relu_threshold<float>
/// passed as a functor): the precompiled kernels, implicit_gemm_wgmma's included, take them.
inline bool library_epilogue(epi e) { return e == epi::relu || e == epi::bias_relu_threshold; }

inline const char* epi_name(epi e) {
  switch (e) {
    case epi::relu: return "relu";
    case epi::clamp: return "clamp";
    case epi::residual: return "residual_add";
    case epi::lambda: return "lambda";
    case epi::compose_bias_relu: return "compose_bias_relu";
    case epi::bias_relu_threshold: return "bias_relu_threshold";
  }
  return "unknown";
}

// ---- the layers, and the combinations no device runs ---------------------------------
/// What decides whether winograd, winograd_fused and implicit_gemm_wgmma take a
/// layer: Winograd F(2x2,3x3) computes 3x3 filters at stride 1 and dilation 1,
/// the wgmma kernel stride-1 layers.
enum class layer_class { winograd, not_3x3, dilated, strided };

inline layer_class class_of(const kf::conv2d_params& p) {
  if (p.stride_h != 1 || p.stride_w != 1) return layer_class::strided;
  if (p.filter_height != 3 || p.filter_width != 3) return layer_class::not_3x3;
  if (p.dilation_h != 1 || p.dilation_w != 1) return layer_class::dilated;
  return layer_class::winograd;
}

inline const char* class_name(layer_class c) {
  switch (c) {
    case layer_class::winograd: return "3x3 stride 1 (Winograd's)";
    case layer_class::not_3x3: return "stride 1, not 3x3";
    case layer_class::dilated: return "3x3 stride 1, dilated";
    case layer_class::strided: return "strided";
  }
  return "unknown";
}

/// The layers, from conv_cases, and the store path each takes in the
/// implicit-GEMM variants on the H200 (Conv2dEpilogueStorePaths checks that
/// together they take every path the whole list takes). Two have no bias, so
/// that every kind of store (the kernels', split-K's, Winograd's, wgmma's) also
/// runs without one. Conv2dFusedRelu's threshold cycles with the index: each
/// class of layer meets every threshold.
inline const char* const epilogue_layer_names[] = {
    "boxes_span_images_n9_c40_5x6_k70",       // split-K after 128x128, scalar (P*Q = 30)
    "pointwise_1x1_c67",                      // 64x64, scalar stores (P*Q = 99); not 3x3
    "dilated_3x3_d2_c67",                     // split-K after 128x64, scalar (P*Q = 483); dilated; no bias
    "stride2_pad2_5x5_c19",                   // strided: split-K after 128x64, float4
    "splitk_c128_14x14_k256",                 // split-K after 128x128, float4; best exact: Winograd
    "gemm_tile_128x64_misaligned_y_no_bias",  // 128x64, scalar stores (y misaligned); no bias
    "resnet_stem_7x7_s2_p3",                  // strided: 64x64, float4 stores
    "gemm_tile_128x128",                      // 128x128, float4 stores
};

inline const std::vector<conv_case>& epilogue_layers() {
  static const std::vector<conv_case> layers = [] {
    std::vector<conv_case> v;
    for (const char* name : epilogue_layer_names) v.push_back(case_named(name));
    return v;
  }();
  return layers;
}

/// One combination that must raise errc::unsupported whatever the device.
struct unsupported_combination {
  kf::conv2d_variant variant;
  epi epilogue;  // library_epilogue: the options' fused ReLU; else a functor (it stands for all four)
  layer_class layers;
};

inline const unsupported_combination unsupported_combinations[] = {
    // Winograd F(2x2,3x3) by name (validation): 3x3 filters at stride 1 and dilation 1 only.
    {kf::conv2d_variant::winograd, epi::relu, layer_class::not_3x3},
    {kf::conv2d_variant::winograd, epi::relu, layer_class::dilated},
    {kf::conv2d_variant::winograd, epi::relu, layer_class::strided},
    {kf::conv2d_variant::winograd, epi::clamp, layer_class::not_3x3},
    {kf::conv2d_variant::winograd, epi::residual, layer_class::dilated},
    {kf::conv2d_variant::winograd, epi::lambda, layer_class::strided},
    {kf::conv2d_variant::winograd_fused, epi::relu, layer_class::not_3x3},
    {kf::conv2d_variant::winograd_fused, epi::relu, layer_class::dilated},
    {kf::conv2d_variant::winograd_fused, epi::relu, layer_class::strided},
    {kf::conv2d_variant::winograd_fused, epi::compose_bias_relu, layer_class::not_3x3},
    {kf::conv2d_variant::winograd_fused, epi::clamp, layer_class::dilated},
    {kf::conv2d_variant::winograd_fused, epi::residual, layer_class::strided},
    // implicit_gemm_wgmma: stride-1 layers only (validation), and the library's
    // own epilogues only (a functor of the test's translation unit, on any layer).
    {kf::conv2d_variant::implicit_gemm_wgmma, epi::relu, layer_class::strided},
    {kf::conv2d_variant::implicit_gemm_wgmma, epi::clamp, layer_class::winograd},
    {kf::conv2d_variant::implicit_gemm_wgmma, epi::residual, layer_class::not_3x3},
    {kf::conv2d_variant::implicit_gemm_wgmma, epi::lambda, layer_class::dilated},
    {kf::conv2d_variant::implicit_gemm_wgmma, epi::compose_bias_relu, layer_class::strided},
};

/// Whether `variant` with the fused ReLU or a functor (`functor`) must refuse
/// `cc` whatever the device (a row of unsupported_combinations).
inline bool refused(kf::conv2d_variant variant, bool functor, const conv_case& cc) {
  for (const unsupported_combination& u : unsupported_combinations) {
    if (u.variant == variant && !library_epilogue(u.epilogue) == functor && u.layers == class_of(cc.p)) return true;
  }
  return false;
}

/// The variants that take a functor (naive and smem_tiled refuse it:
/// Conv2dEpilogueErrors.VariantsWithoutEpilogueAreUnsupported).
inline std::vector<variant_case> functor_variants() {
  return variants_except({kf::conv2d_variant::naive, kf::conv2d_variant::smem_tiled});
}

}  // namespace kf::test::conv2d_epilogue
