// SPDX-License-Identifier: Apache-2.0
// The producer role of the Hopper GEMMs (14_wgmma.cuh, scaled/03_wgmma.cuh):
// one thread of warpgroup 0 walks the same work items as the consumers and,
// for each k-step, waits for a free stage of the ring, arms its full barrier
// with the stage's bytes and issues the TMA copies (mainloop::load_stage). The
// ring position runs on across tiles, so the next tile's stages load while
// the consumers finish the previous one.
#pragma once

#include <cstdint>

#include <cuda.h>  // CUtensorMap (a type only)

#include "../../arch/guards.cuh"
#include "../../arch/pipeline_sm90.cuh"
#include "config.cuh"
#include "scheduler.cuh"

namespace kf::detail::wgmma {

#if KF_ARCH_SM90A
/// Loop: the kernel's mainloop (its load_stage); Tile: its tile_config; Schedule: its tile_scheduler.
template <class Loop, class Tile, class Schedule>
__device__ __forceinline__ void produce(const Schedule& schedule, const stage_ring<Tile::stages>& ring,
                                        const smem_layout<Tile>& smem, const CUtensorMap* map_a,
                                        const CUtensorMap* map_b, std::uint32_t rank) {
  ring_position<Tile::stages> at;  // runs on across tiles
  const int items = schedule.items();
  for (int item = schedule.first(); item < items; item += schedule.stride()) {
    const work_item w = schedule(item);
    for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
      const std::uint32_t full = ring.producer_acquire(at, Tile::stage_bytes);
      Loop::load_stage(map_a, map_b, smem.a + at.stage * a_tile_bytes, smem.b + at.stage * Tile::b_tile_bytes, full,
                       w.tile_m, w.tile_n, kt, rank);
      at.advance();
    }
  }
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::wgmma
