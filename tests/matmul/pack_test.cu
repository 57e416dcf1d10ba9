// SPDX-License-Identifier: Apache-2.0
// The wgmma steps' repacking pass (include/kernelforge/kernels/matmul/pack_k_major.cuh) on the GPU,
// through wgmma_pack_k_major, against a CPU transpose / copy. The GEMM tests
// (tensor_core_tf32_test.cu, tensor_core_f16_test.cu, scaled_matmul_gpu_test.cpp) run it inside
// products; this one reaches every instance directly -- float, __half, __nv_bfloat16, FP8 e4m3 x
// transposing or copying x 16-byte or element-wise loads -- including the
// 16-byte copy, which the GEMM never takes (it repacks a k-contiguous operand
// only when its rows are misaligned).
//
// A copy is exact: every element of dst must equal its source element bit for
// bit. Source layouts: aligned rows (16-byte loads), the base one element past
// an aligned address, a leading dimension one element past a 16-byte multiple,
// and tight (aligned or not by the shape); the source's padding holds NaN, so
// a kernel that copied it would fail. dst is poisoned (0xFF bytes: NaN in all
// four types) with a 16-byte guard before it; afterwards columns 0..k-1 hold
// the operand, k up to k rounded up to 16 bytes hold +0 (the kernel's zero
// pad), the rest of a wider ld_dst and the guard are still poison.
// Shapes: 1 and primes, non-multiples of every tile (64 rows x 64 floats / 128
// halves, 128 rows x 256 FP8), and a k past 65535 k-tiles (the grid's y extent is capped and the
// kernel strides over the rest).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include "kernelforge/kernels/matmul/pack_k_major.cuh"        // pack_layout: the tile extents
#include "kernelforge/kernels/matmul/scaled/wgmma_sm90a.hpp"  // the FP8 instance
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"
#include "test_support.hpp"

namespace {

enum class source_layout { aligned, misaligned_base, misaligned_ld, tight };

const char* name_of(source_layout l) {
  switch (l) {
    case source_layout::aligned: return "aligned rows";
    case source_layout::misaligned_base: return "base one element in";
    case source_layout::misaligned_ld: return "ld one element past 16 bytes";
    case source_layout::tight: return "tight";
  }
  return "?";
}

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T>
bool is_poison(const T& v) {
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  for (unsigned char b : bytes)
    if (b != 0xFF) return false;
  return true;
}

template <class T>
bool is_positive_zero(const T& v) {
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  for (unsigned char b : bytes)
    if (b != 0) return false;
  return true;
}

/// dst (rows x k) from an operand stored k-contiguous (copy) or rows-contiguous, checked element by element.
template <class T>
void run_pack(std::size_t rows, std::size_t k, bool copy, source_layout layout, std::size_t dst_extra_chunks) {
  std::ostringstream trace;
  trace << (copy ? "copy" : "transpose") << " rows " << rows << " k " << k << ", source " << name_of(layout)
        << ", ld_dst + " << dst_extra_chunks << " chunks";
  SCOPED_TRACE(trace.str());
  constexpr std::size_t vec = 16 / sizeof(T);
  const std::size_t src_rows = copy ? rows : k, src_cols = copy ? k : rows;
  const std::size_t padded = (src_cols + vec - 1) / vec * vec;
  std::size_t ld_src = padded, offset = 0;
  if (layout == source_layout::misaligned_base) offset = 1;
  if (layout == source_layout::misaligned_ld) ld_src = padded + 1;
  if (layout == source_layout::tight) ld_src = src_cols;

  // The source: random values (never zero) in its rows, NaN (0xFF bytes) in the padding and before it.
  const std::vector<T> values = kf::test::random_vector<T>(src_rows * src_cols, rows * 7919 + k * 31 + copy);
  std::vector<T> host_src(offset + src_rows * ld_src);
  std::memset(host_src.data(), 0xFF, host_src.size() * sizeof(T));
  for (std::size_t r = 0; r < src_rows; ++r)
    for (std::size_t c = 0; c < src_cols; ++c) host_src[offset + r * ld_src + c] = values[r * src_cols + c];
  const kf::device_buffer<T> src = kf::to_device(host_src);

  const std::size_t k_out = (k + vec - 1) / vec * vec;
  const std::size_t ld_dst = k_out + dst_extra_chunks * vec;
  const std::size_t guard = vec;  // 16 bytes before dst: dst stays 16-byte aligned
  kf::device_buffer<T> dst(guard + rows * ld_dst);
  kf::test::poison(dst.data(), dst.size_bytes());

  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_TRUE(
      kf::detail::wgmma_pack_k_major(src.data() + offset, ld_src, copy, dst.data() + guard, ld_dst, rows, k, stream))
      << "the pack declined a call on a device where the wgmma kernels run";
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  const std::vector<T> out = kf::to_host(dst);

  std::size_t guard_hit = 0, wrong = 0, pad_wrong = 0, clobbered = 0;
  std::ostringstream report;
  for (std::size_t i = 0; i < guard; ++i) guard_hit += !is_poison(out[i]);
  for (std::size_t x = 0; x < rows; ++x) {
    const T* row = out.data() + guard + x * ld_dst;
    for (std::size_t p = 0; p < k; ++p) {
      const T& expected = copy ? values[x * src_cols + p] : values[p * src_cols + x];
      if (!same_bits(row[p], expected) && wrong++ < 8) {
        report << "\n  dst(" << x << ", " << p << ") = " << kf::reference::to_double(row[p]) << ", expected "
               << kf::reference::to_double(expected);
      }
    }
    for (std::size_t p = k; p < k_out; ++p) pad_wrong += !is_positive_zero(row[p]);
    for (std::size_t p = k_out; p < ld_dst; ++p) clobbered += !is_poison(row[p]);
  }
  EXPECT_EQ(guard_hit, 0u) << "writes before dst";
  EXPECT_EQ(wrong, 0u) << wrong << " of " << rows * k << " elements differ:" << report.str();
  EXPECT_EQ(pad_wrong, 0u) << "columns k .. k rounded up to 16 bytes must be +0";
  EXPECT_EQ(clobbered, 0u) << "writes past k rounded up to 16 bytes";
}

bool pack_runs_here() {
  int device = 0;
  return cudaGetDevice(&device) == cudaSuccess && kf::detail::wgmma_available(device);
}

struct extent {
  std::size_t rows, k;
};

// 1 and primes, one tile, tiles +- 1 (FP8's 128 x 256 too), several tiles in both directions.
const extent extents[] = {{1, 1},    {1, 5},     {5, 1},     {3, 64},    {64, 64},     {64, 128}, {63, 127},
                          {65, 129}, {127, 257}, {129, 255}, {300, 520}, {1031, 1000}, {257, 769}};

template <class T>
class MatmulPack : public ::testing::Test {};
using element_types = ::testing::Types<float, __half, __nv_bfloat16, __nv_fp8_e4m3>;
TYPED_TEST_SUITE(MatmulPack, element_types);

TYPED_TEST(MatmulPack, MatchesCpuTransposeAndCopy) {
  KF_SKIP_WITHOUT_GPU();
  if (!pack_runs_here()) GTEST_SKIP() << "the repack runs with the wgmma kernels: compute capability 9.0 and 90 built";
  for (const extent& e : extents) {
    for (const bool copy : {false, true}) {
      for (const source_layout l : {source_layout::aligned, source_layout::misaligned_base,
                                    source_layout::misaligned_ld, source_layout::tight}) {
        run_pack<TypeParam>(e.rows, e.k, copy, l, 0);
        if (this->HasFatalFailure()) return;
      }
      run_pack<TypeParam>(e.rows, e.k, copy, source_layout::aligned, 2);  // a wider ld_dst: its rest untouched
      run_pack<TypeParam>(e.rows, e.k, copy, source_layout::misaligned_base, 1);
      if (this->HasFatalFailure()) return;
    }
  }
}

// A few small shapes through every instance, quick enough under compute-sanitizer
// (memcheck, racecheck): ragged in both directions, more than one tile each way.
TYPED_TEST(MatmulPack, SmallShapesForSanitizers) {
  KF_SKIP_WITHOUT_GPU();
  if (!pack_runs_here()) GTEST_SKIP() << "the repack runs with the wgmma kernels: compute capability 9.0 and 90 built";
  for (const extent& e : {extent{65, 129}, extent{130, 257}}) {
    for (const bool copy : {false, true}) {
      run_pack<TypeParam>(e.rows, e.k, copy, source_layout::aligned, 1);
      run_pack<TypeParam>(e.rows, e.k, copy, source_layout::misaligned_base, 0);
    }
  }
}

// More k-tiles than a grid's y extent (65535): the kernel strides over the rest.
TYPED_TEST(MatmulPack, KBeyondTheGridsYExtent) {
  KF_SKIP_WITHOUT_GPU();
  if (!pack_runs_here()) GTEST_SKIP() << "the repack runs with the wgmma kernels: compute capability 9.0 and 90 built";
  const std::size_t k = 65536 * static_cast<std::size_t>(kf::detail::pack_layout<TypeParam>::tile_k) + 5;
  for (const bool copy : {false, true}) {
    run_pack<TypeParam>(3, k, copy, source_layout::aligned, 0);
    run_pack<TypeParam>(3, k, copy, source_layout::misaligned_base, 0);
  }
}

}  // namespace
