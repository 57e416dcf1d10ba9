// SPDX-License-Identifier: Apache-2.0
// What the FP8 GPU test files share (scaled_matmul_gpu_test.cpp: every mode,
// tile and epilogue; scaled_matmul_schedule_gpu_test.cpp: the wgmma kernel's
// two-partials tile and last round split): the device checks, the skip, the
// operand / output type combinations and the check of one case.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "kernelforge/kernelforge.hpp"
#include "scaled_matmul_case.hpp"
#include "test_support.hpp"

namespace kf::test::scaled_gpu {

// The names both test files use, brought in with the namespace (using namespace kf::test::scaled_gpu).
using kf::fp8_scaling;
using kf::op;
using kf::scaled_matmul_variant;
using kf::test::scaled_case;

inline bool fp8_device() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  return major * 10 + minor >= 89;
}

/// Compute capability 9.0: the wgmma step runs (a forced tile throws errc::unsupported elsewhere).
inline bool wgmma_device() {
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  return major == 9;
}

/// The variant the wgmma tests force: wgmma on compute capability 9.0 (it throws
/// rather than fall back, so a silent fallback cannot pass), else best.
inline scaled_matmul_variant wgmma_or_best() {
  return wgmma_device() ? scaled_matmul_variant::wgmma : scaled_matmul_variant::best;
}

#define KF_SKIP_WITHOUT_FP8()                                                                             \
  do {                                                                                                    \
    KF_SKIP_WITHOUT_GPU();                                                                                \
    if (!kf::test::scaled_gpu::fp8_device()) GTEST_SKIP() << "FP8 needs compute capability 8.9 or newer"; \
  } while (0)

using Combos =
    ::testing::Types<std::tuple<__nv_fp8_e4m3, __nv_fp8_e4m3, __nv_bfloat16>,
                     std::tuple<__nv_fp8_e4m3, __nv_fp8_e4m3, __half>, std::tuple<__nv_fp8_e4m3, __nv_fp8_e4m3, float>,
                     std::tuple<__nv_fp8_e4m3, __nv_fp8_e5m2, __nv_bfloat16>,
                     std::tuple<__nv_fp8_e4m3, __nv_fp8_e5m2, __half>, std::tuple<__nv_fp8_e4m3, __nv_fp8_e5m2, float>,
                     std::tuple<__nv_fp8_e5m2, __nv_fp8_e4m3, __nv_bfloat16>,
                     std::tuple<__nv_fp8_e5m2, __nv_fp8_e4m3, __half>, std::tuple<__nv_fp8_e5m2, __nv_fp8_e4m3, float>>;

struct ComboNames {
  template <class T>
  static std::string GetName(int) {
    using TD = std::tuple_element_t<2, T>;
    const char* d = std::is_same_v<TD, float> ? "f32" : std::is_same_v<TD, __half> ? "f16" : "bf16";
    return std::string(kf::test::fp8_name<std::tuple_element_t<0, T>>()) + "_" +
           kf::test::fp8_name<std::tuple_element_t<1, T>>() + "_" + d;
  }
};

template <class Combo>
::testing::AssertionResult run(const scaled_case& c, std::uint64_t seed,
                               scaled_matmul_variant v = scaled_matmul_variant::best) {
  using TA = std::tuple_element_t<0, Combo>;
  using TB = std::tuple_element_t<1, Combo>;
  using TD = std::tuple_element_t<2, Combo>;
  return kf::test::check_scaled_matmul<TA, TB, TD>(c, v, seed);
}

inline constexpr fp8_scaling modes[] = {fp8_scaling::per_tensor, fp8_scaling::rowwise, fp8_scaling::blockwise};

}  // namespace kf::test::scaled_gpu
