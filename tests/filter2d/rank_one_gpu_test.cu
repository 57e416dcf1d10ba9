// SPDX-License-Identifier: Apache-2.0
// The separable-filter detection that filter2d_variant::best runs on the
// device (03_smem_tiled.cuh: filter2d_rank_one), tested directly: the
// end-to-end tests cannot tell which path produced a correct result.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernelforge/kernels/filter2d/03_smem_tiled.cuh"
#include "test_support.hpp"

namespace {

constexpr int max_taps = 31 * 31;

__global__ void rank_one_probe(const float* filter, int r, int s, int* separable, float* u, float* v) {
  __shared__ float f[max_taps];
  __shared__ float su[31], sv[31], scratch[kf::detail::filter2d_reduction_floats];
  const int tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int t = tid; t < r * s; t += kf::detail::filter2d_tile_threads) f[t] = filter[t];
  __syncthreads();
  const bool result = kf::detail::filter2d_rank_one<float>(f, r, s, su, sv, scratch);
  if (tid == 0) *separable = result;
  for (int i = tid; i < r; i += kf::detail::filter2d_tile_threads) u[i] = su[i];
  for (int j = tid; j < s; j += kf::detail::filter2d_tile_threads) v[j] = sv[j];
}

struct probe_result {
  bool separable;
  std::vector<float> u, v;
};

probe_result probe(const std::vector<float>& filter, int r, int s) {
  const auto d_filter = kf::to_device(filter);
  kf::device_buffer<int> d_flag(1);
  kf::device_buffer<float> d_u(r), d_v(s);
  rank_one_probe<<<1, dim3(kf::detail::filter2d_tile_threads_x, kf::detail::filter2d_tile_threads_y)>>>(
      d_filter.data(), r, s, d_flag.data(), d_u.data(), d_v.data());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  return {kf::to_host(d_flag)[0] != 0, kf::to_host(d_u), kf::to_host(d_v)};
}

std::vector<float> outer(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<float> f;
  for (double x : a) {
    for (double y : b) f.push_back(static_cast<float>(x * y));
  }
  return f;
}

TEST(Filter2dRankOne, OuterProductsAreSeparableAndFactorsReproduceTheFilter) {
  KF_SKIP_WITHOUT_GPU();
  for (auto [r, s] : {std::pair{7, 7}, {6, 8}, {31, 31}, {2, 29}, {31, 3}}) {
    const auto a = kf::test::random_vector<double>(r, 3 * r);
    const auto b = kf::test::random_vector<double>(s, 5 * s);
    const auto f = outer(a, b);
    const probe_result got = probe(f, r, s);
    EXPECT_TRUE(got.separable) << r << " x " << s;
    for (int i = 0; i < r; ++i) {
      for (int j = 0; j < s; ++j) {
        const double fij = f[i * s + j];
        EXPECT_NEAR(got.u[i] * got.v[j], fij, 8 * std::ldexp(std::fabs(fij), -24)) << i << ", " << j;
      }
    }
  }
}

TEST(Filter2dRankOne, SobelAndBoxAreSeparable) {
  KF_SKIP_WITHOUT_GPU();
  EXPECT_TRUE(probe({-1, 0, 1, -2, 0, 2, -1, 0, 1}, 3, 3).separable);
  EXPECT_TRUE(probe(std::vector<float>(81, 1.0f / 81), 9, 9).separable);
  EXPECT_TRUE(probe(std::vector<float>(49, 0.0f), 7, 7).separable);  // all zeros: u = v = 0
}

TEST(Filter2dRankOne, GeneralFiltersAreNot) {
  KF_SKIP_WITHOUT_GPU();
  EXPECT_FALSE(probe(kf::test::random_vector<float>(49, 77), 7, 7).separable);
  EXPECT_FALSE(probe({0, 1, 0, 1, -4, 1, 0, 1, 0}, 3, 3).separable);  // Laplacian: rank 2
  // An outer product with one entry nudged by 64 ulps: beyond the tolerance.
  auto f = outer(kf::test::random_vector<double>(7, 1), kf::test::random_vector<double>(7, 2));
  f[17] = std::nextafter(f[17], 1e30f);
  for (int i = 0; i < 63; ++i) f[17] = std::nextafter(f[17], 1e30f);
  EXPECT_FALSE(probe(f, 7, 7).separable);
  // NaN and infinity anywhere: never separable (the 2D path propagates them).
  auto g = outer(kf::test::random_vector<double>(7, 1), kf::test::random_vector<double>(7, 2));
  g[30] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(probe(g, 7, 7).separable);
  g[30] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(probe(g, 7, 7).separable);
}

}  // namespace
