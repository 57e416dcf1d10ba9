// SPDX-License-Identifier: Apache-2.0
// A consumer's view: this translation unit is compiled by the host C++ compiler
// (g++ or clang, never nvcc; tests/core/CMakeLists.txt checks that it is a CXX
// source), includes only the umbrella header, and takes the address of every
// declaration and every shipped explicit instantiation, so linking this test
// proves the library really contains them for float, double, __half and
// __nv_bfloat16.
#if defined(__CUDACC__) || defined(__NVCC__)
#error "host_compiler_only_test.cpp must be compiled by the host C++ compiler, not nvcc"
#endif

#include <kernelforge/kernelforge.hpp>
#include <kernelforge/reference/elementwise.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

namespace {

template <class T>
struct elementwise_entry_points {
  void (*saxpy)(std::size_t, kf::compute_t<T>, const T*, T*, const kf::elementwise_options&) = &kf::saxpy<T>;
  void (*vector_add)(std::size_t, const T*, const T*, T*, const kf::elementwise_options&) = &kf::vector_add<T>;
  void (*relu_forward)(std::size_t, const T*, T*, kf::compute_t<T>,
                       const kf::elementwise_options&) = &kf::relu_threshold_forward<T>;
  void (*relu_backward)(std::size_t, const T*, const T*, T*, kf::compute_t<T>,
                        const kf::elementwise_options&) = &kf::relu_threshold_backward<T>;
  kf::device_buffer<T> (*upload)(const std::vector<T>&, cudaStream_t) = &kf::to_device<T>;
  std::vector<T> (*download)(const kf::device_buffer<T>&, cudaStream_t) = &kf::to_host<T>;
  void (*reference_saxpy)(std::size_t, kf::compute_t<T>, const T*, T*) = &kf::reference::saxpy<T>;
  void (*reference_add)(std::size_t, const T*, const T*, T*) = &kf::reference::vector_add<T>;
  void (*reference_forward)(std::size_t, const T*, T*, kf::compute_t<T>) = &kf::reference::relu_threshold_forward<T>;
  void (*reference_backward)(std::size_t, const T*, const T*, T*,
                             kf::compute_t<T>) = &kf::reference::relu_threshold_backward<T>;
};

/// By value: drops the volatile, keeps the address the linker resolved.
template <class P>
bool linked(P p) {
  return p != nullptr;
}

template <class T>
void expect_all_linked() {
  // volatile: the addresses are really taken and kept, so the linker must resolve them.
  static volatile elementwise_entry_points<T> entries;
  EXPECT_TRUE(linked(entries.saxpy));
  EXPECT_TRUE(linked(entries.vector_add));
  EXPECT_TRUE(linked(entries.relu_forward));
  EXPECT_TRUE(linked(entries.relu_backward));
  EXPECT_TRUE(linked(entries.upload));
  EXPECT_TRUE(linked(entries.download));
  EXPECT_TRUE(linked(entries.reference_saxpy));
  EXPECT_TRUE(linked(entries.reference_add));
  EXPECT_TRUE(linked(entries.reference_forward));
  EXPECT_TRUE(linked(entries.reference_backward));
}

/// The other families' shipped types: taking the address instantiates the
/// public inline template, which calls the precompiled detail:: instantiation.
template <class T>
void expect_matmul_linked() {
  static volatile auto fn = &kf::matmul<T>;
  EXPECT_TRUE(linked(fn));
}
template <class T>
void expect_filter2d_linked() {
  static volatile auto fn = &kf::filter2d<T>;
  EXPECT_TRUE(linked(fn));
}

TEST(HostCompilerOnly, EveryInstantiationLinks) {
  expect_all_linked<float>();
  expect_all_linked<double>();
  expect_all_linked<__half>();
  expect_all_linked<__nv_bfloat16>();
  expect_matmul_linked<float>();
  expect_matmul_linked<double>();
  expect_filter2d_linked<float>();
  expect_filter2d_linked<__half>();
  expect_filter2d_linked<double>();
  static volatile auto conv2d_fn = &kf::conv2d_forward<float>;
  EXPECT_TRUE(linked(conv2d_fn));
}

TEST(HostCompilerOnly, EveryDeclarationLinks) {
  static volatile auto device_info_fn = &kf::get_device_info;
  static volatile auto architectures_fn = &kf::compiled_architectures;
  static volatile auto require_image_fn = &kf::require_kernel_image;
  const char* (*errc_name)(kf::errc) noexcept = &kf::to_string;
  const char* (*variant_name)(kf::elementwise_variant) noexcept = &kf::to_string;
  EXPECT_TRUE(linked(device_info_fn));
  EXPECT_TRUE(linked(architectures_fn));
  EXPECT_TRUE(linked(require_image_fn));
  EXPECT_STREQ(errc_name(kf::errc::no_kernel_image), "no_kernel_image");
  EXPECT_STREQ(variant_name(kf::elementwise_variant::vectorized), "vectorized");

  // The types a consumer uses, all usable without nvcc.
  const kf::error e(kf::errc::unsupported, "message");
  EXPECT_EQ(e.code(), kf::errc::unsupported);
  const kf::device_info info;
  EXPECT_TRUE(info.name.empty());
  const kf::elementwise_options defaults;
  EXPECT_EQ(defaults.stream, nullptr);
  EXPECT_EQ(defaults.variant, kf::elementwise_variant::best);
  EXPECT_EQ(defaults.block_size, 0);
  const kf::device_buffer<__half> empty;
  EXPECT_TRUE(empty.empty());
  const kf::pinned_buffer<__nv_bfloat16> pinned_empty;
  EXPECT_TRUE(pinned_empty.empty());
  void (*copy)(float*, const float*, std::size_t, cudaStream_t) = &kf::copy_async<float>;
  EXPECT_TRUE(linked(copy));
  EXPECT_FALSE(std::string(KERNELFORGE_VERSION_STRING).empty());
}

TEST(HostCompilerOnly, CallsWorkWithoutNvcc) {
  // A real call through the host-compiled header, with no GPU needed: n = 0.
  EXPECT_NO_THROW(kf::saxpy<float>(0, 1.0f, nullptr, nullptr));
  EXPECT_NO_THROW(kf::vector_add<__nv_bfloat16>(0, nullptr, nullptr, nullptr));
  EXPECT_FALSE(kf::compiled_architectures().empty());
}

}  // namespace
