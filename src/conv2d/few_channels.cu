// SPDX-License-Identifier: Apache-2.0
// Step 10, host side -- the few-channel launch (kernel: 10_few_channels_mma.cuh;
// interface: few_channels.hpp): the plan's grid and shared memory, checked
// against the device. Built for every architecture of the library; the kernel's
// body is sm_80+ code, so the launch first checks that the device runs an image
// compiled for sm_80 or newer.
#include "kernelforge/kernels/conv2d/few_channels.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernelforge/kernels/common/alignment.hpp"
#include "kernelforge/kernels/conv2d/10_few_channels_mma.cuh"
#include "kernelforge/kernels/runtime/launcher.hpp"

namespace kf::detail {
namespace {

constexpr const char* what = "kf::conv2d_forward (few_channels_mma)";
/// mma.sync.m16n8k16 with f16 / bf16 operands and fp32 sums.
constexpr int min_cc = 80;

template <class T, class Epilogue>
constexpr auto kernel = &conv2d_few_channels_mma<T, Epilogue>;

/// Whether `device` runs an sm_80+ image of `Kernel` (profile_of: cached; errc::no_kernel_image without one).
template <auto Kernel>
bool runs_sm80_image(int device) {
  return compute_capability(device) >= min_cc && profile_of<Kernel>(device, what).ptx_version >= min_cc;
}

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

}  // namespace

bool conv2d_few_channels_available(int device) { return runs_sm80_image<kernel<__half, epilogue::identity>>(device); }

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
  if (!runs_sm80_image<run>(device)) return false;
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

#define KF_FEW_CHANNELS_INSTANCES(T)                                                                       \
  template bool conv2d_nhwc_few_channels_try_launch(int, const conv2d_args<T>&, const epilogue::identity&, \
                                                    cudaStream_t);                                         \
  template bool conv2d_nhwc_few_channels_try_launch(int, const conv2d_args<T>&,                            \
                                                    const epilogue::bias_relu_threshold<float>&, cudaStream_t);
KF_FEW_CHANNELS_INSTANCES(__half)
KF_FEW_CHANNELS_INSTANCES(__nv_bfloat16)
#undef KF_FEW_CHANNELS_INSTANCES

}  // namespace kf::detail
