// SPDX-License-Identifier: Apache-2.0
// Tensor-memory-accelerator copies (cp.async.bulk.tensor, sm_90a): one thread
// moves a whole 2D box of a global matrix, described by a CUtensorMap, into
// shared memory, and the bytes are counted on an mbarrier (2-D boxes for the
// matrix products, 3-D boxes for filter2d's image planes, 4-D boxes for the
// convolution's NHWC input). The multicast form writes the same box into
// several CTAs of a cluster. The store form moves a box from shared memory to
// global memory, tracked by bulk groups.
#pragma once

#include <cstdint>

#include <cuda.h>

#include "guards.cuh"

namespace kf::detail {

#if KF_ARCH_SM90A
/// Starts fetching `map` (a __grid_constant__ kernel parameter) into the TMA
/// unit's descriptor cache, so the first copy that names it does not wait for
/// the fetch; issue it once per CTA, early, from the thread that will copy.
__device__ __forceinline__ void tma_prefetch_descriptor(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}

/// Box (x = k, y = row) of `map` -> shared offset `dst`; completion counted on `bar`.
__device__ __forceinline__ void tma_load_2d(std::uint32_t dst, const CUtensorMap* map, int x, int y,
                                            std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(bar)
      : "memory");
}

/// The innermost coordinate times the element size must be a multiple of 16
/// bytes (tile mode, every rank): on the H200 a float box at x = -1, -2 or 127
/// traps (illegal instruction) where x = -4, 0 or 4 runs. Negative and
/// past-the-end coordinates are fine otherwise; the outer ones need no alignment.
/// Box (x = innermost, y, z = outermost) of a 3-D `map` -> shared offset `dst`;
/// what lies outside the tensor is zero-filled (filter2d's zero border, per
/// channel z). Completion counted on `bar`.
__device__ __forceinline__ void tma_load_3d(std::uint32_t dst, const CUtensorMap* map, int x, int y, int z,
                                            std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(z), "r"(bar)
      : "memory");
}

/// Box (x = innermost, ..., w = outermost) of a 4-D `map` -> shared offset `dst`;
/// coordinates may be negative or past the extents: TMA zero-fills what lies
/// outside the tensor (a convolution's padding). Completion counted on `bar`.
__device__ __forceinline__ void tma_load_4d(std::uint32_t dst, const CUtensorMap* map, int x, int y, int z, int w,
                                            std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(bar)
      : "memory");
}

/// The box lands at offset `dst` (and signals `bar`) in every CTA of `cta_mask`.
__device__ __forceinline__ void tma_load_2d_multicast(std::uint32_t dst, const CUtensorMap* map, int x, int y,
                                                      std::uint32_t bar, std::uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(bar), "h"(cta_mask)
      : "memory");
}

/// Box (x = column, y = row) of `map` <- shared offset `src` (the smem tile in
/// the map's swizzle), as one bulk asynchronous copy; the engine skips elements
/// outside the matrix. Completion is tracked per thread by bulk groups: commit
/// with tma_store_commit(), then tma_store_wait_read<N>() before `src` is
/// rewritten. Each thread that wrote `src` runs fence_proxy_async_shared()
/// first, and a barrier orders those writes before the copy.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, std::uint32_t src, int x, int y) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(map), "r"(x),
               "r"(y), "r"(src)
               : "memory");
}

__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

/// Waits until at most `Pending` of this thread's committed stores still read shared memory.
template <int Pending>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(Pending) : "memory");
}

/// Makes this thread's generic-proxy shared-memory writes visible to the async proxy (TMA).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail
