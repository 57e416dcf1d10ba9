// SPDX-License-Identifier: Apache-2.0
// The pair of instances every wgmma fp32-emulation launch enqueues (steps 15
// and 17, 15_wgmma_fp32_emulated.cuh and 17_wgmma_fp32_emulated_skinny.cuh):
// the kernel for finite inputs and its Apart twin for inputs with an inf or a
// NaN (the corrections kept apart). The pre-pass's flag in device memory names
// the one that works and the other returns at once, so the host never waits to
// read the flag, and the common loop keeps the registers it has alone. Host
// code of the sm_90a translation units.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "../runtime/cuda_check.hpp"
#include "../runtime/kernel_attributes.hpp"
#include "wgmma/config.cuh"

namespace kf::detail {

/// Kernel, KernelApart: the two instances (the same parameters), run in
/// clusters of Cluster CTAs of wgmma::threads with SmemBytes of shared memory.
template <auto Kernel, auto KernelApart, int SmemBytes, int Cluster>
struct fp32_emulated_instances {
  static constexpr auto kernel = Kernel;
  static constexpr auto kernel_apart = KernelApart;
  static constexpr int smem_bytes = SmemBytes;

  /// The clusters resident at once (the fewer of the two; the query also
  /// gives each instance its shared-memory opt-in).
  static int resident(int device, const char* what) {
    const int common = resident_clusters<kernel>(device, wgmma::threads, smem_bytes, Cluster, what);
    const int apart = resident_clusters<kernel_apart>(device, wgmma::threads, smem_bytes, Cluster, what);
    return common < apart ? common : apart;
  }

  /// Enqueues both instances, persistent over `items` work items (cluster
  /// tiles x k-slices): no more clusters than the `resident` the device holds.
  template <class... Args>
  static void launch(std::size_t items, int resident, cudaStream_t stream, const char* what, const Args&... args) {
    const std::size_t held = resident > 0 ? static_cast<std::size_t>(resident) : 1;
    const std::size_t clusters = items < held ? items : held;
    cudaLaunchAttribute cluster_dims{};
    const cudaLaunchConfig_t config =
        cluster_launch_config(dim3(static_cast<unsigned>(clusters * Cluster)), dim3(wgmma::threads), smem_bytes, stream,
                              Cluster, cluster_dims);
    cuda_check(cudaLaunchKernelEx(&config, kernel, args...), what);
    cuda_check(cudaLaunchKernelEx(&config, kernel_apart, args...), what);
  }
};

}  // namespace kf::detail
