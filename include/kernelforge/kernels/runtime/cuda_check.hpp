// SPDX-License-Identifier: Apache-2.0
// CUDA status -> kf::error, for every launcher: the one place a cudaError_t
// becomes an exception with a message that says what to do.
#pragma once

#include <cuda_runtime_api.h>

namespace kf::detail {

/// Throws the kf::error that matches `status` (no_device, no_kernel_image,
/// out_of_memory, cuda_runtime), prefixed by `what` (e.g. "kf::saxpy").
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* what);

inline void cuda_check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw_cuda_error(status, what);
}

/// Right after a launch: a bad configuration, or a fault left by earlier work.
inline void check_launch(const char* what) { cuda_check(cudaGetLastError(), what); }

/// Builds the errc::no_kernel_image message for `device` and throws it.
[[noreturn]] void throw_no_kernel_image(int device, const char* what);

}  // namespace kf::detail
