// SPDX-License-Identifier: Apache-2.0
// kf::get_device_info and kf::require_kernel_image on a real GPU (skipped without one).
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>

#include <cuda_runtime_api.h>

#include "kernelforge/kernelforge.hpp"
#include "test_support.hpp"

namespace {

TEST(DeviceInfo, DescribesTheCurrentDevice) {
  KF_SKIP_WITHOUT_GPU();
  const kf::device_info info = kf::get_device_info();
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(info.device, current);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.cc_major, 5);
  EXPECT_GE(info.cc_minor, 0);
  EXPECT_GT(info.sm_count, 0);
  EXPECT_GT(info.global_memory_bytes, 0u);
  EXPECT_GT(info.peak_bandwidth_gbs, 0.0);
  EXPECT_GT(info.peak_fp32_tflops, 0.0);
  std::cout << "[ INFO     ] " << info.name << ", sm_" << info.cc_major << info.cc_minor << ", " << info.sm_count
            << " SMs, " << info.global_memory_bytes / (1u << 20) << " MiB, peak " << info.peak_bandwidth_gbs
            << " GB/s, " << info.peak_fp32_tflops << " fp32 TFLOP/s\n";
}

TEST(DeviceInfo, ExplicitOrdinalMatchesCurrent) {
  KF_SKIP_WITHOUT_GPU();
  const kf::device_info current = kf::get_device_info(-1);
  const kf::device_info explicit_ordinal = kf::get_device_info(current.device);
  EXPECT_EQ(explicit_ordinal.name, current.name);
  EXPECT_EQ(explicit_ordinal.device, current.device);
  EXPECT_EQ(explicit_ordinal.cc_major, current.cc_major);
  EXPECT_EQ(explicit_ordinal.cc_minor, current.cc_minor);
  EXPECT_EQ(explicit_ordinal.sm_count, current.sm_count);
}

TEST(DeviceInfo, EveryDeviceIsQueryable) {
  KF_SKIP_WITHOUT_GPU();
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  int before = -1;
  ASSERT_EQ(cudaGetDevice(&before), cudaSuccess);
  for (int d = 0; d < count; ++d) {
    const kf::device_info info = kf::get_device_info(d);
    EXPECT_EQ(info.device, d);
    EXPECT_GT(info.sm_count, 0);
  }
  int after = -1;
  ASSERT_EQ(cudaGetDevice(&after), cudaSuccess);
  EXPECT_EQ(after, before) << "get_device_info(d) must not change the current device";
}

TEST(DeviceInfo, InvalidOrdinalIsInvalidArgument) {
  KF_SKIP_WITHOUT_GPU();
  for (int ordinal : {1000, 64}) {
    int count = 0;
    ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
    if (ordinal < count) continue;
    try {
      (void)kf::get_device_info(ordinal);
      ADD_FAILURE() << "get_device_info(" << ordinal << ") did not throw";
    } catch (const kf::error& e) {
      EXPECT_EQ(e.code(), kf::errc::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(ordinal)), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(kf::require_kernel_image(1000), kf::error);
}

TEST(DeviceInfo, RequireKernelImagePassesOnThisGpu) {
  // The default build holds every architecture the toolkit supports.
  KF_SKIP_WITHOUT_GPU();
  const kf::device_info info = kf::get_device_info();
  const auto archs = kf::compiled_architectures();
  const int cc = info.cc_major * 10 + info.cc_minor;
  const bool runnable = std::any_of(archs.begin(), archs.end(), [&](int a) {
    return a / 10 == info.cc_major && a <= cc;  // same-major machine code, or PTX below (checked by the call)
  });
  if (!runnable) GTEST_SKIP() << "this build has no sm_" << cc << "-compatible image (see tests/no_kernel_image)";
  EXPECT_NO_THROW(kf::require_kernel_image());
  EXPECT_NO_THROW(kf::require_kernel_image(info.device));
}

}  // namespace
