// SPDX-License-Identifier: Apache-2.0
// Step 1 -- naive: one thread per output element, the direct definition.
//
//   y[n][k][p][q] = bias[k] + sum_{c,r,s} w[k][c][r][s] * x[n][c][p*sh - ph + r*dh][q*sw - pw + s*dw]
//
// Consecutive threads take consecutive q, so the x loads of a warp are
// (nearly) contiguous and the w loads are one broadcast. What it leaves on the
// table: every multiply-add costs two loads (x and w), each input element is
// fetched again by every one of the K output channels and every filter tap
// that covers it, and nothing is kept in registers or shared memory -- the
// kernel runs at the speed of L1/L2, far below the FMA units.
// Epilogue (kernelforge/epilogue.cuh): each output is stored as
// ep(sum + bias[k], m = (n*P + p)*Q + q, k); identity by default.
// Its measured speed: the docs site's learning path (docs/build_site.py) and benchmarks/tuning/conv2d.md (bench_conv).
#pragma once

#include <cstdint>

#include "../common/kernel.cuh"
#include "../common/numeric.cuh"
#include "args.cuh"
#include "kernelforge/epilogue.cuh"

namespace kf::detail {

constexpr int conv2d_naive_block = 256;

template <class T, class Epilogue = epilogue::identity>
KF_KERNEL void __launch_bounds__(conv2d_naive_block) conv2d_naive(conv2d_args<T> a, Epilogue ep) {
  const long long total = static_cast<long long>(a.m) * a.k;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; idx < total; idx += step) {
    const int i = static_cast<int>(idx);  // total < 2^31
    const int ow = i % a.q;
    int t = i / a.q;
    const int oh = t % a.p;
    t /= a.p;
    const int k = t % a.k;
    const int n = t / a.k;
    compute_t<T> sum = a.bias ? to_compute(a.bias[k]) : compute_t<T>(0);
    for (int c = 0; c < a.c; ++c) {
      const T* plane = a.x + (n * a.c + c) * a.hw;
      const T* filter = a.wt + (k * a.c + c) * a.rs;
      for (int r = 0; r < a.r; ++r) {
        const int ih = oh * a.stride_h - a.pad_h + r * a.dilation_h;
        if (ih < 0 || ih >= a.h) continue;
        for (int s = 0; s < a.s; ++s) {
          const int iw = ow * a.stride_w - a.pad_w + s * a.dilation_w;
          if (iw < 0 || iw >= a.w) continue;
          sum += to_compute(filter[r * a.s + s]) * to_compute(plane[ih * a.w + iw]);
        }
      }
    }
    const std::int64_t row = (static_cast<std::int64_t>(n) * a.p + oh) * a.q + ow;
    a.y[i] = from_compute<T>(ep(sum, row, std::int64_t{k}));
  }
}

/// The same definition in the NHWC layout (x[n][h][w][c], w[k][r][s][c],
/// y[n][p][q][k]): consecutive threads take consecutive output channels k, so
/// the stores of a warp are contiguous and its x loads one broadcast; the
/// channel loop runs innermost, along the contiguous c of both x and w. Any
/// device, any geometry, sums in compute_t<T> (fp32 for the 16-bit types),
/// rounded once. The portable fallback of every NHWC call.
template <class T, class Epilogue = epilogue::identity>
KF_KERNEL void __launch_bounds__(conv2d_naive_block) conv2d_naive_nhwc(conv2d_args<T> a, Epilogue ep) {
  const long long total = static_cast<long long>(a.m) * a.k;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; idx < total; idx += step) {
    const int i = static_cast<int>(idx);  // total < 2^31
    const int k = i % a.k;
    const int row = i / a.k;  // (n P + p) Q + q
    const int ow = row % a.q;
    const int oh = (row / a.q) % a.p;
    const int n = row / a.pq;
    compute_t<T> sum = a.bias ? to_compute(a.bias[k]) : compute_t<T>(0);
    for (int r = 0; r < a.r; ++r) {
      const int ih = oh * a.stride_h - a.pad_h + r * a.dilation_h;
      if (ih < 0 || ih >= a.h) continue;
      for (int s = 0; s < a.s; ++s) {
        const int iw = ow * a.stride_w - a.pad_w + s * a.dilation_w;
        if (iw < 0 || iw >= a.w) continue;
        const T* pixel = a.x + ((n * a.h + ih) * a.w + iw) * a.c;
        const T* filter = a.wt + ((k * a.r + r) * a.s + s) * a.c;
        for (int c = 0; c < a.c; ++c) sum += to_compute(filter[c]) * to_compute(pixel[c]);
      }
    }
    a.y[i] = from_compute<T>(ep(sum, std::int64_t{row}, std::int64_t{k}));
  }
}

}  // namespace kf::detail
