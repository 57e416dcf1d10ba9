// SPDX-License-Identifier: Apache-2.0
// n = 2^31 + 17 floats: past every 32-bit index (int and unsigned), for every
// op, naive and vectorized on the same inputs. ~26 GB of GPU memory and up to
// ~26 GB of host memory per test; skipped (with the numbers) where either is
// short. Its own executable and ctest entry, test_elementwise_huge, with a 600 s
// timeout (exclude it with `ctest -E huge`); every test is named ElementwiseHuge.*.
//
// Tolerance: as in elementwise_case.hpp, 2u (|a*x| + |y|) for saxpy, 2u (|a| + |b|)
// for vector add, exact for ReLU. The comparison runs on all host threads
// (all_close is single-threaded and slow at 2^31 elements).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <cuda_runtime_api.h>

#include "kernelforge/kernelforge.hpp"
#include "test_support.hpp"

namespace {

constexpr std::size_t huge_n = (std::size_t{1} << 31) + 17;
constexpr std::size_t array_bytes = huge_n * sizeof(float);
constexpr double saxpy_a = 1.5;
constexpr double relu_threshold = 0.5;
constexpr std::size_t headroom_bytes = std::size_t{1} << 30;  // context, staging buffers, the test itself

using kf::elementwise_variant;

/// Empty if `device_arrays` and `host_arrays` arrays of huge_n floats fit; else why not.
std::string memory_shortfall(int device_arrays, int host_arrays) {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return "cudaMemGetInfo failed";
  const std::size_t device_needed = device_arrays * array_bytes + headroom_bytes;
  const std::size_t host_needed = host_arrays * array_bytes + headroom_bytes;
  const std::size_t host_bytes =
      static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
  std::ostringstream why;
  if (free_bytes < device_needed)
    why << "needs " << device_needed << " bytes of GPU memory, " << free_bytes << " free. ";
  if (host_bytes < host_needed)
    why << "needs " << host_needed << " bytes of host memory, " << host_bytes << " installed.";
  return why.str();
}

#define KF_SKIP_WITHOUT_MEMORY(device_arrays, host_arrays)                       \
  do {                                                                           \
    const std::string kf_short = memory_shortfall(device_arrays, host_arrays);   \
    if (!kf_short.empty()) GTEST_SKIP() << "n = 2^31 + 17 floats: " << kf_short; \
  } while (0)

/// Checks ok(i) for every i on all host threads; reports the count and the first few failures.
template <class Ok, class Describe>
::testing::AssertionResult all_elements(std::size_t n, Ok ok, Describe describe) {
  std::mutex mutex;
  std::size_t bad = 0;
  std::vector<std::size_t> first_bad;
  kf::test::parallel_for(n, [&](std::size_t begin, std::size_t end) {
    std::size_t local_bad = 0;
    std::vector<std::size_t> local_first;
    for (std::size_t i = begin; i < end; ++i) {
      if (!ok(i) && local_bad++ < 8) local_first.push_back(i);
    }
    std::lock_guard<std::mutex> lock(mutex);
    bad += local_bad;
    first_bad.insert(first_bad.end(), local_first.begin(), local_first.end());
  });
  if (bad == 0) return ::testing::AssertionSuccess();
  std::sort(first_bad.begin(), first_bad.end());
  first_bad.resize(std::min<std::size_t>(first_bad.size(), 8));
  auto failure = ::testing::AssertionFailure() << bad << " of " << n << " elements wrong:";
  for (std::size_t i : first_bad) failure << "\n  [" << i << "] " << describe(i);
  return failure;
}

double d(float v) { return static_cast<double>(v); }

bool within(float got, double ref, double scale) {
  const double u = kf::test::unit_roundoff<float>();
  return !std::isnan(got) && std::fabs(d(got) - ref) <= 2 * u * scale;
}

/// Replaces `host` with the device contents (frees the old vector first: at
/// 8.6 GB a temporary second copy would matter).
void download(std::vector<float>& host, const kf::device_buffer<float>& dev) {
  host = std::vector<float>();
  host = kf::to_host(dev);
}

const elementwise_variant huge_variants[] = {elementwise_variant::naive, elementwise_variant::vectorized};

TEST(ElementwiseHuge, Saxpy) {
  KF_SKIP_WITHOUT_GPU();
  KF_SKIP_WITHOUT_MEMORY(2, 3);
  const std::vector<float> x = kf::test::random_vector<float>(huge_n, 11);
  const std::vector<float> y = kf::test::random_vector<float>(huge_n, 12);
  const kf::device_buffer<float> dx = kf::to_device(x);
  kf::device_buffer<float> dy(huge_n);
  std::vector<float> got;
  for (elementwise_variant variant : huge_variants) {
    SCOPED_TRACE(kf::to_string(variant));
    ASSERT_EQ(cudaMemcpy(dy.data(), y.data(), array_bytes, cudaMemcpyHostToDevice), cudaSuccess);
    kf::elementwise_options o;
    o.variant = variant;
    kf::saxpy<float>(huge_n, static_cast<float>(saxpy_a), dx.data(), dy.data(), o);
    download(got, dy);
    EXPECT_TRUE(all_elements(
        huge_n,
        [&](std::size_t i) {
          return within(got[i], saxpy_a * d(x[i]) + d(y[i]), std::fabs(saxpy_a * d(x[i])) + std::fabs(d(y[i])));
        },
        [&](std::size_t i) {
          return "got " + std::to_string(got[i]) + ", expected " + std::to_string(saxpy_a * d(x[i]) + d(y[i]));
        }));
  }
}

TEST(ElementwiseHuge, VectorAdd) {
  KF_SKIP_WITHOUT_GPU();
  KF_SKIP_WITHOUT_MEMORY(3, 3);
  const std::vector<float> a = kf::test::random_vector<float>(huge_n, 21);
  const std::vector<float> b = kf::test::random_vector<float>(huge_n, 22);
  const kf::device_buffer<float> da = kf::to_device(a);
  const kf::device_buffer<float> db = kf::to_device(b);
  kf::device_buffer<float> dc(huge_n);
  std::vector<float> got;
  for (elementwise_variant variant : huge_variants) {
    SCOPED_TRACE(kf::to_string(variant));
    kf::test::poison(dc.data(), dc.size_bytes());
    kf::elementwise_options o;
    o.variant = variant;
    kf::vector_add<float>(huge_n, da.data(), db.data(), dc.data(), o);
    download(got, dc);
    EXPECT_TRUE(all_elements(
        huge_n,
        [&](std::size_t i) { return within(got[i], d(a[i]) + d(b[i]), std::fabs(d(a[i])) + std::fabs(d(b[i]))); },
        [&](std::size_t i) {
          return "got " + std::to_string(got[i]) + ", expected " + std::to_string(d(a[i]) + d(b[i]));
        }));
  }
}

TEST(ElementwiseHuge, ReluForward) {
  KF_SKIP_WITHOUT_GPU();
  KF_SKIP_WITHOUT_MEMORY(2, 2);
  const std::vector<float> x = kf::test::random_vector<float>(huge_n, 31);
  const kf::device_buffer<float> dx = kf::to_device(x);
  kf::device_buffer<float> dy(huge_n);
  std::vector<float> got;
  const auto expected = [&](std::size_t i) { return x[i] <= static_cast<float>(relu_threshold) ? 0.0f : x[i]; };
  for (elementwise_variant variant : huge_variants) {
    SCOPED_TRACE(kf::to_string(variant));
    kf::test::poison(dy.data(), dy.size_bytes());
    kf::elementwise_options o;
    o.variant = variant;
    kf::relu_threshold_forward<float>(huge_n, dx.data(), dy.data(), static_cast<float>(relu_threshold), o);
    download(got, dy);
    EXPECT_TRUE(all_elements(
        huge_n, [&](std::size_t i) { return got[i] == expected(i); },  // NaN (poison) never equals
        [&](std::size_t i) { return "got " + std::to_string(got[i]) + ", expected " + std::to_string(expected(i)); }));
  }
}

TEST(ElementwiseHuge, ReluBackward) {
  KF_SKIP_WITHOUT_GPU();
  KF_SKIP_WITHOUT_MEMORY(3, 3);
  const std::vector<float> grad = kf::test::random_vector<float>(huge_n, 41);
  const std::vector<float> x = kf::test::random_vector<float>(huge_n, 42);
  const kf::device_buffer<float> dgrad = kf::to_device(grad);
  const kf::device_buffer<float> dx = kf::to_device(x);
  kf::device_buffer<float> dout(huge_n);
  std::vector<float> got;
  const auto expected = [&](std::size_t i) { return x[i] <= static_cast<float>(relu_threshold) ? 0.0f : grad[i]; };
  for (elementwise_variant variant : huge_variants) {
    SCOPED_TRACE(kf::to_string(variant));
    kf::test::poison(dout.data(), dout.size_bytes());
    kf::elementwise_options o;
    o.variant = variant;
    kf::relu_threshold_backward<float>(huge_n, dgrad.data(), dx.data(), dout.data(), static_cast<float>(relu_threshold),
                                       o);
    download(got, dout);
    EXPECT_TRUE(all_elements(
        huge_n, [&](std::size_t i) { return got[i] == expected(i); },
        [&](std::size_t i) { return "got " + std::to_string(got[i]) + ", expected " + std::to_string(expected(i)); }));
  }
}

}  // namespace
