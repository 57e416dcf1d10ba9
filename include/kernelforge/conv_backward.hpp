// SPDX-License-Identifier: Apache-2.0
// conv2d's gradients: what a training step needs after conv2d_forward
// (<kernelforge/conv.hpp>), for the same layouts, element types and math modes.
// Each call validates its arguments, enqueues its work on options.stream and
// returns without synchronizing the host.
//
// With the forward  y[n][k][p][q] = bias[k] + sum_{c,r,s} w[k][c][r][s] * x[n][c][p sh - ph + r dh][q sw - pw + s dw]
// and dy = dL/dy (the gradient of the loss with respect to y):
//
//   conv2d_backward_data:   dx[n][c][h][w] = sum over (k, r, s) and the (p, q) with
//                           p sh - ph + r dh = h and q sw - pw + s dw = w of  w[k][c][r][s] * dy[n][k][p][q]
//   conv2d_backward_filter: dw[k][c][r][s] = sum over (n, p, q) of
//                             dy[n][k][p][q] * x[n][c][p sh - ph + r dh][q sw - pw + s dw]
//                           dbias[k]       = sum over (n, p, q) of dy[n][k][p][q]   (dbias may be null)
//
// - params is the forward's conv2d_params unchanged (the same extents, stride,
//   padding, dilation and layout; the same checks and messages). Tensors are
//   dense in params.layout: NCHW (x, dx N x C x H x W; w, dw K x C x R x S;
//   dy N x K x P x Q) or NHWC (x[n][h][w][c], w[k][r][s][c], dy[n][p][q][k]).
// - Types: float in both layouts; __half and __nv_bfloat16 in NHWC only. Sums
//   are fp32 (compute_t<T>), rounded to T once (the 16-bit dw: once per chunk of
//   images, see below). math_mode::tf32 lets float data take TF32 tensor cores.
// - Every output element is written: input pixels no filter tap reaches get
//   dx = 0; N = 0 gives dw = 0 and dbias = 0; K = 0 gives dx = 0.
// - The forward's fused threshold ReLU (conv2d_options::relu): set options.relu
//   and options.relu_threshold as in the forward and pass the forward's output
//   as relu_y (N x K x P x Q in params.layout); dy is then read as
//   (relu_y <= relu_threshold ? 0 : dy), kf::relu_threshold_backward's rule
//   applied on the fly. The output tells a clipped value from a kept one only
//   when relu_threshold >= 0 (clipped values become 0), so a negative threshold
//   is errc::invalid_argument: mask dy with relu_threshold_backward on the
//   pre-activation instead.
// - Outputs must not overlap the inputs.
//
// The variants (kernels/conv2d/backward/, one step each):
//   naive          one thread per output element (dx or dw), direct summation
//                  from global memory, the ReLU mask applied as dy is read. Any
//                  device, any geometry.
//   implicit_gemm  the gradients as the library's fastest products:
//                  dx is the forward convolution of dy with the filter turned
//                  by 180 degrees and its K and C swapped, padding
//                  dh (R-1) - ph (conv2d_forward's best variant on the device:
//                  wgmma on sm_90, Winograd for exact 3x3 NCHW layers, ...);
//                  the turned filter is a copy in a pooled workspace, except
//                  for __half / __nv_bfloat16 NHWC on sm_90 with C and K
//                  multiples of 8 and dy and the weight 16-byte aligned, where
//                  the wgmma kernel reads the weight where it lies, turning it
//                  as it reads (dy spread or masked counts as aligned); at
//                  stride > 1, dy is first spread over a zero grid of the
//                  input's size (stride^2 more products: the zero taps still
//                  cost). Two shapes take a GEMM instead: a 1x1 stride-1 NHWC
//                  layer's dx is dy (NPQ x K) * w (K x C); a strided NHWC layer
//                  whose C * sizeof(T) is not a multiple of 16 bytes (the RGB
//                  stem) computes dcol = dy * w (NPQ x RSC, fp32) and sums each
//                  input pixel's taps from it (col2im). dw is the GEMM
//                  dw (K x CRS) = dy^T (K x NPQ) * im2col(x) (NPQ x CRS) through
//                  kf::matmul's best variant, im2col written to a pooled
//                  workspace (skipped for 1x1 stride-1 NHWC layers, whose x is
//                  already that matrix), in chunks of images that keep it
//                  under 1 GiB. Layers whose padding exceeds the dilated
//                  filter's reach (ph > dh) run dx naive, as does any
//                  call that finds no workspace.
//   implicit_gemm_wgmma
//                  implicit_gemm, except dw of NHWC __half / __nv_bfloat16
//                  layers on sm_90 (the library built with 90): an implicit
//                  GEMM on wgmma (kernels/conv2d/backward/03_wgrad_wgmma.cuh)
//                  that loads dy and x's im2col tiles by TMA where they are,
//                  no im2col matrix, split over the output pixels with fp32
//                  partial sums in a pooled workspace, summed in a fixed order
//                  and rounded to T once. It needs C and K multiples of 8,
//                  x and dy 16-byte aligned and strides up to 8; elsewhere
//                  (and for float, whose TF32 products read k-major operands
//                  only) dw runs as implicit_gemm, as does dx always.
//   best           implicit_gemm_wgmma where the workspace is available, else naive;
//                  except dw of float NCHW layers of K <= 128 under
//                  math_mode::exact: an implicit GEMM on the CUDA cores (any
//                  device; gradient step 5, kernels/conv2d/backward/
//                  05_wgrad_simt_fp32.cuh) that reads dy and x where they lie,
//                  split over the output pixels like the wgmma one (fp32 sums
//                  either way); and of float NCHW 3x3 stride-1 layers with K and
//                  C >= 128 under math_mode::exact: Winograd F(4x4, 3x3)
//                  (gradient step 6, 06_wgrad_winograd.cuh).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "kernelforge/conv.hpp"
#include "kernelforge/math_mode.hpp"
#include "kernelforge/types.hpp"

namespace kf {

/// The steps of the gradient progression (see the top of this header).
enum class conv2d_backward_variant {
  best,
  naive,          ///< one thread per output element, direct summation
  implicit_gemm,  ///< dx as a forward convolution, dw as im2col + matmul
  /// implicit_gemm, with dw of NHWC 16-bit layers as the wgmma implicit GEMM (sm_90)
  implicit_gemm_wgmma,
};

struct conv2d_backward_options {
  cudaStream_t stream = nullptr;  ///< nullptr: the legacy default stream
  conv2d_backward_variant variant = conv2d_backward_variant::best;
  math_mode math = math_mode::exact;  ///< tf32: float data may use TF32 tensor cores
  /// The forward fused a threshold ReLU: mask dy by relu_y (see the top of this header).
  bool relu = false;
  float relu_threshold = 0.0f;
};

namespace detail {
// Defined and instantiated for float, __half and __nv_bfloat16 in src/conv2d/backward_data.cu and backward_filter.cu.
template <class T>
void conv2d_backward_data_impl(const conv2d_params& params, const T* dy, const T* weight, T* dx,
                               const conv2d_backward_options& options, const T* relu_y);
template <class T>
void conv2d_backward_filter_impl(const conv2d_params& params, const T* x, const T* dy, T* dweight, T* dbias,
                                 const conv2d_backward_options& options, const T* relu_y);
}  // namespace detail

/// dx = dL/dx from dy = dL/dy and the forward's weight (see the top of this header).
/// relu_y: the forward's output when options.relu is set, else nullptr.
template <class T>
void conv2d_backward_data(const conv2d_params& params, const T* dy, const T* weight, T* dx,
                          const conv2d_backward_options& options = {}, const nondeduced_t<T>* relu_y = nullptr) {
  static_assert(is_conv2d_type_v<T>,
                "kf::conv2d_backward_data: unsupported element type; conv2d ships float, and __half and "
                "__nv_bfloat16 in the NHWC layout");
  detail::conv2d_backward_data_impl<T>(params, dy, weight, dx, options, relu_y);
}

/// dweight = dL/dw and dbias = dL/dbias (nullptr: not computed) from the
/// forward's input x and dy = dL/dy (see the top of this header).
/// relu_y: the forward's output when options.relu is set, else nullptr.
template <class T>
void conv2d_backward_filter(const conv2d_params& params, const T* x, const T* dy, T* dweight, nondeduced_t<T>* dbias,
                            const conv2d_backward_options& options = {}, const nondeduced_t<T>* relu_y = nullptr) {
  static_assert(is_conv2d_type_v<T>,
                "kf::conv2d_backward_filter: unsupported element type; conv2d ships float, and __half and "
                "__nv_bfloat16 in the NHWC layout");
  detail::conv2d_backward_filter_impl<T>(params, x, dy, dweight, dbias, options, relu_y);
}

/// The variant's name ("implicit_gemm", ...), for messages and benchmark labels.
[[nodiscard]] const char* to_string(conv2d_backward_variant variant) noexcept;

}  // namespace kf
