// SPDX-License-Identifier: Apache-2.0
// kf::transform instantiated in a user's .cu: an extended lambda, a functor
// with state, mixed types (int8 in, float out), double2, 1 to 4 inputs,
// misaligned pointers (common offset: peeled head; different offsets: scalar
// path), n = 0, 1, primes and > 2^31 elements, outputs poisoned beforehand;
// every result against a CPU loop (exact: the same float operations in the
// same order on both sides, or a stated tolerance). Compiled with --extended-lambda.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <cuda_runtime_api.h>

#include "kernelforge/transform.cuh"
#include "test_support.hpp"

// Extended lambdas may not be defined in a gtest TestBody (a private member):
// each lives in a named free function, as in a user's code.
namespace transform_ops {

void leaky_relu(std::size_t n, float* y, const float* x) {
  kf::transform(
      n, [] __device__(float v) { return v > 0.0f ? v : 0.01f * v; }, y, x);
}

void twice(std::size_t n, float* y, const float* x, const kf::transform_options& options) {
  kf::transform(
      n, [] __device__(float v) { return 2.0f * v; }, y, x, options);
}

void xor_5a(std::size_t n, std::uint8_t* y, const std::uint8_t* x) {
  kf::transform(
      n, [] __device__(std::uint8_t v) { return static_cast<std::uint8_t>(v ^ 0x5A); }, y, x);
}

void add(std::size_t n, float* out, const float* a, const float* b, const kf::transform_options& options = {}) {
  kf::transform(
      n, [] __device__(float x, float y) { return x + y; }, out, a, b, options);
}

}  // namespace transform_ops

namespace {

using kf::test::random_vector;

/// Device copy of `host` at `offset` elements past an aligned allocation (so the test controls alignment).
template <class T>
struct offset_array {
  kf::device_buffer<T> storage;
  T* data;
  offset_array(const std::vector<T>& host, std::size_t offset) : storage(host.size() + offset + 8) {
    data = storage.data() + offset;
    if (!host.empty()) {
      EXPECT_EQ(cudaMemcpy(data, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    }
  }
  offset_array(std::size_t n, std::size_t offset) : storage(n + offset + 8) {
    data = storage.data() + offset;
    kf::test::poison(storage.data(), storage.size_bytes());  // unwritten elements stay NaN / 0xFF
  }
  std::vector<T> to_host(std::size_t n) const {
    std::vector<T> h(n);
    if (n) EXPECT_EQ(cudaMemcpy(h.data(), data, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

/// A functor with state: y = clamp(a * x + b, lo, hi).
struct scale_clamp {
  float a, b, lo, hi;
  __host__ __device__ float operator()(float x) const { return fminf(fmaxf(fmaf(a, x, b), lo), hi); }
};

/// Mixed types: int8 in, float out.
struct dequantize {
  float scale;
  __host__ __device__ float operator()(std::int8_t q) const { return scale * static_cast<float>(q); }
};

struct add_double2 {
  __host__ __device__ double2 operator()(double2 a, double2 b) const { return make_double2(a.x + b.x, a.y + b.y); }
};

struct fused3 {  // a*x + b*y + z
  float a, b;
  __host__ __device__ float operator()(float x, float y, float z) const { return fmaf(a, x, fmaf(b, y, z)); }
};

struct fused4 {  // (x - mean) * inv_std * gamma + beta, per element
  __host__ __device__ float operator()(float x, float mean, float gamma, float beta) const {
    return fmaf(x - mean, gamma, beta);
  }
};

const std::size_t sizes[] = {0, 1, 2, 3, 31, 1009, 65537, 1000003};
const std::size_t offsets[][2] = {{0, 0}, {1, 1}, {3, 3}, {0, 1}, {2, 0}};  // {input offset, output offset}

TEST(Transform, ExtendedLambdaOneInput) {
  KF_SKIP_WITHOUT_GPU();
  for (std::size_t n : sizes) {
    for (const auto& off : offsets) {
      const auto x = random_vector<float>(n, 1 + n);
      offset_array<float> dx(x, off[0]), dy(n, off[1]);
      transform_ops::leaky_relu(n, dy.data, dx.data);
      const auto got = dy.to_host(n);
      for (std::size_t i = 0; i < n; ++i) {
        const float want = x[i] > 0.0f ? x[i] : 0.01f * x[i];
        ASSERT_EQ(got[i], want) << "n " << n << " offsets " << off[0] << "," << off[1] << " at " << i;
      }
    }
  }
}

TEST(Transform, FunctorWithState) {
  KF_SKIP_WITHOUT_GPU();
  const scale_clamp op{1.5f, -0.25f, -1.0f, 1.0f};
  for (std::size_t n : sizes) {
    const auto x = random_vector<float>(n, 2 + n);
    offset_array<float> dx(x, 0), dy(n, 0);
    kf::transform(n, op, dy.data, dx.data);
    const auto got = dy.to_host(n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], op(x[i])) << "n " << n << " at " << i;
  }
}

TEST(Transform, Int8InFloatOut) {
  KF_SKIP_WITHOUT_GPU();
  for (std::size_t n : sizes) {
    for (const auto& off : offsets) {
      std::vector<std::int8_t> q(n);
      for (std::size_t i = 0; i < n; ++i) q[i] = static_cast<std::int8_t>(kf::test::mix64(i + n) % 255 - 127);
      offset_array<std::int8_t> dq(q, off[0]);
      offset_array<float> dy(n, off[1]);
      kf::transform(n, dequantize{0.125f}, dy.data, dq.data);
      const auto got = dy.to_host(n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 0.125f * static_cast<float>(q[i])) << "at " << i;
    }
  }
}

TEST(Transform, Double2TwoInputs) {
  KF_SKIP_WITHOUT_GPU();
  for (std::size_t n : sizes) {
    const auto a = random_vector<double>(2 * n, 3), b = random_vector<double>(2 * n, 4);
    std::vector<double2> a2(n), b2(n);
    std::memcpy(a2.data(), a.data(), n * sizeof(double2));
    std::memcpy(b2.data(), b.data(), n * sizeof(double2));
    offset_array<double2> da(a2, 1), db(b2, 0), dc(n, 1);
    kf::transform(n, add_double2{}, dc.data, da.data, db.data);
    const auto got = dc.to_host(n);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i].x, a2[i].x + b2[i].x) << "at " << i;
      ASSERT_EQ(got[i].y, a2[i].y + b2[i].y) << "at " << i;
    }
  }
}

TEST(Transform, ThreeAndFourInputs) {
  KF_SKIP_WITHOUT_GPU();
  for (std::size_t n : sizes) {
    for (const auto& off : offsets) {
      const auto x = random_vector<float>(n, 5), y = random_vector<float>(n, 6), z = random_vector<float>(n, 7),
                 w = random_vector<float>(n, 8);
      offset_array<float> dx(x, off[0]), dy(y, off[0]), dz(z, off[0]), dw(w, off[0]), out(n, off[1]);
      const fused3 op3{0.5f, -2.0f};
      kf::transform(n, op3, out.data, dx.data, dy.data, dz.data);
      auto got = out.to_host(n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], op3(x[i], y[i], z[i])) << "3 inputs at " << i;
      kf::transform(n, fused4{}, out.data, dx.data, dy.data, dz.data, dw.data);
      got = out.to_host(n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], fused4{}(x[i], y[i], z[i], w[i])) << "4 inputs at " << i;
    }
  }
}

TEST(Transform, InPlaceAndStream) {
  KF_SKIP_WITHOUT_GPU();
  const std::size_t n = 1000003;
  const auto x = random_vector<float>(n, 9);
  offset_array<float> dx(x, 2);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  kf::transform_options options;
  options.stream = stream;
  options.block_size = 128;
  transform_ops::twice(n, dx.data, dx.data, options);  // in place
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  const auto got = dx.to_host(n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0f * x[i]) << "at " << i;
}

TEST(Transform, MoreThan2To31Elements) {
  KF_SKIP_WITHOUT_GPU();
  const std::size_t n = (std::size_t{1} << 31) + 17;
  std::size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  if (free_bytes < 3 * n) GTEST_SKIP() << "needs " << 3 * n << " bytes of device memory";
  std::vector<std::uint8_t> in(n);
  kf::test::parallel_for(n, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) in[i] = static_cast<std::uint8_t>(kf::test::mix64(i));
  });
  offset_array<std::uint8_t> din(in, 1), dout(n, 1);
  transform_ops::xor_5a(n, dout.data, din.data);
  const auto got = dout.to_host(n);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) bad += got[i] != static_cast<std::uint8_t>(in[i] ^ 0x5A);
  EXPECT_EQ(bad, 0u);
}

TEST(Transform, ArgumentErrorsNameTheArgument) {
  // Thrown before any CUDA call: no GPU needed.
  float* out = reinterpret_cast<float*>(std::uintptr_t{0x100000});
  const float* in = reinterpret_cast<const float*>(std::uintptr_t{0x200000});
  using transform_ops::add;
  kf::test::expect_error(kf::errc::invalid_argument, "'in1' is null", [&] { add(10, out, in, nullptr); });
  kf::test::expect_error(kf::errc::invalid_argument, "'out' and 'in0' overlap partially",
                         [&] { add(10, out, out + 1, in); });
  kf::test::expect_error(kf::errc::invalid_argument, "block_size", [&] {
    add(10, out, in, in, kf::transform_options{nullptr, 100});
  });
  kf::test::expect_error(kf::errc::invalid_argument, "not aligned",
                         [&] { add(10, reinterpret_cast<float*>(std::uintptr_t{0x100001}), in, in); });
  EXPECT_NO_THROW(add(0, nullptr, nullptr, nullptr));
}

}  // namespace
