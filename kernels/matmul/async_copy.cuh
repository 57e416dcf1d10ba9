// Asynchronous global -> shared copies (cp.async, sm_80+) with a plain-load
// fallback for older GPUs, so one pipelined kernel compiles for every
// architecture. cp.async moves data without passing through registers and
// lets a thread issue the copies for a future k-slice and go on computing;
// commit/wait group the copies per slice. Below sm_80 the "copy" is an
// ordinary load and store, complete when the call returns, and commit/wait are
// no-ops: the pipeline is then a plain multi-buffered loop, still correct.
//
// src_bytes < the copy size zero-fills the rest of the destination (edges of
// the matrix); src_bytes == 0 reads nothing (src must still be a valid address).
#pragma once

namespace kf::detail {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define KF_CP_ASYNC 1
#else
#define KF_CP_ASYNC 0
#endif

/// Copies 16 bytes (4 floats): dst and src 16-byte aligned; src_bytes in {0, 4, 8, 12, 16}.
__device__ __forceinline__ void copy_async_16(float* dst, const float* src, int src_bytes) {
#if KF_CP_ASYNC
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes) : "memory");
#else
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (src_bytes == 16) {
    v = *reinterpret_cast<const float4*>(src);
  } else {
    if (src_bytes > 0) v.x = src[0];
    if (src_bytes > 4) v.y = src[1];
    if (src_bytes > 8) v.z = src[2];
  }
  *reinterpret_cast<float4*>(dst) = v;
#endif
}

/// Copies 4 bytes (1 float); src_bytes in {0, 4}.
__device__ __forceinline__ void copy_async_4(float* dst, const float* src, int src_bytes) {
#if KF_CP_ASYNC
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(src_bytes) : "memory");
#else
  *dst = src_bytes > 0 ? *src : 0.f;
#endif
}

/// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void copy_async_commit() {
#if KF_CP_ASYNC
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

/// Waits until at most `Pending` committed groups of this thread are still in
/// flight. Other threads' copies become visible after a following __syncthreads.
template <int Pending>
__device__ __forceinline__ void copy_async_wait() {
#if KF_CP_ASYNC
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
#endif
}

#undef KF_CP_ASYNC

}  // namespace kf::detail
