// SPDX-License-Identifier: Apache-2.0
// The no-GPU path: on a machine without a usable CUDA device, every call that
// passes validation must throw errc::no_device carrying the CUDA error text and
// pointing to kernelforge-doctor (not crash, not errc::cuda_runtime). On a machine with a GPU these tests skip:
// they call with fake pointers, which must never reach a real launch.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "kernelforge/kernelforge.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "test_support.hpp"

namespace {

#define KF_SKIP_WITH_GPU()                                                                                \
  do {                                                                                                    \
    if (::kf::test::gpu_unavailable_reason().empty())                                                     \
      GTEST_SKIP() << "a CUDA GPU is present; the no-device path is tested only on machines without one"; \
  } while (0)

/// The text the CUDA runtime gives for why there is no device, e.g.
/// "CUDA driver version is insufficient for CUDA runtime version".
std::string cuda_no_device_text() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  cudaGetLastError();
  return status == cudaSuccess ? std::string() : std::string(cudaGetErrorString(status));
}

template <class F>
void expect_no_device(F&& call, const char* what) {
  try {
    call();
    ADD_FAILURE() << what << ": expected kf::error(no_device), nothing was thrown";
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), kf::errc::no_device) << what << ": got " << kf::to_string(e.code()) << ": " << e.what();
    const std::string msg = e.what();
    EXPECT_NE(msg.find(what), std::string::npos) << "message does not name " << what << ": " << msg;
    const std::string cuda_text = cuda_no_device_text();
    if (!cuda_text.empty()) {
      EXPECT_NE(msg.find(cuda_text), std::string::npos) << "CUDA's text '" << cuda_text << "' not in: " << msg;
    }
    EXPECT_NE(msg.find("kernelforge-doctor"), std::string::npos) << "message does not point to the doctor: " << msg;
  }
}

template <class T>
T* fake(std::uintptr_t megabyte) {
  return reinterpret_cast<T*>(megabyte << 20);
}

template <class T>
void check_all_ops(kf::elementwise_variant variant) {
  const std::size_t n = 1000;
  const T a = kf::reference::from_double<T>(2.0);
  const T t = kf::reference::from_double<T>(0.0);
  T* x = fake<T>(1);
  T* y = fake<T>(2);
  T* z = fake<T>(3);
  kf::elementwise_options o;
  o.variant = variant;
  SCOPED_TRACE(kf::to_string(variant));
  expect_no_device([&] { kf::saxpy<T>(n, a, x, y, o); }, "kf::saxpy");
  expect_no_device([&] { kf::saxpy<T>(n, a, x, x, o); }, "kf::saxpy");  // in place passes validation
  expect_no_device([&] { kf::vector_add<T>(n, x, y, z, o); }, "kf::vector_add");
  expect_no_device([&] { kf::vector_add<T>(n, x, y, x, o); }, "kf::vector_add");
  expect_no_device([&] { kf::relu_threshold_forward<T>(n, x, y, t, o); }, "kf::relu_threshold_forward");
  expect_no_device([&] { kf::relu_threshold_forward<T>(n, x, x, t, o); }, "kf::relu_threshold_forward");
  expect_no_device([&] { kf::relu_threshold_backward<T>(n, x, y, z, t, o); }, "kf::relu_threshold_backward");
  expect_no_device([&] { kf::relu_threshold_backward<T>(n, x, y, x, t, o); }, "kf::relu_threshold_backward");
  o.block_size = 128;  // an explicit valid block size passes validation too
  expect_no_device([&] { kf::saxpy<T>(n, a, x, y, o); }, "kf::saxpy");
}

TEST(NoDevice, ElementwiseCallsThrowNoDevice) {
  KF_SKIP_WITH_GPU();
  for (auto variant :
       {kf::elementwise_variant::best, kf::elementwise_variant::naive, kf::elementwise_variant::vectorized}) {
    check_all_ops<float>(variant);
    check_all_ops<double>(variant);
    check_all_ops<__half>(variant);
    check_all_ops<__nv_bfloat16>(variant);
  }
}

TEST(NoDevice, RepeatedCallsKeepThrowingNoDevice) {
  // The per-device caches must not remember a half-initialized state.
  KF_SKIP_WITH_GPU();
  for (int i = 0; i < 3; ++i) check_all_ops<float>(kf::elementwise_variant::best);
}

TEST(NoDevice, DeviceQueriesThrowNoDevice) {
  KF_SKIP_WITH_GPU();
  expect_no_device([] { (void)kf::get_device_info(); }, "kf::get_device_info");
  expect_no_device([] { (void)kf::get_device_info(0); }, "kf::get_device_info");
  expect_no_device([] { (void)kf::get_device_info(1000); }, "kf::get_device_info");  // no device beats a bad ordinal
  expect_no_device([] { kf::require_kernel_image(); }, "kf::require_kernel_image");
  expect_no_device([] { kf::require_kernel_image(0); }, "kf::require_kernel_image");
}

TEST(NoDevice, DeviceBufferAllocationThrowsNoDevice) {
  KF_SKIP_WITH_GPU();
  expect_no_device([] { kf::device_buffer<float> b(1000); }, "kf::device_buffer");
  expect_no_device([] { kf::device_buffer<double> b(1); }, "kf::device_buffer");
  expect_no_device([] { auto b = kf::to_device(std::vector<float>(10, 1.0f)); }, "kf::device_buffer");
}

TEST(NoDevice, EmptyBuffersNeedNoDevice) {
  // Size 0 allocates nothing, so it works without a GPU (and with one).
  kf::device_buffer<float> empty(0);
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_NO_THROW({
    auto b = kf::to_device(std::vector<double>{});
    EXPECT_EQ(b.size(), 0u);
  });
}

TEST(NoDevice, CompiledArchitecturesNeedNoDevice) { EXPECT_NO_THROW(kf::compiled_architectures()); }

}  // namespace
