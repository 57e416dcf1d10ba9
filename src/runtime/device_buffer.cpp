// SPDX-License-Identifier: Apache-2.0
// Out-of-line parts of kf::device_buffer: allocation failures become
// errc::out_of_memory with the bytes asked for and the bytes free.
#include <string>

#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/device_buffer.hpp"

namespace kf::detail {

void* device_allocate(std::size_t count, std::size_t element_bytes) {
  const std::size_t bytes = allocation_bytes("kf::device_buffer", count, element_bytes);
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    std::size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw error(errc::out_of_memory, "kf::device_buffer: cannot allocate " + std::to_string(bytes) +
                                         " bytes on the device (" + std::to_string(free_bytes) + " of " +
                                         std::to_string(total_bytes) +
                                         " bytes free); free other buffers or use a smaller size");
  }
  cuda_check(status, "kf::device_buffer");
  return p;
}

void device_free(void* p) noexcept {
  if (p != nullptr) cudaFree(p);
}

void copy_to_device(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
  if (bytes == 0) return;
  cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s), "kf::to_device");
}

void copy_to_host(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
  if (bytes != 0) cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), "kf::to_host");
  cuda_check(cudaStreamSynchronize(s), "kf::to_host");
}

}  // namespace kf::detail
