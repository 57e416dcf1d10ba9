// SPDX-License-Identifier: Apache-2.0
// Linked against kernelforge_sm80_only (machine code for sm_80 only, no PTX).
// On a GPU of another major version (the H200 is sm_90) the library holds no
// image it can run: every call must throw errc::no_kernel_image naming the
// device's sm_XY, the compiled list and the CMake setting that fixes it, and
// leave the device usable. Without a GPU, or on an sm_8x GPU (which runs sm_80
// code), the device tests skip with the reason.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/kernelforge.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "test_support.hpp"

namespace {

/// Empty when this machine has a GPU that cannot run sm_80 code; else why the test skips.
std::string why_not_applicable() {
  const std::string no_gpu = kf::test::gpu_unavailable_reason();
  if (!no_gpu.empty()) return no_gpu;
  const kf::device_info info = kf::get_device_info();
  if (info.cc_major == 8) {
    return "device " + info.name + " is sm_" + std::to_string(info.cc_major * 10 + info.cc_minor) +
           ", which runs sm_80 machine code; the no_kernel_image path needs a GPU of another major version";
  }
  return {};
}

#define KF_SKIP_UNLESS_IMAGE_MISSING()                                               \
  do {                                                                               \
    const std::string kf_why = why_not_applicable();                                 \
    if (!kf_why.empty()) GTEST_SKIP() << "no_kernel_image test skipped: " << kf_why; \
  } while (0)

std::string device_sm() {
  const kf::device_info info = kf::get_device_info();
  return "sm_" + std::to_string(info.cc_major * 10 + info.cc_minor);
}

template <class F>
void expect_no_kernel_image(F&& call, const std::string& what) {
  try {
    call();
    ADD_FAILURE() << what << ": expected kf::error(no_kernel_image), nothing was thrown";
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), kf::errc::no_kernel_image) << what << ": got " << kf::to_string(e.code()) << ": " << e.what();
    const std::string msg = e.what();
    for (const std::string& needle :
         {what, device_sm(), std::string("sm_80"), std::string("-DCMAKE_CUDA_ARCHITECTURES=")}) {
      EXPECT_NE(msg.find(needle), std::string::npos) << "'" << needle << "' not in: " << msg;
    }
  }
  // The failed load must leave no sticky error and a working device.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(NoKernelImage, LibraryIsBuiltForSm80Only) { EXPECT_EQ(kf::compiled_architectures(), std::vector<int>{80}); }

TEST(NoKernelImage, RequireKernelImageThrows) {
  KF_SKIP_UNLESS_IMAGE_MISSING();
  expect_no_kernel_image([] { kf::require_kernel_image(); }, "kf::require_kernel_image");
  expect_no_kernel_image([] { kf::require_kernel_image(kf::get_device_info().device); }, "kf::require_kernel_image");
}

template <class T>
void check_every_op(kf::elementwise_variant variant) {
  SCOPED_TRACE(kf::to_string(variant));
  const std::size_t n = 1000;
  const std::vector<T> x_host = kf::test::random_vector<T>(n, 1);
  const std::vector<T> y_host = kf::test::random_vector<T>(n, 2);
  const kf::device_buffer<T> x = kf::to_device(x_host);
  kf::device_buffer<T> y = kf::to_device(y_host);
  kf::device_buffer<T> z(n);
  const T a = kf::reference::from_double<T>(2.0);
  const T t = kf::reference::from_double<T>(0.0);
  kf::elementwise_options o;
  o.variant = variant;
  for (int attempt = 0; attempt < 2; ++attempt) {  // a failed first call must not be cached as success
    expect_no_kernel_image([&] { kf::saxpy<T>(n, a, x.data(), y.data(), o); }, "kf::saxpy");
    expect_no_kernel_image([&] { kf::vector_add<T>(n, x.data(), y.data(), z.data(), o); }, "kf::vector_add");
    expect_no_kernel_image([&] { kf::relu_threshold_forward<T>(n, x.data(), z.data(), t, o); },
                           "kf::relu_threshold_forward");
    expect_no_kernel_image([&] { kf::relu_threshold_backward<T>(n, x.data(), y.data(), z.data(), t, o); },
                           "kf::relu_threshold_backward");
  }
  o.block_size = 128;
  expect_no_kernel_image([&] { kf::saxpy<T>(n, a, x.data(), y.data(), o); }, "kf::saxpy");
  // Nothing ran: y is what was uploaded.
  const std::vector<T> after = kf::to_host(y);
  EXPECT_EQ(std::memcmp(after.data(), y_host.data(), n * sizeof(T)), 0);
}

TEST(NoKernelImage, EveryOpAndVariantThrowsOnRealBuffers) {
  KF_SKIP_UNLESS_IMAGE_MISSING();
  for (auto variant :
       {kf::elementwise_variant::best, kf::elementwise_variant::naive, kf::elementwise_variant::vectorized}) {
    check_every_op<float>(variant);
    check_every_op<__nv_bfloat16>(variant);
  }
}

TEST(NoKernelImage, HostOnlyPartsStillWork) {
  // Queries, copies and n = 0 calls need no kernel image.
  KF_SKIP_UNLESS_IMAGE_MISSING();
  const kf::device_info info = kf::get_device_info();
  EXPECT_FALSE(info.name.empty());
  const std::vector<float> host = kf::test::random_vector<float>(33, 3);
  const kf::device_buffer<float> dev = kf::to_device(host);
  EXPECT_EQ(kf::to_host(dev), host);
  EXPECT_NO_THROW(kf::saxpy<float>(0, 1.0f, nullptr, nullptr));
}

}  // namespace
