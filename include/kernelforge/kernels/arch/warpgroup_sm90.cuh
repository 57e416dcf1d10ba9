// SPDX-License-Identifier: Apache-2.0
// Warpgroups (sm_90a): the four warps that issue one wgmma together, and what a
// warp-specialized kernel does with them -- its warpgroup index (kept
// warp-uniform), register hand-off between roles (setmaxnreg: producers give
// registers back, consumers take them) and barriers over one warpgroup's
// threads (bar.sync with a count), so one role can synchronize without the others.
#pragma once

#include <cstdint>

#include "guards.cuh"

namespace kf::detail {

inline constexpr int warpgroup_threads = 128;
inline constexpr int warps_per_warpgroup = 4;

#if KF_ARCH_SM90A
/// threadIdx.x / 128, broadcast from lane 0 so that the compiler knows it is
/// warp-uniform and keeps what derives from it (wgmma descriptors) in uniform
/// registers, where wgmma reads them, instead of moving them there per product.
__device__ __forceinline__ int warpgroup_index() {
  return __shfl_sync(0xFFFFFFFFu, static_cast<int>(threadIdx.x / warpgroup_threads), 0);
}

template <int Registers>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
}

template <int Registers>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
}

/// Barrier `id` (1-15; 0 is __syncthreads) over `threads` threads (a multiple of 32).
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail
