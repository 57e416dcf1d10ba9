// SPDX-License-Identifier: Apache-2.0
// Out-of-line parts of kf::pinned_buffer and kf::copy_async: page-locked
// allocation failures become errc::out_of_memory with the numbers and the fix;
// copies are enqueued with cudaMemcpyAsync and never synchronize.
#include <string>

#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/pinned_buffer.hpp"

namespace kf::detail {

void* pinned_allocate(std::size_t count, std::size_t element_bytes) {
  const char* what = "kf::pinned_buffer";
  const std::size_t bytes = allocation_bytes(what, count, element_bytes);
  void* p = nullptr;
  const cudaError_t status = cudaMallocHost(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: the next call starts clean
    throw error(errc::out_of_memory,
                std::string(what) + ": cannot page-lock " + std::to_string(bytes) +
                    " bytes of host memory (cudaMallocHost failed). Pinned memory must stay in physical RAM: "
                    "use smaller or fewer pinned buffers (reuse one as a staging area), free other pinned "
                    "memory, or raise the locked-memory limit (ulimit -l, memlock in containers)");
  }
  cuda_check(status, what);
  return p;
}

void pinned_free(void* p) noexcept {
  if (p != nullptr) cudaFreeHost(p);
}

void copy_async_bytes(void* dst, const void* src, std::size_t bytes, cudaStream_t s, const char* what) {
  if (bytes == 0) return;
  if (dst == nullptr || src == nullptr) {
    throw error(errc::invalid_argument, std::string(what) + ": argument '" + (dst ? "src" : "dst") +
                                            "' is null but the copy has " + std::to_string(bytes) +
                                            " bytes; null is allowed only for an empty copy");
  }
  cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), what);
}

void require_same_size(const char* what, std::size_t dst_count, std::size_t src_count) {
  if (dst_count != src_count) {
    throw error(errc::invalid_argument, std::string(what) + ": the destination holds " + std::to_string(dst_count) +
                                            " elements but the source " + std::to_string(src_count) +
                                            "; copy whole buffers of the same size, or use the pointer form "
                                            "copy_async(dst, src, count, stream) for a part");
  }
}

}  // namespace kf::detail
