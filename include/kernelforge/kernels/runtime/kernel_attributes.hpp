// SPDX-License-Identifier: Apache-2.0
// What a launcher needs to know about one kernel on one device (occupancy by
// block size, the image's architecture), and the dynamic-shared-memory opt-in:
// queried once per device and kernel, cached in per_device objects.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "device_facts.hpp"  // compute_capability
#include "launch_plan.hpp"
#include "per_device.hpp"

namespace kf::detail {

/// What a launcher needs to know about one kernel on one device.
struct kernel_profile {
  occupancy_table occupancy{};  ///< resident blocks per SM by block size
  int default_block = 0;        ///< choose_block_size(occupancy)
  int max_threads_per_block = 0;
  int ptx_version = 0;     ///< virtual architecture of the loaded image (cudaFuncAttributes::ptxVersion)
  int binary_version = 0;  ///< real architecture of the loaded image (e.g. 90)
};

/// Queries `kernel` on `device` (the current device): errc::no_kernel_image when
/// the library holds no image for it.
void query_kernel_profile(kernel_profile& profile, const void* kernel, int device, const char* what);

/// The cached profile of `Kernel` (a __global__ function) on `device`. The first
/// call on a device costs ~33 occupancy queries; later calls are one atomic load.
template <auto Kernel>
const kernel_profile& profile_of(int device, const char* what) {
  static per_device<kernel_profile> profiles;
  return profiles.get(device, [what](kernel_profile& p, int d) {
    query_kernel_profile(p, reinterpret_cast<const void*>(Kernel), d, what);
  });
}

/// Whether `device` runs an image of `Kernel` built for compute capability
/// min_cc or newer: the device is min_cc or newer and the image was not
/// JIT-compiled from an older architecture's PTX (whose body traps where the
/// kernel needs min_cc's instructions). errc::no_kernel_image where the library
/// holds no image of it for the device.
template <auto Kernel>
bool runs_image_for(int device, int min_cc, const char* what) {
  return compute_capability(device) >= min_cc && profile_of<Kernel>(device, what).ptx_version >= min_cc;
}

void set_dynamic_smem_limit(const void* kernel, int bytes, const char* what);
int blocks_per_sm_with_smem(const void* kernel, int threads, std::size_t smem_bytes, int device, const char* what);

/// Raises `Kernel`'s dynamic shared-memory limit to `bytes` on `device`, once
/// per device (needed above 48 KB; the setting is per device and kernel).
template <auto Kernel>
void allow_dynamic_smem(int device, int bytes, const char* what) {
  static per_device<bool> done;
  done.get(device, [&](bool& set, int) {
    set_dynamic_smem_limit(reinterpret_cast<const void*>(Kernel), bytes, what);
    set = true;
  });
}

/// allow_dynamic_smem, then the resident blocks per SM of `Kernel` with `threads`
/// threads and `smem_bytes` of dynamic shared memory (errc::unsupported when 0),
/// once per device.
template <auto Kernel>
int resident_blocks_per_sm(int device, int threads, std::size_t smem_bytes, const char* what) {
  static per_device<int> blocks;
  return blocks.get(device, [&](int& b, int d) {
    set_dynamic_smem_limit(reinterpret_cast<const void*>(Kernel), static_cast<int>(smem_bytes), what);
    b = blocks_per_sm_with_smem(reinterpret_cast<const void*>(Kernel), threads, smem_bytes, d, what);
  });
}

/// A configuration for cudaLaunchKernelEx with no attribute.
inline cudaLaunchConfig_t launch_config(dim3 grid, dim3 block, std::size_t smem_bytes, cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  return config;
}

/// A configuration for cudaLaunchKernelEx of a cooperative launch (every block
/// resident at once, or cudaErrorCooperativeLaunchTooLarge), through
/// `attribute`, which must outlive it.
inline cudaLaunchConfig_t cooperative_launch_config(dim3 grid, dim3 block, std::size_t smem_bytes, cudaStream_t stream,
                                                    cudaLaunchAttribute& attribute) {
  cudaLaunchConfig_t config = launch_config(grid, block, smem_bytes, stream);
  attribute.id = cudaLaunchAttributeCooperative;
  attribute.val.cooperative = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return config;
}

/// A configuration for cudaLaunchKernelEx (and the cluster occupancy query):
/// clusters of `cluster` blocks along x, through `attribute`, which must outlive
/// it; cluster 1 is an ordinary launch (no attribute).
inline cudaLaunchConfig_t cluster_launch_config(dim3 grid, dim3 block, std::size_t smem_bytes, cudaStream_t stream,
                                                int cluster, cudaLaunchAttribute& attribute) {
  cudaLaunchConfig_t config = launch_config(grid, block, smem_bytes, stream);
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(cluster);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = cluster > 1 ? 1 : 0;
  return config;
}

int active_clusters_with_smem(const void* kernel, int threads, std::size_t smem_bytes, int cluster, int device,
                              const char* what);

/// allow_dynamic_smem, then how many clusters of `cluster` blocks of `Kernel`
/// (`threads` threads, `smem_bytes` of dynamic shared memory) the device runs
/// at once -- for cluster 1, resident blocks per SM times SMs -- once per
/// device: the grid of a persistent kernel.
template <auto Kernel>
int resident_clusters(int device, int threads, std::size_t smem_bytes, int cluster, const char* what) {
  static per_device<int> clusters;
  return clusters.get(device, [&](int& c, int d) {
    set_dynamic_smem_limit(reinterpret_cast<const void*>(Kernel), static_cast<int>(smem_bytes), what);
    c = active_clusters_with_smem(reinterpret_cast<const void*>(Kernel), threads, smem_bytes, cluster, d, what);
  });
}

/// Block size for a launch: the caller's (checked against what the kernel can
/// launch) or the profile's default.
int resolve_block_size(const kernel_profile& profile, int requested, const char* what);

}  // namespace kf::detail
