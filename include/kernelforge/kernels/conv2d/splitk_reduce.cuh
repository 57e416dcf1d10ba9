// SPDX-License-Identifier: Apache-2.0
// Split-K reduction for the implicit-GEMM kernels: y = sum over z of the
// split's partial sums (workspace slice z, laid out like y: N x K x P x Q),
// plus bias[k], then the epilogue ep(value, m, k) (kernelforge/epilogue.cuh):
// the partials carry neither, so both are applied once, to the full sum.
//
// What it improves: when the output tiles alone cannot fill the GPU (small
// N*P*Q, long C*R*S: ResNet N32 C256 14x14 K256 3x3, M = 6272, 98 blocks of
// 128 x 128 on 132 SMs), the implicit GEMM splits C*R*S over grid z
// (tuning.hpp) and this kernel adds the slices. On the H200 that layer
// went from 24.7 TFLOP/s (64 x 64 tiles, no split) to 32.9 exact with split 4
// and 128 x 128 tiles (0.79x cuDNN), and from 42.7 to 58.6 in TF32 (0.90x);
// the time includes this reduction.
//
// Deterministic: every output sums its slices in the fixed order z = 0, 1, ...
// and then adds the bias -- no atomics, the same bits on every run.
// Memory-bound: float4 loads and stores where P*Q % 4 == 0 and y is 16-byte
// aligned (then 4 consecutive outputs share one filter k, so one bias value);
// scalar otherwise. Grid-stride loop over y.
// H200 (bench_conv): N32 C256 14x14 K256 3x3 exact 33.8 TFLOP/s with split-K against
// 24.7 without (same kernel, earlier run); cuDNN fp32 in those runs: 42.7-54.5.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../common/kernel.cuh"
#include "args.cuh"
#include "kernelforge/epilogue.cuh"

namespace kf::detail {

constexpr int conv2d_splitk_reduce_block = 256;
/// Blocks per SM the reduction launches at most (grid-stride beyond): enough
/// loads in flight to saturate HBM.
constexpr int conv2d_splitk_reduce_blocks_per_sm = 8;

/// a: the convolution's arguments (a.y: the output, a.bias: may be null);
/// workspace: `split` slices of M * K floats; vector: P*Q % 4 == 0 and a.y
/// 16-byte aligned (the workspace always is). Element i of y is
/// ((n * K + k) * P*Q + pq): the epilogue's row is n * P*Q + pq, its column k
/// (computed only when the epilogue reads them: identity ignores both).
template <class Epilogue = epilogue::identity>
KF_KERNEL void __launch_bounds__(conv2d_splitk_reduce_block)
    conv2d_splitk_reduce(conv2d_args<float> a, const float* __restrict__ workspace, int split, bool vector,
                         Epilogue ep) {
  const std::size_t y_n = static_cast<std::size_t>(a.m) * a.k;  // < 2^31: checked by the launcher
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * conv2d_splitk_reduce_block;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * conv2d_splitk_reduce_block + threadIdx.x;
  // y index -> (row of the first element, k): i = nk * P*Q + pq, nk = n * K + k.
  const auto locate = [&](int i, std::int64_t& row, std::int64_t& k) {
    int nk, pq;
    a.div_pq.divmod(i, nk, pq);
    const int n = nk / a.k;
    k = nk - n * a.k;
    row = static_cast<std::int64_t>(n) * a.pq + pq;
  };
  if (vector) {
    const auto* ws4 = reinterpret_cast<const float4*>(workspace);
    auto* y4 = reinterpret_cast<float4*>(a.y);
    const std::size_t slice4 = y_n / 4;
    for (std::size_t i = first; i < slice4; i += stride) {
      float4 s = ws4[i];
      for (int z = 1; z < split; ++z) {
        const float4 v = ws4[z * slice4 + i];
        s.x += v.x;
        s.y += v.y;
        s.z += v.z;
        s.w += v.w;
      }
      // The 4 elements share n and k (P*Q % 4 == 0): rows row .. row + 3.
      std::int64_t row, k;
      locate(static_cast<int>(i * 4), row, k);
      if (a.bias) {
        const float b = __ldg(a.bias + k);
        s.x += b;
        s.y += b;
        s.z += b;
        s.w += b;
      }
      y4[i] = make_float4(ep(s.x, row, k), ep(s.y, row + 1, k), ep(s.z, row + 2, k), ep(s.w, row + 3, k));
    }
    return;
  }
  for (std::size_t i = first; i < y_n; i += stride) {
    float s = workspace[i];
    for (int z = 1; z < split; ++z) s += workspace[z * y_n + i];
    std::int64_t row, k;
    locate(static_cast<int>(i), row, k);
    if (a.bias) s += __ldg(a.bias + k);
    a.y[i] = ep(s, row, k);
  }
}

}  // namespace kf::detail
