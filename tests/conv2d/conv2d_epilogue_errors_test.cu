// SPDX-License-Identifier: Apache-2.0
// conv2d_forward's epilogue overload (<kernelforge/conv.cuh>) validates as the
// plain one does: variants without an epilogue refuse a functor, options.relu
// beside a functor is rejected, every bad argument gets the plain overload's
// message, and an empty batch is a no-op. Validation only: no GPU needed (the
// pointers are never dereferenced). Every call passes kf::epilogue::clamp, whose
// instantiation conv2d_epilogue_gpu_test.cu compiles (declared extern below):
// validation does not depend on the functor, and this unit then compiles no
// kernel (12 s of a 2-core machine's test build with its own instantiations).
#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <limits>
#include <string>

#include "conv2d_cases.hpp"
#include "kernelforge/conv.cuh"
#include "test_support.hpp"

extern template void kf::detail::conv2d_forward_epilogue<float, kf::epilogue::clamp>(const kf::conv2d_params&,
                                                                                     const float*, const float*,
                                                                                     const float*, float*,
                                                                                     kf::epilogue::clamp,
                                                                                     const kf::conv2d_options&);

namespace {

using namespace kf::test::conv2d;  // conv2d_cases.hpp
using kf::test::fake;

const kf::conv2d_params small = make(1, 3, 8, 8, 4, 3, 3, 1, 1, 1);
/// A functor that returns every value unchanged (validation only: it never runs).
const kf::epilogue::clamp unchanged{-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};

TEST(Conv2dEpilogueErrors, VariantsWithoutEpilogueAreUnsupported) {
  for (kf::conv2d_variant v : {kf::conv2d_variant::naive, kf::conv2d_variant::smem_tiled}) {
    kf::conv2d_options options;
    options.variant = v;
    kf::test::expect_error(
        kf::errc::unsupported,
        "implicit_gemm, implicit_gemm_tf32, implicit_gemm_pipelined, winograd, winograd_fused and best", [&] {
          kf::conv2d_forward(small, fake(0x1000), fake(0x2000), nullptr, fake(0x3000), kf::epilogue::clamp{0, 1},
                             options);
        });
  }
}

TEST(Conv2dEpilogueErrors, OptionsReluWithFunctorIsRejected) {
  kf::conv2d_options options;
  options.relu = true;
  kf::test::expect_error(kf::errc::invalid_argument, "options.relu", [&] {
    kf::conv2d_forward(small, fake(0x1000), fake(0x2000), nullptr, fake(0x3000), unchanged, options);
  });
}

/// The message after "<what>: ", for comparing the two overloads' texts.
std::string reason(const std::function<void()>& call) {
  try {
    call();
  } catch (const kf::error& e) {
    const std::string text = e.what();
    const std::size_t at = text.find("): ");
    return at != std::string::npos ? text.substr(at + 3) : text.substr(text.find(": ") + 2);
  }
  return "no exception";
}

TEST(Conv2dEpilogueErrors, SameValidationAsThePlainOverload) {
  kf::conv2d_options tf32_exact;
  tf32_exact.variant = kf::conv2d_variant::implicit_gemm_tf32;  // with math exact: invalid
  const kf::conv2d_params zero_c = make(1, 0, 8, 8, 4, 3, 3, 1, 1, 1);
  const kf::conv2d_params no_output = make(1, 3, 2, 2, 4, 5, 5, 1, 0, 1);
  struct bad_call {
    const char* name;
    kf::conv2d_params p;
    float *x, *w, *y;
    kf::conv2d_options options;
  } calls[] = {
      {"null x", small, nullptr, fake(0x2000), fake(0x3000), {}},
      {"null weight", small, fake(0x1000), nullptr, fake(0x3000), {}},
      {"null y", small, fake(0x1000), fake(0x2000), nullptr, {}},
      {"y overlaps x", small, fake(0x1000), fake(0x200000), fake(0x1004), {}},
      {"tf32 with exact math", small, fake(0x1000), fake(0x2000), fake(0x3000), tf32_exact},
      {"zero channels", zero_c, fake(0x1000), fake(0x2000), fake(0x3000), {}},
      {"no output pixels", no_output, fake(0x1000), fake(0x2000), fake(0x3000), {}},
  };
  for (const bad_call& c : calls) {
    const std::string plain = reason([&] { kf::conv2d_forward<float>(c.p, c.x, c.w, nullptr, c.y, c.options); });
    const std::string functor =
        reason([&] { kf::conv2d_forward<float>(c.p, c.x, c.w, nullptr, c.y, unchanged, c.options); });
    EXPECT_NE(plain, "no exception") << c.name;
    EXPECT_EQ(plain, functor) << c.name;
    kf::test::expect_error(kf::errc::invalid_argument, "",
                           [&] { kf::conv2d_forward<float>(c.p, c.x, c.w, nullptr, c.y, unchanged, c.options); });
  }
}

TEST(Conv2dEpilogueErrors, EmptyBatchIsANoOp) {
  const kf::conv2d_params empty = make(0, 3, 8, 8, 4, 3, 3, 1, 1, 1);
  kf::conv2d_forward(empty, fake(0x1000), fake(0x2000), nullptr, fake(0x3000), kf::epilogue::clamp{0, 1});
  kf::conv2d_options relu;
  relu.relu = true;
  kf::conv2d_forward<float>(empty, fake(0x1000), fake(0x2000), nullptr, fake(0x3000), relu);
}

}  // namespace
