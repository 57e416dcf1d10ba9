// SPDX-License-Identifier: Apache-2.0
// Step 7's two repacking passes for NCHW float input (host side: wgmma_sm90a.cu):
// the input to NHWC and the KCRS filter to K x RS x C padded to whole 32-channel
// stages, both rounded to TF32 as they are written, so that the wgmma kernel
// (07_implicit_gemm_wgmma.cuh) reads both k-contiguous through TMA. NHWC input
// needs neither. Compiled for sm_90a only, as the kernel.
#pragma once

#include "../arch/guards.cuh"
#include "../common/kernel.cuh"
#include "../common/numeric.cuh"
#include "../common/transpose.cuh"
#include "07_implicit_gemm_wgmma.cuh"

namespace kf::detail {

/// Rounds to TF32 as the NCHW input is transposed (transpose_tiles' convert).
struct conv2d_round_to_tf32 {
  __device__ __forceinline__ float operator()(float v) const { return round_to_tf32(v); }
};

/// dst[(n * H W + pixel) * c_stride + c] = tf32(x[(n * C + c) * H W + pixel]):
/// NCHW -> NHWC, rounded to TF32, as the shared tiled transpose
/// (common/transpose.cuh: 32 x 32 (channel, pixel) tiles through shared
/// memory, both the reads along pixels and the writes along channels
/// coalesced). Grid: x over pixel tiles, y and z stride over channel tiles and
/// images. Channels c_stride > C are not written (TMA never reads them).
KF_KERNEL void __launch_bounds__(tiled_transpose::threads)
    conv2d_nchw_to_nhwc_tf32(const float* __restrict__ x, float* __restrict__ dst, int n_images, int c, int hw,
                             int c_stride) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();
#elif KF_ARCH_SM90A
  transpose_tiles(x, dst, n_images, c, hw, c_stride, conv2d_round_to_tf32{});
#endif
}

/// dst[(k * R S + tap) * c_padded + c] = tf32(w[(k * C + c) * R S + tap]) for
/// c < C, 0 for C <= c < c_padded: KCRS -> K x RS x C, channels padded to a
/// whole number of 32-channel stages with zeros. Grid-stride.
KF_KERNEL void __launch_bounds__(conv2d_wgmma::filter_block)
    conv2d_kcrs_to_krsc_tf32(const float* __restrict__ w, float* __restrict__ dst, int k, int c, int rs, int c_padded) {
#if defined(__CUDA_ARCH__) && !KF_ARCH_SM90A
  __trap();
#elif KF_ARCH_SM90A
  const long long total = static_cast<long long>(k) * rs * c_padded;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int ch = static_cast<int>(i % c_padded);
    const long long k_tap = i / c_padded;  // k * RS + tap
    const int tap = static_cast<int>(k_tap % rs);
    const long long kk = k_tap / rs;
    dst[i] = ch < c ? round_to_tf32(w[(kk * c + ch) * rs + tap]) : 0.0f;
  }
#endif
}

}  // namespace kf::detail
