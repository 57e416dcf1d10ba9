// SPDX-License-Identifier: Apache-2.0
// Gradient step 9, host side -- the TF32 pointwise filter gradient's launch
// (kernel: 09_wgrad_mma_tf32_pointwise.cuh; interface: wgrad_pointwise_sm90a.hpp):
// the tensor maps and the parameters; the grid and the cooperative launch
// whose CTAs sum their slabs are step 3's (wgrad_wgmma/split_launch.hpp).
//
// Built for sm_90a only (src/conv2d/sources.cmake); it instantiates only the
// step-9 kernel, which nothing else instantiates.
#include "kernelforge/kernels/conv2d/backward/wgrad_pointwise_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include <cstddef>
#include <cstdint>

#include <cuda.h>

#include "kernelforge/kernels/conv2d/backward/09_wgrad_mma_tf32_pointwise.cuh"
#include "kernelforge/kernels/conv2d/backward/wgrad_wgmma/split_launch.hpp"
#include "kernelforge/kernels/runtime/tensor_map.hpp"

namespace kf::detail {

namespace {

constexpr const char* what = "kf::conv2d_backward_filter (TF32 pointwise, mma.sync)";

/// Enqueues the kernel (wgrad_wgmma/split_launch.hpp): a split plan's slabs summed in the kernel, else
/// left in prm.partial.
template <bool Masked>
wgrad_launched launch_kernel(int device, const CUtensorMap& map_dy, const CUtensorMap& map_x, const CUtensorMap& map_y,
                             const conv2d_wgrad_pointwise::params& prm, unsigned* arrivals,
                             const conv2d_wgrad_wgmma_plan& plan, cudaStream_t stream) {
  return conv2d_wgrad::launch_summing_slabs<&conv2d_wgrad_pointwise_kernel<Masked>>(
      device, conv2d_wgrad_pointwise::threads, conv2d_wgrad_pointwise::shape<Masked>::smem_bytes, prm, arrivals,
      plan.split > 1, plan, stream, what, map_dy, map_x, map_y);
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
