// Host side of every family launcher: CUDA error translation, argument checks,
// and the per-device caches that keep device queries off the call path.
// Included by kernels/<family>/<family>.cu; host code only (no <<<>>> here).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>

#include <cuda_runtime_api.h>

#include "kernelforge/detail/launch_plan.hpp"
#include "kernelforge/error.hpp"

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

/// The current device; errc::no_device when there is none. No synchronization.
int current_device(const char* what);

/// kf::require_kernel_image for `device`, checked once per device and then
/// cached: for launchers whose kernels need no occupancy profile (fixed tiles).
void require_kernel_image_cached(int device, const char* what);

/// Device limits for planning, queried once per device and cached.
const device_limits& limits_for(int device);

/// Compute capability of `device` as major * 10 + minor (e.g. 90), from the cache.
inline int compute_capability(int device) {
  const device_limits& l = limits_for(device);
  return l.cc_major * 10 + l.cc_minor;
}

/// The library's workspace pool on `device` (split-k partial sums, repacked
/// operands): stream-ordered like cudaMallocAsync, but it keeps its memory
/// between calls (release threshold: never), so a call after a synchronization
/// does not map pages again -- the default pool returns them at every
/// synchronization. Holds the largest workspace used until the process ends.
/// nullptr where memory pools are unsupported (callers then run without one).
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
  T* data() const noexcept {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  cudaStream_t stream_;
};

// ---- argument checks: thrown before anything is enqueued ------------------
[[noreturn]] void throw_invalid_argument(const char* what, const char* message);

/// errc::invalid_argument naming `name` when `p` is null while n > 0.
void require_pointer(const char* what, const char* name, const void* p, std::size_t n);

/// errc::invalid_argument naming `name` when `p` is not aligned to `alignment`
/// bytes (a T* must be aligned to alignof(T); anything else faults on the GPU).
void require_aligned(const char* what, const char* name, const void* p, std::size_t alignment);

/// errc::invalid_argument unless block is 0 (launcher decides) or a multiple of 32 in [32, 1024].
void require_block_size(const char* what, int block);

// ---- per-kernel, per-device profile --------------------------------------
/// What a launcher needs to know about one kernel on one device.
struct kernel_profile {
  occupancy_table occupancy{};  ///< resident blocks per SM by block size
  int default_block = 0;        ///< choose_block_size(occupancy)
  int max_threads_per_block = 0;
  int ptx_version = 0;     ///< virtual architecture of the loaded image (cudaFuncAttributes::ptxVersion)
  int binary_version = 0;  ///< real architecture of the loaded image (e.g. 90)
};

constexpr int max_cached_devices = 64;

/// One per kernel: profiles for every device, filled on first use. The first
/// call on a device costs ~33 occupancy queries; later calls are one atomic load.
class kernel_profile_cache {
 public:
  const kernel_profile& get(const void* kernel, int device, const char* what);

 private:
  std::array<std::once_flag, max_cached_devices> once_{};
  std::array<kernel_profile, max_cached_devices> profiles_{};
};

/// The cached profile of `Kernel` (a __global__ function) on `device`.
template <auto Kernel>
const kernel_profile& profile_of(int device, const char* what) {
  static kernel_profile_cache cache;
  return cache.get(reinterpret_cast<const void*>(Kernel), device, what);
}

/// Raises `Kernel`'s dynamic shared-memory limit to `bytes` on `device`, once
/// per device (needed above 48 KB; the setting is per device and kernel).
template <auto Kernel>
void allow_dynamic_smem(int device, int bytes, const char* what) {
  static std::array<std::once_flag, max_cached_devices> once;
  limits_for(device);  // rejects ordinals beyond the caches
  std::call_once(once[device], [&] {
    cuda_check(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), what);
  });
}

/// Block size for a launch: the caller's (checked against what the kernel can
/// launch) or the profile's default.
int resolve_block_size(const kernel_profile& profile, int requested, const char* what);

}  // namespace kf::detail
