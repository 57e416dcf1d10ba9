// SPDX-License-Identifier: Apache-2.0
// The runtime's pooled workspace: every byte a launcher takes goes back to the
// per-device pool, also when a launch throws (the wgmma TF32 path used to
// allocate by hand and leaked its repack buffer on a throw).
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include <cuda_runtime_api.h>

#include "kernelforge/kernels/runtime/workspace.hpp"
#include "test_support.hpp"

namespace {

std::uint64_t pool_bytes_in_use(cudaMemPool_t pool) {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // frees are stream-ordered
  std::uint64_t used = 0;
  EXPECT_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess);
  return used;
}

cudaMemPool_t pool_of_current_device() {
  int device = 0;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  return kf::detail::workspace_pool(device);
}

TEST(PooledWorkspace, ReturnsItsMemoryWhenALaunchThrows) {
  KF_SKIP_WITHOUT_GPU();
  cudaMemPool_t pool = pool_of_current_device();
  if (pool == nullptr) GTEST_SKIP() << "this device has no stream-ordered memory pools";
  const std::uint64_t before = pool_bytes_in_use(pool);
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  try {
    const kf::detail::pooled_workspace scratch(device, std::size_t{64} << 20, nullptr);
    ASSERT_NE(scratch.data(), nullptr);
    EXPECT_GE(pool_bytes_in_use(pool), before + (std::uint64_t{64} << 20));
    throw std::runtime_error("a launch failed");  // what a launcher's cuda_check does
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(pool_bytes_in_use(pool), before);
}

TEST(PooledWorkspace, Tf32MatmulRepackLeavesNothingInUse) {
  KF_SKIP_WITHOUT_GPU();
  cudaMemPool_t pool = pool_of_current_device();
  if (pool == nullptr) GTEST_SKIP() << "this device has no stream-ordered memory pools";
  // Row-major NN: on sm_90 the wgmma path repacks B into the workspace; on other
  // GPUs mma.sync or split-k may take workspace. Either way none stays in use.
  const std::size_t m = 257, n = 263, k = 269;
  const auto a = kf::test::random_vector<float>(m * k, 1), b = kf::test::random_vector<float>(k * n, 2);
  auto da = kf::to_device(a), db = kf::to_device(b);
  kf::device_buffer<float> dc(m * n);
  kf::matmul_options options;
  options.math = kf::math_mode::tf32;
  const std::uint64_t before = pool_bytes_in_use(pool);
  kf::matmul(kf::op::none, kf::op::none, m, n, k, 1.0, da.data(), k, db.data(), n, 0.0, dc.data(), n, options);
  EXPECT_EQ(pool_bytes_in_use(pool), before);
}

}  // namespace
