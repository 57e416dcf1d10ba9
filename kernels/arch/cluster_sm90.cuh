// SPDX-License-Identifier: Apache-2.0
// Thread-block clusters and register reallocation (sm_90a): a CTA's rank in its
// cluster, the cluster-wide barrier, and setmaxnreg for warp-specialized kernels
// (producers give registers back, consumers take them).
#pragma once

#include <cstdint>

#include "guards.cuh"

namespace kf::detail {

#if KF_ARCH_SM90A
__device__ __forceinline__ std::uint32_t cluster_rank() {
  std::uint32_t r = 0;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
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
