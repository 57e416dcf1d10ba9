// SPDX-License-Identifier: Apache-2.0
// Step 7's column fold for NHWC layers TMA cannot read in place (host side:
// wgmma_sm90a.cu): the filter's S columns folded into channels, for x and the
// filter, so that the wgmma kernel (07_implicit_gemm_wgmma.cuh) reads an R x 1
// layer in place. Compiled for sm_90a only, as the kernel.
#pragma once

#include "../arch/guards.cuh"
#include "../common/kernel.cuh"
#include "../common/numeric.cuh"
#include "07_implicit_gemm_wgmma.cuh"

namespace kf::detail {

/// The column fold of an NHWC layer TMA cannot read in place (C * sizeof(T)
/// not a multiple of 16 bytes, as the RGB stem's C = 3, or x or the filter not
/// 16-byte aligned): the filter's S columns become channels,
///   dst[((n H + h) Q + q) C' + s C + c] = x[n][h][q stride_w - pad_w + s dil_w][c]
/// (0 outside the image and for s C + c >= S C), so that the layer is R x 1 at
/// stride (stride_h, 1), with no padding or dilation along w, over C' channels
/// (wgmma_plan.hpp: conv2d_nhwc_folded_channels) -- one the step-7 kernel reads
/// in place. One thread per element of dst, grid-stride; the reads of a warp
/// fall in a few neighbouring pixels.
template <class T>
KF_KERNEL void __launch_bounds__(conv2d_wgmma::filter_block)
    conv2d_nhwc_fold_columns(const T* __restrict__ x, T* __restrict__ dst, int n_images, int h, int w, int c, int q,
                             int s, int stride_w, int pad_w, int dilation_w, int c_folded) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();
#elif KF_ARCH_SM90A
  const long long total = static_cast<long long>(n_images) * h * q * c_folded;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(i % c_folded);
    const long long row = i / c_folded;  // (n H + h) Q + q
    const int qq = static_cast<int>(row % q);
    const long long nh = row / q;
    T v = from_compute<T>(0.0f);
    if (j < s * c) {
      const int tap = j / c, ch = j - tap * c;
      const int iw = qq * stride_w - pad_w + tap * dilation_w;
      if (iw >= 0 && iw < w) v = x[(nh * w + iw) * c + ch];
    }
    dst[i] = v;
  }
#endif
}

/// The filter of the column fold: dst[(k R + r) C' + j] = w[k][r][s][c] for
/// j = s C + c < S C, else 0 (K x R x 1 x C'). Grid-stride.
template <class T>
KF_KERNEL void __launch_bounds__(conv2d_wgmma::filter_block)
    conv2d_krsc_fold_columns(const T* __restrict__ w, T* __restrict__ dst, int k, int r, int sc, int c_folded) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();
#elif KF_ARCH_SM90A
  const long long total = static_cast<long long>(k) * r * c_folded;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int j = static_cast<int>(i % c_folded);
    const long long kr = i / c_folded;  // k R + r
    dst[i] = j < sc ? w[kr * sc + j] : from_compute<T>(0.0f);
  }
#endif
}

}  // namespace kf::detail
