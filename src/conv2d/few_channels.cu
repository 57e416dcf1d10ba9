// SPDX-License-Identifier: Apache-2.0
// Steps 10 and 11, host side -- the few-channel launches (kernels:
// 10_few_channels_mma.cuh, 11_few_channels_persistent.cuh; interface:
// few_channels.hpp): the plan's grid and shared memory, checked against the
// device; step 11's grid from the CTAs the device holds at once. Built for
// every architecture of the library; the kernels' bodies are sm_80+ code, so
// each launch first checks that the device runs an image compiled for sm_80
// or newer.
#include "kernelforge/kernels/conv2d/few_channels.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernelforge/kernels/arch/compute_capability.hpp"
#include "kernelforge/kernels/common/alignment.hpp"
#include "kernelforge/kernels/conv2d/10_few_channels_mma.cuh"
#include "kernelforge/kernels/conv2d/11_few_channels_persistent.cuh"
#include "kernelforge/kernels/runtime/launcher.hpp"

namespace kf::detail {
namespace {

constexpr const char* what = "kf::conv2d_forward (few_channels_mma)";
constexpr const char* what_persistent = "kf::conv2d_forward (few_channels_persistent)";

template <class T, class Epilogue>
constexpr auto kernel = &conv2d_few_channels_mma<T, Epilogue>;
template <class T, class Epilogue>
constexpr auto persistent_kernel = &conv2d_few_channels_persistent<T, Epilogue>;

few_channels::tile tile_of(const conv2d_few_channels_plan& l, bool y_pairs) {
  few_channels::tile t;
  t.tile_p = static_cast<int>(l.tile_p);
  t.tile_q = static_cast<int>(l.tile_q);
  t.tiles_p = static_cast<int>(l.tiles_p);
  t.tiles_q = static_cast<int>(l.tiles_q);
  t.patch_rows = static_cast<int>(l.patch_rows);
  t.patch_cols = static_cast<int>(l.patch_cols);
  t.k_steps = static_cast<int>(l.k_steps);
  t.filter_row_bytes = static_cast<int>(l.filter_row_bytes);
  t.table_offset = static_cast<int>(l.table_offset);
  t.patch_offset = static_cast<int>(l.patch_offset);
  t.y_pairs = y_pairs;
  return t;
}

few_channels::persistent_tile persistent_tile_of(const conv2d_few_channels_persistent_plan& l, bool y_pairs,
                                                 bool y_vectors) {
  few_channels::persistent_tile t;
  t.band = tile_of(l.band, y_pairs);
  t.band.patch_offset = static_cast<int>(l.patch_offset);
  t.bands = static_cast<int>(l.band.bands);
  t.stage_offset = static_cast<int>(l.stage_offset);
  t.stage_row_bytes = static_cast<int>(l.stage_row_bytes);
  t.out_offset = static_cast<int>(l.out_offset);
  t.patch_cols = fast_divmod(static_cast<unsigned>(l.band.patch_cols));
  t.y_vectors = y_vectors;
  return t;
}

}  // namespace

bool conv2d_few_channels_available(int device) {
  return runs_image_for<kernel<__half, epilogue::identity>>(device, mma_sync_min_cc, what) &&
         runs_image_for<persistent_kernel<__half, epilogue::identity>>(device, mma_sync_min_cc, what);
}

template <class T, class Epilogue>
bool conv2d_nhwc_few_channels_try_launch(int device, const conv2d_args<T>& a, const Epilogue& ep, cudaStream_t stream) {
  static_assert(few_channels::block_n == conv2d_few_channels_plan::block_n &&
                    few_channels::channels == conv2d_few_channels_plan::channels &&
                    few_channels::taps_per_step == conv2d_few_channels_plan::taps_per_step &&
                    few_channels::warp_pixels == conv2d_few_channels_plan::warp_pixels &&
                    few_channels::max_threads == conv2d_few_channels_max_pixels,
                "the kernel's shape is the plan's");
  const conv2d_few_channels_plan l = plan_conv2d_few_channels_of(a);
  if (l.unsupported != nullptr) return false;
  constexpr auto run = kernel<T, Epilogue>;
  if (!runs_image_for<run>(device, mma_sync_min_cc, what)) return false;
  const std::size_t optin = limits_for(device).max_smem_per_block_optin;
  if (l.smem_bytes > optin) return false;
  // Once per device, for every plan: the budget (or all the device grants, if less).
  allow_dynamic_smem<run>(device, static_cast<int>(std::min(conv2d_few_channels_smem_budget, optin)), what);
  const bool y_pairs = a.k % 2 == 0 && is_aligned(a.y, 4);
  const dim3 grid(static_cast<std::uint32_t>(l.bands), static_cast<std::uint32_t>(l.k_blocks));
  const auto threads = static_cast<std::uint32_t>(l.warps * conv2d_few_channels_plan::warp_pixels);
  run<<<grid, threads, l.smem_bytes, stream>>>(a, tile_of(l, y_pairs), ep);
  check_launch(what);
  return true;
}

template <class T, class Epilogue>
bool conv2d_nhwc_few_channels_persistent_try_launch(int device, const conv2d_args<T>& a, const Epilogue& ep,
                                                    cudaStream_t stream, std::size_t max_ctas) {
  using P = conv2d_few_channels_persistent_plan;
  static_assert(few_channels::chunk_bytes == P::chunk && few_channels::out_rows == P::out_rows &&
                    few_channels::out_row_bytes == P::out_row_bytes,
                "the kernel's layout is the plan's");
  constexpr auto run = persistent_kernel<T, Epilogue>;
  if (!runs_image_for<run>(device, mma_sync_min_cc, what)) return false;
  const device_limits& limits = limits_for(device);
  const std::size_t budget = std::min(conv2d_few_channels_persistent_smem_budget, limits.max_smem_per_block_optin);
  // Once per device, for every plan: the CTAs an SM holds at the budget (plans
  // within it hold at least as many), with the opt-in to the budget.
  const auto per_sm =
      static_cast<std::size_t>(resident_blocks_per_sm<run>(device, few_channels::max_threads, budget, what_persistent));
  std::size_t resident = per_sm * static_cast<std::size_t>(limits.sm_count);
  if (max_ctas > 0 && max_ctas < resident) resident = max_ctas;
  // One plan a call: whether it takes the layer does not depend on the grid.
  const P l = plan_conv2d_few_channels_persistent_of(a, resident);
  if (l.unsupported != nullptr || l.smem_bytes > budget) return false;
  const bool y_pairs = a.k % 2 == 0 && is_aligned(a.y, 4);
  const bool y_vectors = a.k % 8 == 0 && is_aligned(a.y, 16);
  const dim3 grid(static_cast<std::uint32_t>(l.grid_x), static_cast<std::uint32_t>(l.band.k_blocks));
  const auto threads = static_cast<std::uint32_t>(l.band.warps * conv2d_few_channels_plan::warp_pixels);
  run<<<grid, threads, l.smem_bytes, stream>>>(a, persistent_tile_of(l, y_pairs, y_vectors), ep);
  check_launch(what_persistent);
  return true;
}

#define KF_FEW_CHANNELS_INSTANCES(T)                                                                                  \
  template bool conv2d_nhwc_few_channels_try_launch(int, const conv2d_args<T>&, const epilogue::identity&,            \
                                                    cudaStream_t);                                                    \
  template bool conv2d_nhwc_few_channels_try_launch(int, const conv2d_args<T>&,                                       \
                                                    const epilogue::bias_relu_threshold<float>&, cudaStream_t);       \
  template bool conv2d_nhwc_few_channels_persistent_try_launch(int, const conv2d_args<T>&, const epilogue::identity&, \
                                                               cudaStream_t, std::size_t);                            \
  template bool conv2d_nhwc_few_channels_persistent_try_launch(                                                       \
      int, const conv2d_args<T>&, const epilogue::bias_relu_threshold<float>&, cudaStream_t, std::size_t);
KF_FEW_CHANNELS_INSTANCES(__half)
KF_FEW_CHANNELS_INSTANCES(__nv_bfloat16)
#undef KF_FEW_CHANNELS_INSTANCES

}  // namespace kf::detail
