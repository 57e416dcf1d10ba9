// SPDX-License-Identifier: Apache-2.0
// Host side of the GEMM-shaped conv2d kernels (03_implicit_gemm, 04_implicit_gemm_tf32,
// 05_implicit_gemm_pipelined, 06_winograd, 08_winograd_fused, split-K through
// split_k.cuh; 07_implicit_gemm_wgmma through wgmma_sm90a.hpp, its sm_90a
// object's interface), templated on the epilogue:
// plan -> split-K or Winograd workspace -> launches.
// One home for both users of it: the library's launcher (src/conv2d/conv2d.cu,
// precompiled for identity and the options' bias_relu_threshold) and the public
// <kernelforge/conv.cuh>, which instantiates it in the caller's .cu for their own
// epilogue functor. Arguments arrive validated (validate.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "../arch/compute_capability.hpp"
#include "../common/grid.hpp"
#include "../common/vector_access.cuh"
#include "../runtime/launcher.hpp"
#include "03_implicit_gemm.cuh"
#include "04_implicit_gemm_tf32.cuh"
#include "05_implicit_gemm_pipelined.cuh"
#include "06_winograd.cuh"
#include "08_winograd_fused.cuh"
#include "args.cuh"
#include "kernelforge/conv.hpp"
#include "kernelforge/epilogue.cuh"
#include "plan.hpp"
#include "split_k.cuh"
#include "tuning.hpp"
#include "wgmma_sm90a.hpp"

namespace kf::detail {

inline dim3 conv2d_gemm_grid(const char* what, const conv2d_args<float>& a, int bm, int bn, std::size_t split = 1) {
  const std::size_t gx = ceil_div(static_cast<std::size_t>(a.m), bm);
  const std::size_t gy = ceil_div(static_cast<std::size_t>(a.k), bn);
  if (gy > max_grid_yz) {
    throw_unsupported(what, "the implicit GEMM handles at most " +
                                std::to_string(max_grid_yz * static_cast<std::size_t>(bn)) +
                                " output channels (K = " + std::to_string(a.k) + ")");
  }
  return dim3(static_cast<std::uint32_t>(gx), static_cast<std::uint32_t>(gy), static_cast<std::uint32_t>(split));
}

/// The plan for this problem on `device` (cached device limits: no query).
inline conv2d_gemm_plan conv2d_gemm_plan_for(int device, const conv2d_args<float>& a) {
  return choose_conv2d_gemm_plan(static_cast<std::size_t>(a.m), static_cast<std::size_t>(a.k),
                                 static_cast<std::size_t>(a.crs), limits_for(device).sm_count);
}

/// Blocks for a grid-stride kernel over `items` with `block` items per block:
/// enough to cover them, at most `per_sm` per SM of `device` (cached limits).
inline std::uint32_t conv2d_grid_stride_blocks(int device, std::size_t items, std::size_t block, std::size_t per_sm) {
  const int sms = limits_for(device).sm_count;
  const std::size_t cap = static_cast<std::size_t>(sms > 0 ? sms : 1) * per_sm;
  const std::size_t needed = ceil_div(items, block);
  return static_cast<std::uint32_t>(needed < cap ? needed : cap);
}

/// Tile: a conv2d_gemm_tile_config (tuning.hpp's with_conv2d_gemm_tile).
template <class Tile, class Epilogue>
void launch_conv2d_gemm(const char* what, int device, const conv2d_args<float>& a, const conv2d_gemm_plan& plan,
                        Epilogue ep, cudaStream_t stream) {
  constexpr int BM = Tile::bm, BN = Tile::bn;
  run_conv2d_gemm_plan(
      what, device, a, plan, ep, stream,
      [&](const conv2d_args<float>& args, auto e, bool vector_store, int slices_per_split, std::size_t split) {
        constexpr auto kernel = &conv2d_implicit_gemm<BM, BN, Tile::min_blocks, decltype(e)>;
        (void)profile_of<kernel>(device, what);  // no_kernel_image before the launch (cached)
        kernel<<<conv2d_gemm_grid(what, args, BM, BN, split), conv2d_gemm_threads<BM, BN>, 0, stream>>>(
            args, vector_store, slices_per_split, e);
        check_launch(what);
      });
}

/// conv2d_variant::implicit_gemm with epilogue `ep`.
template <class Epilogue>
void launch_conv2d_implicit_gemm(const char* what, int device, const conv2d_args<float>& a, Epilogue ep,
                                 cudaStream_t stream) {
  const conv2d_gemm_plan plan = conv2d_gemm_plan_for(device, a);
  with_conv2d_gemm_tile(plan.tile,
                        [&](auto tile) { launch_conv2d_gemm<decltype(tile)>(what, device, a, plan, ep, stream); });
}

template <class Tile, class Epilogue>
bool launch_conv2d_tf32(const char* what, int device, const conv2d_args<float>& a, const conv2d_gemm_plan& plan,
                        Epilogue ep, cudaStream_t stream) {
  constexpr int BM = Tile::bm, BN = Tile::bn, WM = Tile::tf32_warps_m, WN = Tile::tf32_warps_n;
  // The identity instantiation the split-K partials use comes from the same
  // translation unit, so it has the same architectures as this one.
  if (!runs_image_for<&conv2d_implicit_gemm_tf32<BM, BN, WM, WN, Epilogue>>(device, mma_sync_min_cc, what)) {
    return false;
  }
  run_conv2d_gemm_plan(
      what, device, a, plan, ep, stream,
      [&](const conv2d_args<float>& args, auto e, bool, int slices_per_split, std::size_t split) {
        constexpr auto kernel = &conv2d_implicit_gemm_tf32<BM, BN, WM, WN, decltype(e)>;
        (void)profile_of<kernel>(device, what);  // no_kernel_image before the launch (cached)
        kernel<<<conv2d_gemm_grid(what, args, BM, BN, split), conv2d_tf32_threads<BM, BN, WM, WN>, 0, stream>>>(
            args, slices_per_split, e);
        check_launch(what);
      });
  return true;
}

/// conv2d_variant::implicit_gemm_tf32 with epilogue `ep`; false when the
/// translation unit holds no sm_80+ code for the device.
template <class Epilogue>
bool launch_conv2d_implicit_gemm_tf32(const char* what, int device, const conv2d_args<float>& a, Epilogue ep,
                                      cudaStream_t stream) {
  const conv2d_gemm_plan plan = conv2d_gemm_plan_for(device, a);
  return with_conv2d_gemm_tile(
      plan.tile, [&](auto tile) { return launch_conv2d_tf32<decltype(tile)>(what, device, a, plan, ep, stream); });
}

template <class Tile, class Epilogue>
void launch_conv2d_pipelined(const char* what, int device, const conv2d_args<float>& a, const conv2d_gemm_plan& plan,
                             Epilogue ep, cudaStream_t stream) {
  constexpr int BM = Tile::bm, BN = Tile::bn;
  constexpr int smem = conv2d_pipelined_smem<BM, BN>;
  const bool b_vec16 = a.crs % 4 == 0 && misalignment(a.wt) == 0;
  run_conv2d_gemm_plan(
      what, device, a, plan, ep, stream,
      [&](const conv2d_args<float>& args, auto e, bool vector_store, int slices_per_split, std::size_t split) {
        constexpr auto kernel = &conv2d_implicit_gemm_pipelined<BM, BN, Tile::min_blocks, decltype(e)>;
        allow_dynamic_smem<kernel>(device, smem, what);  // also no_kernel_image before the launch (cached)
        kernel<<<conv2d_gemm_grid(what, args, BM, BN, split), conv2d_pipe_threads<BM, BN>, smem, stream>>>(
            args, vector_store, b_vec16, slices_per_split * conv2d_gemm_bk, e);
        check_launch(what);
      });
}

/// conv2d_variant::implicit_gemm_pipelined with epilogue `ep` (step 3's plan: tile and split-K).
template <class Epilogue>
void launch_conv2d_implicit_gemm_pipelined(const char* what, int device, const conv2d_args<float>& a, Epilogue ep,
                                           cudaStream_t stream) {
  const conv2d_gemm_plan plan = conv2d_gemm_plan_for(device, a);
  with_conv2d_gemm_tile(plan.tile,
                        [&](auto tile) { launch_conv2d_pipelined<decltype(tile)>(what, device, a, plan, ep, stream); });
}

// ---- Winograd F(2x2,3x3) ------------------------------------------------------
/// The transforms' blocks of 256 threads: grid-stride, at most 8 per SM (a full
/// SM on sm_80 and sm_90).
inline std::uint32_t conv2d_transform_grid(int device, std::size_t items) {
  return conv2d_grid_stride_blocks(device, items, winograd_transform_block, 8);
}

/// Tile: a conv2d_gemm_tile_config (tuning.hpp's with_conv2d_gemm_tile).
template <class Tile>
void launch_winograd_gemm(const char* what, int device, const conv2d_winograd_args& wa, cudaStream_t stream) {
  constexpr int BM = Tile::bm, BN = Tile::bn;
  constexpr auto kernel = &conv2d_winograd_gemm<BM, BN, Tile::min_blocks>;
  constexpr int smem = conv2d_pipelined_smem<BM, BN>;
  allow_dynamic_smem<kernel>(device, smem, what);
  const dim3 grid(static_cast<std::uint32_t>(ceil_div(static_cast<std::size_t>(wa.tiles), BM)),
                  static_cast<std::uint32_t>(ceil_div(static_cast<std::size_t>(wa.a.k), BN)), winograd_positions);
  if (grid.y > max_grid_yz) {
    throw_unsupported(what, "conv2d_variant::winograd handles at most " +
                                std::to_string(max_grid_yz * static_cast<std::size_t>(BN)) +
                                " output channels (K = " + std::to_string(wa.a.k) + "); use implicit_gemm");
  }
  kernel<<<grid, conv2d_pipe_threads<BM, BN>, smem, stream>>>(wa);
  check_launch(what);
}

/// Runs the four Winograd passes with epilogue `ep` in the output transform;
/// false (nothing launched) when the workspace cannot be had or indexed. The
/// layer must qualify (validate.cpp checks it for conv2d_variant::winograd,
/// plan.hpp for best).
template <class Epilogue>
bool launch_conv2d_winograd(const char* what, int device, const conv2d_args<float>& a, Epilogue ep,
                            cudaStream_t stream) {
  const conv2d_winograd_layout l = make_conv2d_winograd_layout(
      static_cast<std::size_t>(a.n), static_cast<std::size_t>(a.c), static_cast<std::size_t>(a.k),
      static_cast<std::size_t>(a.p), static_cast<std::size_t>(a.q));
  if (!l.indexable()) return false;  // conv2d_variant::winograd never gets here: validate.cpp refuses it
  constexpr auto output_kernel = &conv2d_winograd_output<Epilogue>;
  (void)profile_of<output_kernel>(device, what);  // no_kernel_image before anything runs (cached)
  pooled_workspace workspace(device, l.bytes(), stream);
  if (workspace.data<float>() == nullptr) return false;
  conv2d_winograd_args wa;
  wa.a = a;
  wa.tiles_h = static_cast<int>(l.tiles_h);
  wa.tiles_w = static_cast<int>(l.tiles_w);
  wa.tiles = static_cast<int>(l.tiles);
  wa.tiles_ld = static_cast<int>(l.tiles_ld);
  wa.c_ld = static_cast<int>(l.c_ld);
  wa.div_tiles_w = fast_divmod(static_cast<unsigned>(l.tiles_w));
  wa.div_tiles_h = fast_divmod(static_cast<unsigned>(l.tiles_h));
  wa.div_c = fast_divmod(static_cast<unsigned>(a.c));
  wa.div_k = fast_divmod(static_cast<unsigned>(a.k));
  wa.u = workspace.data<float>();  // each part a multiple of 4 floats: all three 16-byte aligned
  wa.v = wa.u + l.u_floats;
  wa.mm = wa.v + l.v_floats;

  // U[b][k][c_ld]
  const conv2d_winograd_filter_args fa =
      make_conv2d_winograd_filter_args(a, wa.u, wa.c_ld, 1, static_cast<std::size_t>(a.k) * wa.c_ld);
  conv2d_winograd_filter<>
      <<<conv2d_transform_grid(device, static_cast<std::size_t>(a.k) * a.c), winograd_transform_block, 0, stream>>>(fa);
  check_launch(what);
  conv2d_winograd_input<><<<conv2d_transform_grid(device, l.tiles * a.c), winograd_transform_block, 0, stream>>>(wa);
  check_launch(what);
  with_conv2d_gemm_tile(
      choose_conv2d_winograd_tile(l.tiles, static_cast<std::size_t>(a.k), limits_for(device).sm_count),
      [&](auto tile) { launch_winograd_gemm<decltype(tile)>(what, device, wa, stream); });
  output_kernel<<<conv2d_transform_grid(device, l.tiles * a.k), winograd_transform_block, 0, stream>>>(wa, ep);
  check_launch(what);
  return true;
}

// ---- fused Winograd F(2x2,3x3) (step 8) -------------------------------------------
/// Whether `device` grants step 8's block its shared memory (sm_90, sm_100: yes;
/// sm_80, sm_86, sm_89, sm_120: no).
inline bool conv2d_winograd_fused_fits(int device) {
  return limits_for(device).max_smem_per_block_optin >= static_cast<std::size_t>(wfused_smem_bytes);
}

/// Runs the filter transform and the fused kernel with epilogue `ep`; false
/// (nothing launched) when the device lacks the shared memory, the layout
/// cannot be indexed, or the workspace for U cannot be had, and (only_where_waves_fill,
/// `best`) where its blocks would leave their waves partly idle
/// (plan.hpp: conv2d_winograd_fused_fills_waves). The layer must qualify
/// (validate.cpp checks it for conv2d_variant::winograd_fused).
template <class Epilogue>
bool launch_conv2d_winograd_fused(const char* what, int device, const conv2d_args<float>& a, Epilogue ep,
                                  cudaStream_t stream, bool only_where_waves_fill = false) {
  const conv2d_winograd_fused_layout l = make_conv2d_winograd_fused_layout(
      static_cast<std::size_t>(a.n), static_cast<std::size_t>(a.c), static_cast<std::size_t>(a.k),
      static_cast<std::size_t>(a.p), static_cast<std::size_t>(a.q));
  if (!l.launchable() || !conv2d_winograd_fused_fits(device)) return false;
  constexpr auto kernel = &conv2d_winograd_fused<Epilogue>;
  // Also sets the kernel's shared-memory limit, and raises no_kernel_image before anything runs.
  const int resident = resident_clusters<kernel>(device, wfused_threads, wfused_smem_bytes, 1, what);
  if (only_where_waves_fill &&
      !conv2d_winograd_fused_fills_waves(l.grid_x * l.grid_y, static_cast<std::size_t>(resident > 0 ? resident : 0))) {
    return false;
  }
  pooled_workspace workspace(device, l.bytes(), stream);
  if (workspace.data<float>() == nullptr) return false;

  const conv2d_winograd_filter_args fa = make_conv2d_winograd_fused_filter_args(a, l, workspace.data<float>());
  conv2d_winograd_filter<>
      <<<conv2d_transform_grid(device, static_cast<std::size_t>(a.k) * a.c), winograd_transform_block, 0, stream>>>(fa);
  check_launch(what);

  const conv2d_winograd_fused_args wa = make_conv2d_winograd_fused_args(a, l, fa.u);
  const dim3 grid(static_cast<std::uint32_t>(l.grid_x), static_cast<std::uint32_t>(l.grid_y));
  kernel<<<grid, wfused_threads, wfused_smem_bytes, stream>>>(wa, ep);
  check_launch(what);
  return true;
}

/// conv2d_variant::winograd_fused by name: runs, or raises errc::unsupported
/// (too little shared memory on this device) or errc::out_of_memory (no
/// workspace). validate.cpp has already refused the layers it does not compute.
template <class Epilogue>
void launch_conv2d_winograd_fused_by_name(const char* what, int device, const conv2d_args<float>& a, Epilogue ep,
                                          cudaStream_t stream) {
  if (!conv2d_winograd_fused_fits(device)) {
    throw_unsupported(what, "conv2d_variant::winograd_fused needs " + std::to_string(wfused_smem_bytes) +
                                " bytes of shared memory per block; this device grants " +
                                std::to_string(limits_for(device).max_smem_per_block_optin) +
                                " (sm_90 and sm_100 grant enough). Use winograd or best");
  }
  if (!launch_conv2d_winograd_fused(what, device, a, ep, stream)) {
    throw error(errc::out_of_memory, std::string(what) +
                                         ": conv2d_variant::winograd_fused could not allocate its workspace for the "
                                         "transformed filters; free device memory or use implicit_gemm");
  }
}

// ---- wgmma (step 7, sm_90a) -------------------------------------------------------
/// The wgmma kernel with epilogue `ep`; false (nothing enqueued) where it does
/// not run (see conv2d_wgmma_try_launch) or was not compiled for `ep`.
template <class Epilogue>
bool launch_conv2d_implicit_gemm_wgmma(int device, const conv2d_args<float>& a, Epilogue ep, cudaStream_t stream) {
  if constexpr (conv2d_wgmma_epilogue_v<Epilogue>) {
    return conv2d_wgmma_try_launch(device, a, ep, stream);
  } else {
    return false;
  }
}

/// conv2d_variant::implicit_gemm_wgmma by name: runs, or errc::unsupported saying
/// why not (validate.cpp has already refused math exact and strides > 1).
template <class Epilogue>
void launch_conv2d_wgmma_by_name(const char* what, int device, const conv2d_args<float>& a, Epilogue ep,
                                 cudaStream_t stream) {
  if constexpr (!conv2d_wgmma_epilogue_v<Epilogue>) {
    throw_unsupported(what,
                      "conv2d_variant::implicit_gemm_wgmma is precompiled in the library (sm_90a) for "
                      "conv2d_options' bias and ReLU only, not for your own epilogue functor; use "
                      "implicit_gemm_tf32 or best");
  } else {
    const int cc = compute_capability(device);
    if (cc != 90) {
      throw_unsupported(what,
                        "conv2d_variant::implicit_gemm_wgmma needs Hopper's wgmma instructions (compute "
                        "capability 9.0); this device is sm_" +
                            std::to_string(cc) + ". Use implicit_gemm_tf32 or best");
    }
    if (!conv2d_wgmma_available(device)) {
      throw_unsupported(what,
                        "this build of kernelforge holds no sm_90a code, so implicit_gemm_wgmma is unavailable; add "
                        "90 to CMAKE_CUDA_ARCHITECTURES (and keep KERNELFORGE_ENABLE_SM90A on)");
    }
    if (!launch_conv2d_implicit_gemm_wgmma(device, a, ep, stream)) {
      throw_unsupported(what,
                        "conv2d_variant::implicit_gemm_wgmma could not run: no workspace for the NHWC copy of x "
                        "and the padded filter, more than 2^31 tiles, or no cuTensorMapEncodeTiled in the driver; "
                        "free device memory or use implicit_gemm_tf32");
    }
  }
}

/// The GEMM-shaped variants and `best` with epilogue `ep`: TF32 when options.math
/// is tf32 (wgmma on sm_90 for the layers conv2d_wgmma_preferred names, else mma.sync on sm_80+), else the exact kernel
/// plan.hpp chooses for the layer (Winograd fused or not, the pipelined or the plain implicit GEMM). Other variants:
/// not here.
template <class Epilogue>
void dispatch_conv2d_gemm(const char* what, int device, const conv2d_args<float>& a, const conv2d_options& options,
                          Epilogue ep) {
  switch (options.variant) {
    case conv2d_variant::implicit_gemm: return launch_conv2d_implicit_gemm(what, device, a, ep, options.stream);
    case conv2d_variant::implicit_gemm_pipelined:
      return launch_conv2d_implicit_gemm_pipelined(what, device, a, ep, options.stream);
    case conv2d_variant::winograd:
      if (!launch_conv2d_winograd(what, device, a, ep, options.stream)) {
        throw error(errc::out_of_memory, std::string(what) +
                                             ": conv2d_variant::winograd could not allocate its workspace for the "
                                             "transformed filters, inputs and products; free device memory or use "
                                             "implicit_gemm");
      }
      return;
    case conv2d_variant::winograd_fused:
      return launch_conv2d_winograd_fused_by_name(what, device, a, ep, options.stream);
    case conv2d_variant::implicit_gemm_tf32: {
      const int cc = compute_capability(device);
      if (cc < mma_sync_min_cc) {
        throw_unsupported(what,
                          "conv2d_variant::implicit_gemm_tf32 needs TF32 tensor cores (compute capability 8.0 or "
                          "newer); this device is sm_" +
                              std::to_string(cc) + ". Use implicit_gemm (exact fp32)");
      }
      if (!launch_conv2d_implicit_gemm_tf32(what, device, a, ep, options.stream)) {
        throw_unsupported(what, "this build of kernelforge holds no sm_80+ code for this device (sm_" +
                                    std::to_string(cc) + "), so implicit_gemm_tf32 is unavailable; add " +
                                    std::to_string(cc) + " to CMAKE_CUDA_ARCHITECTURES");
      }
      return;
    }
    case conv2d_variant::implicit_gemm_wgmma: return launch_conv2d_wgmma_by_name(what, device, a, ep, options.stream);
    default: break;  // best
  }
  if (options.math == math_mode::tf32 &&
      conv2d_wgmma_preferred(static_cast<std::size_t>(a.c), static_cast<std::size_t>(a.stride_h),
                             static_cast<std::size_t>(a.stride_w)) &&
      launch_conv2d_implicit_gemm_wgmma(device, a, ep, options.stream)) {
    return;
  }
  if (options.math == math_mode::tf32 && compute_capability(device) >= mma_sync_min_cc &&
      launch_conv2d_implicit_gemm_tf32(what, device, a, ep, options.stream)) {
    return;
  }
  switch (choose_conv2d_exact_kernel(static_cast<std::size_t>(a.c), static_cast<std::size_t>(a.k),
                                     static_cast<std::size_t>(a.r), static_cast<std::size_t>(a.s),
                                     static_cast<std::size_t>(a.stride_h), static_cast<std::size_t>(a.stride_w),
                                     static_cast<std::size_t>(a.dilation_h), static_cast<std::size_t>(a.dilation_w))) {
    case conv2d_exact_kernel::winograd_fused:
      if (launch_conv2d_winograd_fused(what, device, a, ep, options.stream, true)) return;
      [[fallthrough]];  // waves not filled, too little shared memory or no workspace: step 6
    case conv2d_exact_kernel::winograd:
      if (launch_conv2d_winograd(what, device, a, ep, options.stream)) return;
      break;  // no workspace: the implicit GEMM needs none
    case conv2d_exact_kernel::implicit_gemm_pipelined:
      return launch_conv2d_implicit_gemm_pipelined(what, device, a, ep, options.stream);
    case conv2d_exact_kernel::implicit_gemm: break;
  }
  launch_conv2d_implicit_gemm(what, device, a, ep, options.stream);
}

}  // namespace kf::detail
