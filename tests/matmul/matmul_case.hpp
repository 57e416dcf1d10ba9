// SPDX-License-Identifier: Apache-2.0
// One matrix-product GPU test case, described as data and checked completely.
//
//  * A, B and C each sit `offset` elements into their own allocation (offset 1
//    makes every row misaligned for 16-byte loads, and so does an odd padding).
//  * Leading dimensions are the row length + pad; the pad columns of A and B
//    hold NaN, so a kernel that reads them into a result fails; the pad
//    columns of C hold a sentinel that must come back unchanged (an
//    out-of-bounds write fails).
//  * Inputs are random, never zero (kf::test::random_vector). C is poisoned
//    with NaN (0xFF bytes) when beta == 0 -- BLAS does not read C then, so NaN
//    must not leak through, and an element the kernel never writes stays NaN --
//    and random otherwise.
//  * The result is compared with the double-precision CPU reference
//    (kernelforge/reference/matmul.hpp) relative to the error scale
//    scale(i, j) = |alpha| sum_p |op(A)(i,p)| |op(B)(p,j)| + |beta C(i,j)|:
//      exact fp32/fp64:  |got - ref| <= 4 sqrt(k) u * scale, u = 2^-24 (float), 2^-53 (double):
//                        the rounding errors of any summation order (tiles,
//                        split-k slices) grow like sqrt(k) u for random data;
//                        4 covers the epilogue's alpha/beta roundings.
//      tf32:             |got - ref| <= 4 * 2^-10 * scale (~3.9e-3): TF32 keeps 10
//                        mantissa bits, so each input carries up to 2^-10
//                        relative error (truncation; 2^-11 when rounded) and each
//                        product up to 2^-9; 4 * 2^-10 = 2^-8 leaves a factor 2.
//      fp16 / bf16 (fp32 accumulation; inputs exactly representable in T, so
//                        every product is exact in fp32):
//                        |got - ref| <= (4 sqrt(k) + k / 16 + 4) 2^-23 * scale + 2 u_T |ref|
//                        -- the fp32 summation (random-sign rounding grows like
//                        sqrt(k); the tensor cores truncate when they add a
//                        16-long block product, a bias that can grow like k / 16;
//                        2^-23 = two fp32 units for the epilogue's alpha / beta
//                        roundings), plus the one rounding of the result to T
//                        (u_T = 2^-11 fp16, 2^-8 bf16), doubled because the
//                        reference itself is rounded to T. Dropping one 16-deep
//                        slice of k = 4096 moves a result by ~1e-3 * scale, far
//                        above the first term (~1.2e-4 * scale at k = 4096).
//  * Huge shapes (`sampled`): the reference is computed only on a sample of
//    rows and columns (the first and last two of each, every block-tile
//    boundary 63/64/127/128/255/256 that exists, and random ones: 32 x 32 entries), to
//    keep CPU time to milliseconds; every element of C is still checked for
//    NaN, which catches unwritten elements when C was poisoned.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/matmul.hpp"
#include "kernelforge/reference/matmul.hpp"
#include "kernelforge/reference/elementwise.hpp"
#include "test_support.hpp"

namespace kf::test {

struct matmul_shape {
  std::size_t m, n, k;
};

inline std::string to_string(const matmul_shape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

/// The test shapes (tiny, ragged, single row or column): every variant runs every one of them.
inline const std::vector<matmul_shape>& matmul_shapes() {
  static const std::vector<matmul_shape> shapes = {{1, 1, 1},       {1, 1, 4096},    {33, 65, 17},    {127, 129, 255},
                                                   {1, 4096, 4096}, {4096, 1, 4096}, {513, 257, 1031}};
  return shapes;
}

/// GPU only, for the fast variants and best; checked on a sample of entries.
inline matmul_shape huge_shape() { return {4095, 4097, 4093}; }

enum class precision { exact, tf32, fp32_accumulate };

template <class T>
struct matmul_case {
  kf::op trans_a = kf::op::none, trans_b = kf::op::none;
  matmul_shape shape{};
  compute_t<T> alpha = 1, beta = 0;             ///< float for the 16-bit types
  std::size_t pad_a = 0, pad_b = 0, pad_c = 0;  ///< leading dimension = row length + pad
  std::size_t offset = 0;                       ///< elements from the allocation start to each matrix
  bool sampled = false;                         ///< reference on a sample of rows and columns

  std::string describe() const {
    std::ostringstream o;
    o << to_string(shape) << (trans_a == kf::op::none ? " N" : " T") << (trans_b == kf::op::none ? "N" : "T")
      << " alpha=" << alpha << " beta=" << beta << " pad(a,b,c)=(" << pad_a << "," << pad_b << "," << pad_c
      << ") offset=" << offset;
    return o.str();
  }
};

/// Tolerance relative to the error scale (see the top of this file).
template <class T>
double matmul_tolerance(precision p, std::size_t k) {
  if (p == precision::tf32) return 4.0 / 1024.0;
  if (p == precision::fp32_accumulate) {
    const double kd = static_cast<double>(std::max<std::size_t>(k, 1));
    return (4.0 * std::sqrt(kd) + kd / 16.0 + 4.0) * std::ldexp(1.0, -23);
  }
  return 4.0 * std::sqrt(static_cast<double>(std::max<std::size_t>(k, 1))) * unit_roundoff<T>();
}

/// Value of the pad columns of C: must survive the call untouched.
constexpr double c_sentinel = 12345.0;

/// Rows or columns to check on a huge shape: edges, tile boundaries, random ones.
inline std::vector<std::size_t> sample_indices(std::size_t extent, std::uint64_t seed, std::size_t count = 32) {
  std::set<std::size_t> s;
  for (std::size_t i : {std::size_t{0}, std::size_t{1}, extent - 2, extent - 1, std::size_t{63}, std::size_t{64},
                        std::size_t{127}, std::size_t{128}, std::size_t{255}, std::size_t{256}}) {
    if (i < extent) s.insert(i);
  }
  for (std::uint64_t r = 0; s.size() < std::min(count, extent); ++r) s.insert(mix64(seed * 977 + r) % extent);
  return {s.begin(), s.end()};
}

/// A stored matrix of rows x cols with leading dimension cols + pad, `offset`
/// elements into its allocation: random values, NaN in the pad columns.
template <class T>
std::vector<T> make_operand(std::size_t rows, std::size_t cols, std::size_t pad, std::size_t offset,
                            std::uint64_t seed) {
  const std::size_t ld = cols + pad;
  std::vector<T> v = random_vector<T>(offset + rows * ld, seed);
  const T nan = kf::reference::from_double<T>(std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < offset; ++i) v[i] = nan;
  if (pad > 0) {
    for (std::size_t r = 0; r < rows; ++r)
      std::fill(v.begin() + offset + r * ld + cols, v.begin() + offset + (r + 1) * ld, nan);
  }
  return v;
}

/// True when two stored values are the same number (or both NaN); works for the 16-bit types on the host.
template <class T>
bool same_value(T a, T b) {
  const double x = kf::reference::to_double(a), y = kf::reference::to_double(b);
  return x == y || (std::isnan(x) && std::isnan(y));
}

/// Runs one case through `run(A, lda, B, ldb, C, ldc)` (which enqueues the
/// product of c's transposes, shape and scalars on `stream`) and checks it;
/// returns the failure, if any.
template <class T, class Run>
::testing::AssertionResult check_matmul_with(const matmul_case<T>& c, Run&& run, cudaStream_t stream, precision p,
                                             std::uint64_t seed) {
  const std::size_t m = c.shape.m, n = c.shape.n, k = c.shape.k;
  const bool ta = c.trans_a == kf::op::transpose, tb = c.trans_b == kf::op::transpose;
  const std::size_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
  const std::size_t lda = a_cols + c.pad_a, ldb = b_cols + c.pad_b, ldc = n + c.pad_c;

  const std::vector<T> a = make_operand<T>(a_rows, a_cols, c.pad_a, c.offset, seed * 3 + 1);
  const std::vector<T> b = make_operand<T>(b_rows, b_cols, c.pad_b, c.offset, seed * 3 + 2);
  std::vector<T> c0 = random_vector<T>(c.offset + m * ldc, seed * 3 + 3);
  const T sentinel = kf::reference::from_double<T>(c_sentinel);
  for (std::size_t i = 0; i < c.offset; ++i) c0[i] = sentinel;
  for (std::size_t r = 0; r < m; ++r) {
    std::fill(c0.begin() + c.offset + r * ldc + n, c0.begin() + c.offset + (r + 1) * ldc, sentinel);
  }

  kf::device_buffer<T> da = kf::to_device(a), db = kf::to_device(b), dc = kf::to_device(c0);
  if (c.beta == compute_t<T>(0)) {  // poison the m x n area: NaN must not leak through, and unwritten entries stay NaN
    for (std::size_t r = 0; r < m; ++r) {
      if (cudaMemset(dc.data() + c.offset + r * ldc, 0xFF, n * sizeof(T)) != cudaSuccess) {
        return ::testing::AssertionFailure() << "cudaMemset failed";
      }
    }
  }
  // The uploads above ran on the legacy stream; options.stream may be a non-blocking one.
  if (cudaDeviceSynchronize() != cudaSuccess) return ::testing::AssertionFailure() << "cudaDeviceSynchronize failed";
  run(da.data() + c.offset, lda, db.data() + c.offset, ldb, dc.data() + c.offset, ldc);
  const std::vector<T> got = kf::to_host(dc, stream);

  // The pad columns and the slack before C must be untouched.
  for (std::size_t i = 0; i < c.offset; ++i) {
    if (!same_value(got[i], sentinel)) return ::testing::AssertionFailure() << "wrote before C: [" << i << "]";
  }
  for (std::size_t r = 0; r < m; ++r) {
    for (std::size_t j = n; j < ldc; ++j) {
      if (!same_value(got[c.offset + r * ldc + j], sentinel)) {
        return ::testing::AssertionFailure() << "wrote into C's padding at row " << r << ", column " << j;
      }
    }
  }

  const double rel = matmul_tolerance<T>(p, k);
  std::vector<double> ref, scale;
  std::vector<T> gathered;
  if (!c.sampled) {
    std::vector<T> expected(c0.begin() + c.offset, c0.end());
    kf::reference::matmul<T>(c.trans_a, c.trans_b, m, n, k, c.alpha, a.data() + c.offset, lda, b.data() + c.offset, ldb,
                             c.beta, expected.data(), ldc, &scale);
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        ref.push_back(kf::reference::to_double(expected[i * ldc + j]));
        gathered.push_back(got[c.offset + i * ldc + j]);
      }
    }
  } else {
    for (std::size_t i = 0; i < m; ++i) {  // every entry written: no NaN anywhere
      for (std::size_t j = 0; j < n; ++j) {
        if (std::isnan(kf::reference::to_double(got[c.offset + i * ldc + j]))) {
          return ::testing::AssertionFailure() << "NaN (unwritten or leaked) at (" << i << ", " << j << ")";
        }
      }
    }
    for (std::size_t i : sample_indices(m, seed + 11)) {
      for (std::size_t j : sample_indices(n, seed + 13)) {
        const kf::reference::matmul_entry e =
            kf::reference::matmul_element<T>(c.trans_a, c.trans_b, k, c.alpha, a.data() + c.offset, lda,
                                             b.data() + c.offset, ldb, c.beta, c0[c.offset + i * ldc + j], i, j);
        ref.push_back(e.value);
        scale.push_back(e.scale);
        gathered.push_back(got[c.offset + i * ldc + j]);
      }
    }
  }
  tolerance tol{rel, 0.0};
  if (p == precision::fp32_accumulate) {
    // Add the rounding of the result to T: bound = rel * scale + 2 u_T |ref|, tolerance 1 x bound.
    for (std::size_t q = 0; q < scale.size(); ++q) {
      scale[q] = rel * scale[q] + 2.0 * unit_roundoff<T>() * std::fabs(ref[q]);
    }
    tol = tolerance{1.0, 0.0};
  }
  ::testing::AssertionResult r = all_close(gathered, ref, tol, &scale);
  if (!r) r << "\n  case: " << c.describe() << (c.sampled ? " (sampled entries)" : " (index = row * n + column)");
  return r;
}

/// Runs one case through kf::matmul with `options` and checks it.
template <class T>
::testing::AssertionResult check_matmul(const matmul_case<T>& c, const kf::matmul_options& options, precision p,
                                        std::uint64_t seed) {
  const std::size_t m = c.shape.m, n = c.shape.n, k = c.shape.k;
  return check_matmul_with(
      c,
      [&](const T* a, std::size_t lda, const T* b, std::size_t ldb, T* cc, std::size_t ldc) {
        kf::matmul<T>(c.trans_a, c.trans_b, m, n, k, c.alpha, a, lda, b, ldb, c.beta, cc, ldc, options);
      },
      options.stream, p, seed);
}

}  // namespace kf::test
