// SPDX-License-Identifier: Apache-2.0
// Gradient steps 3 and 4 -- implicit_gemm_wgmma (16-bit, and float in TF32),
// host interface: what the gradients' launcher (src/conv2d/backward_filter.cu)
// calls. The kernels (03_wgrad_wgmma.cuh, 04_wgrad_wgmma_tf32.cuh) and their
// launches (src/conv2d/backward_sm90a.cu) are compiled for sm_90a only
// (src/conv2d/sources.cmake); without 90 in CMAKE_CUDA_ARCHITECTURES the
// launch compiles to a stub that returns false. The split's reduction is not
// here: its kernel is the shared split_k_reduce, which other translation units
// instantiate for every architecture, so backward_filter.cu launches it (an sm_90a-only
// copy of it could be the one the program registers).
#pragma once

#include <cuda_runtime_api.h>

#include "../args.cuh"
#include "01_naive.cuh"  // conv2d_dy_reader
#include "wgrad_wgmma_plan.hpp"

namespace kf::detail {

/// True when the wgrad wgmma kernel is compiled into this library and `device`
/// is compute capability 9.0 (sm_90a code runs there only).
bool conv2d_wgrad_wgmma_available(int device);

/// What a filter-gradient launch enqueued.
enum class wgrad_launched {
  nothing,  ///< the kernel does not run here: nothing enqueued
  dw,       ///< dw written (unsplit, or the split's slabs summed in the kernel)
  slabs,    ///< the split's fp32 slabs, for the caller to sum into dw
};

/// Enqueues dw of the NHWC layer `a` (a.x: x; geometry from `a`; T = __half or
/// __nv_bfloat16) from dy (NPQK, unmasked or already masked) with the plan
/// `plan` (plan_conv2d_wgrad_wgmma): unsplit it writes dw; split (plan.split >
/// 1) it writes plan.split slabs of K x RSC fp32 sums to `partial` and, given
/// `arrivals` (plan.tiles() counters: the workspace after the slabs,
/// plan.workspace_bytes), sums them into dw itself in a cooperative launch
/// (wgrad_wgmma/slab_sum.cuh) where the plan gains by it
/// (conv2d_wgrad_wgmma_sums_in_kernel); elsewhere, where that launch is refused
/// (fewer resident CTAs than the grid) or `arrivals` is null, the caller sums
/// the slabs.
/// Returns wgrad_launched::dw or ::slabs; or ::nothing, having enqueued nothing,
/// when the kernel is not available on `device`, the layer or its pointers are
/// outside what it computes (conv2d_wgrad_wgmma_unsupported_reason,
/// conv2d_wgrad_wgmma_aligned), a count overflows its ints or the grid, a split
/// plan has no `partial`, or the driver has no cuTensorMapEncodeTiled or
/// rejects a map.
template <class T>
wgrad_launched conv2d_wgrad_wgmma_try_launch(int device, const conv2d_args<T>& a, const T* dy, T* dw, float* partial,
                                             unsigned* arrivals, const conv2d_wgrad_wgmma_plan& plan,
                                             cudaStream_t stream);

/// Enqueues dw of the float NHWC layer `a` (a.x: x, 16-byte aligned; geometry
/// from `a`) in TF32 (gradient step 4) with the plan `plan`
/// (plan_conv2d_wgrad_wgmma, element_bytes 4): first dy_t, dy read through
/// `dy` (the ReLU mask) and written in patch order into `dy_t` (K x
/// plan.dy_t_columns() floats, 16-byte aligned: conv2d_dy_patch_t), then the
/// kernel. Unsplit it writes dw; split (plan.split > 1) it writes plan.split
/// slabs of K x RSC fp32 sums to `partial` (plan.workspace_bytes), which the
/// caller reduces into dw. Returns true; or false, having enqueued nothing,
/// as conv2d_wgrad_wgmma_try_launch does (the layer or x outside its reach:
/// conv2d_wgrad_wgmma_unsupported_reason with 4-byte elements,
/// conv2d_wgrad_wgmma_aligned; a plan of 16-bit patches or a tiling it has no
/// kernel for).
bool conv2d_wgrad_tf32_try_launch(int device, const conv2d_args<float>& a, conv2d_dy_reader<float> dy, float* dy_t,
                                  float* dw, float* partial, const conv2d_wgrad_wgmma_plan& plan, cudaStream_t stream);

}  // namespace kf::detail
