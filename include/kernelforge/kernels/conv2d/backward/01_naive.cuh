// SPDX-License-Identifier: Apache-2.0
// Gradient step 1 -- naive: one thread per output element of dx or dw, the
// definitions of <kernelforge/conv_backward.hpp> summed straight from global
// memory, in either layout.
//
//   dx[n][c][h][w] = sum over (k, r, s) with p = (h + ph - r dh) / sh and
//                    q = (w + pw - s dw) / sw whole and in range of  w[k][c][r][s] dy[n][k][p][q]
//   dw[k][c][r][s] = sum over (n, p, q) of dy[n][k][p][q] x[n][c][p sh - ph + r dh][q sw - pw + s dw]
//
// dy is read through conv2d_dy_reader, which applies the forward's fused
// threshold ReLU mask on the fly. What it leaves on the table: as the forward's
// step 1, two loads per multiply-add and nothing reused from registers or
// shared memory; a dw thread walks all N*P*Q positions alone, so a layer with
// few filter elements and a large image runs on a handful of SMs. Step 2
// (src/conv2d/backward_data.cu, backward_filter.cu) turns both gradients into the library's products.
// In NHWC the channel index runs fastest across a warp, so the loads of w
// (dgrad) and x (wgrad) are contiguous; in NCHW the innermost spatial index is.
#pragma once

#include "../../common/kernel.cuh"
#include "../../common/numeric.cuh"
#include "../args.cuh"

namespace kf::detail {

constexpr int conv2d_grad_block = 256;

/// dy as the gradients read it: dy[i], or 0 where the forward's fused threshold
/// ReLU clipped the output (relu_y[i] <= threshold; relu_y null: no mask).
template <class T>
struct conv2d_dy_reader {
  const T* dy = nullptr;
  const T* relu_y = nullptr;
  float threshold = 0.0f;

  __device__ __forceinline__ float operator()(long long i) const {
    const float g = static_cast<float>(to_compute(dy[i]));
    return (relu_y != nullptr && static_cast<float>(to_compute(relu_y[i])) <= threshold) ? 0.0f : g;
  }
};

/// Index of element (n, ch, i, j) of an N x CH x I x J tensor stored NCHW or NHWC.
template <bool Nhwc>
__device__ __forceinline__ long long conv2d_tensor_index(int n, int ch, int i, int j, int channels, int rows,
                                                         int cols) {
  if constexpr (Nhwc) {
    return ((static_cast<long long>(n) * rows + i) * cols + j) * channels + ch;
  } else {
    return ((static_cast<long long>(n) * channels + ch) * rows + i) * cols + j;
  }
}

/// Index of filter tap (k, c, r, s) stored KCRS (NCHW) or KRSC (NHWC).
template <bool Nhwc>
__device__ __forceinline__ long long conv2d_filter_index(int k, int c, int r, int s, int channels, int rows, int cols) {
  return conv2d_tensor_index<Nhwc>(k, c, r, s, channels, rows, cols);
}

/// Element i of an N x CH x I x J tensor: its (n, ch, i, j) in the layout.
template <bool Nhwc>
__device__ __forceinline__ void conv2d_tensor_coords(int idx, int channels, int rows, int cols, int& n, int& ch, int& i,
                                                     int& j) {
  if constexpr (Nhwc) {
    ch = idx % channels;
    int t = idx / channels;
    j = t % cols;
    t /= cols;
    i = t % rows;
    n = t / rows;
  } else {
    j = idx % cols;
    int t = idx / cols;
    i = t % rows;
    t /= rows;
    ch = t % channels;
    n = t / channels;
  }
}

/// dx, one thread per element (grid-stride; every element written, 0 where no
/// tap reaches it). a.x is unused; a.wt is the forward's filter.
template <class T, bool Nhwc>
KF_KERNEL void __launch_bounds__(conv2d_grad_block)
    conv2d_dgrad_naive(conv2d_args<T> a, conv2d_dy_reader<T> dy, T* __restrict__ dx) {
  const long long total = static_cast<long long>(a.n) * a.c * a.hw;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; idx < total; idx += step) {
    int n, c, ih, iw;
    conv2d_tensor_coords<Nhwc>(static_cast<int>(idx), a.c, a.h, a.w, n, c, ih, iw);  // total < 2^31
    float sum = 0.0f;
    for (int r = 0; r < a.r; ++r) {
      const int th = ih + a.pad_h - r * a.dilation_h;
      if (th < 0 || th % a.stride_h != 0 || th / a.stride_h >= a.p) continue;
      const int oh = th / a.stride_h;
      for (int s = 0; s < a.s; ++s) {
        const int tw = iw + a.pad_w - s * a.dilation_w;
        if (tw < 0 || tw % a.stride_w != 0 || tw / a.stride_w >= a.q) continue;
        const int ow = tw / a.stride_w;
        for (int k = 0; k < a.k; ++k) {
          const float wv = static_cast<float>(to_compute(a.wt[conv2d_filter_index<Nhwc>(k, c, r, s, a.c, a.r, a.s)]));
          sum += wv * dy(conv2d_tensor_index<Nhwc>(n, k, oh, ow, a.k, a.p, a.q));
        }
      }
    }
    dx[idx] = from_compute<T>(static_cast<compute_t<T>>(sum));
  }
}

/// dw, one thread per filter element (grid-stride), summing all N*P*Q positions.
template <class T, bool Nhwc>
KF_KERNEL void __launch_bounds__(conv2d_grad_block)
    conv2d_wgrad_naive(conv2d_args<T> a, conv2d_dy_reader<T> dy, T* __restrict__ dw) {
  const long long total = static_cast<long long>(a.k) * a.crs;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; idx < total; idx += step) {
    int k, c, r, s;
    conv2d_tensor_coords<Nhwc>(static_cast<int>(idx), a.c, a.r, a.s, k, c, r, s);
    float sum = 0.0f;
    for (int n = 0; n < a.n; ++n) {
      for (int oh = 0; oh < a.p; ++oh) {
        const int ih = oh * a.stride_h - a.pad_h + r * a.dilation_h;
        if (ih < 0 || ih >= a.h) continue;
        for (int ow = 0; ow < a.q; ++ow) {
          const int iw = ow * a.stride_w - a.pad_w + s * a.dilation_w;
          if (iw < 0 || iw >= a.w) continue;
          const float xv = static_cast<float>(to_compute(a.x[conv2d_tensor_index<Nhwc>(n, c, ih, iw, a.c, a.h, a.w)]));
          sum += xv * dy(conv2d_tensor_index<Nhwc>(n, k, oh, ow, a.k, a.p, a.q));
        }
      }
    }
    dw[idx] = from_compute<T>(static_cast<compute_t<T>>(sum));
  }
}

}  // namespace kf::detail
