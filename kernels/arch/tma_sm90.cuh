// SPDX-License-Identifier: Apache-2.0
// Tensor-memory-accelerator copies (cp.async.bulk.tensor, sm_90a): one thread
// moves a whole 2D box of a global matrix, described by a CUtensorMap, into
// shared memory, and the bytes are counted on an mbarrier (2-D boxes for the
// matrix products, 4-D boxes for the convolution's NHWC input). The multicast form
// writes the same box into several CTAs of a cluster.
#pragma once

#include <cstdint>

#include <cuda.h>

#include "guards.cuh"

namespace kf::detail {

#if KF_ARCH_SM90A
/// Box (x = k, y = row) of `map` -> shared offset `dst`; completion counted on `bar`.
__device__ __forceinline__ void tma_load_2d(std::uint32_t dst, const CUtensorMap* map, int x, int y,
                                            std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(bar)
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
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail
