// SPDX-License-Identifier: Apache-2.0
// kf::device_buffer, kf::to_device and kf::to_host on a GPU (skipped without
// one): ownership moves, round trips for every type and on a non-default
// stream, zero size, and out-of-memory reporting.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernelforge/kernelforge.hpp"
#include "test_support.hpp"

namespace {

template <class T>
void expect_empty(const kf::device_buffer<T>& b) {
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.size_bytes(), 0u);
  EXPECT_EQ(b.data(), nullptr);
}

TEST(DeviceBufferGpu, MoveTransfersOwnership) {
  KF_SKIP_WITHOUT_GPU();
  kf::device_buffer<float> a(1000);
  float* const p = a.data();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(a.size(), 1000u);
  EXPECT_EQ(a.size_bytes(), 4000u);

  kf::device_buffer<float> b(std::move(a));
  expect_empty(a);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), 1000u);

  kf::device_buffer<float> c(10);  // its memory is freed by the assignment below
  c = std::move(b);
  expect_empty(b);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 1000u);

  kf::device_buffer<float>& alias = c;
  c = std::move(alias);  // self-move keeps the buffer
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 1000u);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

template <class T>
void round_trip(std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  const std::vector<T> host = kf::test::random_vector<T>(n, seed);
  const kf::device_buffer<T> dev = kf::to_device(host, stream);
  ASSERT_EQ(dev.size(), n);
  const std::vector<T> back = kf::to_host(dev, stream);
  ASSERT_EQ(back.size(), n);
  EXPECT_EQ(std::memcmp(back.data(), host.data(), n * sizeof(T)), 0) << "n = " << n;
}

TEST(DeviceBufferGpu, RoundTripEveryType) {
  KF_SKIP_WITHOUT_GPU();
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{1023}, (std::size_t{1} << 20) + 7}) {
    round_trip<float>(n, 1, nullptr);
    round_trip<double>(n, 2, nullptr);
    round_trip<__half>(n, 3, nullptr);
    round_trip<__nv_bfloat16>(n, 4, nullptr);
  }
}

TEST(DeviceBufferGpu, RoundTripOnANonBlockingStream) {
  KF_SKIP_WITHOUT_GPU();
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  round_trip<float>((std::size_t{1} << 20) + 7, 5, stream);
  round_trip<__nv_bfloat16>(33, 6, stream);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST(DeviceBufferGpu, ZeroSizeRoundTrip) {
  KF_SKIP_WITHOUT_GPU();
  const kf::device_buffer<double> dev = kf::to_device(std::vector<double>{});
  expect_empty(dev);
  EXPECT_TRUE(kf::to_host(dev).empty());
}

TEST(DeviceBufferGpu, OutOfMemoryNamesBytesAskedAndFree) {
  KF_SKIP_WITHOUT_GPU();
  const std::size_t bytes = std::size_t{1} << 60;  // 1 EiB: no GPU has that
  try {
    kf::device_buffer<float> b(bytes / sizeof(float));
    FAIL() << "allocating " << bytes << " bytes succeeded";
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), kf::errc::out_of_memory) << kf::to_string(e.code()) << ": " << e.what();
    const std::string msg = e.what();
    EXPECT_NE(msg.find(std::to_string(bytes)), std::string::npos) << msg;
    EXPECT_NE(msg.find("free"), std::string::npos) << msg;
  }
  // The failure is not sticky: the device still works.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  round_trip<float>(100, 7, nullptr);
}

TEST(DeviceBufferGpu, ElementCountWhoseByteSizeOverflowsIsRejected) {
  // 2^61 + 1 doubles is 2^64 + 8 bytes: size * sizeof(T) wraps to 8 in size_t.
  // The buffer must not silently come back with 8 bytes behind size() = 2^61 + 1.
  KF_SKIP_WITHOUT_GPU();
  const std::size_t elements = (std::size_t{1} << 61) + 1;
  try {
    kf::device_buffer<double> b(elements);
    FAIL() << "device_buffer<double>(" << elements << ") succeeded with size_bytes() = " << b.size_bytes();
  } catch (const kf::error& e) {
    EXPECT_TRUE(e.code() == kf::errc::out_of_memory || e.code() == kf::errc::invalid_argument)
        << kf::to_string(e.code()) << ": " << e.what();
  }
}

}  // namespace
