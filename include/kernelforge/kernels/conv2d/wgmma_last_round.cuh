// SPDX-License-Identifier: Apache-2.0
// The last round of conv2d step 9's persistent grid, split over the CTAs that
// would wait (09_implicit_gemm_wgmma_fp32_emulated.cuh; when and how far:
// plan_conv2d_wgmma_last_round, wgmma_plan.hpp; the machinery, shared with the
// FP8 matrix product: common/last_round.hpp and common/last_round_sum.cuh).
// The grid's units are the whole tiles, then the last round's tiles' parts;
// step 7's producer and step 9's consumers walk units as they walked tiles.
#pragma once

#include "../arch/guards.cuh"
#include "../common/last_round.hpp"
#include "../common/last_round_sum.cuh"
#include "wgmma_config.cuh"
#include "wgmma_plan.hpp"

namespace kf::detail::conv2d_wgmma {

using work_unit = last_round_unit;

/// The grid's units: the whole tiles, then the split tiles' parts.
template <class T>
__device__ __forceinline__ int units(const params<T>& prm) {
  return prm.split_parts == 1 ? prm.tiles : prm.split_from + (prm.tiles - prm.split_from) * prm.split_parts;
}

/// Unit u (last_round_unit_of).
template <class T>
__device__ __forceinline__ work_unit unit_of(const params<T>& prm, int u) {
  return last_round_unit_of(u, prm.split_from, prm.split_parts, prm.split_steps, prm.k_steps);
}

template <class T>
__device__ __forceinline__ bool is_split(const params<T>& prm, const work_unit& unit) {
  return prm.split_parts > 1 && unit.tile >= prm.split_from;
}

#if KF_ARCH_SM90A
/// A split unit's end, for one consumer warpgroup (sum_split_tile, common/last_round_sum.cuh):
/// true where this part arrived last and `total` now holds the tile's sums to store.
template <int N, class T>
__device__ __forceinline__ bool sum_split_tile(const params<T>& prm, const work_unit& unit, int consumer, int thread,
                                               float (&total)[N]) {
  return kf::detail::sum_split_tile(prm, unit.tile - prm.split_from, unit.part, consumer, consumer_warpgroups,
                                    split_barrier + consumer, thread, total);
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::conv2d_wgmma
