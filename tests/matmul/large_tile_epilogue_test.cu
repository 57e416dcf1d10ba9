// SPDX-License-Identifier: Apache-2.0
// The large_tile kernel's Epilogue parameter (include/kernelforge/kernels/matmul/08_large_tile.cuh),
// called through its launch function: C = ep(alpha * op(A) op(B) + beta * C, i, j)
// with a per-column bias and a threshold ReLU, against a double-precision CPU
// reference. The public API passes the identity (matmul_gpu_test.cpp) or the fused
// options (epilogue_test.cu).
//
// Shapes, from the 128 x 256 tile's constants: 127 x 300 x 45 (edges in m, n
// and k; several tiles) and 64 x 256 x 4096 (one tile: split along k, so the
// split-k reduction applies alpha, beta and the functor, once per element).
// All four transposes; aligned and misaligned (one element off) operands; C
// NaN-poisoned with beta = 0, random with beta = 0.5.
// Tolerance: |got - ref| <= 4 sqrt(k) 2^-24 (|alpha| sum |a||b| + |beta c|) + 1e-30,
// relative to the error scale as in matmul_case.hpp; the bias and ReLU add no error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/device_buffer.hpp"
#include "kernelforge/epilogue.cuh"
#include "kernelforge/kernels/matmul/large_tile_launch.cuh"
#include "test_support.hpp"

namespace {

using bias_relu = kf::epilogue::compose<kf::epilogue::bias_add<float>, kf::epilogue::relu_threshold>;

struct epilogue_case {
  std::size_t m, n, k;
  bool ta, tb, misaligned;
  float beta;
};

::testing::AssertionResult run_case(const epilogue_case& c, std::uint64_t seed) {
  const std::size_t off = c.misaligned ? 1 : 0;
  const std::size_t a_rows = c.ta ? c.k : c.m, a_cols = c.ta ? c.m : c.k;
  const std::size_t b_rows = c.tb ? c.n : c.k, b_cols = c.tb ? c.k : c.n;
  const std::size_t lda = a_cols + off, ldb = b_cols + off, ldc = c.n + off;  // odd padding when misaligned
  const std::vector<float> a = kf::test::random_vector<float>(off + a_rows * lda, seed + 1);
  const std::vector<float> b = kf::test::random_vector<float>(off + b_rows * ldb, seed + 2);
  const std::vector<float> c0 = kf::test::random_vector<float>(off + c.m * ldc, seed + 3);
  const std::vector<float> bias = kf::test::random_vector<float>(c.n, seed + 4, 0.5, 8.0);
  const float alpha = -0.5f, threshold = 0.25f;

  kf::device_buffer<float> da = kf::to_device(a), db = kf::to_device(b), dc = kf::to_device(c0);
  const kf::device_buffer<float> dbias = kf::to_device(bias);
  if (c.beta == 0.f) kf::test::poison(dc.data(), dc.size_bytes());

  kf::detail::gemm_args<float> g;
  g.trans_a = c.ta, g.trans_b = c.tb;
  g.m = c.m, g.n = c.n, g.k = c.k;
  g.alpha = alpha, g.beta = c.beta;
  g.A = da.data() + off, g.lda = lda;
  g.B = db.data() + off, g.ldb = ldb;
  g.C = dc.data() + off, g.ldc = ldc;
  const bias_relu ep{{dbias.data()}, {threshold}};
  kf::detail::launch_large_tile(g, nullptr, ep);
  if (cudaDeviceSynchronize() != cudaSuccess) return ::testing::AssertionFailure() << "kernel failed";
  const std::vector<float> got = kf::to_host(dc);

  const double tol = 4.0 * std::sqrt(double(c.k)) * kf::test::unit_roundoff<float>();
  for (std::size_t i = 0; i < c.m; ++i) {
    for (std::size_t j = 0; j < ldc; ++j) {
      const float v = got[off + i * ldc + j];
      if (j >= c.n) {  // padding of C: untouched
        const bool same = c.beta == 0.f ? std::isnan(v) : v == c0[off + i * ldc + j];
        if (!same) return ::testing::AssertionFailure() << "padding of C written at (" << i << ", " << j << ")";
        continue;
      }
      double sum = 0, scale = 0;
      for (std::size_t p = 0; p < c.k; ++p) {
        const double x = a[off + (c.ta ? p * lda + i : i * lda + p)], y = b[off + (c.tb ? j * ldb + p : p * ldb + j)];
        sum += x * y;
        scale += std::fabs(x * y);
      }
      const double old = c.beta == 0.f ? 0.0 : double(c0[off + i * ldc + j]);
      const double pre = alpha * sum + double(c.beta) * old + double(bias[j]);
      scale = std::fabs(alpha) * scale + std::fabs(double(c.beta) * old) + std::fabs(double(bias[j]));
      // Within the tolerance of the threshold the ReLU may go either way.
      const bool near_threshold = std::fabs(pre - threshold) <= tol * scale;
      const double ref = pre <= threshold ? 0.0 : pre;
      const bool ok = std::fabs(double(v) - ref) <= tol * scale + 1e-30 ||
                      (near_threshold && (v == 0.f || std::fabs(double(v) - pre) <= tol * scale));
      if (!ok) {  // NaN fails here too
        return ::testing::AssertionFailure()
               << "C(" << i << ", " << j << ") = " << v << ", expected " << ref << " (scale " << scale << ")";
      }
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(MatmulLargeTile, EpilogueAfterAlphaBeta) {
  KF_SKIP_WITHOUT_GPU();
  std::uint64_t seed = 1000;
  // From the tile the shapes below run (tuning.hpp: 128 x 256, k-slices of 16 on sm_80+):
  // one partial tile row, a second tile column 44 wide and a third k-slice 13 deep
  // (127 x 300 x 45); half a tile row by one whole tile column, k long enough to
  // split (64 x 256 x 4096).
  using tile = kf::detail::large_tile_128x256<kf::detail::warp_tiled_tuning_id::large_smem>;
  constexpr std::size_t bm = tile::block_m, bn = tile::block_n, bk = tile::block_k;
  for (const auto& [m, n, k] :
       {std::tuple<std::size_t, std::size_t, std::size_t>{bm - 1, bn + 44, 2 * bk + 13}, {bm / 2, bn, 4096}}) {
    for (int t = 0; t < 4; ++t) {
      for (bool misaligned : {false, true}) {
        for (float beta : {0.f, 0.5f}) {
          const epilogue_case c{m, n, k, (t & 1) != 0, (t & 2) != 0, misaligned, beta};
          seed += 10;
          EXPECT_TRUE(run_case(c, seed)) << m << "x" << n << "x" << k << " trans_a " << c.ta << " trans_b " << c.tb
                                         << (misaligned ? " misaligned" : " aligned") << " beta " << beta;
        }
      }
    }
  }
}

}  // namespace
