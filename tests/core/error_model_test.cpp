// SPDX-License-Identifier: Apache-2.0
// The error model: kf::error, to_string, and argument validation that throws
// before any CUDA call (these tests pass fake, never-dereferenced pointers and
// run on machines with no GPU and no driver).
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>

#include "kernelforge/kernelforge.hpp"
#include "kernelforge/reference/elementwise.hpp"

namespace {

// ---- kf::error and to_string -----------------------------------------------

TEST(Error, CarriesCodeAndMessage) {
  const kf::error e(kf::errc::out_of_memory, "asked 12 bytes");
  EXPECT_EQ(e.code(), kf::errc::out_of_memory);
  EXPECT_STREQ(e.what(), "asked 12 bytes");
  const std::runtime_error& base = e;  // one exception type, catchable as std::runtime_error
  EXPECT_STREQ(base.what(), "asked 12 bytes");
}

TEST(Error, ErrcNames) {
  EXPECT_STREQ(kf::to_string(kf::errc::invalid_argument), "invalid_argument");
  EXPECT_STREQ(kf::to_string(kf::errc::no_device), "no_device");
  EXPECT_STREQ(kf::to_string(kf::errc::no_kernel_image), "no_kernel_image");
  EXPECT_STREQ(kf::to_string(kf::errc::out_of_memory), "out_of_memory");
  EXPECT_STREQ(kf::to_string(kf::errc::unsupported), "unsupported");
  EXPECT_STREQ(kf::to_string(kf::errc::cuda_runtime), "cuda_runtime");
  const char* unknown = kf::to_string(static_cast<kf::errc>(99));
  ASSERT_NE(unknown, nullptr);
  EXPECT_STRNE(unknown, "");
}

TEST(Error, VariantNames) {
  EXPECT_STREQ(kf::to_string(kf::elementwise_variant::best), "best");
  EXPECT_STREQ(kf::to_string(kf::elementwise_variant::naive), "naive");
  EXPECT_STREQ(kf::to_string(kf::elementwise_variant::vectorized), "vectorized");
  const char* unknown = kf::to_string(static_cast<kf::elementwise_variant>(7));
  ASSERT_NE(unknown, nullptr);
  const std::set<std::string> valid = {"best", "naive", "vectorized"};
  EXPECT_EQ(valid.count(unknown), 0u) << unknown;
}

// ---- validation, for every shipped type ------------------------------------

/// Runs `call` and expects kf::error with `code` whose message contains every
/// string in `needles`.
template <class F>
void expect_error(F&& call, kf::errc code, std::initializer_list<std::string> needles) {
  try {
    call();
    ADD_FAILURE() << "expected kf::error(" << kf::to_string(code) << "), nothing was thrown";
  } catch (const kf::error& e) {
    EXPECT_EQ(e.code(), code) << "got " << kf::to_string(e.code()) << ": " << e.what();
    const std::string msg = e.what();
    for (const auto& needle : needles)
      EXPECT_NE(msg.find(needle), std::string::npos) << "'" << needle << "' not in: " << msg;
  }
}

// Fake device addresses, far apart (disjoint for any n used here), never
// dereferenced: validation throws before anything touches them.
template <class T>
T* fake(std::uintptr_t megabyte) {
  return reinterpret_cast<T*>(megabyte << 20);
}

constexpr std::size_t n = 10;

template <class T>
T value(double v) {
  return kf::reference::from_double<T>(v);
}

template <class T>
class Validation : public ::testing::Test {};

using shipped_types = ::testing::Types<float, double, __half, __nv_bfloat16>;
// No name generator: GoogleTest numbers the typed suites, e.g.
// "Validation/0.NullPointerNamesTheArgument" (float).
TYPED_TEST_SUITE(Validation, shipped_types);

TYPED_TEST(Validation, NullPointerNamesTheArgument) {
  using T = TypeParam;
  const T a = value<T>(2), t = value<T>(0);
  T* x = fake<T>(1);
  T* y = fake<T>(2);
  T* z = fake<T>(3);
  const auto inv = kf::errc::invalid_argument;
  expect_error([&] { kf::saxpy<T>(n, a, nullptr, y); }, inv, {"kf::saxpy", "'x'", "n = 10"});
  expect_error([&] { kf::saxpy<T>(n, a, x, nullptr); }, inv, {"kf::saxpy", "'y'"});
  expect_error([&] { kf::vector_add<T>(n, nullptr, y, z); }, inv, {"kf::vector_add", "'a'"});
  expect_error([&] { kf::vector_add<T>(n, x, nullptr, z); }, inv, {"kf::vector_add", "'b'"});
  expect_error([&] { kf::vector_add<T>(n, x, y, nullptr); }, inv, {"kf::vector_add", "'c'"});
  expect_error([&] { kf::relu_threshold_forward<T>(n, nullptr, y, t); }, inv, {"kf::relu_threshold_forward", "'x'"});
  expect_error([&] { kf::relu_threshold_forward<T>(n, x, nullptr, t); }, inv, {"kf::relu_threshold_forward", "'y'"});
  expect_error([&] { kf::relu_threshold_backward<T>(n, nullptr, y, z, t); }, inv,
               {"kf::relu_threshold_backward", "'dy'"});
  expect_error([&] { kf::relu_threshold_backward<T>(n, x, nullptr, z, t); }, inv,
               {"kf::relu_threshold_backward", "'x'"});
  expect_error([&] { kf::relu_threshold_backward<T>(n, x, y, nullptr, t); }, inv,
               {"kf::relu_threshold_backward", "'dx'"});
}

TYPED_TEST(Validation, SizeZeroIsANoOpEvenWithNullPointers) {
  // No CUDA call at all: passes on a machine with no GPU and no driver.
  using T = TypeParam;
  const T a = value<T>(2), t = value<T>(0);
  for (auto variant :
       {kf::elementwise_variant::best, kf::elementwise_variant::naive, kf::elementwise_variant::vectorized}) {
    for (int block : {0, 32, 256, 1024}) {
      kf::elementwise_options o;
      o.variant = variant;
      o.block_size = block;
      EXPECT_NO_THROW(kf::saxpy<T>(0, a, nullptr, nullptr, o));
      EXPECT_NO_THROW(kf::vector_add<T>(0, nullptr, nullptr, nullptr, o));
      EXPECT_NO_THROW(kf::relu_threshold_forward<T>(0, nullptr, nullptr, t, o));
      EXPECT_NO_THROW(kf::relu_threshold_backward<T>(0, nullptr, nullptr, nullptr, t, o));
    }
  }
}

TYPED_TEST(Validation, BadBlockSizeIsRejectedBeforeAnyLaunch) {
  using T = TypeParam;
  const T a = value<T>(2), t = value<T>(0);
  T* x = fake<T>(1);
  T* y = fake<T>(2);
  T* z = fake<T>(3);
  for (int block : {31, 33, 1056, -32, 1, 2048}) {
    kf::elementwise_options o;
    o.block_size = block;
    const std::string shown = "options.block_size = " + std::to_string(block);
    const auto inv = kf::errc::invalid_argument;
    expect_error([&] { kf::saxpy<T>(n, a, x, y, o); }, inv, {"kf::saxpy", shown});
    expect_error([&] { kf::vector_add<T>(n, x, y, z, o); }, inv, {"kf::vector_add", shown});
    expect_error([&] { kf::relu_threshold_forward<T>(n, x, y, t, o); }, inv, {"kf::relu_threshold_forward", shown});
    expect_error([&] { kf::relu_threshold_backward<T>(n, x, y, z, t, o); }, inv,
                 {"kf::relu_threshold_backward", shown});
  }
}

TYPED_TEST(Validation, UnknownVariantIsRejected) {
  using T = TypeParam;
  const T a = value<T>(2), t = value<T>(0);
  T* x = fake<T>(1);
  T* y = fake<T>(2);
  T* z = fake<T>(3);
  kf::elementwise_options o;
  o.variant = static_cast<kf::elementwise_variant>(7);
  const auto inv = kf::errc::invalid_argument;
  expect_error([&] { kf::saxpy<T>(n, a, x, y, o); }, inv, {"kf::saxpy", "options.variant", "7"});
  expect_error([&] { kf::vector_add<T>(n, x, y, z, o); }, inv, {"kf::vector_add", "options.variant"});
  expect_error([&] { kf::relu_threshold_forward<T>(n, x, y, t, o); }, inv, {"options.variant"});
  expect_error([&] { kf::relu_threshold_backward<T>(n, x, y, z, t, o); }, inv, {"options.variant"});
}

TYPED_TEST(Validation, PartialOverlapIsRejected) {
  using T = TypeParam;
  const T a = value<T>(2), t = value<T>(0);
  T* x = fake<T>(1);
  T* other = fake<T>(2);
  const auto inv = kf::errc::invalid_argument;
  for (std::ptrdiff_t shift : {1, -1, 9, -9}) {  // |shift| < n: the arrays share n - |shift| elements
    T* shifted = x + shift;
    SCOPED_TRACE("output shifted by " + std::to_string(shift) + " elements");
    expect_error([&] { kf::saxpy<T>(n, a, x, shifted); }, inv, {"kf::saxpy", "'y'", "'x'", "overlap"});
    expect_error([&] { kf::vector_add<T>(n, x, other, shifted); }, inv, {"kf::vector_add", "'c'", "'a'", "overlap"});
    expect_error([&] { kf::vector_add<T>(n, other, x, shifted); }, inv, {"kf::vector_add", "'c'", "'b'", "overlap"});
    expect_error([&] { kf::relu_threshold_forward<T>(n, x, shifted, t); }, inv,
                 {"kf::relu_threshold_forward", "'y'", "'x'", "overlap"});
    expect_error([&] { kf::relu_threshold_backward<T>(n, x, other, shifted, t); }, inv,
                 {"kf::relu_threshold_backward", "'dx'", "'dy'", "overlap"});
    expect_error([&] { kf::relu_threshold_backward<T>(n, other, x, shifted, t); }, inv,
                 {"kf::relu_threshold_backward", "'dx'", "'x'", "overlap"});
  }
}

TYPED_TEST(Validation, ExactAliasingAndAdjacentArraysPassValidation) {
  // In place (same pointer) and back-to-back arrays are legal. To prove that
  // without launching on fake pointers, add a bad block size: the error must be
  // about options.block_size, i.e. the aliasing checks before it passed.
  using T = TypeParam;
  const T a = value<T>(2), t = value<T>(0);
  T* x = fake<T>(1);
  T* next = x + n;  // adjacent, disjoint
  T* prev = x - n;
  T* other = fake<T>(2);
  kf::elementwise_options o;
  o.block_size = 31;
  const auto inv = kf::errc::invalid_argument;
  const std::string shown = "options.block_size = 31";
  expect_error([&] { kf::saxpy<T>(n, a, x, x, o); }, inv, {shown});
  expect_error([&] { kf::saxpy<T>(n, a, x, next, o); }, inv, {shown});
  expect_error([&] { kf::saxpy<T>(n, a, x, prev, o); }, inv, {shown});
  expect_error([&] { kf::vector_add<T>(n, x, other, x, o); }, inv, {shown});
  expect_error([&] { kf::vector_add<T>(n, other, x, x, o); }, inv, {shown});
  expect_error([&] { kf::vector_add<T>(n, x, x, x, o); }, inv, {shown});
  expect_error([&] { kf::relu_threshold_forward<T>(n, x, x, t, o); }, inv, {shown});
  expect_error([&] { kf::relu_threshold_forward<T>(n, x, next, t, o); }, inv, {shown});
  expect_error([&] { kf::relu_threshold_backward<T>(n, x, other, x, t, o); }, inv, {shown});
  expect_error([&] { kf::relu_threshold_backward<T>(n, other, x, x, t, o); }, inv, {shown});
  // Inputs may alias each other freely (read-only).
  expect_error([&] { kf::vector_add<T>(n, x, x + 1, other, o); }, inv, {shown});
}

TYPED_TEST(Validation, NullPointerIsReportedBeforeBadOptions) {
  // The first problem in argument order is the one reported.
  using T = TypeParam;
  kf::elementwise_options o;
  o.block_size = 33;
  expect_error([&] { kf::saxpy<T>(n, value<T>(1), nullptr, fake<T>(2), o); }, kf::errc::invalid_argument, {"'x'"});
}

}  // namespace
