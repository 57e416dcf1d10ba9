// SPDX-License-Identifier: Apache-2.0
// The launch of a split filter-gradient kernel whose CTAs may sum their own
// slabs (gradient steps 3 and 9: slab_sum.cuh), one home for both: the grid
// (tiles x slices), the arrival counters zeroed and the cooperative launch
// where every CTA of the grid is resident at once, else a plain launch that
// leaves the slabs to the caller. Host code for the sm_90a launch units
// (src/conv2d/backward_sm90a.cu, backward_pointwise_sm90a.cu).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

#include "../../../runtime/kernel_attributes.hpp"
#include "../../../runtime/launcher.hpp"
#include "../wgrad_wgmma_plan.hpp"
#include "../wgrad_wgmma_sm90a.hpp"  // wgrad_launched

namespace kf::detail::conv2d_wgrad {

/// Enqueues Kernel(maps..., prm) over (plan.tiles(), plan.split) CTAs of
/// `threads` threads and `smem` bytes. Where `sums_in_kernel` (the plan splits
/// and its step gains by summing on chip), `arrivals` (a counter a tile) is
/// given and the grid fits the CTAs the device holds at once, the counters are
/// zeroed and the launch is cooperative with prm.arrivals set: the tile's slices
/// wait for each other and sum their slabs into dw. Else (or where the driver
/// refuses the cooperative launch: fewer SMs than the device has, under MPS or
/// green contexts) prm.arrivals stays null and a split plan's slabs are left in
/// prm.partial. Returns what it left: wgrad_launched::dw or ::slabs.
template <auto Kernel, class Params, class... Maps>
wgrad_launched launch_summing_slabs(int device, int threads, int smem, Params prm, unsigned* arrivals,
                                    bool sums_in_kernel, const conv2d_wgrad_wgmma_plan& plan, cudaStream_t stream,
                                    const char* what, const Maps&... maps) {
  // Sets the kernel's shared-memory opt-in (once per device); also the CTAs the device holds at once.
  const int resident = resident_clusters<Kernel>(device, threads, static_cast<std::size_t>(smem), 1, what);
  const dim3 grid(static_cast<unsigned>(plan.tiles()), static_cast<unsigned>(plan.split));
  if (arrivals != nullptr && sums_in_kernel && plan.tiles() * plan.split <= static_cast<std::size_t>(resident)) {
    cuda_check(cudaMemsetAsync(arrivals, 0, plan.tiles() * sizeof(unsigned), stream), what);
    prm.arrivals = arrivals;
    cudaLaunchAttribute cooperative{};
    const cudaLaunchConfig_t config = cooperative_launch_config(grid, dim3(static_cast<unsigned>(threads)),
                                                                static_cast<std::size_t>(smem), stream, cooperative);
    const cudaError_t launched = cudaLaunchKernelEx(&config, Kernel, maps..., prm);
    if (launched == cudaSuccess) return wgrad_launched::dw;
    if (launched != cudaErrorCooperativeLaunchTooLarge) cuda_check(launched, what);
    (void)cudaGetLastError();
    prm.arrivals = nullptr;
  }
  Kernel<<<grid, threads, smem, stream>>>(maps..., prm);
  check_launch(what);
  return plan.split > 1 ? wgrad_launched::slabs : wgrad_launched::dw;
}

}  // namespace kf::detail::conv2d_wgrad
