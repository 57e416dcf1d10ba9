// SPDX-License-Identifier: Apache-2.0
// The driver's TMA descriptor encoder (cuTensorMapEncodeTiled), reached through
// the runtime's driver entry point so the library needs no libcuda link. Host
// code; used by the Hopper launchers (matmul's wgmma_launch.cuh, conv2d's
// wgmma_conv2d.cu), which build CUtensorMaps for their TMA copies.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

namespace kf::detail {

/// cuTensorMapEncodeTiled through the runtime's driver entry point (no libcuda
/// link), looked up once; nullptr where the driver lacks it.
inline PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    constexpr unsigned driver_api_version = 12000;  // the cuTensorMapEncodeTiled ABI introduced in CUDA 12.0
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, driver_api_version, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      entry = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(entry);
  }();
  return fn;
}

}  // namespace kf::detail
