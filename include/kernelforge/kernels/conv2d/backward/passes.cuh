// SPDX-License-Identifier: Apache-2.0
// The data-movement passes of gradient step 2 (src/conv2d/backward_data.cu, backward_filter.cu), which
// turn both gradients into products the library already has:
//  * conv2d_dy_spread: dy masked by the forward's ReLU, spread over a zero grid
//    at the forward's stride (dgrad at stride > 1), and/or stored in the other
//    layout (an NCHW dx through dcol wants dy as an NPQ x K matrix);
//  * conv2d_filter_turn: the filter turned by 180 degrees with K and C swapped,
//    the filter of the forward convolution that computes dx (where step 7 does
//    not read the filter unturned: float, NCHW, misaligned or K, C off 8);
//  * conv2d_im2col_nhwc*: the NPQ x RSC matrix of input patches that an NHWC dw
//    multiplies; conv2d_im2col_nchw_t and conv2d_dy_nchw_t: an NCHW dw's
//    operands, both with the pixels contiguous (k-major);
//  * conv2d_col2im: dx summed from dcol = dy * w, for strided layers with few
//    input channels (conv2d_widen: the fp32 operands of that GEMM);
//  * conv2d_bias_grad: dbias, column sums of dy (two passes, deterministic);
//  * conv2d_dy_patch_t: gradient step 4's dy_t (dy transposed, in the order
//    of its patches, rounded to TF32);
//  * conv2d_wgrad_split_k_store: gradient steps 3, 4 and 5's split-k store (dw
//    from their summed fp32 slabs).
// One thread per destination element, grid-stride (conv2d_dy_patch_t: a tile a
// block); every destination element written.
#pragma once

#include "../../arch/mma_sm80.cuh"  // to_tf32
#include "01_naive.cuh"

namespace kf::detail {

/// dst (N x K x rows x cols in layout OutNhwc) from dy (N x K x P x Q in layout
/// InNhwc, read through the mask): dst[n][k][i][j] = dy[n][k][i / sh][j / sw]
/// where sh divides i, sw divides j and the quotients are inside P x Q, else 0.
template <class T, bool InNhwc, bool OutNhwc>
KF_KERNEL void __launch_bounds__(conv2d_grad_block)
    conv2d_dy_spread(conv2d_dy_reader<T> dy, T* __restrict__ dst, int n_images, int k, int p, int q, int rows, int cols,
                     int stride_h, int stride_w) {
  const long long total = static_cast<long long>(n_images) * k * rows * cols;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; idx < total; idx += step) {
    int n, ch, i, j;
    conv2d_tensor_coords<OutNhwc>(static_cast<int>(idx), k, rows, cols, n, ch, i, j);  // total < 2^31
    float v = 0.0f;
    if (i % stride_h == 0 && j % stride_w == 0 && i / stride_h < p && j / stride_w < q) {
      v = dy(conv2d_tensor_index<InNhwc>(n, ch, i / stride_h, j / stride_w, k, p, q));
    }
    dst[idx] = from_compute<T>(static_cast<compute_t<T>>(v));
  }
}

/// dst = the filter of dx's forward convolution: C output channels, K input
/// channels, dst(c, k, r, s) = w(k, c, R-1-r, S-1-s), in the layout's filter
/// order (CKRS or CRSK).
template <class T, bool Nhwc>
KF_KERNEL void __launch_bounds__(conv2d_grad_block)
    conv2d_filter_turn(const T* __restrict__ w, T* __restrict__ dst, int k, int c, int r, int s) {
  const long long total = static_cast<long long>(k) * c * r * s;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; idx < total; idx += step) {
    int oc, ic, rr, ss;  // dst's (output channel c, input channel k, r, s)
    conv2d_tensor_coords<Nhwc>(static_cast<int>(idx), k, r, s, oc, ic, rr, ss);
    dst[idx] = w[conv2d_filter_index<Nhwc>(ic, oc, r - 1 - rr, s - 1 - ss, c, r, s)];
  }
}

/// NCHW, transposed (k-major for the GEMM): col_t (C R S x pixels, rows `pixels`
/// apart) for images [n0, n0 + n_images), col_t[(c R + r) S + s][(n P + p) Q + q]
/// = x[n0 + n][c][p sh - ph + r dh][q sw - pw + s dw], 0 outside the image. One
/// thread per element, the pixel fastest: neighbouring threads read neighbouring
/// columns of x (at stride 1) and write neighbouring elements of col_t, where a
/// row-major im2col (NPQ x CRS) would read x H W elements apart. The
/// launcher keeps C R S x pixels below 2^31.
template <class T>
KF_KERNEL void __launch_bounds__(conv2d_grad_block)
    conv2d_im2col_nchw_t(conv2d_args<T> a, fast_divmod div_pixels, int n0, T* __restrict__ col_t) {
  const int pixels = static_cast<int>(div_pixels.divisor);
  const int total = a.crs * pixels;
  const int step = static_cast<int>(gridDim.x * blockDim.x);
  for (int idx = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); idx < total; idx += step) {
    int j, m, image, pixel, oh, ow, c, tap, r, s;
    div_pixels.divmod(idx, j, m);
    a.div_pq.divmod(m, image, pixel);
    a.div_q.divmod(pixel, oh, ow);
    a.div_rs.divmod(j, c, tap);
    a.div_s.divmod(tap, r, s);
    const int ih = oh * a.stride_h - a.pad_h + r * a.dilation_h;
    const int iw = ow * a.stride_w - a.pad_w + s * a.dilation_w;
    const bool inside = ih >= 0 && ih < a.h && iw >= 0 && iw < a.w;
    col_t[idx] = inside ? a.x[conv2d_tensor_index<false>(n0 + image, c, ih, iw, a.c, a.h, a.w)] : from_compute<T>(0.0f);
  }
}

/// dy_t (K x N P Q) = dy (NCHW, read through the mask): dy_t[k][(n P + p) Q + q]
/// = dy[n][k][p][q], the k-major A operand of the NCHW filter gradient's GEMM.
/// One thread per element, the pixel fastest (both sides' runs of P Q contiguous).
template <class T>
KF_KERNEL void __launch_bounds__(conv2d_grad_block)
    conv2d_dy_nchw_t(conv2d_dy_reader<T> dy, fast_divmod div_npq, fast_divmod div_pq, int k, T* __restrict__ dy_t) {
  const long long total = static_cast<long long>(k) * div_npq.divisor;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; idx < total; idx += step) {
    int kk, m, n, pixel;
    div_npq.divmod(static_cast<int>(idx), kk, m);  // total < 2^31: the launcher's check
    div_pq.divmod(m, n, pixel);
    dy_t[idx] = from_compute<T>(static_cast<compute_t<T>>(
        dy((static_cast<long long>(n) * k + kk) * static_cast<long long>(div_pq.divisor) + pixel)));
  }
}

/// The patches of gradient step 4 (04_wgrad_wgmma_tf32.cuh; the plan's
/// conv2d_wgrad_wgmma_plan): wt x ht x nt output pixels, patches_q x
/// patches_p a row of images, patch g at (q, p, n) origin (g % patches_q wt,
/// g / patches_q % patches_p ht, g / (patches_q patches_p) nt).
struct conv2d_patch_walk {
  int wt = 1, ht = 1, nt = 1, patches_q = 1, patches_p = 1;
};

/// Tile of conv2d_dy_patch_t: one patch's run of pixels x this many output channels.
constexpr int conv2d_dy_patch_t_channels = 32;
/// A patch's run in dy_t (the TF32 wgrad's step: one 128-byte row of floats).
constexpr int conv2d_dy_patch_t_run = 32;

/// dy_t (K rows of gridDim.x runs of conv2d_dy_patch_t_run pixels; rows
/// `columns` = gridDim.x runs apart) from NHWC dy (N x P x Q x K, read through
/// the mask): run g holds patch g's pixels in the order of the kernel's x box
/// (q fastest, then p, then n), dy_t[k][g run + i] = dy[n][p][q][k] of pixel i
/// of patch g, rounded to TF32 (cvt.rna, where the GPU has it: the products
/// read it as it is), 0 for i past the patch's pixels and for pixels past the
/// output. Block (32, 8): patch blockIdx.x x channels 32 blockIdx.y.., through
/// shared memory, so that dy is read along K and dy_t written along the pixels
/// in 128-byte runs.
template <class T>
KF_KERNEL void __launch_bounds__(conv2d_grad_block)
    conv2d_dy_patch_t(conv2d_dy_reader<T> dy, conv2d_patch_walk walk, int n_images, int p, int q, int k,
                      long long columns, float* __restrict__ dy_t) {
  constexpr int run = conv2d_dy_patch_t_run, channels = conv2d_dy_patch_t_channels;
  __shared__ float tile[run][channels + 1];  // + 1: the transposed reads keep to distinct banks
  const int g = static_cast<int>(blockIdx.x);
  const int k0 = static_cast<int>(blockIdx.y) * channels;
  const int q0 = (g % walk.patches_q) * walk.wt;
  const int p0 = (g / walk.patches_q % walk.patches_p) * walk.ht;
  const int n0 = g / (walk.patches_q * walk.patches_p) * walk.nt;
  const int pixels = walk.wt * walk.ht * walk.nt;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  for (int i = ty; i < run; i += static_cast<int>(blockDim.y)) {
    const int qq = q0 + i % walk.wt, pp = p0 + i / walk.wt % walk.ht, nn = n0 + i / (walk.wt * walk.ht);
    const int kk = k0 + tx;
    const bool inside = i < pixels && qq < q && pp < p && nn < n_images && kk < k;
    tile[i][tx] = inside ? dy(conv2d_tensor_index<true>(nn, kk, pp, qq, k, p, q)) : 0.0f;
  }
  __syncthreads();
  for (int j = ty; j < channels; j += static_cast<int>(blockDim.y)) {
    if (k0 + j >= k) break;
    dy_t[(k0 + j) * columns + static_cast<long long>(g) * run + tx] = __uint_as_float(to_tf32(tile[tx][j]));
  }
}

/// The NHWC im2col: col[row][j] for images [n0, n0 + n_images): row = (n P + p)
/// Q + q (n from 0), j = (r S + s) C + c (the KRSC order), = x[n0 + n][p sh - ph
/// + r dh][q sw - pw + s dw][c], 0 outside the image. The launcher keeps
/// n_images P Q C R S below 2^31, so int indexes it.
/// NHWC: a tap's C channels are contiguous in x and in col, so one thread
/// copies one Piece (16 bytes where C * sizeof(T) and the pointers allow it,
/// else one element) of one tap of one output pixel: no per-element index
/// arithmetic, and 16-byte loads and stores.
template <class T, class Piece>
KF_KERNEL void __launch_bounds__(conv2d_grad_block)
    conv2d_im2col_nhwc(conv2d_args<T> a, fast_divmod div_pieces, int n0, int n_images, T* __restrict__ col) {
  const int pieces = static_cast<int>(div_pieces.divisor);  // per tap: C / (sizeof(Piece) / sizeof(T))
  const int total = n_images * a.pq * a.rs * pieces;
  const int step = static_cast<int>(gridDim.x * blockDim.x);
  const Piece* const x = reinterpret_cast<const Piece*>(a.x);
  Piece* const out = reinterpret_cast<Piece*>(col);
  Piece zero;
  for (int i = 0; i < static_cast<int>(sizeof(Piece) / sizeof(T)); ++i) {
    reinterpret_cast<T*>(&zero)[i] = from_compute<T>(0.0f);
  }
  for (int idx = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); idx < total; idx += step) {
    int t, piece, row, tap, image, pixel, oh, ow, r, s;
    div_pieces.divmod(idx, t, piece);
    a.div_rs.divmod(t, row, tap);
    a.div_pq.divmod(row, image, pixel);
    a.div_q.divmod(pixel, oh, ow);
    a.div_s.divmod(tap, r, s);
    const int ih = oh * a.stride_h - a.pad_h + r * a.dilation_h;
    const int iw = ow * a.stride_w - a.pad_w + s * a.dilation_w;
    const bool inside = ih >= 0 && ih < a.h && iw >= 0 && iw < a.w;
    out[idx] = inside ? x[((static_cast<long long>(n0 + image) * a.h + ih) * a.w + iw) * pieces + piece] : zero;
  }
}

/// NHWC whose taps' channel runs are not whole 16-byte pieces (the RGB stem's C
/// = 3: 6 bytes): col's rows padded to ld (R S C rounded up to 16 bytes, zeros
/// past R S C), and one thread per 16-byte piece of a row: it gathers the
/// piece's 16 / sizeof(T) elements (tap and channel stepped on, not divided
/// out, per element) and stores them at once. Coalesced 16-byte stores, and
/// aligned rows for the GEMM that reads col. One thread per element of the
/// unpadded matrix (2-byte stores at 294-byte row strides) ran the stem's N16
/// 224x224 7x7 s2 im2col in 126 us, one thread per filter row in 300 us.
template <class T>
KF_KERNEL void __launch_bounds__(conv2d_grad_block)
    conv2d_im2col_nhwc_padded(conv2d_args<T> a, fast_divmod div_pieces, int ld, int n0, int n_images,
                              T* __restrict__ col) {
  constexpr int per_piece = 16 / static_cast<int>(sizeof(T));
  const int total = n_images * a.pq * static_cast<int>(div_pieces.divisor);
  const int step = static_cast<int>(gridDim.x * blockDim.x);
  const T zero = from_compute<T>(0.0f);
  for (int idx = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); idx < total; idx += step) {
    int row, piece, image, pixel, oh, ow;
    div_pieces.divmod(idx, row, piece);
    a.div_pq.divmod(row, image, pixel);
    a.div_q.divmod(pixel, oh, ow);
    const int j0 = piece * per_piece;
    int c = j0 % a.c, tap = j0 / a.c;  // element j = tap C + c, tap = r S + s
    int r, s;
    a.div_s.divmod(tap, r, s);
    const T* const x_image = a.x + static_cast<long long>(n0 + image) * a.h * a.w * a.c;
    alignas(16) T v[per_piece];
#pragma unroll
    for (int e = 0; e < per_piece; ++e) {
      const int ih = oh * a.stride_h - a.pad_h + r * a.dilation_h;
      const int iw = ow * a.stride_w - a.pad_w + s * a.dilation_w;
      const bool inside = j0 + e < a.crs && ih >= 0 && ih < a.h && iw >= 0 && iw < a.w;
      v[e] = inside ? x_image[(static_cast<long long>(ih) * a.w + iw) * a.c + c] : zero;
      if (++c == a.c) {  // the next tap
        c = 0;
        if (++s == a.s) {
          s = 0;
          ++r;
        }
      }
    }
    *reinterpret_cast<uint4*>(col + static_cast<long long>(row) * ld + j0) = *reinterpret_cast<const uint4*>(v);
  }
}

/// dx from dcol = dy * w (NPQ x CRS, fp32, rows ld_dcol apart; the GEMM half of
/// gradient step 2 for strided layers with few input channels): dx[n][c][h][w]
/// = the sum over the taps (r, s) that reach (h, w) from an output pixel (p, q)
/// of dcol[(n P + p) Q + q][j], j = (r S + s) C + c in NHWC (KRSC filter
/// columns), (c R + r) S + s in NCHW (KCRS), rounded to T once. One thread per
/// element of dx, in the layout's order. At stride st and dilation 1 only every
/// st-th tap can reach a pixel, so the loops start at the first that does and
/// step by the stride (the stem's 7 x 7 at stride 2: 16 taps tried, not 49).
template <class T, bool Nhwc>
KF_KERNEL void __launch_bounds__(conv2d_grad_block)
    conv2d_col2im(conv2d_args<T> a, const float* __restrict__ dcol, int ld_dcol, T* __restrict__ dx) {
  const long long total = static_cast<long long>(a.n) * a.c * a.hw;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  const bool unit_dilation = a.dilation_h == 1 && a.dilation_w == 1;
  for (long long idx = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; idx < total; idx += step) {
    int n, c, ih, iw;
    conv2d_tensor_coords<Nhwc>(static_cast<int>(idx), a.c, a.h, a.w, n, c, ih, iw);
    // r reaches ih when (ih + pad_h - r dil_h) is a multiple of stride_h in [0, (P-1) stride_h].
    const int r_first = unit_dilation ? (ih + a.pad_h) % a.stride_h : 0;
    const int s_first = unit_dilation ? (iw + a.pad_w) % a.stride_w : 0;
    const int r_step = unit_dilation ? a.stride_h : 1, s_step = unit_dilation ? a.stride_w : 1;
    float sum = 0.0f;
    for (int r = r_first; r < a.r; r += r_step) {
      const int th = ih + a.pad_h - r * a.dilation_h;
      if (th < 0) break;  // larger r reach further up
      if (th % a.stride_h != 0 || th / a.stride_h >= a.p) continue;
      for (int s = s_first; s < a.s; s += s_step) {
        const int tw = iw + a.pad_w - s * a.dilation_w;
        if (tw < 0) break;
        if (tw % a.stride_w != 0 || tw / a.stride_w >= a.q) continue;
        const long long row = (static_cast<long long>(n) * a.p + th / a.stride_h) * a.q + tw / a.stride_w;
        sum += dcol[row * ld_dcol + (Nhwc ? (r * a.s + s) * a.c + c : (c * a.r + r) * a.s + s)];
      }
    }
    dx[idx] = from_compute<T>(static_cast<compute_t<T>>(sum));
  }
}

/// dst (rows x ld, ld >= cols) = src (rows x cols, dense) widened to fp32, the
/// columns past cols 0: a filter as the aligned fp32 B operand of dcol's GEMM.
template <class T>
KF_KERNEL void __launch_bounds__(conv2d_grad_block)
    conv2d_widen_rows(const T* __restrict__ src, float* __restrict__ dst, int rows, int cols, int ld) {
  const long long total = static_cast<long long>(rows) * ld;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total; i += step) {
    const int j = static_cast<int>(i % ld);
    const long long row = i / ld;
    dst[i] = j < cols ? static_cast<float>(to_compute(src[row * cols + j])) : 0.0f;
  }
}

/// dst[i] = reader(i) as fp32 (dy masked by the ReLU, or a filter widened).
template <class T>
KF_KERNEL void __launch_bounds__(conv2d_grad_block)
    conv2d_widen(conv2d_dy_reader<T> src, float* __restrict__ dst, long long n) {
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n; i += step) dst[i] = src(i);
}

/// dbias, pass 1: block (x, y) sums the rows of its slice (rows y * rows_per_slice
/// onwards, N*P*Q rows in all) for conv2d_bias_grad_channels output channels
/// into partial[y][k]; with one slice (gridDim.y == 1) it writes dbias itself.
/// Blocks of 32 x 8 threads: a warp walks rows, lane l holding channels
/// l, l + 32, l + 64 and l + 96 of the block's, so in NHWC a warp reads whole
/// rows of dy contiguously.
constexpr int conv2d_bias_grad_warps = 8;
constexpr int conv2d_bias_grad_per_lane = 4;
constexpr int conv2d_bias_grad_channels = 32 * conv2d_bias_grad_per_lane;
template <class T, bool Nhwc>
KF_KERNEL void __launch_bounds__(32 * conv2d_bias_grad_warps)
    conv2d_bias_grad_partial(conv2d_dy_reader<T> dy, int rows, int k, int pq, int rows_per_slice,
                             float* __restrict__ partial, T* __restrict__ dbias) {
  __shared__ float sums[conv2d_bias_grad_warps][conv2d_bias_grad_channels];
  const int k0 = static_cast<int>(blockIdx.x) * conv2d_bias_grad_channels + static_cast<int>(threadIdx.x);
  const int begin = static_cast<int>(blockIdx.y) * rows_per_slice;
  const int end = min(rows, begin + rows_per_slice);
  float sum[conv2d_bias_grad_per_lane] = {};
#pragma unroll 4  // several rows' loads in flight (the sums still add in row order)
  for (int row = begin + static_cast<int>(threadIdx.y); row < end; row += conv2d_bias_grad_warps) {
#pragma unroll
    for (int j = 0; j < conv2d_bias_grad_per_lane; ++j) {
      const int kk = k0 + 32 * j;
      if (kk < k) {
        sum[j] += dy(Nhwc ? static_cast<long long>(row) * k + kk
                          : (static_cast<long long>(row / pq) * k + kk) * pq + row % pq);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < conv2d_bias_grad_per_lane; ++j) sums[threadIdx.y][threadIdx.x + 32 * j] = sum[j];
  __syncthreads();
  const int t = static_cast<int>(threadIdx.y * 32 + threadIdx.x);
  const int kk = static_cast<int>(blockIdx.x) * conv2d_bias_grad_channels + t;
  if (t < conv2d_bias_grad_channels && kk < k) {
    float total = 0.0f;
    for (int y = 0; y < conv2d_bias_grad_warps; ++y) total += sums[y][t];
    if (gridDim.y == 1) {
      dbias[kk] = from_compute<T>(static_cast<compute_t<T>>(total));
    } else {
      partial[static_cast<long long>(blockIdx.y) * k + kk] = total;
    }
  }
}

/// dbias, pass 2: dbias[k] = sum over the slices of partial[slice][k]. Blocks
/// of 32 x 8 threads on 32 channels: lane l of warp y sums slices y, y + 8, ...
/// of channel l (a warp reads 32 neighbouring partials; loads issued 8 at a
/// time, added in order), then warp 0 adds the 8 in order: the same sums every
/// run.
template <class T>
KF_KERNEL void __launch_bounds__(32 * conv2d_bias_grad_warps)
    conv2d_bias_grad_finish(const float* __restrict__ partial, int slices, int k, T* __restrict__ dbias) {
  __shared__ float sums[conv2d_bias_grad_warps][32];
  const int kk = static_cast<int>(blockIdx.x) * 32 + static_cast<int>(threadIdx.x);
  float total = 0.0f;
  if (kk < k) {
    constexpr int batch = 8, step = conv2d_bias_grad_warps;
    int y = static_cast<int>(threadIdx.y);
    for (; y + (batch - 1) * step < slices; y += batch * step) {
      float v[batch];
#pragma unroll
      for (int j = 0; j < batch; ++j) v[j] = partial[static_cast<long long>(y + j * step) * k + kk];
#pragma unroll
      for (int j = 0; j < batch; ++j) total += v[j];
    }
    for (; y < slices; y += step) total += partial[static_cast<long long>(y) * k + kk];
  }
  sums[threadIdx.y][threadIdx.x] = total;
  __syncthreads();
  if (threadIdx.y == 0 && kk < k) {
    float sum = 0.0f;
    for (int y = 0; y < conv2d_bias_grad_warps; ++y) sum += sums[y][threadIdx.x];
    dbias[kk] = from_compute<T>(static_cast<compute_t<T>>(sum));
  }
}

/// The split wgrad's reduction store (common/split_k_reduce.cuh): the sum of
/// the slabs' element i is dw[i] (the slabs are laid out as dw, K x RSC),
/// rounded to T once. backward_filter.cu launches it over the slabs of gradient
/// step 3 (03_wgrad_wgmma.cuh).
template <class T>
struct conv2d_wgrad_split_k_store {
  T* dw;
  __device__ void operator()(int i, int, int, float sum) const { dw[i] = from_compute<T>(sum); }
  __device__ void operator()(int i, int, int, float4 s) const {
    dw[i] = from_compute<T>(s.x);
    dw[i + 1] = from_compute<T>(s.y);
    dw[i + 2] = from_compute<T>(s.z);
    dw[i + 3] = from_compute<T>(s.w);
  }
};

}  // namespace kf::detail
