// SPDX-License-Identifier: Apache-2.0
// best's filter gradient of exact-fp32 NCHW layers on the CUDA cores: gradient
// step 5 (05_wgrad_simt_fp32.cuh, the implicit GEMM reading dy and x where they
// lie) and step 6 (06_wgrad_winograd.cuh, Winograd F(4x4, 3x3) for 3x3 stride-1
// layers of 128+ channels), their plans (wgrad_simt_plan.hpp) and which one a
// layer takes. The rest of dw (validation, dbias, steps 1 to 4, step 2 where
// these decline): backward_filter.cu.
#include <algorithm>
#include <cstdint>

#include "backward_common.cuh"
#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/conv2d/backward/05_wgrad_simt_fp32.cuh"
#include "kernelforge/kernels/conv2d/backward/06_wgrad_winograd.cuh"
#include "kernelforge/kernels/conv2d/gemm_launch.cuh"  // conv2d_transform_grid
#include "kernelforge/kernels/runtime/kernel_attributes.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"

namespace kf::detail::conv2d_grad {
namespace {

/// dw of an exact-fp32 NCHW layer on gradient step 5 (05_wgrad_simt_fp32.cuh:
/// the implicit GEMM on the CUDA cores, dy and x read in place), its split over
/// the pixels summed by the shared split-k reduction. false (nothing enqueued)
/// where an index into one image of x would pass 2^31 (the slabs cannot:
/// wgrad_simt_plan.hpp's workspace cap).
bool wgrad_nchw_simt(const char* what, int device, const conv2d_args<float>& a, const float* dy, float* dw,
                     const conv2d_backward_options& o, const float* relu_y) {
  const z int_max = static_cast<z>(INT32_MAX), K = static_cast<z>(a.k), crs = static_cast<z>(a.crs);
  if (static_cast<z>(a.c) * a.hw > int_max) return false;
  constexpr auto kernel = &conv2d_wgrad_simt_fp32;
  const int per_sm = resident_blocks_per_sm<kernel>(device, conv2d_wgrad_simt_threads, 0, what);
  conv2d_wgrad_simt_plan plan =
      plan_conv2d_wgrad_simt(K, crs, static_cast<z>(a.m), per_sm * limits_for(device).sm_count);
  const pooled_workspace partial(device, plan.split.workspace_bytes(K, crs), o.stream);
  if (plan.split.split > 1 && partial.data() == nullptr) plan.split = split_k_plan{1, static_cast<z>(a.m)};
  const int split = plan.split.split;
  const dim3 grid(static_cast<unsigned>(plan.tiles_taps), static_cast<unsigned>(plan.tiles_k),
                  static_cast<unsigned>(split));
  float* const out = split > 1 ? partial.data<float>() : dw;
  kernel<<<grid, conv2d_wgrad_simt_threads, 0, o.stream>>>(a, dy_reader(dy, o, relu_y), out,
                                                           static_cast<int>(plan.split.k_slice));
  check_launch(what);
  if (split > 1) sum_wgrad_slabs(what, device, partial.data<float>(), K, crs, split, dw, o.stream);
  return true;
}

/// dw of an exact-fp32 NCHW 3x3 stride-1 layer by Winograd F(M x M, 3 x 3)
/// (gradient step 6, 06_wgrad_winograd.cuh): x's and dy's transforms, the
/// positions' products split over the blocks into slabs, their sum and G^T M G.
/// false (nothing enqueued) without workspace, where the workspace would pass
/// im2col's cap (1 GiB; at M = 4 the transformed x and dy hold 2.25 values per
/// pixel and channel, im2col 9) or where an index would pass 2^31.
template <int M>
bool wgrad_nchw_winograd(const char* what, int device, const conv2d_args<float>& a, const float* dy, float* dw,
                         const conv2d_backward_options& o, const float* relu_y) {
  constexpr int positions = winograd_dw_transforms<M>::positions;
  const z K = static_cast<z>(a.k), C = static_cast<z>(a.c), int_max = static_cast<z>(INT32_MAX);
  const z tiles_h = ceil_div(static_cast<z>(a.p), static_cast<z>(M));
  const z tiles_w = ceil_div(static_cast<z>(a.q), static_cast<z>(M));
  const z tiles = static_cast<z>(a.n) * tiles_h * tiles_w, tiles_ld = round_up(tiles, z{4});
  if (tiles * std::max(K, C) > int_max || K * C > int_max) return false;
  constexpr auto gemm = &conv2d_wgrad_winograd_gemm<positions>;
  const int per_sm = resident_blocks_per_sm<gemm>(device, conv2d_wgrad_simt_threads, 0, what);
  const conv2d_wgrad_winograd_plan plan =
      plan_conv2d_wgrad_winograd(K, C, tiles, per_sm * limits_for(device).sm_count, M);
  const int split = plan.split.split;
  const z v_floats = positions * C * tiles_ld, u_floats = positions * K * tiles_ld;
  const z slab_floats = static_cast<z>(split) * positions * K * C;
  const z workspace_bytes = (v_floats + u_floats + slab_floats) * sizeof(float);
  if (workspace_bytes > conv2d_im2col_max_bytes) return false;  // step 5 / step 2 chunk instead
  const pooled_workspace workspace(device, workspace_bytes, o.stream);
  if (workspace.data() == nullptr) return false;
  conv2d_winograd_args wa;
  wa.a = a;
  wa.tiles_h = static_cast<int>(tiles_h);
  wa.tiles_w = static_cast<int>(tiles_w);
  wa.tiles = static_cast<int>(tiles);
  wa.tiles_ld = static_cast<int>(tiles_ld);
  wa.div_tiles_w = fast_divmod(static_cast<unsigned>(tiles_w));
  wa.div_tiles_h = fast_divmod(static_cast<unsigned>(tiles_h));
  wa.div_c = fast_divmod(static_cast<unsigned>(a.c));
  wa.div_k = fast_divmod(static_cast<unsigned>(a.k));
  wa.v = workspace.data<float>();  // tiles_ld a multiple of 4: every part 16-byte aligned
  float* const u_dy = wa.v + v_floats;
  float* const slabs = u_dy + u_floats;
  conv2d_wgrad_winograd_input<M>
      <<<conv2d_transform_grid(device, tiles * C), winograd_transform_block, 0, o.stream>>>(wa);
  check_launch(what);
  conv2d_wgrad_winograd_dy<M><<<conv2d_transform_grid(device, tiles * K), winograd_transform_block, 0, o.stream>>>(
      wa, dy_reader(dy, o, relu_y), u_dy);
  check_launch(what);
  const dim3 grid(static_cast<unsigned>(plan.tiles_c), static_cast<unsigned>(plan.tiles_k),
                  static_cast<unsigned>(split * positions));
  gemm<<<grid, conv2d_wgrad_simt_threads, 0, o.stream>>>(wa, u_dy, slabs, static_cast<int>(plan.split.k_slice));
  check_launch(what);
  const z output_threads = ceil_div(K * C, static_cast<z>(wgrad_winograd_output_pairs)) * winograd_transform_block;
  conv2d_wgrad_winograd_output<M>
      <<<conv2d_transform_grid(device, output_threads), winograd_transform_block, 0, o.stream>>>(a.k, a.c, slabs, split,
                                                                                                 dw);
  check_launch(what);
  return true;
}

}  // namespace

bool wgrad_exact_nchw_fp32(const char* what, int device, const conv2d_params& p, const conv2d_args<float>& a,
                           const float* dy, float* dw, const conv2d_backward_options& o, const float* relu_y) {
  if (conv2d_wgrad_winograd_applies(p) &&
      wgrad_nchw_winograd<conv2d_wgrad_winograd_m>(what, device, a, dy, dw, o, relu_y))
    return true;
  return conv2d_wgrad_simt_preferred(p.out_channels) && wgrad_nchw_simt(what, device, a, dy, dw, o, relu_y);
}

}  // namespace kf::detail::conv2d_grad
