// SPDX-License-Identifier: Apache-2.0
// kf::device_buffer on the CPU: move-only, nothrow moves, and the empty state
// (default-constructed, size 0, moved-from), none of which needs a GPU.
// Allocation, copies and out-of-memory: device_buffer_gpu_test.cpp.
#include <gtest/gtest.h>

#include <type_traits>
#include <utility>

#include "kernelforge/kernelforge.hpp"

namespace {

static_assert(!std::is_copy_constructible_v<kf::device_buffer<float>>, "device_buffer must be move-only");
static_assert(!std::is_copy_assignable_v<kf::device_buffer<float>>, "device_buffer must be move-only");
static_assert(std::is_nothrow_move_constructible_v<kf::device_buffer<float>>, "moves must not throw");
static_assert(std::is_nothrow_move_assignable_v<kf::device_buffer<float>>, "moves must not throw");

template <class T>
void expect_empty(const kf::device_buffer<T>& b) {
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.size_bytes(), 0u);
  EXPECT_EQ(b.data(), nullptr);
}

TEST(DeviceBuffer, DefaultConstructedIsEmpty) {
  kf::device_buffer<float> b;
  expect_empty(b);
  kf::device_buffer<__half> h(0);
  expect_empty(h);
}

TEST(DeviceBuffer, MovingEmptyBuffersNeedsNoGpu) {
  kf::device_buffer<double> a;
  kf::device_buffer<double> b(std::move(a));
  expect_empty(a);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  expect_empty(b);
  a = std::move(b);
  expect_empty(a);
  expect_empty(b);  // NOLINT(bugprone-use-after-move)
}

}  // namespace
