// SPDX-License-Identifier: Apache-2.0
// What the wgmma filter gradients (gradient steps 3 and 4: 03_wgrad_wgmma.cuh,
// 04_wgrad_wgmma_tf32.cuh) share besides their operands: the layer and plan
// as the kernels read them (geometry, filled on the host from
// wgrad_wgmma_plan.hpp's plan), a CTA's start (its shared memory, ring and
// zeroed tail), its tile and slice, a patch's origin, and the two consumers'
// sums added through shared memory.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "../../../arch/guards.cuh"
#include "../../../arch/mbarrier_sm90.cuh"
#include "../../../arch/pipeline_sm90.cuh"
#include "../../../arch/smem.cuh"
#include "../../../arch/tma_sm90.cuh"
#include "../../../arch/warpgroup_sm90.cuh"
#include "../../../matmul/wgmma/config.cuh"  // swizzle_atom_bytes
#include "../../args.cuh"
#include "../wgrad_wgmma_plan.hpp"

namespace kf::detail::conv2d_wgrad {

/// The layer and the plan as both kernels read them (their params derive from it).
struct geometry {
  int k = 0, c = 0, rsc = 0;  ///< K, C, R S C
  int s = 1;                  ///< filter width (taps along w)
  int pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1, stride_h = 1, stride_w = 1;
  int wt = 1, ht = 1, nt = 1;  ///< the patch: columns, rows, images
  int patches_q = 0, patches_p = 0, patches = 0;
  int tiles_k = 0, tiles_c = 0;
  int patches_per_split = 0;
  bool zero_tail = false;  ///< the patch has fewer than the step's pixels: x rows past it are zeroed once
};

/// The grid's y extent (the slices) at most.
inline constexpr std::size_t max_grid_y = 65535;

/// `g` from the layer `a` and its plan; false where a count overflows its ints or the grid.
template <class T>
bool geometry_of(const conv2d_args<T>& a, const conv2d_wgrad_wgmma_plan& plan, geometry& g) {
  using z = std::size_t;
  const z k_rsc = static_cast<z>(a.k) * static_cast<z>(a.crs);
  if (k_rsc > static_cast<z>(INT_MAX) || plan.patches() > static_cast<z>(INT_MAX) - plan.patches_per_split ||
      plan.tiles() > static_cast<z>(INT_MAX) || plan.split > max_grid_y || plan.split == 0) {
    return false;
  }
  g.k = a.k;
  g.c = a.c;
  g.rsc = a.crs;
  g.s = a.s;
  g.pad_h = a.pad_h;
  g.pad_w = a.pad_w;
  g.dilation_h = a.dilation_h;
  g.dilation_w = a.dilation_w;
  g.stride_h = a.stride_h;
  g.stride_w = a.stride_w;
  g.wt = static_cast<int>(plan.wt);
  g.ht = static_cast<int>(plan.ht);
  g.nt = static_cast<int>(plan.nt);
  g.patches_q = static_cast<int>(plan.patches_q);
  g.patches_p = static_cast<int>(plan.patches_p);
  g.patches = static_cast<int>(plan.patches());
  g.tiles_k = static_cast<int>(plan.tiles_k);
  g.tiles_c = static_cast<int>(plan.tiles_c);
  g.patches_per_split = static_cast<int>(plan.patches_per_split);
  g.zero_tail = plan.patch_pixels() < plan.step_pixels;
  return true;
}

#if KF_ARCH_SM90A
/// A CTA's output tile and slice: blockIdx.x the tile (k tile fastest, then c
/// tile, then tap r S + s -- filter-column tiles, Rows > 1: then the filter
/// column s, the taps (0..Rows-1, s)), blockIdx.y the slice (patches [first, end)).
/// KTile: output channels a tile; CTile: input channels a tile (of each tap).
struct cta_tile {
  int k0, c0, tap, r, s, first, end;

  template <int KTile, int CTile, int Rows>
  __device__ __forceinline__ static cta_tile of(const geometry& g) {
    cta_tile w;
    int t = static_cast<int>(blockIdx.x);
    w.k0 = (t % g.tiles_k) * KTile;
    t /= g.tiles_k;
    w.c0 = (t % g.tiles_c) * CTile;
    w.tap = Rows == 1 ? t / g.tiles_c : 0;  // one-tap tiles: the tap
    w.r = w.tap / g.s;                      // filter-column tiles: rows 0 .. Rows - 1
    w.s = Rows == 1 ? w.tap - w.r * g.s : t / g.tiles_c;
    w.first = static_cast<int>(blockIdx.y) * g.patches_per_split;
    w.end = min(w.first + g.patches_per_split, g.patches);
    return w;
  }
};

/// Patch `index`'s origin (n0, p0, q0): q fastest, then p, then n (wgrad_wgmma_plan.hpp).
struct patch_origin {
  int q0, p0, n0;
  __device__ __forceinline__ patch_origin(const geometry& g, int index) {
    q0 = (index % g.patches_q) * g.wt;
    index /= g.patches_q;
    p0 = (index % g.patches_p) * g.ht;
    n0 = (index / g.patches_p) * g.nt;
  }
};

/// Zeroes `bytes` (a multiple of 16) of shared memory at p with the CTA's
/// `threads` threads, ordered before TMA's writes: TMA writes a box's first
/// patch-pixels rows only, so the rows past them stay zero for the whole
/// kernel and add 0 (never stale bits). The caller's __syncthreads follows.
__device__ __forceinline__ void zero_ring(unsigned char* p, int bytes, int threads) {
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int i = static_cast<int>(threadIdx.x); i < bytes / 16; i += threads) reinterpret_cast<uint4*>(p)[i] = zero;
  fence_proxy_async_shared();  // the zeros before TMA's writes and wgmma's reads (the async proxy)
}

/// A CTA's start, the same in both kernels: the stages from the first
/// swizzle-atom boundary of the dynamic shared memory (`smem`), the ring's
/// barriers after its Stages stages of StageBytes; the rows past a short patch
/// zeroed (zero_ring, where zero_tail); thread 0 prefetches both tensor maps
/// and initialises the ring (each stage read by `readers` warps: the 4 of one
/// consumer, or of both where both read every stage);
/// then the whole CTA (Threads threads) synchronises.
template <int Stages, int StageBytes, int Threads>
struct cta_start {
  std::uint32_t base;     ///< stage 0's shared-memory address
  unsigned char* stages;  ///< the same, as a pointer (the consumers' sums reuse it)
  stage_ring<Stages> ring;

  __device__ __forceinline__ cta_start(unsigned char* smem, bool zero_tail, const CUtensorMap* map0,
                                       const CUtensorMap* map1, unsigned readers = warps_per_warpgroup)
      : base((smem_address(smem) + wgmma::swizzle_atom_bytes - 1) & ~std::uint32_t(wgmma::swizzle_atom_bytes - 1)),
        stages(smem + (base - smem_address(smem))),
        ring(base + Stages * StageBytes) {
    if (zero_tail) zero_ring(stages, Stages * StageBytes, Threads);
    if (threadIdx.x == 0) {  // the producer thread
      tma_prefetch_descriptor(map0);
      tma_prefetch_descriptor(map1);
      ring.init(readers);
      mbar_init_fence();
    }
    __syncthreads();
  }
};

/// The two consumer warpgroups' sums (each summed alternate steps of the same
/// tile) into consumer 0's d: consumer 1's go through `other` (the ring, idle
/// once both have finished: every stage the producer filled has been read),
/// between the consumers' named barrier `barrier`. Returns true in consumer 0,
/// which then holds the tile's sums.
template <int Blocks, int Acc>
__device__ __forceinline__ bool add_consumer_sums(float (&d)[Blocks][Acc], float* other, int consumer,
                                                  int tid_in_warpgroup, int barrier) {
  constexpr int both = 2 * warpgroup_threads;
  named_barrier_sync(barrier, both);
  if (consumer == 1) {
#pragma unroll
    for (int mb = 0; mb < Blocks; ++mb) {
#pragma unroll
      for (int i = 0; i < Acc; ++i) other[(mb * Acc + i) * warpgroup_threads + tid_in_warpgroup] = d[mb][i];
    }
  }
  named_barrier_sync(barrier, both);
  if (consumer == 1) return false;
#pragma unroll
  for (int mb = 0; mb < Blocks; ++mb) {
#pragma unroll
    for (int i = 0; i < Acc; ++i) d[mb][i] += other[(mb * Acc + i) * warpgroup_threads + tid_in_warpgroup];
  }
  return true;
}
#endif  // KF_ARCH_SM90A

}  // namespace kf::detail::conv2d_wgrad
