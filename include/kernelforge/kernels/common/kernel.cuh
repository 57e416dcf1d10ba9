// SPDX-License-Identifier: Apache-2.0
// KF_KERNEL marks every kernelforge __global__ function. Hidden visibility keeps
// our kernels from clashing with another library's instantiation of the same
// template at link time (CUB does the same: CUB_DETAIL_KERNEL_ATTRIBUTES).
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define KF_KERNEL __global__ __attribute__((visibility("hidden")))
#else
#define KF_KERNEL __global__
#endif
