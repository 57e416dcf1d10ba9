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

/// named_barrier_sync that also returns whether any of the `threads` threads passed `vote` true.
/// The result is the same in every thread; it is broadcast from lane 0 so that the compiler
/// knows it is warp-uniform: a branch on an asm result it cannot prove uniform looks divergent,
/// and a wgmma k-loop after it moves its descriptor arithmetic out of the uniform datapath
/// (conv2d step 9: 244 -> 273 SASS instructions a k-block at BN 64; every row 6-16% slower).
__device__ __forceinline__ bool named_barrier_or(int id, int threads, bool vote) {
  unsigned any;
  asm volatile(
      "{\n"
      "  .reg .pred v, a;\n"
      "  setp.ne.u32 v, %1, 0;\n"
      "  bar.red.or.pred a, %2, %3, v;\n"
      "  selp.u32 %0, 1, 0, a;\n"
      "}\n"
      : "=r"(any)
      : "r"(static_cast<unsigned>(vote)), "r"(id), "r"(threads)
      : "memory");
  return __shfl_sync(0xFFFFFFFFu, any, 0) != 0;
}

/// Arrives at barrier `id` (of `threads` threads) without waiting for it.
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

/// Two warpgroups taking turns (named barriers `first` and `first` + 1, each of
/// both warpgroups' 256 threads): take() waits until the other warpgroup has
/// passed, pass() hands it the turn without waiting. Between start() and
/// finish() each warpgroup calls take() and pass() in pairs, as often as the
/// other: start() has warpgroup 1 pass once, so that warpgroup 0 goes first,
/// and finish() has warpgroup 0 take warpgroup 1's last pass, so that every
/// barrier completes. The barrier ids are broadcast from lane 0: an id the
/// compiler cannot prove warp-uniform makes the code after each barrier look
/// divergent, and a wgmma k-loop around it then moves its descriptor arithmetic
/// out of the uniform datapath (conv2d step 9: 244 -> 278 SASS instructions a
/// k-block at BN 64).
struct warpgroup_turns {
  int mine, theirs;
  bool goes_first;  ///< warpgroup 0
  __device__ __forceinline__ warpgroup_turns(int first, int which)
      : mine(__shfl_sync(0xFFFFFFFFu, first + which, 0)),
        theirs(__shfl_sync(0xFFFFFFFFu, first + 1 - which, 0)),
        goes_first(which == 0) {}
  __device__ __forceinline__ void take() const { named_barrier_sync(mine, 2 * warpgroup_threads); }
  __device__ __forceinline__ void pass() const { named_barrier_arrive(theirs, 2 * warpgroup_threads); }
  __device__ __forceinline__ void start() const {
    if (!goes_first) pass();
  }
  __device__ __forceinline__ void finish() const {
    if (goes_first) take();
  }
};
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail
