// SPDX-License-Identifier: Apache-2.0
// kf::scaled_matmul without a GPU: every argument check (thrown before any CUDA
// call, each naming the argument), the names of the modes and variants, and
// the CPU reference's scale layout and amax, and where the wgmma step's tiles
// cross a block of B's blockwise scales.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernelforge/kernelforge.hpp"
#include "kernelforge/kernels/matmul/scaled/args.cuh"  // next_b_scale_block_group
#include "kernelforge/reference/scaled_matmul.hpp"
#include "test_support.hpp"

namespace {

using kf::errc;
using kf::fp8_scaling;
using kf::op;
using e4m3 = __nv_fp8_e4m3;
using e5m2 = __nv_fp8_e5m2;

const e4m3* fake_a(std::uintptr_t address) { return reinterpret_cast<const e4m3*>(address); }
__nv_bfloat16* fake_d(std::uintptr_t address) { return reinterpret_cast<__nv_bfloat16*>(address); }

kf::fp8_scales good_scales() {
  kf::fp8_scales s;
  s.a = kf::test::fake(0x10000);
  s.b = kf::test::fake(0x20000);
  return s;
}

/// A valid 8 x 16 x 32 TN call with D at 0x100000; `edit` changes one thing.
template <class Edit>
void call(Edit edit) {
  struct {
    op ta = op::none, tb = op::transpose;
    std::size_t m = 8, n = 16, k = 32, lda = 32, ldb = 32, ldd = 16;
    const e4m3* A = fake_a(0x30000);
    const e4m3* B = fake_a(0x40000);
    __nv_bfloat16* D = fake_d(0x100000);
    kf::fp8_scales scales = good_scales();
    kf::scaled_matmul_options options;
  } a;
  edit(a);
  kf::scaled_matmul(a.ta, a.tb, a.m, a.n, a.k, 1.0f, a.A, a.lda, a.B, a.ldb, a.scales, 0.0f, a.D, a.ldd, a.options);
}

TEST(ScaledMatmulValidation, LayoutErrorsNameTheArgument) {
  kf::test::expect_error(errc::invalid_argument, "kf::scaled_matmul: argument 'A' is null",
                         [] { call([](auto& a) { a.A = nullptr; }); });
  kf::test::expect_error(errc::invalid_argument, "argument 'D' is null", [] { call([](auto& a) { a.D = nullptr; }); });
  kf::test::expect_error(errc::invalid_argument, "lda = 31 is smaller than k = 32",
                         [] { call([](auto& a) { a.lda = 31; }); });
  kf::test::expect_error(errc::invalid_argument, "ldb = 31 is smaller than k = 32",
                         [] { call([](auto& a) { a.ldb = 31; }); });
  kf::test::expect_error(errc::invalid_argument, "ldd = 15 is smaller than n = 16",
                         [] { call([](auto& a) { a.ldd = 15; }); });
  kf::test::expect_error(errc::invalid_argument, "trans_a = 7 is not an op",
                         [] { call([](auto& a) { a.ta = static_cast<op>(7); }); });
}

TEST(ScaledMatmulValidation, ScalesAndOptions) {
  kf::test::expect_error(errc::invalid_argument, "scales.a is null; scaling mode per_tensor reads 1 value",
                         [] { call([](auto& a) { a.scales.a = nullptr; }); });
  kf::test::expect_error(errc::invalid_argument, "scales.b is null; scaling mode rowwise reads n values", [] {
    call([](auto& a) {
      a.scales.mode = fp8_scaling::rowwise;
      a.scales.b = nullptr;
    });
  });
  kf::test::expect_error(errc::invalid_argument, "128 x 128 block", [] {
    call([](auto& a) {
      a.scales.mode = fp8_scaling::blockwise;
      a.scales.b = nullptr;
    });
  });
  kf::test::expect_error(errc::invalid_argument, "scales.a",
                         [] { call([](auto& a) { a.scales.a = kf::test::fake(0x10002); }); });  // misaligned
  kf::test::expect_error(errc::invalid_argument, "scales.mode = 9 is not one of: per_tensor, rowwise, blockwise",
                         [] { call([](auto& a) { a.scales.mode = static_cast<fp8_scaling>(9); }); });
  kf::test::expect_error(errc::invalid_argument, "options.variant = 5 is not one of: best, naive, mma_sync, wgmma",
                         [] { call([](auto& a) { a.options.variant = static_cast<kf::scaled_matmul_variant>(5); }); });
  kf::test::expect_error(errc::invalid_argument, "options.bias (n = 16 elements) overlaps D",
                         [] { call([](auto& a) { a.options.bias = fake_d(0x100000 + 2 * 16); }); });
  kf::test::expect_error(errc::invalid_argument, "options.bias",
                         [] { call([](auto& a) { a.options.bias = fake_d(0x200001); }); });  // misaligned for bf16
  kf::test::expect_error(errc::invalid_argument, "options.amax points into D",
                         [] { call([](auto& a) { a.options.amax = kf::test::fake(0x100000 + 8); }); });
}

// m == 0: A, B and the scales may be null; the call checks its arguments and
// returns (BLAS's quick return: no device needed, nothing enqueued).
TEST(ScaledMatmulValidation, EmptyProductsNeedNoOperandsOrScales) {
  EXPECT_NO_THROW(call([](auto& a) {
    a.m = 0;
    a.A = nullptr;
    a.B = nullptr;
    a.scales = kf::fp8_scales{};
  }));
}

TEST(ScaledMatmulNames, ModesAndVariants) {
  EXPECT_STREQ(kf::to_string(fp8_scaling::per_tensor), "per_tensor");
  EXPECT_STREQ(kf::to_string(fp8_scaling::rowwise), "rowwise");
  EXPECT_STREQ(kf::to_string(fp8_scaling::blockwise), "blockwise");
  EXPECT_STREQ(kf::to_string(kf::scaled_matmul_variant::best), "best");
  EXPECT_STREQ(kf::to_string(kf::scaled_matmul_variant::naive), "naive");
  EXPECT_STREQ(kf::to_string(kf::scaled_matmul_variant::mma_sync), "mma_sync");
  EXPECT_STREQ(kf::to_string(kf::scaled_matmul_variant::wgmma), "wgmma");
}

// The reference's blockwise layout: with every block scale of A equal to s and every
// block scale of B equal to t, blockwise equals per-tensor (s, t); changing B's scale
// of column block 1 changes columns 128.. only, and A's scale of k block 1 every column.
TEST(ScaledMatmulReference, BlockwiseLayout) {
  const std::size_t m = 2, n = 130, k = 200, kb = 2, nb = 2;
  std::vector<e4m3> a(m * k), b(n * k);  // TN: A m x k, B stored n x k
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = e4m3(static_cast<float>(1 + i % 3));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = e4m3(static_cast<float>(i % 2 ? -0.5 : 1.5));
  const float s = 0.5f, t = 2.0f;
  std::vector<float> sa_block(m * kb, s), sb_block(nb * kb, t);
  kf::fp8_scales per_tensor, blockwise;
  blockwise.mode = fp8_scaling::blockwise;
  std::vector<float> d1(m * n), d2(m * n), d3(m * n), d4(m * n);
  auto ref = [&](const kf::fp8_scales& sc, const float* sa, const float* sb, std::vector<float>& d) {
    return kf::reference::scaled_matmul<e4m3, e4m3, float>(op::none, op::transpose, m, n, k, 1.0f, a.data(), k,
                                                           b.data(), k, sc, sa, sb, 0.0f, d.data(), n, nullptr, false,
                                                           0.0f);
  };
  const double amax1 = ref(per_tensor, &s, &t, d1);
  ref(blockwise, sa_block.data(), sb_block.data(), d2);
  EXPECT_EQ(d1, d2);
  double want_amax = 0;
  for (float v : d1) want_amax = std::max(want_amax, std::fabs(static_cast<double>(v)));
  EXPECT_EQ(amax1, want_amax);
  sb_block[1 * kb + 0] = 4 * t;  // B: column block 1 (j >= 128), k block 0
  ref(blockwise, sa_block.data(), sb_block.data(), d3);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) EXPECT_EQ(d3[i * n + j] == d2[i * n + j], j < 128) << i << "," << j;
  sb_block[1 * kb + 0] = t;
  sa_block[0 * kb + 1] = 3 * s;  // A: row 0, k block 1 (p >= 128)
  ref(blockwise, sa_block.data(), sb_block.data(), d4);
  for (std::size_t j = 0; j < n; ++j) {
    EXPECT_NE(d4[j], d2[j]) << j;          // row 0 changes everywhere
    EXPECT_EQ(d4[n + j], d2[n + j]) << j;  // row 1 does not
  }
}

// The wgmma step's tiles (64, 128 or 192 wide, starting at multiples of their
// width) against B's 128-column scale blocks: the first accumulator column
// group (8 columns) in the next block, or width / 8 where there is none in the
// tile or in D. Each group's block, so found, is the one block_scale reads for
// its columns.
TEST(ScaledMatmulWgmma, NextScaleBlockGroup) {
  using kf::detail::next_b_scale_block_group;
  // 192-wide: even tiles cross 128 columns in, odd ones 64 columns in.
  EXPECT_EQ(next_b_scale_block_group(0, 192, 4466), 16);
  EXPECT_EQ(next_b_scale_block_group(192, 192, 4466), 8);   // columns 192..255 | 256..383
  EXPECT_EQ(next_b_scale_block_group(384, 192, 4466), 16);  // 384..511 | 512..575
  EXPECT_EQ(next_b_scale_block_group(4224, 192, 4466), 16);
  EXPECT_EQ(next_b_scale_block_group(4416, 192, 4466), 24);  // the next block would start at 4480 >= n
  EXPECT_EQ(next_b_scale_block_group(192, 192, 256), 24);    // n ends at the boundary: no next block
  EXPECT_EQ(next_b_scale_block_group(192, 192, 257), 8);
  // 128- and 64-wide tiles lie in one block.
  EXPECT_EQ(next_b_scale_block_group(256, 128, 8192), 16);
  EXPECT_EQ(next_b_scale_block_group(64, 64, 8192), 8);
  EXPECT_EQ(next_b_scale_block_group(128, 64, 8192), 8);
  // Every 192-wide tile of n = 4466 and every group: the group's block (by the
  // boundary) is the block of each of its columns inside D, and the boundary
  // falls on a 64-column chunk (the promotion's unit).
  const long long n = 4466;
  for (long long col_base = 0; col_base < n; col_base += 192) {
    const int next = next_b_scale_block_group(col_base, 192, n);
    EXPECT_EQ(next % 8, 0) << col_base;
    for (int g = 0; g < 24; ++g) {
      const long long block = col_base / 128 + (g >= next ? 1 : 0);
      for (long long col = col_base + 8 * g; col < col_base + 8 * g + 8 && col < n; ++col) {
        EXPECT_EQ(col / 128, block) << "tile at " << col_base << ", group " << g << ", column " << col;
      }
    }
  }
}

}  // namespace
