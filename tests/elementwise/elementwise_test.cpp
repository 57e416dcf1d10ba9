// SPDX-License-Identifier: Apache-2.0
// Elementwise family on the GPU: every op x type x variant against the CPU
// reference at awkward sizes and pointer offsets, in place, with NaN and
// infinities, with explicit block sizes and on a non-default stream. Each
// (type, op, aspect) is one test case, e.g. "Elementwise/0.SaxpyNaive" (float).
// Tolerances and the checks made on every case: elementwise_case.hpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "elementwise_case.hpp"
#include "kernelforge/kernelforge.hpp"
#include "test_support.hpp"

namespace {

using kf::elementwise_variant;
using kf::test::elementwise_case;
using kf::test::elementwise_op;
using kf::test::offsets;

constexpr std::size_t big_n = (std::size_t{1} << 20) + 7;
const elementwise_variant all_variants[] = {elementwise_variant::best, elementwise_variant::naive,
                                            elementwise_variant::vectorized};

/// A non-blocking stream (no implicit sync with the legacy default stream), destroyed at scope exit.
class nonblocking_stream {
 public:
  nonblocking_stream() { status_ = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking); }
  ~nonblocking_stream() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  nonblocking_stream(const nonblocking_stream&) = delete;
  nonblocking_stream& operator=(const nonblocking_stream&) = delete;
  cudaError_t status() const { return status_; }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
  cudaError_t status_ = cudaSuccess;
};

elementwise_case make_case(elementwise_op op, elementwise_variant variant, std::size_t n, offsets layout,
                           std::uint64_t seed) {
  elementwise_case c;
  c.op = op;
  c.variant = variant;
  c.n = n;
  c.offset = layout;
  c.seed = seed;
  return c;
}

/// Output aliasing that each op allows: saxpy y == x, forward y == x, add c == a
/// or c == b, backward dx == dy or dx == x.
std::vector<int> aliasable_inputs(elementwise_op op) {
  if (op == elementwise_op::saxpy || op == elementwise_op::relu_forward) return {0};
  return {0, 1};
}

// ---- the checks, one function per aspect -----------------------------------

/// Every awkward size x every pointer layout, out of place.
template <class T>
void check_sizes_and_offsets(elementwise_op op, elementwise_variant variant) {
  std::uint64_t seed = 1;
  for (std::size_t n : kf::test::awkward_sizes()) {
    for (const offsets& layout : kf::test::pointer_layouts()) {
      kf::test::run_case<T>(make_case(op, variant, n, layout, seed++));
      if (::testing::Test::HasFailure()) return;  // one failing case is enough to read
    }
  }
}

template <class T>
void check_in_place(elementwise_op op) {
  std::uint64_t seed = 100;
  for (elementwise_variant variant : all_variants) {
    for (int alias : aliasable_inputs(op)) {
      for (std::size_t n : {std::size_t{33}, big_n}) {
        for (const offsets& layout : {offsets{1, 1, 1}, offsets{0, 3, 2}}) {
          elementwise_case c = make_case(op, variant, n, layout, seed++);
          c.alias_input = alias;
          kf::test::run_case<T>(c);
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
}

/// NaN, +-inf and x == +-threshold sprinkled into random data, at two thresholds.
template <class T>
void check_special_values(elementwise_op op) {
  std::uint64_t seed = 200;
  for (elementwise_variant variant : all_variants) {
    for (double threshold : {0.5, -0.25}) {
      for (std::size_t n : {std::size_t{33}, big_n}) {
        for (const offsets& layout : {offsets{0, 0, 0}, offsets{1, 1, 1}, offsets{1, 2, 3}}) {
          elementwise_case c = make_case(op, variant, n, layout, seed++);
          c.special_values = true;
          c.threshold = threshold;
          kf::test::run_case<T>(c);
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
}

template <class T>
void check_block_sizes(elementwise_op op) {
  std::uint64_t seed = 300;
  for (elementwise_variant variant : {elementwise_variant::naive, elementwise_variant::vectorized}) {
    for (int block : {32, 96, 256, 1024}) {
      for (std::size_t n : {std::size_t{1023}, big_n}) {
        for (const offsets& layout : {offsets{1, 1, 1}, offsets{1, 2, 3}}) {
          elementwise_case c = make_case(op, variant, n, layout, seed++);
          c.block_size = block;
          kf::test::run_case<T>(c);
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  }
}

/// Everything (poison, upload, the call, kf::to_host) on one non-blocking stream.
template <class T>
void check_stream(elementwise_op op) {
  nonblocking_stream stream;
  ASSERT_EQ(stream.status(), cudaSuccess);
  std::uint64_t seed = 400;
  for (elementwise_variant variant : all_variants) {
    for (std::size_t n : {std::size_t{33}, big_n}) {
      for (const offsets& layout : {offsets{0, 0, 0}, offsets{1, 1, 1}, offsets{1, 2, 3}}) {
        elementwise_case c = make_case(op, variant, n, layout, seed++);
        c.stream = stream.get();
        kf::test::run_case<T>(c);
        if (::testing::Test::HasFailure()) return;
      }
    }
    elementwise_case in_place = make_case(op, variant, big_n, {2, 2, 2}, seed++);
    in_place.stream = stream.get();
    in_place.alias_input = 0;
    kf::test::run_case<T>(in_place);
    if (::testing::Test::HasFailure()) return;
  }
}

// ---- one test case per type x op x aspect -----------------------------------

template <class T>
class Elementwise : public ::testing::Test {};

// No name generator: GoogleTest numbers the typed suites, "Suite/0.Test" (float).
using shipped_types = ::testing::Types<float, double, __half, __nv_bfloat16>;
TYPED_TEST_SUITE(Elementwise, shipped_types);

constexpr auto saxpy = elementwise_op::saxpy;
constexpr auto add = elementwise_op::vector_add;
constexpr auto forward = elementwise_op::relu_forward;
constexpr auto backward = elementwise_op::relu_backward;

#define KF_ELEMENTWISE_TEST(name, ...) \
  TYPED_TEST(Elementwise, name) {      \
    KF_SKIP_WITHOUT_GPU();             \
    __VA_ARGS__;                       \
  }

KF_ELEMENTWISE_TEST(SaxpyBest, check_sizes_and_offsets<TypeParam>(saxpy, elementwise_variant::best))
KF_ELEMENTWISE_TEST(SaxpyNaive, check_sizes_and_offsets<TypeParam>(saxpy, elementwise_variant::naive))
KF_ELEMENTWISE_TEST(SaxpyVectorized, check_sizes_and_offsets<TypeParam>(saxpy, elementwise_variant::vectorized))
KF_ELEMENTWISE_TEST(SaxpyInPlace, check_in_place<TypeParam>(saxpy))
KF_ELEMENTWISE_TEST(SaxpySpecialValues, check_special_values<TypeParam>(saxpy))
KF_ELEMENTWISE_TEST(SaxpyBlockSizes, check_block_sizes<TypeParam>(saxpy))
KF_ELEMENTWISE_TEST(SaxpyStream, check_stream<TypeParam>(saxpy))

KF_ELEMENTWISE_TEST(VectorAddBest, check_sizes_and_offsets<TypeParam>(add, elementwise_variant::best))
KF_ELEMENTWISE_TEST(VectorAddNaive, check_sizes_and_offsets<TypeParam>(add, elementwise_variant::naive))
KF_ELEMENTWISE_TEST(VectorAddVectorized, check_sizes_and_offsets<TypeParam>(add, elementwise_variant::vectorized))
KF_ELEMENTWISE_TEST(VectorAddInPlace, check_in_place<TypeParam>(add))
KF_ELEMENTWISE_TEST(VectorAddSpecialValues, check_special_values<TypeParam>(add))
KF_ELEMENTWISE_TEST(VectorAddBlockSizes, check_block_sizes<TypeParam>(add))
KF_ELEMENTWISE_TEST(VectorAddStream, check_stream<TypeParam>(add))

KF_ELEMENTWISE_TEST(ReluForwardBest, check_sizes_and_offsets<TypeParam>(forward, elementwise_variant::best))
KF_ELEMENTWISE_TEST(ReluForwardNaive, check_sizes_and_offsets<TypeParam>(forward, elementwise_variant::naive))
KF_ELEMENTWISE_TEST(ReluForwardVectorized, check_sizes_and_offsets<TypeParam>(forward, elementwise_variant::vectorized))
KF_ELEMENTWISE_TEST(ReluForwardInPlace, check_in_place<TypeParam>(forward))
KF_ELEMENTWISE_TEST(ReluForwardSpecialValues, check_special_values<TypeParam>(forward))
KF_ELEMENTWISE_TEST(ReluForwardBlockSizes, check_block_sizes<TypeParam>(forward))
KF_ELEMENTWISE_TEST(ReluForwardStream, check_stream<TypeParam>(forward))

KF_ELEMENTWISE_TEST(ReluBackwardBest, check_sizes_and_offsets<TypeParam>(backward, elementwise_variant::best))
KF_ELEMENTWISE_TEST(ReluBackwardNaive, check_sizes_and_offsets<TypeParam>(backward, elementwise_variant::naive))
KF_ELEMENTWISE_TEST(ReluBackwardVectorized,
                    check_sizes_and_offsets<TypeParam>(backward, elementwise_variant::vectorized))
KF_ELEMENTWISE_TEST(ReluBackwardInPlace, check_in_place<TypeParam>(backward))
KF_ELEMENTWISE_TEST(ReluBackwardSpecialValues, check_special_values<TypeParam>(backward))
KF_ELEMENTWISE_TEST(ReluBackwardBlockSizes, check_block_sizes<TypeParam>(backward))
KF_ELEMENTWISE_TEST(ReluBackwardStream, check_stream<TypeParam>(backward))

#undef KF_ELEMENTWISE_TEST

}  // namespace
