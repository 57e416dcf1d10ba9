// SPDX-License-Identifier: Apache-2.0
// Step 6 -- winograd: Winograd F(2x2,3x3) for 3x3 filters at stride 1 and
// dilation 1 (exact fp32 arithmetic, not direct summation).
//
// What changes from implicit_gemm_pipelined, and why it is faster: every 2 x 2
// block of outputs of one filter k is computed from a 4 x 4 input tile d as
//   Y = A^T [ sum over c of U_c (.) V_c ] A,  U = G g G^T,  V = B^T d B
// ((.) elementwise over the 4 x 4 positions b), so the 36 multiply-adds per
// channel of direct summation become 16: 2.25x fewer. Four passes (non-fused):
//  1. filter transform, once per call: U[b][k][c] (4 x 4 per filter and channel;
//     rows padded to a multiple of 4 channels for 16-byte copies);
//  2. input transform: V[b][c][t] for every tile t = (n, th, tw) of 2 x 2 outputs;
//  3. 16 GEMMs, one per b: M[b][k][t] = sum over c of U[b][k][c] V[b][c][t] --
//     step 5's pipelined GEMM core (gemm_pipeline.cuh), grid z = b;
//  4. output transform: y = A^T M A + bias, then the epilogue, stored for the
//     outputs inside P x Q.
// U, V and M live in one pooled workspace (include/kernelforge/kernels/runtime/workspace.hpp):
// 16 (K*C4 + C*T4 + K*T4) floats, T4 = round_up(tiles, 4), C4 = round_up(C, 4).
// The transforms cost memory traffic (V and M are 4x the input and output), so
// Winograd wins where the GEMMs are long (many channels); plan.hpp decides.
//
// Accuracy: the transforms add and halve (G's 1/2 is exact), so each V and U
// entry carries a few roundings, and the C-long sums are fp32 like step 5's.
// The error is bounded relative to the Winograd error scale
//   E = |A^T| ( sum over c of (|G| |g| |G^T|) (.) (|B^T| |d| |B|) ) |A|,
// about (C + 16) 2^-24 E at worst; tests/conv2d states and checks the bound.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../common/fast_divmod.cuh"
#include "../common/kernel.cuh"
#include "05_implicit_gemm_pipelined.cuh"
#include "args.cuh"
#include "gemm_pipeline.cuh"
#include "plan.hpp"
#include "winograd_transforms.hpp"
#include "kernelforge/epilogue.cuh"

namespace kf::detail {

constexpr int winograd_positions = static_cast<int>(conv2d_winograd_layout::positions);  // b = 4 xi + nu
constexpr int winograd_tile = static_cast<int>(conv2d_winograd_layout::tile);            // outputs per tile side
constexpr int winograd_transform_block = 256;

/// The launcher's view of one Winograd call.
struct conv2d_winograd_args {
  conv2d_args<float> a;
  int tiles_h = 0, tiles_w = 0;  // ceil(P / 2), ceil(Q / 2)
  int tiles = 0;                 // N * tiles_h * tiles_w
  int tiles_ld = 0;              // round_up(tiles, 4): row pitch of V and M
  int c_ld = 0;                  // round_up(C, 4): row pitch of U
  fast_divmod div_tiles_w, div_tiles_h, div_c, div_k;
  float* u = nullptr;   // [16][K][c_ld]
  float* v = nullptr;   // [16][C][tiles_ld]
  float* mm = nullptr;  // [16][K][tiles_ld]
};

/// Where the filter transform reads g and writes U: u[b * plane + k * k_stride +
/// c * c_stride] = (G g G^T)[b] for g = w[k][c] (3 x 3). Step 6 writes
/// U[b][k][c_ld], step 8 (08_winograd_fused.cuh) U[b][c][k_ld].
struct conv2d_winograd_filter_args {
  const float* w = nullptr;  // K x C x 3 x 3
  int k = 0, c = 0;
  fast_divmod div_c;
  float* u = nullptr;
  int k_stride = 0, c_stride = 0;
  std::size_t plane = 0;  // floats per position b
};

/// The filter transform's arguments for layer `a`, writing U[b] at u + b *
/// plane with element (k, c) at k * k_stride + c * c_stride: step 6 lays U out
/// [b][k][c_ld], step 8 [b][c][k_ld] (make_conv2d_winograd_fused_filter_args).
inline conv2d_winograd_filter_args make_conv2d_winograd_filter_args(const conv2d_args<float>& a, float* u, int k_stride,
                                                                    int c_stride, std::size_t plane) {
  conv2d_winograd_filter_args fa;
  fa.w = a.wt;
  fa.k = a.k;
  fa.c = a.c;
  fa.div_c = fast_divmod(static_cast<unsigned>(a.c));
  fa.u = u;
  fa.k_stride = k_stride;
  fa.c_stride = c_stride;
  fa.plane = plane;
  return fa;
}

/// One thread per (k, c).
// A template (instantiated with its default only) so that every translation unit
// including this header, the library and a user's .cu through <kernelforge/conv.cuh>,
// may hold it without a duplicate symbol at link time.
template <int Unused = 0>
KF_KERNEL void __launch_bounds__(winograd_transform_block) conv2d_winograd_filter(conv2d_winograd_filter_args fa) {
  const int total = fa.k * fa.c;
  for (int idx = blockIdx.x * winograd_transform_block + threadIdx.x; idx < total;
       idx += gridDim.x * winograd_transform_block) {
    int k, c;
    fa.div_c.divmod(idx, k, c);
    const float* src = fa.w + static_cast<std::size_t>(idx) * 9;
    float g[9], u[winograd_positions];
#pragma unroll
    for (int e = 0; e < 9; ++e) g[e] = __ldg(src + e);
    winograd_filter_transform(g, u);
    float* out = fa.u + static_cast<std::size_t>(k) * fa.k_stride + static_cast<std::size_t>(c) * fa.c_stride;
#pragma unroll
    for (int b = 0; b < winograd_positions; ++b) out[b * fa.plane] = u[b];
  }
}

/// Item idx of a transform pass over (n, channel, th, tw), tw fastest: its
/// image, channel (div_channels: of C or K), tile row and column, and t, the
/// tile's index over every image ((n tiles_h + th) tiles_w + tw). The forward's
/// input and output passes and gradient step 6's x and dy passes share it.
struct winograd_tile_item {
  int n, ch, th, tw, t;
};
__device__ __forceinline__ winograd_tile_item winograd_tile_item_of(const conv2d_winograd_args& wa,
                                                                    const fast_divmod& div_channels, int idx) {
  winograd_tile_item it{};
  int rest = 0;
  wa.div_tiles_w.divmod(idx, rest, it.tw);
  wa.div_tiles_h.divmod(rest, rest, it.th);
  div_channels.divmod(rest, it.n, it.ch);
  it.t = (it.n * wa.tiles_h + it.th) * wa.tiles_w + it.tw;
  return it;
}

/// V[b][c][t] = (B^T d B)[b], d the 4 x 4 input tile of tile t (zero outside
/// the image). One thread per (n, c, th, tw), tw fastest (coalesced V stores).
template <int Unused = 0>  // a template: see conv2d_winograd_filter
KF_KERNEL void __launch_bounds__(winograd_transform_block) conv2d_winograd_input(conv2d_winograd_args wa) {
  const conv2d_args<float>& a = wa.a;
  const int total = a.n * a.c * wa.tiles_h * wa.tiles_w;  // < tiles * C < 2^31: checked by the launcher
  for (int idx = blockIdx.x * winograd_transform_block + threadIdx.x; idx < total;
       idx += gridDim.x * winograd_transform_block) {
    const winograd_tile_item item = winograd_tile_item_of(wa, wa.div_c, idx);
    const int n = item.n, c = item.ch, th = item.th, tw = item.tw, t = item.t;
    const int ih0 = th * winograd_tile - a.pad_h, iw0 = tw * winograd_tile - a.pad_w;
    const float* plane = a.x + (static_cast<std::size_t>(n) * a.c + c) * a.hw;
    float d[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int ih = ih0 + i, iw = iw0 + j;
        const bool inside = static_cast<unsigned>(ih) < static_cast<unsigned>(a.h) &&
                            static_cast<unsigned>(iw) < static_cast<unsigned>(a.w);
        d[i][j] = inside ? __ldg(plane + ih * a.w + iw) : 0.0f;
      }
    }
    float v[winograd_positions];
    winograd_input_transform(d, v);
    const std::size_t plane_v = static_cast<std::size_t>(a.c) * wa.tiles_ld;
    float* out = wa.v + static_cast<std::size_t>(c) * wa.tiles_ld + t;
#pragma unroll
    for (int b = 0; b < winograd_positions; ++b) out[b * plane_v] = v[b];
  }
}

/// M[b] (K x tiles) = U[b] (K x C) * V[b] (C x tiles), b = blockIdx.z; tiles of
/// tiles_ld columns (padding columns come out 0). Grid: x = ceil(tiles / BM),
/// y = ceil(K / BN), z = 16. Dynamic shared memory: conv2d_pipelined_smem<BM, BN>.
template <int BM, int BN, int MIN_BLOCKS>
KF_KERNEL void __launch_bounds__(conv2d_pipe_threads<BM, BN>, MIN_BLOCKS)
    conv2d_winograd_gemm(conv2d_winograd_args wa) {
  constexpr int BK = conv2d_pipelined_bk<BM, BN>;
  constexpr int THREADS = conv2d_pipe_threads<BM, BN>;
  extern __shared__ __align__(16) float conv2d_pipe_smem[];
  const int b = blockIdx.z;
  const int C = wa.a.c, K = wa.a.k;
  const int block_m = blockIdx.x * BM, block_n = blockIdx.y * BN;

  conv2d_col_tile_copier<BM, BK, THREADS> a_copier;  // V[b]: C rows of tiles_ld
  a_copier.init(wa.v + static_cast<std::size_t>(b) * C * wa.tiles_ld, wa.tiles_ld, block_m, wa.tiles, threadIdx.x);
  conv2d_row_tile_copier<BN, BK, THREADS> b_copier;  // U[b]: K rows of c_ld
  b_copier.init(wa.u + static_cast<std::size_t>(b) * K * wa.c_ld, wa.c_ld, block_n, K, threadIdx.x);

  float acc[8][8] = {};
  conv2d_pipelined_mainloop<BM, BN, BK, conv2d_pipelined_stages>(
      conv2d_pipe_smem, (C + BK - 1) / BK,
      [&](int slice, float* As, float* Bs) {
        a_copier.copy(slice * BK, C, As);
        b_copier.copy(slice * BK, C, Bs, true);
      },
      acc);

  const int tr = threadIdx.x % (BM / conv2d_pipe_thread_tile);
  const int tc = threadIdx.x / (BM / conv2d_pipe_thread_tile);
  float* const mm = wa.mm + static_cast<std::size_t>(b) * K * wa.tiles_ld;
#pragma unroll
  for (int gi = 0; gi < 2; ++gi) {
    const int m4 = block_m + gi * (BM / 2) + tr * 4;  // a multiple of 4, as tiles_ld is
    if (m4 >= wa.tiles_ld) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int k = block_n + (j / 4) * (BN / 2) + tc * 4 + (j % 4);
      if (k < K) {
        *reinterpret_cast<float4*>(mm + static_cast<std::size_t>(k) * wa.tiles_ld + m4) =
            make_float4(acc[gi * 4 + 0][j], acc[gi * 4 + 1][j], acc[gi * 4 + 2][j], acc[gi * 4 + 3][j]);
      }
    }
  }
}

/// y = A^T M A (+ bias, then the epilogue) for one tile: m holds its 16
/// positions of image n and filter k; the outputs inside P x Q are stored
/// (steps 6 and 8 share it).
template <class Epilogue>
__device__ __forceinline__ void winograd_store_tile(const conv2d_args<float>& a, const float (&m)[winograd_positions],
                                                    int n, int k, int th, int tw, const Epilogue& epilogue) {
  float out[2][2];
  winograd_output_transform(m, out);
  const float bias = a.bias ? __ldg(a.bias + k) : 0.0f;
  float* const y = a.y + (static_cast<std::size_t>(n) * a.k + k) * a.pq;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int p = th * winograd_tile + i;
    if (p >= a.p) continue;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int q = tw * winograd_tile + j;
      if (q >= a.q) continue;
      const int pq = p * a.q + q;
      y[pq] = epilogue(out[i][j] + bias, static_cast<std::int64_t>(n) * a.pq + pq, k);
    }
  }
}

/// The output transform of each tile inside P x Q (winograd_store_tile). One
/// thread per (n, k, th, tw), tw fastest.
template <class Epilogue = kf::epilogue::identity>
KF_KERNEL void __launch_bounds__(winograd_transform_block)
    conv2d_winograd_output(conv2d_winograd_args wa, Epilogue epilogue) {
  const conv2d_args<float>& a = wa.a;
  const int total = a.n * a.k * wa.tiles_h * wa.tiles_w;  // < tiles * K < 2^31: checked by the launcher
  const std::size_t plane_m = static_cast<std::size_t>(a.k) * wa.tiles_ld;
  for (int idx = blockIdx.x * winograd_transform_block + threadIdx.x; idx < total;
       idx += gridDim.x * winograd_transform_block) {
    const winograd_tile_item item = winograd_tile_item_of(wa, wa.div_k, idx);
    const int n = item.n, k = item.ch, th = item.th, tw = item.tw, t = item.t;
    const float* in = wa.mm + static_cast<std::size_t>(k) * wa.tiles_ld + t;
    float m[winograd_positions];
#pragma unroll
    for (int b = 0; b < winograd_positions; ++b) m[b] = in[b * plane_m];
    winograd_store_tile(a, m, n, k, th, tw, epilogue);
  }
}

}  // namespace kf::detail
