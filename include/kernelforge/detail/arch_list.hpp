// SPDX-License-Identifier: Apache-2.0
// The architectures the including translation unit is compiled for, as nvcc
// lists them ("750,900"), for the no_kernel_image messages of the device-side
// headers a user instantiates in their own .cu (<kernelforge/transform.cuh>,
// <kernelforge/conv.cuh>): "this translation unit was compiled for ...".
#pragma once

namespace kf::detail {

// Variadic: with several architectures __CUDA_ARCH_LIST__ is a comma-separated list.
#define KF_ARCH_LIST_STRINGIFY2(...) #__VA_ARGS__
#define KF_ARCH_LIST_STRINGIFY(...) KF_ARCH_LIST_STRINGIFY2(__VA_ARGS__)
#if defined(__CUDA_ARCH_LIST__)
inline constexpr const char* translation_unit_arch_list = KF_ARCH_LIST_STRINGIFY(__CUDA_ARCH_LIST__);
#else
inline constexpr const char* translation_unit_arch_list = "unknown";
#endif
#undef KF_ARCH_LIST_STRINGIFY
#undef KF_ARCH_LIST_STRINGIFY2

}  // namespace kf::detail
