// SPDX-License-Identifier: Apache-2.0
// Step 7's column fold for NHWC layers TMA cannot read in place (host side:
// wgmma_sm90a.cu): the filter's S columns folded into channels, for x and the
// filter, so that the wgmma kernel (07_implicit_gemm_wgmma.cuh) reads an R x 1
// layer in place. Compiled for sm_90a only, as the kernel.
#pragma once

#include "../arch/guards.cuh"
#include "../common/kernel.cuh"
#include "../common/numeric.cuh"
#include "../common/vector_access.cuh"
#include "07_implicit_gemm_wgmma.cuh"
#include "wgmma_nhwc_fold_index.hpp"

namespace kf::detail {

/// The column fold of an NHWC layer TMA cannot read in place (C * sizeof(T)
/// not a multiple of 16 bytes, as the RGB stem's C = 3, or x or the filter not
/// 16-byte aligned): the filter's S columns become channels,
///   dst[((n H + h) Q + q) C' + s C + c] = x[n][h][q stride_w - pad_w + s dil_w][c]
/// (0 outside the image and for s C + c >= S C), so that the layer is R x 1 at
/// stride (stride_h, 1), with no padding or dilation along w, over C' channels
/// (wgmma_plan.hpp: conv2d_nhwc_folded_channels) -- one the step-7 kernel reads
/// in place.
///
/// One thread per 16-byte vector of dst (an output pixel's C' values are the
/// C' / (16 / sizeof(T)) vectors of consecutive threads, a warp's stores one
/// contiguous 512 bytes), grid-stride: the thread finds its pixel (n H + h, q)
/// and place in it with two divisions by run-time constants (fast_divmod), then
/// gathers its values with scalar loads (C may be 3: no wider load is aligned)
/// that the warp's neighbouring pixels share in L1, and stores them at once
/// (wgmma_nhwc_fold_index.hpp: conv2d_nhwc_fold_vector). dst is 16-byte aligned
/// (the workspace's start, which TMA needs as well). The former pass -- one
/// thread per element of dst, 64-bit divisions and remainders for each -- was
/// bound by that index arithmetic: 71.5 us for the fp16 stem on the H200 (N16
/// C3 224x224 7x7 s2 p3: 19 MB written, 6.9% of memory throughput;
/// benchmarks/tuning/conv2d.md#conv2d_nhwc_stem_fold), where the bytes alone
/// take under 10 us. 32 registers at most (28 for float): 8 blocks of 256
/// threads fit an SM, the grid-stride blocks of the launch in one wave.
template <class T>
KF_KERNEL void __launch_bounds__(conv2d_wgmma::filter_block)
    conv2d_nhwc_fold_columns(const T* __restrict__ x, T* __restrict__ dst, conv2d_nhwc_fold_geometry g) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();
#elif KF_ARCH_SM90A
  const T zero = from_compute<T>(0.0f);
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.vectors;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    vector16<T> v;
    conv2d_nhwc_fold_vector(x, g, static_cast<int>(i), zero, v.v);
    store16_global(dst + i * vector16<T>::size, v);
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
