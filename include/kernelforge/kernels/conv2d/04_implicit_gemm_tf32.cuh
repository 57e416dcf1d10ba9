// SPDX-License-Identifier: Apache-2.0
// Step 4 -- implicit_gemm_tf32: the implicit GEMM of step 3 on tensor cores.
//
// What changes from implicit_gemm, and why it is faster: the 8 x 8 outer
// products of FFMAs are replaced by warp-wide mma.sync.m16n8k8 instructions
// (TF32 inputs, fp32 accumulation; sm_80+), each a 16 x 8 x 8 product -- 1024
// multiply-adds per instruction, at several times the FFMA throughput.
//  * The loader, tiles and double buffering are step 3's; values are rounded
//    to TF32 (cvt.rna: round to nearest, 10-bit mantissa) once, as they are
//    stored into shared memory, not every time a fragment is read.
//  * 8 warps per 128 x 128 block (2 x 4, 64 x 32 each: 4 x 4 mma tiles per
//    warp), 4 x 2 warps for 128 x 64, 2 x 2 warps for 64 x 64.
//  * Shared rows are padded to 8 floats past a multiple of 32, so the fragment
//    loads -- lane (g, t) reads row kk = t (+4), column g (+8) -- hit 32
//    different banks.
// Split-K (grid z > 1) as in implicit_gemm: block z covers BK slices
// [z * spp, (z + 1) * spp) and writes its partial sums to a.y + z * M * K.
// Epilogue as in implicit_gemm: ep(sum + bias[k], m, k) right before the store.
// Accuracy: each product has up to ~2^-10 relative error from the TF32
// rounding of its two inputs; sums accumulate in fp32.
// Compiled only for sm_80+ (__CUDA_ARCH__ >= 800); the launcher checks the
// device and the kernel's PTX version before launching it.
// Its measured speed: the docs site's learning path (docs/build_site.py) and
// benchmarks/tuning/conv2d.md#conv2d_wgmma_best_min_channels (bench_conv).
#pragma once

#include <cstdint>

#include "../arch/mma_sm80.cuh"
#include "../common/kernel.cuh"
#include "args.cuh"
#include "gemm_loader.cuh"
#include "03_implicit_gemm.cuh"
#include "kernelforge/epilogue.cuh"

namespace kf::detail {

constexpr int conv2d_tf32_smem_pad = 8;  // (BM + 8) % 32 == 8: conflict-free fragment loads

struct tf32_convert {
  __device__ __forceinline__ float operator()(float v) const { return round_to_tf32(v); }
};

template <int BM, int BN, int WARPS_M, int WARPS_N>
constexpr int conv2d_tf32_threads = WARPS_M* WARPS_N * 32;

/// Grid: x = ceil(M / BM), y = ceil(K / BN), z = splits of C*R*S (1: no split),
/// each slices_per_split BK slices long. Block z writes a.y + z * M * K.
template <int BM, int BN, int WARPS_M, int WARPS_N, class Epilogue = epilogue::identity>
KF_KERNEL void __launch_bounds__(conv2d_tf32_threads<BM, BN, WARPS_M, WARPS_N>)
    conv2d_implicit_gemm_tf32(conv2d_args<float> a, int slices_per_split, Epilogue ep) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int BK = conv2d_gemm_bk;
  constexpr int THREADS = conv2d_tf32_threads<BM, BN, WARPS_M, WARPS_N>;
  constexpr int A_PITCH = BM + conv2d_tf32_smem_pad;
  constexpr int B_PITCH = BN + conv2d_tf32_smem_pad;
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // warp tile
  constexpr int MT = WM / 16, NT = WN / 8;             // mma tiles per warp
  static_assert(WM % 16 == 0 && WN % 8 == 0, "warp tiles are whole mma tiles");
  __shared__ __align__(16) float As[2][BK * A_PITCH];
  __shared__ __align__(16) float Bs[2][BK * B_PITCH];

  const int tid = threadIdx.x;
  const int lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, t4 = lane % 4;  // mma fragment coordinates: group and thread in group
  const int warp_m = warp % WARPS_M, warp_n = warp / WARPS_M;
  const int block_m = blockIdx.x * BM, block_n = blockIdx.y * BN;

  conv2d_gemm_loader<BM, BN, BK, THREADS> loader;
  loader.init(a, block_m, block_n, tid);
  float acc[MT][NT][4] = {};

  const int slices = (a.crs + BK - 1) / BK;
  const int t_begin = static_cast<int>(blockIdx.z) * slices_per_split;
  const int t_end = min(slices, t_begin + slices_per_split);
  // Slice t lives in buffer t & 1 (so the loop needs no t_begin register).
  if (t_begin < t_end) {
    loader.load(a, t_begin * BK);
    loader.store(As[t_begin & 1], A_PITCH, Bs[t_begin & 1], B_PITCH, tf32_convert{});
  }
  __syncthreads();
  for (int t = t_begin; t < t_end; ++t) {
    const int cur = t & 1;
    if (t + 1 < t_end) loader.load(a, (t + 1) * BK);
    const float* A0 = As[cur] + t4 * A_PITCH;        // row kk = t4
    const float* A4 = As[cur] + (t4 + 4) * A_PITCH;  // row kk = t4 + 4
    const float* B0 = Bs[cur] + t4 * B_PITCH;
    const float* B4 = Bs[cur] + (t4 + 4) * B_PITCH;
    std::uint32_t af[MT][4], bf[NT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int m = warp_m * WM + mt * 16 + g;
      af[mt][0] = __float_as_uint(A0[m]);
      af[mt][1] = __float_as_uint(A0[m + 8]);
      af[mt][2] = __float_as_uint(A4[m]);
      af[mt][3] = __float_as_uint(A4[m + 8]);
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const int n = warp_n * WN + nt * 8 + g;
      bf[nt][0] = __float_as_uint(B0[n]);
      bf[nt][1] = __float_as_uint(B4[n]);
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        mma_m16n8k8_tf32(acc[mt][nt], af[mt], bf[nt]);
      }
    }
    if (t + 1 < t_end) loader.store(As[cur ^ 1], A_PITCH, Bs[cur ^ 1], B_PITCH, tf32_convert{});
    __syncthreads();
  }
  float* const y = a.y + static_cast<std::size_t>(blockIdx.z) * a.m * a.k;  // this split's slice (0 without split)

  // Accumulator fragment: d0, d1 at (row g, columns 2t, 2t+1); d2, d3 at row g + 8.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int m = block_m + warp_m * WM + mt * 16 + g + half * 8;
      if (m >= a.m) continue;
      int n, pq;
      a.div_pq.divmod(m, n, pq);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int k = block_n + warp_n * WN + nt * 8 + 2 * t4 + e;
          if (k < a.k) {
            const float b = a.bias ? __ldg(a.bias + k) : 0.0f;
            y[(n * a.k + k) * a.pq + pq] = ep(acc[mt][nt][half * 2 + e] + b, std::int64_t{m}, std::int64_t{k});
          }
        }
      }
    }
  }
#else
  __trap();  // never launched: the launcher requires sm_80+ code (see the top comment)
#endif
}

}  // namespace kf::detail
