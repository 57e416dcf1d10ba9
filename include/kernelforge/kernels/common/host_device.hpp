// SPDX-License-Identifier: Apache-2.0
// KF_HOST_DEVICE: a helper callable from host and device code, in headers that
// both nvcc and the host compiler (g++, for kernels/runtime/*.cpp) include.
#pragma once

#if defined(__CUDACC__)
#define KF_HOST_DEVICE __host__ __device__
#else
#define KF_HOST_DEVICE
#endif

/// A pure selection rule (tuning.hpp, policy.hpp): constexpr, on host and device.
#define KF_TUNING_FN KF_HOST_DEVICE constexpr
