// SPDX-License-Identifier: Apache-2.0
// Asynchronous global -> shared copies (cp.async, sm_80+), with a plain-load
// fallback below sm_80 so one pipelined kernel compiles for every architecture.
// cp.async moves data without passing through registers and lets a thread issue
// the copies for a future k-slice and go on computing; commit/wait group the
// copies per slice. Below sm_80 the "copy" is an ordinary load and store,
// complete when the call returns, and commit/wait are no-ops: a pipeline is then
// a plain multi-buffered loop, still correct.
//
// src_bytes < the copy size zero-fills the rest of the destination (tile edges);
// src_bytes == 0 reads nothing (src must still be a valid address). Sizes are
// whole 4-byte words (floats): src_bytes in {0, 4, 8, 12, 16}.
#pragma once

#include "guards.cuh"
#include "smem.cuh"

namespace kf::detail {

/// Copies 16 bytes: dst and src 16-byte aligned.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
#if KF_ARCH_SM80
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src), "r"(src_bytes)
               : "memory");
#else
  const float* s = static_cast<const float*>(src);
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (src_bytes == 16) {
    v = *reinterpret_cast<const float4*>(s);
  } else {
    if (src_bytes > 0) v.x = s[0];
    if (src_bytes > 4) v.y = s[1];
    if (src_bytes > 8) v.z = s[2];
  }
  *static_cast<float4*>(dst) = v;
#endif
}

/// Copies 4 bytes; src_bytes in {0, 4}.
__device__ __forceinline__ void cp_async_4(void* dst, const void* src, int src_bytes) {
#if KF_ARCH_SM80
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(dst)), "l"(src), "r"(src_bytes)
               : "memory");
#else
  *static_cast<float*>(dst) = src_bytes > 0 ? *static_cast<const float*>(src) : 0.f;
#endif
}

/// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() {
#if KF_ARCH_SM80
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most `Pending` committed groups of this thread are still in
/// flight. Other threads' copies become visible after a following __syncthreads.
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
#if KF_ARCH_SM80
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

}  // namespace kf::detail
