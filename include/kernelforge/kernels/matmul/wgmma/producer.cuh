// SPDX-License-Identifier: Apache-2.0
// The producer role of the Hopper GEMMs (14_wgmma.cuh, scaled/03_wgmma.cuh):
// one thread of warpgroup 0 walks the same work items as the consumers and,
// for each k-step, waits for a free stage of the ring, arms its full barrier
// with the stage's bytes and issues the TMA copies (mainloop::load_stage, or
// the skinny fp32-emulation step's own: produce_stages takes the copies). The
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
/// Tile: the kernel's tile_config; Schedule: its tile_scheduler. load(a_stage,
/// b_stage, full, w, kt) issues the copies of k-step kt of work item w into a
/// stage's A and B tiles, completing `full` (armed with Tile::stage_bytes).
template <class Tile, class Schedule, class Load>
__device__ __forceinline__ void produce_stages(const Schedule& schedule, const stage_ring<Tile::stages>& ring,
                                               const smem_layout<Tile>& smem, Load&& load) {
  ring_position<Tile::stages> at;  // runs on across tiles
  const int items = schedule.items();
  for (int item = schedule.first(); item < items; item += schedule.stride()) {
    const work_item w = schedule(item);
    for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
      const std::uint32_t full = ring.producer_acquire(at, Tile::stage_bytes);
      load(smem.a + at.stage * a_tile_bytes, smem.b + at.stage * Tile::b_tile_bytes, full, w, kt);
      at.advance();
    }
  }
}

/// Loop: the kernel's mainloop (its load_stage); Tile: its tile_config; Schedule: its tile_scheduler.
template <class Loop, class Tile, class Schedule>
__device__ __forceinline__ void produce(const Schedule& schedule, const stage_ring<Tile::stages>& ring,
                                        const smem_layout<Tile>& smem, const CUtensorMap* map_a,
                                        const CUtensorMap* map_b, std::uint32_t rank) {
  produce_stages<Tile>(
      schedule, ring, smem,
      [&](std::uint32_t a_stage, std::uint32_t b_stage, std::uint32_t full, const work_item& w, int kt) {
        Loop::load_stage(map_a, map_b, a_stage, b_stage, full, w.tile_m, w.tile_n, kt, rank);
      });
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::wgmma
