// SPDX-License-Identifier: Apache-2.0
// Plan and launch the one elementwise kernel (02_vectorized.cuh): shared by the
// family's launcher (elementwise.cu: kf::saxpy, ...) and kf::transform
// (include/kernelforge/transform.cuh). The callers validate first; these
// functions pick the kernel's setting from the pointers, plan its grid from the
// device facts and kernel profile the runtime caches per device, enqueue it and
// check the launch. Per call: one cudaGetDevice, two cache look-ups, no other
// device query.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "../runtime/launcher.hpp"
#include "02_vectorized.cuh"
#include "tuning.hpp"

namespace kf::detail {

/// Element offset of `p` within its W-element alignment unit (W * sizeof(T) bytes).
template <int W, class T>
std::size_t element_phase(const T* p) {
  return misalignment(p, W * sizeof(T)) / sizeof(T);
}

/// Step 1 (naive): one element per thread, grid = ceil(n / block). n > 0.
template <class Op, class Out, class... In>
void launch_elementwise_naive(const char* what, std::size_t n, int block_size, cudaStream_t stream, Op op, Out* out,
                              const In*... in) {
  const int device = current_device(what);
  const device_limits& limits = limits_for(device);
  constexpr auto kernel = &elementwise_kernel<1, 1, Op, Out, In...>;
  const kernel_profile& profile = profile_of<kernel>(device, what);
  const launch_plan plan = plan_one_per_thread(limits, resolve_block_size(profile, block_size, what), n);
  kernel<<<plan.grid, plan.block, 0, stream>>>(n, 0, op, out, in...);
  check_launch(what);
}

/// Step 2 (vectorized), what `best` runs: W-element chunks with a scalar head
/// when every pointer sits at the same element offset from its W-element
/// alignment, one-element chunks otherwise. n > 0.
template <class Op, class Out, class... In>
void launch_elementwise_vectorized(const char* what, std::size_t n, int block_size, cudaStream_t stream, Op op,
                                   Out* out, const In*... in) {
  const int device = current_device(what);
  const device_limits& limits = limits_for(device);
  constexpr int W = vector_width<Out, In...>();
  if constexpr (W > 1) {
    const std::size_t phase = element_phase<W>(out);
    if (((element_phase<W>(in) == phase) && ...)) {
      constexpr int U = elementwise_tuning::aligned_chunks_per_thread;
      constexpr auto kernel = &elementwise_kernel<W, U, Op, Out, In...>;
      const kernel_profile& profile = profile_of<kernel>(device, what);
      const int block = resolve_block_size(profile, block_size, what);
      const std::size_t peel = (W - phase) % W;
      const std::size_t head = peel < n ? peel : n;
      const launch_plan plan = plan_grid_stride(limits, block, profile.occupancy[block / 32 - 1], (n - head) / W,
                                                std::size_t(block) * U, elementwise_tuning::max_waves);
      kernel<<<plan.grid, plan.block, 0, stream>>>(n, head, op, out, in...);
      check_launch(what);
      return;
    }
  }
  constexpr int U = elementwise_tuning::scalar_chunks_per_thread;
  static_assert(U > 1, "W = U = 1 is step 1's setting, which needs one thread per element: not a grid-stride plan");
  constexpr auto kernel = &elementwise_kernel<1, U, Op, Out, In...>;
  const kernel_profile& profile = profile_of<kernel>(device, what);
  const int block = resolve_block_size(profile, block_size, what);
  const launch_plan plan = plan_grid_stride(limits, block, profile.occupancy[block / 32 - 1], n, std::size_t(block) * U,
                                            elementwise_tuning::max_waves);
  kernel<<<plan.grid, plan.block, 0, stream>>>(n, 0, op, out, in...);
  check_launch(what);
}

}  // namespace kf::detail
