// SPDX-License-Identifier: Apache-2.0
// Steps 7 and 12, host side, shared by their translation units (wgmma_sm90a.cu: float NCHW;
// wgmma_sm90a_nhwc_{f32,f16,bf16}.cu: NHWC, one element type each, so that they
// compile in parallel -- as one unit it was the longest of the sm_90 build, 35 s):
// the launch of a planned kernel, the NHWC launchers (kernel:
// 07_implicit_gemm_wgmma.cuh; interface: wgmma_sm90a.hpp) and, per unit,
// KF_CONV2D_NHWC_WGMMA_INSTANCE(T). Private to src/conv2d.
//
// Each unit must instantiate no kernel that another unit instantiates too
// (their weak copies could be the ones the program registers, and other GPUs
// would then find no image): float NCHW and each NHWC element type run kernels
// of their own (07_implicit_gemm_wgmma.cuh's Layout and T), and nothing here
// includes gemm_launch.cuh or any other step.
#pragma once

#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if defined(KERNELFORGE_HAS_SM90A)

#include <climits>
#include <cstddef>
#include <cstdint>

#include <cuda.h>

#include "kernelforge/kernels/common/alignment.hpp"
#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/common/vector_access.cuh"
#include "kernelforge/kernels/conv2d/07_implicit_gemm_wgmma.cuh"
#include "kernelforge/kernels/conv2d/12_implicit_gemm_wgmma_halo.cuh"
#include "kernelforge/kernels/conv2d/wgmma_host.cuh"
#include "kernelforge/kernels/conv2d/wgmma_nhwc_fold.cuh"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/kernels/runtime/tensor_map.hpp"

namespace kf::detail {

namespace conv2d_wgmma_launch {

inline constexpr const char* what = "kf::conv2d_forward (implicit_gemm_wgmma)";

/// Kernel on the persistent grid: one CTA a tile, at most as many as the device holds at once.
template <auto Kernel, int Smem, class... Args>
void launch_persistent(int device, int tiles, cudaStream_t stream, const Args&... args) {
  const int resident = resident_clusters<Kernel>(device, conv2d_wgmma::threads, Smem, 1, what);
  const int grid = tiles < resident ? tiles : resident;
  Kernel<<<grid, conv2d_wgmma::threads, Smem, stream>>>(args...);
  check_launch(what);
}

template <class T, conv2d_layout Layout, int BN, class Epilogue, bool PingPong = false, int Rows = 1,
          conv2d_wgmma_filter Filter = conv2d_wgmma_filter::forward>
void launch_kernel(int device, const CUtensorMap& map_x, const CUtensorMap& map_w, const conv2d_wgmma::params<T>& prm,
                   const Epilogue& ep, cudaStream_t stream, const CUtensorMap& map_y) {
  launch_persistent<&conv2d_implicit_gemm_wgmma<T, Layout, BN, PingPong, Epilogue, Rows, Filter>,
                    conv2d_wgmma::smem_bytes<BN, Rows>>(device, prm.tiles, stream, map_x, map_w, map_y, prm, ep);
}

/// Step 12 (halo tiles, ping-pong) for the plan's tile width.
template <class T, class Epilogue, conv2d_wgmma_filter Filter>
void launch_halo(int device, const CUtensorMap& map_x, const CUtensorMap& map_w, const conv2d_wgmma::params<T>& prm,
                 std::size_t bn, const Epilogue& ep, cudaStream_t stream) {
  if (bn == 64) {
    return launch_persistent<&conv2d_implicit_gemm_wgmma_halo<T, 64, Epilogue, Filter>,
                             conv2d_wgmma::halo_smem_bytes<64>>(device, prm.tiles, stream, map_x, map_w, prm, ep);
  }
  launch_persistent<&conv2d_implicit_gemm_wgmma_halo<T, 128, Epilogue, Filter>, conv2d_wgmma::halo_smem_bytes<128>>(
      device, prm.tiles, stream, map_x, map_w, prm, ep);
}

/// The kernel for the plan's tile width and schedule (wgmma_plan.hpp); Rows:
/// the taps a k-step holds (3: filter-column tiles, 16-bit NHWC); Filter: where
/// its B operand comes from (the unturned filter: dx, 16-bit NHWC); map_y: y's
/// map where prm.staged_y (else unread).
template <class T, conv2d_layout Layout, class Epilogue, int Rows = 1,
          conv2d_wgmma_filter Filter = conv2d_wgmma_filter::forward>
void launch_planned(int device, const CUtensorMap& map_x, const CUtensorMap& map_w, const conv2d_wgmma::params<T>& prm,
                    std::size_t bn, bool pingpong, const Epilogue& ep, cudaStream_t stream,
                    const CUtensorMap& map_y = CUtensorMap{}) {
  if constexpr (Layout == conv2d_layout::nhwc) {  // NCHW: cooperative only (ping-pong unmeasured there)
    if (pingpong && bn == 64) {
      return launch_kernel<T, Layout, 64, Epilogue, true, Rows, Filter>(device, map_x, map_w, prm, ep, stream, map_y);
    }
    if (pingpong) {
      return launch_kernel<T, Layout, 128, Epilogue, true, Rows, Filter>(device, map_x, map_w, prm, ep, stream, map_y);
    }
  }
  if (bn == 64) {
    return launch_kernel<T, Layout, 64, Epilogue, false, Rows, Filter>(device, map_x, map_w, prm, ep, stream, map_y);
  }
  launch_kernel<T, Layout, 128, Epilogue, false, Rows, Filter>(device, map_x, map_w, prm, ep, stream, map_y);
}

/// An NHWC plan's kernel: halo tiles (step 12), one tap a k-step, or the filter-column instances (16-bit only).
template <class T, class Epilogue, conv2d_wgmma_filter Filter = conv2d_wgmma_filter::forward>
void launch_planned_nhwc(int device, const CUtensorMap& map_x, const CUtensorMap& map_w,
                         const conv2d_wgmma::params<T>& prm, const conv2d_wgmma_tile& plan, bool pingpong,
                         const Epilogue& ep, cudaStream_t stream, const CUtensorMap& map_y = CUtensorMap{}) {
  constexpr conv2d_layout nhwc = conv2d_layout::nhwc;
  if (plan.halo_width != 0) return launch_halo<T, Epilogue, Filter>(device, map_x, map_w, prm, plan.bn, ep, stream);
  if constexpr (sizeof(T) == 2) {
    if (plan.filter_rows > 1) {
      constexpr int rows = static_cast<int>(conv2d_nhwc_wgmma_column_rows);
      return launch_planned<T, nhwc, Epilogue, rows, Filter>(device, map_x, map_w, prm, plan.bn, pingpong, ep, stream,
                                                             map_y);
    }
  }
  launch_planned<T, nhwc, Epilogue, 1, Filter>(device, map_x, map_w, prm, plan.bn, pingpong, ep, stream, map_y);
}

/// What an NHWC launch runs with: the tile plan, the kernel's parameters and the schedule.
template <class T>
struct nhwc_launch_plan {
  conv2d_wgmma_tile tile;
  conv2d_wgmma::params<T> prm;
  bool pingpong = false;
  std::size_t ring_stages = 0;  ///< the kernel's stages (wgmma_config.cuh's ring_stages for the tile)
};

/// The launch plan of the layer `f` the kernel computes (the caller's, or its
/// column fold); false where a count would overflow the kernel's ints.
template <class T>
bool plan_nhwc_launch(const conv2d_args<T>& f, conv2d_nhwc_k_steps k_steps, nhwc_launch_plan<T>& out) {
  using z = std::size_t;
  out.tile = plan_conv2d_nhwc_wgmma_of(f, sizeof(T), k_steps);
  if (!make_conv2d_wgmma_params(f, out.tile, out.prm)) return false;
  // Ping-pong by the tile's taps x channel blocks (its products), whatever a k-step holds.
  out.pingpong = conv2d_wgmma_pingpong(static_cast<z>(f.rs) * static_cast<z>(out.prm.c_chunks));
  out.ring_stages =
      static_cast<z>(conv2d_wgmma::ring_stages(static_cast<int>(out.tile.bn), static_cast<int>(out.tile.filter_rows)));
  out.prm.resident_filter =
      conv2d_wgmma_resident_filter(out.tile.tiles_k, out.pingpong, static_cast<z>(out.prm.k_steps), out.ring_stages);
  out.prm.tile_loads_together =
      conv2d_wgmma_tile_loads_together(out.prm.resident_filter, static_cast<z>(out.prm.k_steps), out.ring_stages);
  return true;
}

/// Whether the kernel stores a 16-bit pointwise layer's y through shared memory and TMA
/// (params::staged_y, by conv2d_wgmma_staged_y), and y's map for it (NPQ rows of K, boxes
/// of 64 channels x 64 pixels).
template <class T>
bool stage_y(const conv2d_args<T>& a, const nhwc_launch_plan<T>& run, CUtensorMap& map_y) {
  using z = std::size_t;
  const conv2d_wgmma::params<T>& prm = run.prm;
  return conv2d_wgmma_staged_y(sizeof(T), prm.n == 1 && prm.p == 1, run.pingpong, prm.resident_filter, run.tile.bn,
                               run.tile.filter_rows, static_cast<z>(prm.k_steps), run.ring_stages, static_cast<z>(a.k),
                               is_aligned(a.y, vector_bytes)) &&
         encode_sw128(map_y, static_cast<const T*>(a.y), static_cast<z>(a.k), static_cast<z>(prm.q),
                      static_cast<z>(a.k), static_cast<cuuint32_t>(conv2d_wgmma::block_c<T>),
                      static_cast<cuuint32_t>(conv2d_wgmma::wgmma_m));
}

/// The fold's geometry for `a` over c_folded channels; false where an index
/// would overflow the fold kernel's ints (x_folded's elements among them).
template <class T>
bool fold_geometry(const conv2d_args<T>& a, std::size_t c_folded, conv2d_nhwc_fold_geometry& fold) {
  using z = std::size_t;
  const z x_items = static_cast<z>(a.n) * static_cast<z>(a.h) * static_cast<z>(a.q) * c_folded;
  return x_items <= static_cast<z>(INT_MAX) &&
         make_conv2d_nhwc_fold_geometry(static_cast<z>(a.n), static_cast<z>(a.h), static_cast<z>(a.w),
                                        static_cast<z>(a.c), static_cast<z>(a.q), static_cast<z>(a.s),
                                        static_cast<z>(a.stride_w), static_cast<z>(a.pad_w),
                                        static_cast<z>(a.dilation_w), c_folded, sizeof(T), fold);
}

/// conv2d_nhwc_fold_columns of `a`'s input into x_folded (16-byte aligned);
/// `call` names the call in errors.
template <class T>
void launch_fold(int device, const conv2d_args<T>& a, const conv2d_nhwc_fold_geometry& fold, T* x_folded,
                 cudaStream_t stream, const char* call = what) {
  const unsigned blocks =
      conv2d_wgmma_repack_blocks(device, static_cast<std::size_t>(fold.vectors));  // a thread a 16-byte vector
  conv2d_nhwc_fold_columns<T><<<blocks, conv2d_wgmma::filter_block, 0, stream>>>(a.x, x_folded, fold);
  check_launch(call);
}

}  // namespace conv2d_wgmma_launch

/// NHWC (any T): the kernel reads x and the filter in place where TMA can
/// (conv2d_nhwc_wgmma_reads_in_place), else from their column fold (the
/// filter's S columns folded into channels, in a pooled workspace: an R x 1
/// layer over round_up(S C, 16 bytes) channels; 07_implicit_gemm_wgmma.cuh).
/// A pointwise layer runs as one row of N H W pixels (conv2d_one_row_if_pointwise).
template <class T, class Epilogue>
bool conv2d_nhwc_wgmma_try_launch(int device, const conv2d_args<T>& layer, const Epilogue& ep, cudaStream_t stream,
                                  conv2d_nhwc_k_steps k_steps) {
  if (!conv2d_wgmma_available(device)) return false;
  using z = std::size_t;
  const conv2d_args<T> a = conv2d_one_row_if_pointwise(layer);
  if (conv2d_nhwc_wgmma_unsupported_reason(static_cast<z>(a.stride_h), static_cast<z>(a.stride_w)) != nullptr) {
    return false;
  }
  const bool in_place = conv2d_nhwc_wgmma_reads_in_place(static_cast<z>(a.c), sizeof(T), a.x, a.wt);
  const z c_folded = conv2d_nhwc_folded_channels(static_cast<z>(a.s), static_cast<z>(a.c), sizeof(T));
  const z x_items = static_cast<z>(a.n) * static_cast<z>(a.h) * static_cast<z>(a.q) * c_folded;
  const z w_items = static_cast<z>(a.k) * static_cast<z>(a.r) * c_folded;
  conv2d_nhwc_fold_geometry fold;
  if (!in_place && (w_items > static_cast<z>(INT_MAX) || !conv2d_wgmma_launch::fold_geometry(a, c_folded, fold)))
    return false;
  // The layer the kernel computes: `a`, or its column fold (x_folded set below).
  conv2d_args<T> f = in_place ? a : conv2d_nhwc_column_fold_of(a, static_cast<int>(c_folded), a.x);
  conv2d_wgmma_launch::nhwc_launch_plan<T> run;
  if (!conv2d_wgmma_launch::plan_nhwc_launch(f, k_steps, run)) return false;
  const conv2d_wgmma_tile& plan = run.tile;
  CUtensorMap map_x{}, map_w{};
  if (in_place) {
    if (!encode_conv2d_wgmma_maps(map_x, map_w, a.x, a.wt, a, static_cast<z>(a.c), static_cast<z>(a.c), plan))
      return false;
    CUtensorMap map_y{};
    run.prm.staged_y = conv2d_wgmma_launch::stage_y(a, run, map_y);
    conv2d_wgmma_launch::launch_planned_nhwc<T>(device, map_x, map_w, run.prm, plan, run.pingpong, ep, stream, map_y);
    return true;
  }
  const z x_bytes = round_up(x_items * sizeof(T), workspace_alignment);
  // Returned to the pool on `stream` when this function returns or throws.
  const pooled_workspace scratch(device, x_bytes + w_items * sizeof(T), stream);
  if (scratch.data() == nullptr) return false;  // no pool or no memory: best takes the naive kernel
  // x_folded: the workspace's start (256-byte aligned, as cudaMalloc's); w_folded x_bytes on, a multiple
  // of 256. The fold stores whole 16-byte vectors into x_folded (TMA needs 16 bytes too: encode_conv2d_wgmma_maps).
  T* const x_folded = scratch.data<T>();
  T* const w_folded = reinterpret_cast<T*>(scratch.data<char>() + x_bytes);
  if (!is_aligned(x_folded, vector_bytes)) return false;
  if (!encode_conv2d_wgmma_maps(map_x, map_w, x_folded, w_folded, f, c_folded, c_folded, plan)) return false;
  // Nothing is enqueued above: from here on the call runs to the end (or throws).
  conv2d_wgmma_launch::launch_fold(device, a, fold, x_folded, stream);
  conv2d_krsc_fold_columns<T><<<conv2d_wgmma_repack_blocks(device, w_items), conv2d_wgmma::filter_block, 0, stream>>>(
      a.wt, w_folded, a.k, a.r, a.s * a.c, f.c);
  check_launch(conv2d_wgmma_launch::what);
  conv2d_wgmma_launch::launch_planned_nhwc<T>(device, map_x, map_w, run.prm, plan, run.pingpong, ep, stream);
  return true;
}

/// dx's forward `layer` (16-bit) with the layer's filter read unturned: the
/// forward's plan, schedule and input map as for a layer read in place (a pointwise
/// one as one row of pixels), the filter's map and kernels those of
/// conv2d_wgmma_filter::dgrad_unturned.
template <class T>
bool conv2d_nhwc_wgmma_dgrad_try_launch(int device, const conv2d_args<T>& layer, cudaStream_t stream) {
  using z = std::size_t;
  const conv2d_args<T> f = conv2d_one_row_if_pointwise(layer);
  if (!conv2d_wgmma_available(device) || f.stride_h != 1 || f.stride_w != 1) return false;
  if (!conv2d_dgrad_wgmma_reads_in_place(static_cast<z>(f.c), static_cast<z>(f.k), sizeof(T), f.x, f.wt)) return false;
  conv2d_wgmma_launch::nhwc_launch_plan<T> run;
  if (!conv2d_wgmma_launch::plan_nhwc_launch(f, conv2d_nhwc_k_steps::planned, run)) return false;
  CUtensorMap map_x{}, map_w{};
  if (!encode_conv2d_wgmma_x_map(map_x, f.x, f, static_cast<z>(f.c), run.tile) ||
      !encode_conv2d_wgmma_unturned_filter_map(map_w, f.wt, f)) {
    return false;
  }
  conv2d_wgmma_launch::launch_planned_nhwc<T, epilogue::identity, conv2d_wgmma_filter::dgrad_unturned>(
      device, map_x, map_w, run.prm, run.tile, run.pingpong, epilogue::identity{}, stream);
  return true;
}

template <class T>
bool conv2d_nhwc_fold_input(int device, const conv2d_args<T>& a, std::size_t c_folded, T* x_folded, cudaStream_t stream,
                            const char* call) {
  conv2d_nhwc_fold_geometry fold;
  if (!conv2d_wgmma_available(device) || !is_aligned(x_folded, vector_bytes) ||
      !conv2d_wgmma_launch::fold_geometry(a, c_folded, fold)) {
    return false;
  }
  conv2d_wgmma_launch::launch_fold(device, a, fold, x_folded, stream, call);
  return true;
}

}  // namespace kf::detail

#else  // !KERNELFORGE_HAS_SM90A: the library's list has no 90; nothing to run.

namespace kf::detail {

template <class T, class Epilogue>
bool conv2d_nhwc_wgmma_try_launch(int, const conv2d_args<T>&, const Epilogue&, cudaStream_t, conv2d_nhwc_k_steps) {
  return false;
}

template <class T>
bool conv2d_nhwc_wgmma_dgrad_try_launch(int, const conv2d_args<T>&, cudaStream_t) {
  return false;
}

template <class T>
bool conv2d_nhwc_fold_input(int, const conv2d_args<T>&, std::size_t, T*, cudaStream_t, const char*) {
  return false;
}

}  // namespace kf::detail

#endif

/// The instances of element type T that the NHWC launcher (nhwc_launch.cuh) and
/// the gradients' (backward_data.cu, backward_filter.cu) call, of either
/// definition above, at namespace scope; one unit each.
#define KF_CONV2D_NHWC_WGMMA_INSTANCE(T)                                                                              \
  template bool conv2d_nhwc_wgmma_try_launch(int, const conv2d_args<T>&, const epilogue::identity&, cudaStream_t,     \
                                             conv2d_nhwc_k_steps);                                                    \
  template bool conv2d_nhwc_wgmma_try_launch(int, const conv2d_args<T>&, const epilogue::bias_relu_threshold<float>&, \
                                             cudaStream_t, conv2d_nhwc_k_steps);                                      \
  template bool conv2d_nhwc_fold_input(int, const conv2d_args<T>&, std::size_t, T*, cudaStream_t, const char*);
