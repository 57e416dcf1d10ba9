// SPDX-License-Identifier: Apache-2.0
// The conv2d epilogue suites' layers (conv2d_epilogue_layers.hpp) take every
// store path the whole case list takes, for every variant and both kinds of
// epilogue -- the implicit-GEMM kernels' own stores (float4 or scalar) after
// each block tile, split-K's reduction after each tile it is planned with,
// Winograd's output transform, winograd_fused's and the wgmma kernel's stores,
// naive's and smem_tiled's -- checked against the launcher's plan (plan.hpp)
// for the H200's 132 SMs (no GPU needed) and for this device. Part of
// test_conv2d_epilogue, whose GPU suites (conv2d_epilogue_gpu_test.cu) run them.
#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "conv2d_epilogue_layers.hpp"
#include "kernelforge/device.hpp"
#include "kernelforge/kernels/conv2d/plan.hpp"
#include "test_support.hpp"

namespace {

using namespace kf::test::conv2d_epilogue;

/// A device as the launcher sees it when it picks a kernel and a plan.
struct device_facts {
  std::string name;
  int sm_count = 0;
  bool tf32 = false;            ///< TF32 tensor cores (compute capability 8.0+)
  bool winograd_fused = false;  ///< grants winograd_fused's 168 KB block (sm_90, sm_100)
  bool wgmma = false;           ///< runs the library's sm_90a wgmma kernel
};

device_facts h200() { return {"the H200 (132 SMs)", 132, true, true, true}; }

device_facts this_device() {
  const kf::device_info info = kf::get_device_info();
  return {"this device (" + info.name + ", " + std::to_string(info.sm_count) + " SMs)", info.sm_count,
          device_has_tf32(), winograd_fused_fits(), kf::detail::conv2d_wgmma_available(info.device)};
}

/// Where the implicit-GEMM kernel `kernel` leaves `cc`'s output: its own stores
/// (float4 where it has them and P*Q % 4 == 0 and y is 16-byte aligned, else
/// scalar) or, split-K, the shared split-k reduction's (float4 or scalar, the same rule),
/// after the block tile of the plan.
std::string gemm_store_path(const char* kernel, bool float4_stores, const conv_case& cc, int sm_count) {
  const kf::conv2d_params& p = cc.p;
  const kf::detail::conv2d_gemm_plan plan = gemm_plan(p, sm_count);
  const bool float4 = kf::conv2d_output_height(p) * kf::conv2d_output_width(p) % 4 == 0 && cc.y_offset % 4 == 0;
  const std::string tile = plan.tile == kf::detail::conv2d_gemm_tile::m128_n128  ? "128x128"
                           : plan.tile == kf::detail::conv2d_gemm_tile::m128_n64 ? "128x64"
                                                                                 : "64x64";
  if (plan.split > 1) {
    return std::string("split-K reduction (") + (float4 ? "float4" : "scalar") + ") after " + kernel + " " + tile;
  }
  return std::string(kernel) + " " + tile + ((float4 && float4_stores) ? ", float4 stores" : ", scalar stores");
}

/// The kernel that stores `vc`'s output for `cc` with the fused ReLU or a functor
/// on device `d`, and how (gemm_launch.cuh's dispatch); empty where `d` cannot
/// run the variant.
std::string store_path(const variant_case& vc, bool functor, const conv_case& cc, const device_facts& d) {
  using v = kf::conv2d_variant;
  const kf::conv2d_params& p = cc.p;
  switch (vc.variant) {
    case v::naive: return "naive";
    case v::smem_tiled: return "smem_tiled";
    case v::implicit_gemm: return gemm_store_path("implicit_gemm", true, cc, d.sm_count);
    case v::implicit_gemm_pipelined: return gemm_store_path("implicit_gemm_pipelined", true, cc, d.sm_count);
    case v::implicit_gemm_tf32: return d.tf32 ? gemm_store_path("implicit_gemm_tf32", false, cc, d.sm_count) : "";
    case v::winograd: return "winograd's output transform";
    case v::winograd_fused: return d.winograd_fused ? "winograd_fused" : "";
    case v::implicit_gemm_wgmma: return d.wgmma ? "implicit_gemm_wgmma" : "";
    case v::best: break;
  }
  if (vc.math == kf::math_mode::tf32) {
    // The sm_90a object holds the library's own epilogues: a functor takes mma.sync.
    if (!functor && d.wgmma && kf::detail::conv2d_wgmma_preferred(p.in_channels, p.stride_h, p.stride_w)) {
      return "implicit_gemm_wgmma";
    }
    if (d.tf32) return gemm_store_path("implicit_gemm_tf32", false, cc, d.sm_count);
  }
  switch (kf::detail::choose_conv2d_exact_kernel(p.in_channels, p.out_channels, p.filter_height, p.filter_width,
                                                 p.stride_h, p.stride_w, p.dilation_h, p.dilation_w)) {
    case kf::detail::conv2d_exact_kernel::winograd_fused: {
      const auto l = kf::detail::make_conv2d_winograd_fused_layout(
          p.batch, p.in_channels, p.out_channels, kf::conv2d_output_height(p), kf::conv2d_output_width(p));
      // One 168 KB block per SM at a time.
      const auto sms = static_cast<std::size_t>(d.sm_count);
      if (d.winograd_fused && l.launchable() &&
          kf::detail::conv2d_winograd_fused_fills_waves(l.grid_x * l.grid_y, sms)) {
        return "winograd_fused";
      }
      return "winograd's output transform";
    }
    case kf::detail::conv2d_exact_kernel::winograd: return "winograd's output transform";
    case kf::detail::conv2d_exact_kernel::implicit_gemm_pipelined:
      return gemm_store_path("implicit_gemm_pipelined", true, cc, d.sm_count);
    case kf::detail::conv2d_exact_kernel::implicit_gemm: break;
  }
  return gemm_store_path("implicit_gemm", true, cc, d.sm_count);
}

// The layers take every store path the whole case list takes, for every variant
// and both kinds of epilogue (leaving out what unsupported_combinations refuses):
// on the H200 (no GPU needed: the launcher's plan for 132 SMs) and on this device.
TEST(Conv2dEpilogueStorePaths, LayersTakeEveryPathOfTheCaseList) {
  std::vector<device_facts> devices{h200()};
  if (kf::test::gpu_unavailable_reason().empty()) devices.push_back(this_device());
  for (const device_facts& d : devices) {
    for (const bool functor : {false, true}) {
      for (const variant_case& vc : functor ? functor_variants() : variants_except({})) {
        const auto paths = [&](const auto& cases) {
          std::set<std::string> found;
          for (const conv_case& cc : cases) {
            if (!refused(vc.variant, functor, cc)) found.insert(store_path(vc, functor, cc, d));
          }
          return found;
        };
        const std::set<std::string> tested = paths(epilogue_layers());
        for (const std::string& path : paths(conv_cases)) {
          EXPECT_EQ(tested.count(path), 1u) << vc.name << (functor ? " with a functor" : " with the fused ReLU")
                                            << " on " << d.name << ": no layer takes " << path;
        }
      }
    }
  }
}

}  // namespace
