// SPDX-License-Identifier: Apache-2.0
// Gradient step 9, host side -- the TF32 pointwise filter gradient's launch
// (kernel: 09_wgrad_mma_tf32_pointwise.cuh; interface: wgrad_pointwise_sm90a.hpp):
// the tensor maps, the parameters, the grid (tiles x slices) and the
// cooperative launch whose CTAs sum their slabs.
//
// Built for sm_90a only (src/conv2d/sources.cmake); it instantiates only the
// step-9 kernel, which nothing else instantiates.
#include "kernelforge/kernels/conv2d/backward/wgrad_pointwise_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include <cstddef>
#include <cstdint>

#include <cuda.h>

#include "kernelforge/kernels/conv2d/backward/09_wgrad_mma_tf32_pointwise.cuh"
#include "kernelforge/kernels/runtime/kernel_attributes.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/kernels/runtime/tensor_map.hpp"

namespace kf::detail {

namespace {

constexpr const char* what = "kf::conv2d_backward_filter (TF32 pointwise, mma.sync)";

/// Enqueues the kernel; a split plan's slabs summed in the kernel where
/// `arrivals` is given and every CTA of the grid is resident at once (a
/// cooperative launch), else left in prm.partial. Returns what it left.
template <bool Masked>
wgrad_launched launch_kernel(int device, const CUtensorMap& map_dy, const CUtensorMap& map_x, const CUtensorMap& map_y,
                             conv2d_wgrad_pointwise::params prm, unsigned* arrivals,
                             const conv2d_wgrad_wgmma_plan& plan, cudaStream_t stream) {
  constexpr auto kernel = &conv2d_wgrad_pointwise_kernel<Masked>;
  constexpr int threads = conv2d_wgrad_pointwise::threads;
  constexpr int smem = conv2d_wgrad_pointwise::shape<Masked>::smem_bytes;
  // Sets the kernel's shared-memory opt-in (once per device); also the CTAs the device holds at once.
  const int resident = resident_clusters<kernel>(device, threads, smem, 1, what);
  const dim3 grid(static_cast<unsigned>(plan.tiles()), static_cast<unsigned>(plan.split));
  if (arrivals != nullptr && plan.split > 1 && plan.tiles() * plan.split <= static_cast<std::size_t>(resident)) {
    cuda_check(cudaMemsetAsync(arrivals, 0, plan.tiles() * sizeof(unsigned), stream), what);
    prm.arrivals = arrivals;
    cudaLaunchAttribute cooperative{};
    const cudaLaunchConfig_t config = cooperative_launch_config(grid, dim3(threads), smem, stream, cooperative);
    const cudaError_t launched = cudaLaunchKernelEx(&config, kernel, map_dy, map_x, map_y, prm);
    if (launched == cudaSuccess) return wgrad_launched::dw;
    // Fewer SMs than the device has (MPS, green contexts): the slabs go to the reduction kernel.
    if (launched != cudaErrorCooperativeLaunchTooLarge) cuda_check(launched, what);
    (void)cudaGetLastError();
    prm.arrivals = nullptr;
  }
  kernel<<<grid, threads, smem, stream>>>(map_dy, map_x, map_y, prm);
  check_launch(what);
  return plan.split > 1 ? wgrad_launched::slabs : wgrad_launched::dw;
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

wgrad_launched conv2d_wgrad_pointwise_try_launch(int device, const conv2d_args<float>& a, const float* dy,
                                                 const float* relu_y, float threshold, float* dw, float* partial,
                                                 unsigned* arrivals, const conv2d_wgrad_wgmma_plan& plan,
                                                 cudaStream_t stream) {
  using z = std::size_t;
  constexpr wgrad_launched nothing = wgrad_launched::nothing;
  const z pixels = static_cast<z>(a.n) * static_cast<z>(a.p) * static_cast<z>(a.q);
  const z K = static_cast<z>(a.k), C = static_cast<z>(a.c);
  if (!conv2d_wgrad_wgmma_available(device) || !conv2d_is_pointwise(a) ||
      conv2d_wgrad_pointwise_unsupported_reason(C, K, pixels) != nullptr) {
    return nothing;
  }
  if (!aligned16(a.x) || !aligned16(dy) || (relu_y != nullptr && !aligned16(relu_y))) return nothing;
  if (plan.step_pixels != conv2d_wgrad_pointwise_step_pixels || plan.bm != conv2d_wgrad_pointwise_bm ||
      plan.bn != conv2d_wgrad_pointwise_bn || plan.wt * plan.ht * plan.nt != plan.step_pixels) {
    return nothing;  // not this step's plan
  }
  if (plan.split > 1 && (partial == nullptr || !aligned16(partial))) return nothing;
  conv2d_wgrad_pointwise::params prm;
  if (!conv2d_wgrad::geometry_of(a, plan, prm)) return nothing;
  prm.dw = dw;
  prm.partial = plan.split > 1 ? partial : nullptr;
  prm.threshold = threshold;
  constexpr auto box = static_cast<cuuint32_t>(conv2d_wgrad_pointwise::box_channels);
  constexpr auto rows = static_cast<cuuint32_t>(conv2d_wgrad_pointwise::step_pixels);
  CUtensorMap map_dy{}, map_x{}, map_y{};
  if (!encode_sw128(map_dy, dy, K, pixels, K, box, rows) || !encode_sw128(map_x, a.x, C, pixels, C, box, rows)) {
    return nothing;
  }
  if (relu_y != nullptr && !encode_sw128(map_y, relu_y, K, pixels, K, box, rows)) return nothing;
  // Nothing is enqueued above: from here on the call runs to the end (or throws).
  if (relu_y != nullptr) return launch_kernel<true>(device, map_dy, map_x, map_y, prm, arrivals, plan, stream);
  return launch_kernel<false>(device, map_dy, map_x, map_dy, prm, arrivals, plan, stream);
}

}  // namespace kf::detail

#else  // !KERNELFORGE_HAS_SM90A: the library's list has no 90; nothing to run.

namespace kf::detail {

wgrad_launched conv2d_wgrad_pointwise_try_launch(int, const conv2d_args<float>&, const float*, const float*, float,
                                                 float*, float*, unsigned*, const conv2d_wgrad_wgmma_plan&,
                                                 cudaStream_t) {
  return wgrad_launched::nothing;
}

}  // namespace kf::detail

#endif
