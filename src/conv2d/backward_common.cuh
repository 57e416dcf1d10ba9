// SPDX-License-Identifier: Apache-2.0
// What the gradients' launchers (backward_data.cu: dx, backward_filter.cu: dw
// and dbias) share: the grid of the passes (kernels/conv2d/backward/passes.cuh),
// dy read through the ReLU mask, workspace sizes, dy's spread / reordering, and
// the cap on im2col and dcol matrices, the slabs' sum and the entries of dw's
// other units (backward_filter_fp32.cu: exact fp32 NCHW; backward_filter_sm90.cu:
// steps 3, 4 and 9). Host code, in kf::detail::conv2d_grad.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "kernelforge/conv_backward.hpp"
#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/conv2d/args.cuh"
#include "kernelforge/kernels/conv2d/backward/passes.cuh"
#include "kernelforge/kernels/runtime/launcher.hpp"

namespace kf::detail::conv2d_grad {

using z = std::size_t;

/// im2col chunks of images stay within this many bytes.
constexpr z conv2d_im2col_max_bytes = z{1} << 30;

/// Blocks of conv2d_grad_block threads for a grid-stride loop over `items`:
/// the runtime's plan, capped at one wave of 16 blocks an SM.
inline unsigned grad_blocks(int device, z items) {
  constexpr int blocks_per_sm = 16;
  return plan_grid_stride(limits_for(device), conv2d_grad_block, blocks_per_sm, items, conv2d_grad_block).grid;
}

template <class T>
conv2d_dy_reader<T> dy_reader(const T* dy, const conv2d_backward_options& o, const T* relu_y) {
  return conv2d_dy_reader<T>{dy, o.relu ? relu_y : nullptr, o.relu_threshold};
}

inline z aligned_bytes(z elements, z element_bytes) { return round_up(elements * element_bytes, workspace_alignment); }

/// conv2d_dy_spread from layout in_nhwc to out_nhwc (NCHW to NCHW, NHWC to
/// NHWC, or NCHW to NHWC): dst is N x K x rows x cols.
template <class T>
void launch_dy_spread(const char* what, int device, bool in_nhwc, bool out_nhwc, conv2d_dy_reader<T> dy, T* dst, z n,
                      z k, z p, z q, z rows, z cols, z stride_h, z stride_w, cudaStream_t stream) {
  const unsigned blocks = grad_blocks(device, n * k * rows * cols);
  const auto i = [](z v) { return static_cast<int>(v); };
  if (in_nhwc) {
    conv2d_dy_spread<T, true, true><<<blocks, conv2d_grad_block, 0, stream>>>(dy, dst, i(n), i(k), i(p), i(q), i(rows),
                                                                              i(cols), i(stride_h), i(stride_w));
  } else if (out_nhwc) {
    conv2d_dy_spread<T, false, true><<<blocks, conv2d_grad_block, 0, stream>>>(dy, dst, i(n), i(k), i(p), i(q), i(rows),
                                                                               i(cols), i(stride_h), i(stride_w));
  } else {
    conv2d_dy_spread<T, false, false><<<blocks, conv2d_grad_block, 0, stream>>>(
        dy, dst, i(n), i(k), i(p), i(q), i(rows), i(cols), i(stride_h), i(stride_w));
  }
  check_launch(what);
}

/// dw (rows x cols, in T) = the sum of `split` fp32 slabs of it at `partial`, in
/// slab order (the shared split-k reduction), for gradient steps 3 to 6
/// (backward_filter.cu; float, __half and __nv_bfloat16).
template <class T>
void sum_wgrad_slabs(const char* what, int device, const float* partial, z rows, z cols, int split, T* dw,
                     cudaStream_t stream);

/// best's dw of an exact-fp32 NCHW layer on the CUDA cores
/// (backward_filter_fp32.cu): gradient step 6 (Winograd) for 3x3 stride-1 layers
/// of K, C >= 128, else step 5 where K <= 128; false (nothing enqueued) where
/// neither takes it, and the caller goes on to step 2.
bool wgrad_exact_nchw_fp32(const char* what, int device, const conv2d_params& p, const conv2d_args<float>& a,
                           const float* dy, float* dw, const conv2d_backward_options& o, const float* relu_y);

/// best's dw of an NHWC layer on sm_90 (backward_filter_sm90.cu): gradient step 3
/// (16-bit) or 4 (float under math_mode::tf32; implicit_gemm_wgmma too) on the
/// wgmma implicit GEMM; false (nothing enqueued but possibly the mask or the
/// fold) where it does not run, and the caller goes on to step 2.
template <class T>
bool wgrad_as_wgmma(const char* what, int device, const conv2d_params& p, const conv2d_args<T>& layer, const T* dy,
                    T* dw, const conv2d_backward_options& o, const T* relu_y);

/// best's dw of a pointwise float NHWC layer under math_mode::tf32 on sm_90
/// (backward_filter_sm90.cu): gradient step 9; false (nothing enqueued) where it
/// does not run.
bool wgrad_as_pointwise_mma(const char* what, int device, const conv2d_params& p, const conv2d_args<float>& layer,
                            const float* dy, float* dw, const conv2d_backward_options& o, const float* relu_y);

}  // namespace kf::detail::conv2d_grad
