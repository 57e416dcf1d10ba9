// SPDX-License-Identifier: Apache-2.0
// Scratch device memory for launchers (split-k partial sums, repacked operands):
// one stream-ordered pool per device, and the RAII handle every launcher takes
// its scratch through, so nothing leaks when a launch throws.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

namespace kf::detail {

/// Where a launcher carves several buffers out of one workspace, each starts on
/// a 256-byte boundary (what cudaMalloc guarantees for a whole allocation).
inline constexpr std::size_t workspace_alignment = 256;

/// The library's workspace pool on `device`: stream-ordered like
/// cudaMallocAsync, but it keeps its memory between calls (release threshold:
/// never), so a call after a synchronization does not map pages again -- the
/// default pool returns them at every synchronization. Holds the largest
/// workspace used until the process ends. nullptr where memory pools are
/// unsupported (callers then run without one).
cudaMemPool_t workspace_pool(int device);

/// Stream-ordered scratch from workspace_pool(device), returned to the pool on
/// the same stream when it goes out of scope (also when a launch throws).
/// data() is null when there is no pool or no memory: callers then take a path
/// that needs no workspace (e.g. no split-k). The failed allocation's error is
/// cleared, so it does not surface in a later call.
class pooled_workspace {
 public:
  pooled_workspace(int device, std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    cudaMemPool_t pool = workspace_pool(device);
    if (pool == nullptr || bytes == 0) return;
    if (cudaMallocFromPoolAsync(&data_, bytes, pool, stream) != cudaSuccess) {
      cudaGetLastError();
      data_ = nullptr;
    }
  }
  ~pooled_workspace() {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);
  }
  pooled_workspace(const pooled_workspace&) = delete;
  pooled_workspace& operator=(const pooled_workspace&) = delete;

  template <class T = void>
  [[nodiscard]] T* data() const noexcept {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace kf::detail
