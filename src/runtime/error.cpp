// SPDX-License-Identifier: Apache-2.0
// kf::error helpers: CUDA status -> errc, and the argument checks every
// launcher runs before it enqueues anything.
#include <cstdint>
#include <string>

#include "kernelforge/math_mode.hpp"
#include "kernelforge/kernels/common/alignment.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"

namespace kf {

const char* to_string(errc code) noexcept {
  switch (code) {
    case errc::invalid_argument: return "invalid_argument";
    case errc::no_device: return "no_device";
    case errc::no_kernel_image: return "no_kernel_image";
    case errc::out_of_memory: return "out_of_memory";
    case errc::unsupported: return "unsupported";
    case errc::cuda_runtime: return "cuda_runtime";
  }
  return "unknown";
}

const char* to_string(math_mode mode) noexcept {
  switch (mode) {
    case math_mode::exact: return "exact";
    case math_mode::tf32: return "tf32";
    case math_mode::fp32_emulated: return "fp32_emulated";
  }
  return "unknown";
}

namespace detail {

void throw_cuda_error(cudaError_t status, const char* what) {
  const std::string cuda_text = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
  switch (status) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
      // CUDA reports a missing driver as an insufficient one: the doctor tells the cases apart.
      throw error(
          errc::no_device,
          std::string(what) + ": no usable CUDA device (" + cuda_text +
              (status == cudaErrorInsufficientDriver ? "; CUDA says this when no driver is installed too" : "") +
              "). Run kernelforge-doctor: it checks the GPU, the NVIDIA driver and CUDA_VISIBLE_DEVICES, "
              "and gives the fix.");
    case cudaErrorNoKernelImageForDevice: {
      int device = 0;
      if (cudaGetDevice(&device) != cudaSuccess) device = 0;
      throw_no_kernel_image(device, what);
    }
    case cudaErrorMemoryAllocation:
      cudaGetLastError();  // not sticky: clear it so the next call starts clean
      throw error(errc::out_of_memory, std::string(what) + ": " + cuda_text);
    default:
      throw error(errc::cuda_runtime,
                  std::string(what) + ": " + cuda_text +
                      " (an earlier asynchronous kernel fault is reported by the next call that sees it)");
  }
}

void throw_invalid_argument(const char* what, const std::string& message) {
  throw error(errc::invalid_argument, std::string(what) + ": " + message);
}

void throw_unsupported(const char* what, const std::string& message) {
  throw error(errc::unsupported, std::string(what) + ": " + message);
}

void require_pointer(const char* what, const char* name, const void* p, std::size_t n) {
  if (p == nullptr && n > 0) {
    throw error(errc::invalid_argument,
                std::string(what) + ": argument '" + name + "' is null but n = " + std::to_string(n) +
                    "; pass a device pointer to at least n elements (null is allowed only with n = 0)");
  }
}

void require_aligned(const char* what, const char* name, const void* p, std::size_t alignment) {
  if (!is_aligned(p, alignment)) {
    throw error(errc::invalid_argument, std::string(what) + ": argument '" + name + "' is not aligned to " +
                                            std::to_string(alignment) +
                                            " bytes, the alignment of its element type; pass a pointer to "
                                            "the start of an element");
  }
}

void require_same_or_disjoint(const char* what, const char* out_name, const void* out, std::size_t out_bytes,
                              const char* in_name, const void* in, std::size_t in_bytes) {
  if (out == in && out_bytes == in_bytes) return;  // in place
  if (ranges_overlap(out, out_bytes, in, in_bytes)) {
    throw_invalid_argument(what, std::string("'") + out_name + "' and '" + in_name +
                                     "' overlap partially; pass the same pointer (in place, same element size) or "
                                     "disjoint arrays of n elements");
  }
}

std::size_t allocation_bytes(const char* what, std::size_t count, std::size_t element_bytes) {
  if (element_bytes != 0 && count > SIZE_MAX / element_bytes) {
    throw error(errc::out_of_memory, std::string(what) + ": " + std::to_string(count) + " elements of " +
                                         std::to_string(element_bytes) +
                                         " bytes overflow the address space; use a smaller size");
  }
  return count * element_bytes;
}

void require_block_size(const char* what, int block) {
  if (block != 0 && !is_valid_block_size(block)) {
    throw error(errc::invalid_argument,
                std::string(what) + ": options.block_size = " + std::to_string(block) +
                    " is not a multiple of 32 in [32, 1024]; pass 0 to let the launcher choose");
  }
}

}  // namespace detail
}  // namespace kf
