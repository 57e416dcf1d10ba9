// SPDX-License-Identifier: Apache-2.0
// Gradient steps 3 and 4, host side -- the wgrad wgmma launches (kernels:
// 03_wgrad_wgmma.cuh, 04_wgrad_wgmma_tf32.cuh; interface:
// wgrad_wgmma_sm90a.hpp): the tensor maps, the kernels' parameters and the grid
// (tiles x slices); step 4's dy_t pre-pass.
//
// This translation unit is built for sm_90a only (src/conv2d/sources.cmake). It
// must instantiate no kernel that other translation units instantiate too
// (their weak copies could be the ones the program registers, and other GPUs
// would then find no image): it instantiates only the step-3 and step-4
// kernels and step 4's pre-pass (conv2d_dy_patch_t), which nothing else
// instantiates; the split's reduction runs from backward_filter.cu.
#include "kernelforge/kernels/conv2d/backward/wgrad_wgmma_sm90a.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if defined(KERNELFORGE_HAS_SM90A)

#include <climits>
#include <cstddef>
#include <cstdint>

#include <cuda.h>

#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/conv2d/backward/03_wgrad_wgmma.cuh"
#include "kernelforge/kernels/conv2d/backward/04_wgrad_wgmma_tf32.cuh"
#include "kernelforge/kernels/conv2d/backward/passes.cuh"
#include "kernelforge/kernels/conv2d/backward/wgrad_wgmma/split_launch.hpp"
#include "kernelforge/kernels/runtime/kernel_attributes.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/kernels/runtime/tensor_map.hpp"

namespace kf::detail {

bool conv2d_wgrad_wgmma_available(int device) { return sm90a_code_runs_on(device); }

namespace {

constexpr const char* what = "kf::conv2d_backward_filter (implicit_gemm_wgmma)";
using conv2d_wgrad::max_grid_y;

/// Enqueues step 3 with `prm` (wgrad_wgmma/split_launch.hpp): a split plan's slabs summed in the kernel
/// where the plan gains by it (conv2d_wgrad_wgmma_sums_in_kernel), else left in prm.partial.
template <class T, int BM, int BN, int Rows>
wgrad_launched launch_kernel(int device, const CUtensorMap& map_dy, const CUtensorMap& map_x,
                             const conv2d_wgrad_wgmma::params<T>& prm, unsigned* arrivals,
                             const conv2d_wgrad_wgmma_plan& plan, cudaStream_t stream) {
  return conv2d_wgrad::launch_summing_slabs<&conv2d_wgrad_wgmma_kernel<T, BM, BN, Rows>>(
      device, conv2d_wgrad_wgmma::threads, conv2d_wgrad_wgmma::shape<BM, BN, Rows>::smem_bytes, prm, arrivals,
      conv2d_wgrad_wgmma_sums_in_kernel(plan), plan, stream, what, map_dy, map_x);
}

/// The kernel's parameters; false where a count overflows its ints or the grid.
template <class T>
bool make_params(const conv2d_args<T>& a, T* dw, float* partial, const conv2d_wgrad_wgmma_plan& plan,
                 conv2d_wgrad_wgmma::params<T>& prm) {
  if (!conv2d_wgrad::geometry_of(a, plan, prm)) return false;
  prm.dw = dw;
  prm.partial = plan.split > 1 ? partial : nullptr;
  prm.box_row_bytes = static_cast<int>(plan.patch_pixels()) * conv2d_wgrad_wgmma::row_bytes;
  prm.x_box_bytes = static_cast<int>(plan.wt * plan.x_box_rows() * plan.nt) * conv2d_wgrad_wgmma::row_bytes;
  prm.pair_stores = reinterpret_cast<std::uintptr_t>(dw) % (2 * sizeof(T)) == 0;  // C even: every pair aligned
  return true;
}

/// x as (c, w, h, n) in boxes of `channels` (one 128-byte row) x wt stride_w x
/// x_box_rows stride_h x nt, stepping by the stride: the patch's output pixels
/// in order (filter-column tiles: 2 rows taller; stride_h is 1 there). Both steps'.
template <class T>
bool encode_x_map(CUtensorMap& map_x, const conv2d_args<T>& a, const conv2d_wgrad_wgmma_plan& plan,
                  std::size_t channels) {
  using z = std::size_t;
  const z N = static_cast<z>(a.n), C = static_cast<z>(a.c), H = static_cast<z>(a.h), W = static_cast<z>(a.w);
  const auto wt = static_cast<cuuint32_t>(plan.wt), nt = static_cast<cuuint32_t>(plan.nt);
  const auto sw = static_cast<cuuint32_t>(a.stride_w), sh = static_cast<cuuint32_t>(a.stride_h);
  const cuuint64_t x_dims[4] = {C, W, H, N};
  const cuuint64_t x_strides[3] = {C * sizeof(T), W * C * sizeof(T), H * W * C * sizeof(T)};
  const auto x_rows = static_cast<cuuint32_t>(plan.x_box_rows());
  const cuuint32_t x_box[4] = {static_cast<cuuint32_t>(channels), wt * sw, x_rows * sh, nt};
  const cuuint32_t x_steps[4] = {1, sw, sh, 1};
  return encode_sw128_tiled(map_x, a.x, 4, x_dims, x_strides, x_box, x_steps);
}

/// dy as (k, q, p, n) in boxes of 64 x wt x ht x nt; x as (c, w, h, n) in boxes
/// of 64 x wt stride_w x ht stride_h x nt stepping by the stride: the same
/// output pixels in the same order (03_wgrad_wgmma.cuh). Filter-column tiles:
/// x's box 2 rows taller (the plan's x_box_rows; stride_h is 1 there).
template <class T>
bool encode_maps(CUtensorMap& map_dy, CUtensorMap& map_x, const conv2d_args<T>& a, const T* dy,
                 const conv2d_wgrad_wgmma_plan& plan) {
  using z = std::size_t;
  const z N = static_cast<z>(a.n), K = static_cast<z>(a.k), P = static_cast<z>(a.p), Q = static_cast<z>(a.q);
  const auto channels = static_cast<cuuint32_t>(conv2d_wgrad_wgmma_box_channels);
  const auto wt = static_cast<cuuint32_t>(plan.wt), ht = static_cast<cuuint32_t>(plan.ht);
  const auto nt = static_cast<cuuint32_t>(plan.nt);
  const cuuint64_t dy_dims[4] = {K, Q, P, N};
  const cuuint64_t dy_strides[3] = {K * sizeof(T), Q * K * sizeof(T), P * Q * K * sizeof(T)};
  const cuuint32_t dy_box[4] = {channels, wt, ht, nt};
  return encode_sw128_tiled(map_dy, dy, 4, dy_dims, dy_strides, dy_box) &&
         encode_x_map(map_x, a, plan, conv2d_wgrad_wgmma_box_channels);
}

/// What both filter-gradient launches need before anything is enqueued: the
/// sm_90a object on `device`, a layer the kernels read (channels, strides),
/// x and the kernel's dy operand 16-byte aligned, and the split's partial
/// slabs where the plan splits.
template <class T>
bool wgrad_launchable(int device, const conv2d_args<T>& a, const void* dy_operand, const float* partial,
                      const conv2d_wgrad_wgmma_plan& plan) {
  using z = std::size_t;
  return conv2d_wgrad_wgmma_available(device) &&
         conv2d_wgrad_wgmma_unsupported_reason(static_cast<z>(a.c), static_cast<z>(a.k), sizeof(T),
                                               static_cast<z>(a.stride_h), static_cast<z>(a.stride_w)) == nullptr &&
         conv2d_wgrad_wgmma_aligned(a.x, dy_operand) && (plan.split <= 1 || partial != nullptr);
}

}  // namespace

template <class T>
wgrad_launched conv2d_wgrad_wgmma_try_launch(int device, const conv2d_args<T>& a, const T* dy, T* dw, float* partial,
                                             unsigned* arrivals, const conv2d_wgrad_wgmma_plan& plan,
                                             cudaStream_t stream) {
  constexpr wgrad_launched nothing = wgrad_launched::nothing;
  if (!wgrad_launchable(device, a, dy, partial, plan)) return nothing;
  conv2d_wgrad_wgmma::params<T> prm;
  if (!make_params(a, dw, partial, plan, prm)) return nothing;
  CUtensorMap map_dy{}, map_x{};
  if (!encode_maps(map_dy, map_x, a, dy, plan)) return nothing;
  // Nothing is enqueued above: from here on the call runs to the end (or throws).
  constexpr int column_rows = static_cast<int>(conv2d_wgrad_wgmma_column_rows);
  if (plan.filter_rows == conv2d_wgrad_wgmma_column_rows) {
    return launch_kernel<T, 64, 64 * column_rows, column_rows>(device, map_dy, map_x, prm, arrivals, plan, stream);
  }
  if (plan.filter_rows != 1) return nothing;  // no kernel for that tiling (the planner makes none)
  if (plan.bm == 64 && plan.bn == 64)
    return launch_kernel<T, 64, 64, 1>(device, map_dy, map_x, prm, arrivals, plan, stream);
  if (plan.bm == 64) return launch_kernel<T, 64, 128, 1>(device, map_dy, map_x, prm, arrivals, plan, stream);
  if (plan.bn == 64) return launch_kernel<T, 128, 64, 1>(device, map_dy, map_x, prm, arrivals, plan, stream);
  if (plan.bn == conv2d_wgrad_wgmma_split_bn) {
    constexpr int split_bn = static_cast<int>(conv2d_wgrad_wgmma_split_bn);
    return launch_kernel<T, 128, split_bn, 1>(device, map_dy, map_x, prm, arrivals, plan, stream);
  }
  return launch_kernel<T, 128, 128, 1>(device, map_dy, map_x, prm, arrivals, plan, stream);
}

namespace {

constexpr const char* what_tf32 = "kf::conv2d_backward_filter (implicit_gemm_wgmma, TF32)";

template <int BM, int BN, int Rows>
void launch_tf32_kernel(int device, const CUtensorMap& map_x, const CUtensorMap& map_dy,
                        const conv2d_wgrad_tf32::params& prm, const conv2d_wgrad_wgmma_plan& plan,
                        cudaStream_t stream) {
  constexpr auto kernel = &conv2d_wgrad_tf32_kernel<BM, BN, Rows>;
  constexpr int smem = conv2d_wgrad_tf32::shape<BM, BN, Rows>::smem_bytes;
  // Sets the kernel's shared-memory opt-in (once per device); the grid is not persistent.
  (void)resident_clusters<kernel>(device, conv2d_wgrad_tf32::threads, smem, 1, what_tf32);
  const dim3 grid(static_cast<unsigned>(plan.tiles()), static_cast<unsigned>(plan.split));
  kernel<<<grid, conv2d_wgrad_tf32::threads, smem, stream>>>(map_x, map_dy, prm);
  check_launch(what_tf32);
}

/// Step 4's parameters; false where a count overflows its ints or the grid.
bool make_tf32_params(const conv2d_args<float>& a, float* dw, float* partial, const conv2d_wgrad_wgmma_plan& plan,
                      conv2d_wgrad_tf32::params& prm) {
  // dy_t's columns: the pixel coordinate of its boxes is an int.
  if (plan.dy_t_columns() > static_cast<std::size_t>(INT_MAX) || !conv2d_wgrad::geometry_of(a, plan, prm)) {
    return false;
  }
  prm.dw = dw;
  prm.partial = plan.split > 1 ? partial : nullptr;
  prm.x_box_bytes = static_cast<int>(plan.wt * plan.x_box_rows() * plan.nt) * conv2d_wgrad_tf32::row_bytes;
  return true;
}

/// x as step 3's map in boxes of 32 channels; dy_t as (pixel column, k) in
/// boxes of 32 x the kernel's BN (the plan's bm output channels).
bool encode_tf32_maps(CUtensorMap& map_x, CUtensorMap& map_dy, const conv2d_args<float>& a, const float* dy_t,
                      const conv2d_wgrad_wgmma_plan& plan) {
  const std::size_t columns = plan.dy_t_columns();
  const cuuint64_t dy_dims[2] = {columns, static_cast<std::size_t>(a.k)};
  const cuuint64_t dy_strides[1] = {columns * sizeof(float)};
  const cuuint32_t dy_box[2] = {static_cast<cuuint32_t>(conv2d_wgrad_tf32::step_pixels),
                                static_cast<cuuint32_t>(plan.bm)};
  return encode_x_map(map_x, a, plan, conv2d_wgrad_tf32::box_channels) &&
         encode_sw128_tiled(map_dy, dy_t, 2, dy_dims, dy_strides, dy_box);
}

}  // namespace

bool conv2d_wgrad_tf32_try_launch(int device, const conv2d_args<float>& a, conv2d_dy_reader<float> dy, float* dy_t,
                                  float* dw, float* partial, const conv2d_wgrad_wgmma_plan& plan, cudaStream_t stream) {
  using z = std::size_t;
  if (!wgrad_launchable(device, a, dy_t, partial, plan)) return false;
  if (plan.step_pixels != static_cast<z>(conv2d_wgrad_tf32::step_pixels)) return false;  // a 16-bit plan
  const bool columns = plan.filter_rows == conv2d_wgrad_wgmma_column_rows;
  // The kernel's GEMM tile: M = the plan's bn input-channel columns, N = its bm output channels.
  if (!(columns ? plan.bm == 64
                : plan.filter_rows == 1 && (plan.bm == 64 || plan.bm == 128) && (plan.bn == 64 || plan.bn == 128))) {
    return false;  // no kernel for that tiling (the planner makes none)
  }
  const z dy_t_channel_blocks = ceil_div(static_cast<z>(a.k), static_cast<z>(conv2d_dy_patch_t_channels));
  if (dy_t_channel_blocks > max_grid_y) return false;
  conv2d_wgrad_tf32::params prm;
  if (!make_tf32_params(a, dw, partial, plan, prm)) return false;
  CUtensorMap map_x{}, map_dy{};
  if (!encode_tf32_maps(map_x, map_dy, a, dy_t, plan)) return false;
  // Nothing is enqueued above: from here on the call runs to the end (or throws).
  const conv2d_patch_walk walk{prm.wt, prm.ht, prm.nt, prm.patches_q, prm.patches_p};  // the kernel's patches
  const dim3 pre_grid(static_cast<unsigned>(plan.patches()), static_cast<unsigned>(dy_t_channel_blocks));
  const dim3 pre_block(conv2d_dy_patch_t_run, conv2d_grad_block / conv2d_dy_patch_t_run);
  conv2d_dy_patch_t<float><<<pre_grid, pre_block, 0, stream>>>(dy, walk, a.n, a.p, a.q, a.k,
                                                               static_cast<long long>(plan.dy_t_columns()), dy_t);
  check_launch(what_tf32);
  if (columns) {
    constexpr int rows = static_cast<int>(conv2d_wgrad_wgmma_column_rows);
    launch_tf32_kernel<64 * rows, 64, rows>(device, map_x, map_dy, prm, plan, stream);
  } else if (plan.bn == 64 && plan.bm == 64) {
    launch_tf32_kernel<64, 64, 1>(device, map_x, map_dy, prm, plan, stream);
  } else if (plan.bn == 64) {
    launch_tf32_kernel<64, 128, 1>(device, map_x, map_dy, prm, plan, stream);
  } else if (plan.bm == 64) {
    launch_tf32_kernel<128, 64, 1>(device, map_x, map_dy, prm, plan, stream);
  } else {
    launch_tf32_kernel<128, 128, 1>(device, map_x, map_dy, prm, plan, stream);
  }
  return true;
}

}  // namespace kf::detail

#else  // !KERNELFORGE_HAS_SM90A: the library's list has no 90; nothing to run.

namespace kf::detail {

bool conv2d_wgrad_wgmma_available(int) { return false; }

template <class T>
wgrad_launched conv2d_wgrad_wgmma_try_launch(int, const conv2d_args<T>&, const T*, T*, float*, unsigned*,
                                             const conv2d_wgrad_wgmma_plan&, cudaStream_t) {
  return wgrad_launched::nothing;
}

bool conv2d_wgrad_tf32_try_launch(int, const conv2d_args<float>&, conv2d_dy_reader<float>, float*, float*, float*,
                                  const conv2d_wgrad_wgmma_plan&, cudaStream_t) {
  return false;
}

}  // namespace kf::detail

#endif

namespace kf::detail {
template wgrad_launched conv2d_wgrad_wgmma_try_launch<__half>(int, const conv2d_args<__half>&, const __half*, __half*,
                                                              float*, unsigned*, const conv2d_wgrad_wgmma_plan&,
                                                              cudaStream_t);
template wgrad_launched conv2d_wgrad_wgmma_try_launch<__nv_bfloat16>(int, const conv2d_args<__nv_bfloat16>&,
                                                                     const __nv_bfloat16*, __nv_bfloat16*, float*,
                                                                     unsigned*, const conv2d_wgrad_wgmma_plan&,
                                                                     cudaStream_t);
}  // namespace kf::detail
