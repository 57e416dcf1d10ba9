// SPDX-License-Identifier: Apache-2.0
// Step 7 -- implicit_gemm_wgmma, host interface: what the conv2d launcher
// (gemm_launch.cuh) calls. The kernel (07_implicit_gemm_wgmma.cuh) and its
// launch (src/conv2d/wgmma_sm90a.cu: float NCHW; wgmma_sm90a_nhwc_<type>.cu:
// NHWC) are compiled for sm_90a only (src/conv2d/sources.cmake), for the
// library's own epilogues: identity and the options' bias / threshold ReLU.
// Without 90 in CMAKE_CUDA_ARCHITECTURES, those units compile to stubs that
// return false.
#pragma once

#include <cstddef>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "args.cuh"
#include "kernelforge/epilogue.cuh"
#include "wgmma_k_steps.hpp"
#include "wgmma_plan.hpp"

namespace kf::detail {

/// The epilogues the library's sm_90a object is compiled for (wgmma_sm90a.cu):
/// identity and the options' bias / threshold ReLU. A user's own functor
/// (<kernelforge/conv.cuh>) never reaches the wgmma kernel.
template <class Epilogue>
inline constexpr bool conv2d_wgmma_epilogue_v =
    std::is_same_v<Epilogue, epilogue::identity> || std::is_same_v<Epilogue, epilogue::bias_relu_threshold<float>>;

/// True when the wgmma conv2d kernel is compiled into this library and
/// `device` is compute capability 9.0 (sm_90a code runs there only).
bool conv2d_wgmma_available(int device);

/// Enqueues the layer `a` (stride 1: conv2d_wgmma_unsupported_reason == nullptr)
/// with the wgmma kernel on `device` (the current device) and returns true; returns false,
/// having enqueued nothing, when the kernel is not available on it, the driver
/// has no cuTensorMapEncodeTiled, a tensor map cannot be encoded, or the
/// workspace (the NHWC input and the padded filter) cannot be allocated.
bool conv2d_wgmma_try_launch(int device, const conv2d_args<float>& a, const epilogue::identity& ep,
                             cudaStream_t stream);
bool conv2d_wgmma_try_launch(int device, const conv2d_args<float>& a, const epilogue::bias_relu_threshold<float>& ep,
                             cudaStream_t stream);

/// math_mode::fp32_emulated (step 9, 09_implicit_gemm_wgmma_fp32_emulated.cuh):
/// the float layer `a` in `layout` (NCHW: x NCHW, weight KCRS, y NKPQ; NHWC: x
/// NHWC, weight KRSC, y NPQK), one that conv2d_fp32_emulated_unsupported_reason
/// accepts: its operands split into a pooled workspace of 8 (N H W + K R S)
/// round_up(C, 32) bytes, then the kernel; returns true. Returns false, having
/// enqueued nothing, when the kernel is not available on `device`, the
/// driver has no cuTensorMapEncodeTiled, a map cannot be encoded, a count
/// overflows the kernel's ints or the workspace cannot be allocated.
bool conv2d_fp32_emulated_try_launch(int device, const conv2d_args<float>& a, conv2d_layout layout,
                                     const epilogue::identity& ep, cudaStream_t stream);
bool conv2d_fp32_emulated_try_launch(int device, const conv2d_args<float>& a, conv2d_layout layout,
                                     const epilogue::bias_relu_threshold<float>& ep, cudaStream_t stream);

/// The NHWC layer `a` (x NHWC, weight KRSC, y NPQK; T float (TF32 products),
/// __half or __nv_bfloat16; conv2d_nhwc_wgmma_unsupported_reason == nullptr),
/// read in place by TMA, no workspace: enqueues it and returns true; returns
/// false, having enqueued nothing, when the kernel is not available on
/// `device`, the driver has no cuTensorMapEncodeTiled or a map cannot be
/// encoded. Defined for the epilogues of conv2d_wgmma_epilogue_v. k_steps: the
/// plan's choice (what the library runs), or one tap a k-step whatever the plan
/// would choose (bench_conv's conv2d_nhwc/<type>/columns_vs_one_tap rows, which
/// measure the planner's filter-column tiles against it).
template <class T, class Epilogue>
bool conv2d_nhwc_wgmma_try_launch(int device, const conv2d_args<T>& a, const Epilogue& ep, cudaStream_t stream,
                                  conv2d_nhwc_k_steps k_steps = conv2d_nhwc_k_steps::planned);

/// dx's forward on step 7 reading the layer's filter where it lies
/// (conv2d_wgmma_filter::dgrad_unturned; src/conv2d/backward_data.cu): `f` is
/// the forward convolution whose output is dx -- f.x the (spread, masked) dy,
/// NHWC over f.c = the layer's K channels, stride 1; f.wt the layer's own
/// filter K x R x S x C, not turned; f.k = the layer's C; f.y = dx; no bias.
/// T: __half or __nv_bfloat16. Enqueues it and returns true; returns false,
/// having enqueued nothing, where the kernel is not available on `device`, TMA
/// cannot read f.x and f.wt in place (conv2d_dgrad_wgmma_reads_in_place), a
/// count overflows the kernel's ints or a map cannot be encoded: the caller
/// then turns the filter into a workspace and runs the forward.
template <class T>
bool conv2d_nhwc_wgmma_dgrad_try_launch(int device, const conv2d_args<T>& f, cudaStream_t stream);

/// The tile plan conv2d_nhwc_wgmma_try_launch runs the NHWC layer `a` with (`a`
/// itself where read in place, else its column fold): halo tiles, one-tap boxes, or -- 16-bit,
/// where they load fewer rows -- filter-column tiles (plan_conv2d_nhwc_wgmma);
/// one-tap boxes always with conv2d_nhwc_k_steps::one_tap.
template <class T>
conv2d_wgmma_tile plan_conv2d_nhwc_wgmma_of(const conv2d_args<T>& a, std::size_t element_bytes = sizeof(T),
                                            conv2d_nhwc_k_steps k_steps = conv2d_nhwc_k_steps::planned) {
  using z = std::size_t;
  if (k_steps == conv2d_nhwc_k_steps::one_tap) {
    return choose_conv2d_wgmma_tile(static_cast<z>(a.n), static_cast<z>(a.p), static_cast<z>(a.q), static_cast<z>(a.k),
                                    static_cast<z>(a.stride_h), static_cast<z>(a.stride_w));
  }
  return plan_conv2d_nhwc_wgmma(static_cast<z>(a.n), static_cast<z>(a.p), static_cast<z>(a.q), static_cast<z>(a.k),
                                static_cast<z>(a.c), static_cast<z>(a.r), static_cast<z>(a.s),
                                static_cast<z>(a.stride_h), static_cast<z>(a.stride_w), static_cast<z>(a.dilation_h),
                                element_bytes, static_cast<z>(a.dilation_w));
}

/// The layer the column fold of the NHWC layer `a` makes (wgmma_nhwc_fold.cuh):
/// R x 1 at stride (stride_h, 1), no padding or dilation along w, over
/// c_folded channels (conv2d_nhwc_folded_channels) of the folded input x_folded
/// (N x H x Q x c_folded); y, the filter and the bias stay `a`'s.
template <class T>
conv2d_args<T> conv2d_nhwc_column_fold_of(const conv2d_args<T>& a, int c_folded, const T* x_folded) {
  conv2d_args<T> f = a;
  f.x = x_folded;
  f.c = c_folded;
  f.w = a.q;
  f.s = 1;
  f.stride_w = 1;
  f.pad_w = 0;
  f.dilation_w = 1;
  f.rs = a.r;
  f.crs = f.c * f.rs;
  f.hw = a.h * a.q;
  f.div_rs = fast_divmod(static_cast<unsigned>(f.rs));
  f.div_s = fast_divmod(1u);
  return f;
}

/// Enqueues the column fold of `a`'s input into x_folded (N x H x Q x c_folded,
/// 16-byte aligned; c_folded = conv2d_nhwc_folded_channels(S, C, sizeof(T)))
/// and returns true; false, having enqueued nothing, where the kernel is not
/// available on `device`, x_folded is not 16-byte aligned or an index would
/// overflow its ints. The forward's wgmma launch folds this way; so does the
/// filter gradient of such layers (src/conv2d/backward_filter.cu). `call` names the
/// call in errors.
template <class T>
bool conv2d_nhwc_fold_input(int device, const conv2d_args<T>& a, std::size_t c_folded, T* x_folded, cudaStream_t stream,
                            const char* call);

}  // namespace kf::detail
