// SPDX-License-Identifier: Apache-2.0
// conv2d's gradients (<kernelforge/conv_backward.hpp>): validate -> dispatch,
// and the instantiations shipped in the fatbin (float in both layouts, __half and
// __nv_bfloat16 in NHWC).
//
// Gradient step 2 -- implicit_gemm: rather than new kernels, both gradients
// become products the library already runs at its best speed.
//  * dx is a forward convolution: dx[h] collects w[r] dy[p] over p sh - ph + r dh
//    = h; with r' = R-1-r that is the forward convolution of dy (spread over a
//    zero grid at stride > 1) with the filter turned by 180 degrees, K and C
//    swapped, stride 1, padding dh (R-1) - ph, and the same dilation. It runs
//    on conv2d_forward's best variant: the wgmma implicit GEMM on sm_90, the
//    Winograd kernels for exact 3x3 NCHW layers. The spread costs stride^2 more
//    products at stride > 1 (CUTLASS's stride-squared decomposition would not).
//    A 1x1 stride-1 NHWC layer's dx is a plain GEMM, dy * w, through kf::matmul;
//    a strided NHWC layer with few input channels (the RGB stem) takes the
//    GEMM dcol = dy * w and sums dcol's taps into dx (col2im) instead of the spread.
//  * dw is a GEMM reducing over the N*P*Q output positions: dw (K x CRS) =
//    dy^T (K x NPQ) * im2col(x) (NPQ x CRS), on kf::matmul's best variant
//    (wgmma, with its split-k where the K x CRS tiles are few). In NHWC, dy is
//    already the NPQ x K matrix and im2col's columns come out in KRSC order.
// Over step 1 this moves every multiply-add onto the tensor cores (or the tuned
// fp32 kernels) at the price of the passes in kernels/conv2d/backward/passes.cuh.
//
// Gradient step 3 -- implicit_gemm_wgmma (and best): dw of NHWC 16-bit layers
// on sm_90 as an implicit GEMM on wgmma that reads dy and x's im2col tiles by
// TMA where they are (kernels/conv2d/backward/03_wgrad_wgmma.cuh; its launch in
// backward_sm90a.cu), its split over the output pixels summed here by the shared
// split-k reduction; elsewhere step 2.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernelforge/conv_backward.hpp"
#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/common/numeric.cuh"
#include "kernelforge/kernels/common/split_k_reduce.cuh"
#include "kernelforge/kernels/conv2d/args.cuh"
#include "kernelforge/kernels/conv2d/backward/01_naive.cuh"
#include "kernelforge/kernels/conv2d/backward/passes.cuh"
#include "kernelforge/kernels/conv2d/backward/wgrad_wgmma_sm90a.hpp"
#include "kernelforge/kernels/conv2d/validate.hpp"
#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/matmul.hpp"

namespace kf {

const char* to_string(conv2d_backward_variant variant) noexcept {
  switch (variant) {
    case conv2d_backward_variant::best: return "best";
    case conv2d_backward_variant::naive: return "naive";
    case conv2d_backward_variant::implicit_gemm: return "implicit_gemm";
    case conv2d_backward_variant::implicit_gemm_wgmma: return "implicit_gemm_wgmma";
  }
  return "unknown";
}

namespace detail {
namespace {

using z = std::size_t;

/// im2col chunks of images stay within this many bytes.
constexpr z conv2d_im2col_max_bytes = z{1} << 30;

/// Blocks of conv2d_grad_block threads for a grid-stride loop over `items`:
/// the runtime's plan, capped at one wave of 16 blocks an SM.
unsigned grad_blocks(int device, z items) {
  constexpr int blocks_per_sm = 16;
  return plan_grid_stride(limits_for(device), conv2d_grad_block, blocks_per_sm, items, conv2d_grad_block).grid;
}

template <class T>
conv2d_dy_reader<T> dy_reader(const T* dy, const conv2d_backward_options& o, const T* relu_y) {
  return conv2d_dy_reader<T>{dy, o.relu ? relu_y : nullptr, o.relu_threshold};
}

z aligned_bytes(z elements, z element_bytes) { return round_up(elements * element_bytes, workspace_alignment); }

/// conv2d_dy_spread from layout in_nhwc to out_nhwc (NCHW to NCHW, NHWC to
/// NHWC, or NCHW to NHWC): dst is N x K x rows x cols.
template <class T>
void launch_dy_spread(const char* what, int device, bool in_nhwc, bool out_nhwc, conv2d_dy_reader<T> dy, T* dst, z n,
                      z k, z p, z q, z rows, z cols, z stride_h, z stride_w, cudaStream_t stream) {
  const unsigned blocks = grad_blocks(device, n * k * rows * cols);
  const auto i = [](z v) { return static_cast<int>(v); };
  if (in_nhwc) {
    conv2d_dy_spread<T, true, true><<<blocks, conv2d_grad_block, 0, stream>>>(dy, dst, i(n), i(k), i(p), i(q), i(rows),
                                                                              i(cols), i(stride_h), i(stride_w));
  } else if (out_nhwc) {
    conv2d_dy_spread<T, false, true><<<blocks, conv2d_grad_block, 0, stream>>>(dy, dst, i(n), i(k), i(p), i(q), i(rows),
                                                                               i(cols), i(stride_h), i(stride_w));
  } else {
    conv2d_dy_spread<T, false, false><<<blocks, conv2d_grad_block, 0, stream>>>(
        dy, dst, i(n), i(k), i(p), i(q), i(rows), i(cols), i(stride_h), i(stride_w));
  }
  check_launch(what);
}

// ---- dx ---------------------------------------------------------------------

template <class T>
void launch_dgrad_naive(const char* what, int device, const conv2d_args<T>& a, conv2d_dy_reader<T> dy, T* dx, bool nhwc,
                        cudaStream_t stream) {
  const z total = static_cast<z>(a.n) * static_cast<z>(a.c) * static_cast<z>(a.hw);
  const unsigned blocks = grad_blocks(device, total);
  if (nhwc) {
    conv2d_dgrad_naive<T, true><<<blocks, conv2d_grad_block, 0, stream>>>(a, dy, dx);
  } else {
    conv2d_dgrad_naive<T, false><<<blocks, conv2d_grad_block, 0, stream>>>(a, dy, dx);
  }
  check_launch(what);
}

/// Whether dx takes dgrad_as_gemm_col2im: a strided layer with few input
/// channels (the RGB stem), whose spread forward would multiply stride^2 zeros
/// into a tile of K = C outputs that is mostly padding. NHWC: C * sizeof(T) not
/// a multiple of 16 bytes (the wgmma forward's tiles read in place otherwise);
/// NCHW: C < 16 (the stem's fp32 dx took 8.9 ms through the spread forward on
/// the H200, against cuDNN's 0.26).
template <class T>
bool dgrad_prefers_col2im(const conv2d_params& p) {
  constexpr z few_nchw_channels = 16;
  if (p.stride_h == 1 && p.stride_w == 1) return false;
  return p.layout == conv2d_layout::nhwc ? (p.in_channels * sizeof(T)) % 16 != 0 : p.in_channels < few_nchw_channels;
}

/// dx of a strided layer with few input channels (dgrad_prefers_col2im) as
/// dcol = dy * w (NPQ x CRS, columns in the filter's order) and its col2im sum.
/// The GEMM runs in fp32 (16-bit data widened first: exact in TF32, whose 10
/// mantissa bits hold theirs; NCHW dy reordered to NPQ x K first), so dx is
/// rounded to T once. false (nothing enqueued) without workspace or where dcol
/// exceeds 1 GiB.
template <class T>
bool dgrad_as_gemm_col2im(const char* what, int device, const conv2d_params& p, const conv2d_sizes& sizes, const T* dy,
                          const T* w, T* dx, const conv2d_backward_options& o, const T* relu_y) {
  const z rows = p.batch * sizes.p * sizes.q, crs = sizes.w_elements / p.out_channels;
  // dcol's and the widened filter's rows padded to 16 bytes, so the GEMM reads
  // and stores them with TMA (147 floats a row for the stem: 588 bytes).
  const z ld = round_up(crs, 16 / sizeof(float));
  const z dcol_elements = rows * ld;
  if (dcol_elements * sizeof(float) > conv2d_im2col_max_bytes || ld > static_cast<z>(INT32_MAX)) return false;
  const bool nhwc = p.layout == conv2d_layout::nhwc;
  const bool widen_dy = !std::is_same_v<T, float> || o.relu || !nhwc;
  const z dy_bytes = widen_dy ? aligned_bytes(sizes.y_elements, sizeof(float)) : 0;
  const z w_bytes = aligned_bytes(p.out_channels * ld, sizeof(float));
  pooled_workspace scratch(device, dy_bytes + w_bytes + aligned_bytes(dcol_elements, sizeof(float)), o.stream);
  if (scratch.data() == nullptr) return false;
  char* const base = scratch.data<char>();
  const float* dy_f = reinterpret_cast<const float*>(dy);
  if constexpr (std::is_same_v<T, float>) {
    if (!nhwc) {  // NCHW dy (masked) reordered to the NPQ x K matrix
      launch_dy_spread(what, device, false, true, dy_reader(dy, o, relu_y), reinterpret_cast<float*>(base), p.batch,
                       p.out_channels, sizes.p, sizes.q, sizes.p, sizes.q, 1, 1, o.stream);
    }
  }
  if (widen_dy && nhwc) {
    conv2d_widen<T><<<grad_blocks(device, sizes.y_elements), conv2d_grad_block, 0, o.stream>>>(
        dy_reader(dy, o, relu_y), reinterpret_cast<float*>(base), static_cast<long long>(sizes.y_elements));
    check_launch(what);
  }
  if (widen_dy) dy_f = reinterpret_cast<const float*>(base);
  float* const w_f = reinterpret_cast<float*>(base + dy_bytes);
  conv2d_widen_rows<T><<<grad_blocks(device, p.out_channels * ld), conv2d_grad_block, 0, o.stream>>>(
      w, w_f, static_cast<int>(p.out_channels), static_cast<int>(crs), static_cast<int>(ld));
  check_launch(what);
  float* const dcol = reinterpret_cast<float*>(base + dy_bytes + w_bytes);
  matmul_options mo;
  mo.stream = o.stream;
  // Widened 16-bit values are TF32 values (10 mantissa bits hold theirs): TF32 is exact for them.
  mo.math = std::is_same_v<T, float> ? o.math : math_mode::tf32;
  matmul_impl<float>(op::none, op::none, rows, crs, p.out_channels, 1.0f, dy_f, p.out_channels, w_f, ld, 0.0f, dcol, ld,
                     mo);
  const conv2d_args<T> a = make_conv2d_args<T>(p, sizes.p, sizes.q, nullptr, w, nullptr, nullptr);
  const unsigned blocks = grad_blocks(device, sizes.x_elements);
  if (nhwc) {
    conv2d_col2im<T, true><<<blocks, conv2d_grad_block, 0, o.stream>>>(a, dcol, static_cast<int>(ld), dx);
  } else {
    conv2d_col2im<T, false><<<blocks, conv2d_grad_block, 0, o.stream>>>(a, dcol, static_cast<int>(ld), dx);
  }
  check_launch(what);
  return true;
}

/// dx as conv2d_forward (see the top of this file); false (nothing enqueued)
/// where the padding exceeds the filter's reach, the spread dy would not fit
/// 32-bit indexing, or no workspace is available.
template <class T>
bool dgrad_as_forward(const char* what, int device, const conv2d_params& p, const conv2d_sizes& sizes, const T* dy,
                      const T* w, T* dx, const conv2d_backward_options& o, const T* relu_y) {
  const z reach_h = p.dilation_h * (p.filter_height - 1), reach_w = p.dilation_w * (p.filter_width - 1);
  if (p.pad_h > reach_h || p.pad_w > reach_w) return false;
  const bool nhwc = p.layout == conv2d_layout::nhwc;
  if (nhwc && reach_h + reach_w == 0 && p.stride_h == 1 && p.stride_w == 1 && !o.relu) {
    // 1x1 at stride 1 (and so no padding): dx (NHW x C) = dy (NHW x K) * w (K x C),
    // a GEMM with a short reduction that kf::matmul stores faster than the
    // convolution kernel, whose tiles expect a long one.
    matmul_options mo;
    mo.stream = o.stream;
    mo.math = o.math;
    matmul_impl<T>(op::none, op::none, sizes.x_elements / p.in_channels, p.in_channels, p.out_channels, compute_t<T>(1),
                   dy, p.out_channels, w, p.in_channels, compute_t<T>(0), dx, p.in_channels, mo);
    return true;
  }
  const bool spread = o.relu || p.stride_h > 1 || p.stride_w > 1;
  if (dgrad_prefers_col2im<T>(p) && dgrad_as_gemm_col2im(what, device, p, sizes, dy, w, dx, o, relu_y)) {
    return true;
  }
  conv2d_params f = p;  // the forward convolution whose output is dx
  f.in_channels = p.out_channels;
  f.out_channels = p.in_channels;
  f.in_height = spread ? p.in_height + 2 * p.pad_h - reach_h : sizes.p;  // = P at stride 1
  f.in_width = spread ? p.in_width + 2 * p.pad_w - reach_w : sizes.q;
  f.stride_h = f.stride_w = 1;
  f.pad_h = reach_h - p.pad_h;
  f.pad_w = reach_w - p.pad_w;
  const z spread_elements = p.batch * p.out_channels * f.in_height * f.in_width;
  if (spread && spread_elements > static_cast<z>(INT32_MAX)) return false;
  const z turned_bytes = aligned_bytes(sizes.w_elements, sizeof(T));
  pooled_workspace scratch(device, turned_bytes + (spread ? aligned_bytes(spread_elements, sizeof(T)) : 0), o.stream);
  if (scratch.data() == nullptr) return false;
  T* const turned = scratch.data<T>();
  const int K = static_cast<int>(p.out_channels), C = static_cast<int>(p.in_channels);
  const int R = static_cast<int>(p.filter_height), S = static_cast<int>(p.filter_width);
  const unsigned turn_blocks = grad_blocks(device, sizes.w_elements);
  if (nhwc) {
    conv2d_filter_turn<T, true><<<turn_blocks, conv2d_grad_block, 0, o.stream>>>(w, turned, K, C, R, S);
  } else {
    conv2d_filter_turn<T, false><<<turn_blocks, conv2d_grad_block, 0, o.stream>>>(w, turned, K, C, R, S);
  }
  check_launch(what);
  const T* source = dy;
  if (spread) {
    T* const spread_dy = reinterpret_cast<T*>(scratch.data<char>() + turned_bytes);
    launch_dy_spread(what, device, nhwc, nhwc, dy_reader(dy, o, relu_y), spread_dy, p.batch, p.out_channels, sizes.p,
                     sizes.q, f.in_height, f.in_width, p.stride_h, p.stride_w, o.stream);
    source = spread_dy;
  }
  conv2d_options fo;
  fo.stream = o.stream;
  fo.math = o.math;
  conv2d_forward_impl<T>(f, source, turned, nullptr, dx, fo);
  return true;
}

// ---- dw ---------------------------------------------------------------------

template <class T>
void launch_wgrad_naive(const char* what, int device, const conv2d_args<T>& a, conv2d_dy_reader<T> dy, T* dw, bool nhwc,
                        cudaStream_t stream) {
  const unsigned blocks = grad_blocks(device, static_cast<z>(a.k) * static_cast<z>(a.crs));
  if (nhwc) {
    conv2d_wgrad_naive<T, true><<<blocks, conv2d_grad_block, 0, stream>>>(a, dy, dw);
  } else {
    conv2d_wgrad_naive<T, false><<<blocks, conv2d_grad_block, 0, stream>>>(a, dy, dw);
  }
  check_launch(what);
}

/// The 16-byte pieces im2col's NHWC kernels move.
constexpr z im2col_piece_bytes = 16;

/// Whether an NHWC im2col moves whole taps' channel runs in 16-byte pieces
/// (col dense, R S C wide); else its rows are padded (im2col_ld). (NCHW's
/// filter gradient writes its im2col transposed: wgrad_nchw_as_nt_gemm.)
template <class T>
bool im2col_runs_are_pieces(const conv2d_args<T>& a) {
  return (static_cast<z>(a.c) * sizeof(T)) % im2col_piece_bytes == 0 &&
         reinterpret_cast<std::uintptr_t>(a.x) % im2col_piece_bytes == 0;
}

/// The row length of the im2col matrix: R S C, or (NHWC runs not in pieces)
/// R S C rounded up to 16 bytes.
template <class T>
z im2col_ld(const conv2d_args<T>& a) {
  const z crs = static_cast<z>(a.crs);
  if (im2col_runs_are_pieces(a)) return crs;
  return round_up(crs, im2col_piece_bytes / sizeof(T));
}

/// The NHWC conv2d_im2col_* for images [n0, n0 + images) into col (16-byte
/// aligned, rows im2col_ld apart), in 16-byte pieces: whole taps' channel runs
/// or pieces of padded rows.
template <class T>
void launch_im2col(const char* what, int device, const conv2d_args<T>& a, z n0, z images, T* col, cudaStream_t stream) {
  const auto first = static_cast<int>(n0), count = static_cast<int>(images);
  const z rows = images * static_cast<z>(a.pq);
  if (im2col_runs_are_pieces(a)) {
    const z per_tap = static_cast<z>(a.c) * sizeof(T) / im2col_piece_bytes;
    conv2d_im2col_nhwc<T, uint4>
        <<<grad_blocks(device, rows * static_cast<z>(a.rs) * per_tap), conv2d_grad_block, 0, stream>>>(
            a, fast_divmod(static_cast<unsigned>(per_tap)), first, count, col);
  } else {
    const z ld = im2col_ld(a), per_row = ld * sizeof(T) / im2col_piece_bytes;
    conv2d_im2col_nhwc_padded<T><<<grad_blocks(device, rows * per_row), conv2d_grad_block, 0, stream>>>(
        a, fast_divmod(static_cast<unsigned>(per_row)), static_cast<int>(ld), first, count, col);
  }
  check_launch(what);
}

/// dw of an NHWC layer as im2col + matmul (see the top of this file); false
/// (nothing enqueued) where no workspace is available.
template <class T>
bool wgrad_as_gemm(const char* what, int device, const conv2d_params& p, const conv2d_sizes& sizes,
                   const conv2d_args<T>& a, const T* dy, T* dw, const conv2d_backward_options& o, const T* relu_y) {
  // x of a 1x1 stride-1 unpadded layer is its own im2col matrix.
  const bool x_is_col = a.r == 1 && a.s == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 && a.pad_w == 0;
  const bool dy_is_matrix = !o.relu;  // NPQ x K as stored
  const z pq = static_cast<z>(a.pq), crs = static_cast<z>(a.crs), n = static_cast<z>(a.n);
  const z ld = x_is_col ? crs : im2col_ld(a);  // col's rows (padded to 16 bytes for narrow NHWC runs)
  z chunk = x_is_col ? n : std::max<z>(1, conv2d_im2col_max_bytes / (pq * ld * sizeof(T)));
  chunk = std::min({chunk, n, std::max<z>(1, static_cast<z>(INT32_MAX) / (pq * ld))});
  const z dy_bytes = dy_is_matrix ? 0 : aligned_bytes(sizes.y_elements, sizeof(T));
  const z col_bytes = x_is_col ? 0 : aligned_bytes(chunk * pq * ld, sizeof(T));
  pooled_workspace scratch(device, dy_bytes + col_bytes, o.stream);
  if (dy_bytes + col_bytes > 0 && scratch.data() == nullptr) return false;
  const T* dy_matrix = dy;
  if (!dy_is_matrix) {  // dy masked and/or reordered to NPQ x K
    T* const dst = scratch.data<T>();
    launch_dy_spread(what, device, true, true, dy_reader(dy, o, relu_y), dst, p.batch, p.out_channels, sizes.p, sizes.q,
                     sizes.p, sizes.q, 1, 1, o.stream);
    dy_matrix = dst;
  }
  T* const col = x_is_col ? nullptr : reinterpret_cast<T*>(scratch.data<char>() + dy_bytes);
  matmul_options mo;
  mo.stream = o.stream;
  mo.math = o.math;
  for (z n0 = 0; n0 < n; n0 += chunk) {
    const z images = std::min(chunk, n - n0);
    const T* b = a.x + n0 * static_cast<z>(a.hw) * static_cast<z>(a.c);  // x_is_col: rows of x
    if (!x_is_col) {
      launch_im2col(what, device, a, n0, images, col, o.stream);
      b = col;
    }
    // dw (K x CRS) (+)= dy_rows^T (K x rows) * b (rows x CRS, rows ld apart)
    matmul_impl<T>(op::transpose, op::none, static_cast<z>(a.k), crs, images * pq, compute_t<T>(1),
                   dy_matrix + n0 * pq * static_cast<z>(a.k), static_cast<z>(a.k), b, ld, compute_t<T>(n0 == 0 ? 0 : 1),
                   dw, crs, mo);
  }
  return true;
}

/// dw of an NCHW layer as a GEMM whose operands are both k-major (the
/// reduction over the pixels contiguous): dw (K x CRS) = dy_t (K x NPQ) *
/// col_t^T, dy_t and col_t (CRS x the pixels of a chunk of images) written
/// pixel-fastest, where NCHW keeps pixels contiguous (conv2d_dy_nchw_t,
/// conv2d_im2col_nchw_t). Row-major im2col (NPQ x CRS) reads x H W elements
/// apart and hands the GEMM two MN-major operands; the N32 C64 56x56 fp32 dw
/// took 1.57 ms that way on the H200 (cuDNN: 0.31). false (nothing enqueued)
/// without workspace or where an index would pass 2^31.
template <class T>
bool wgrad_nchw_as_nt_gemm(const char* what, int device, const conv2d_args<T>& a, const T* dy, T* dw,
                           const conv2d_backward_options& o, const T* relu_y) {
  const z pq = static_cast<z>(a.pq), crs = static_cast<z>(a.crs), n = static_cast<z>(a.n), K = static_cast<z>(a.k);
  const z npq = n * pq, int_max = static_cast<z>(INT32_MAX);
  if (K * npq > int_max || pq * crs > int_max) return false;
  z chunk = std::max<z>(1, conv2d_im2col_max_bytes / (pq * crs * sizeof(T)));
  chunk = std::min({chunk, n, int_max / (pq * crs)});
  const z dy_bytes = aligned_bytes(K * npq, sizeof(T));
  pooled_workspace scratch(device, dy_bytes + aligned_bytes(chunk * pq * crs, sizeof(T)), o.stream);
  if (scratch.data() == nullptr) return false;
  T* const dy_t = scratch.data<T>();
  T* const col_t = reinterpret_cast<T*>(scratch.data<char>() + dy_bytes);
  conv2d_dy_nchw_t<T><<<grad_blocks(device, K * npq), conv2d_grad_block, 0, o.stream>>>(
      dy_reader(dy, o, relu_y), fast_divmod(static_cast<unsigned>(npq)), fast_divmod(static_cast<unsigned>(pq)), a.k,
      dy_t);
  check_launch(what);
  matmul_options mo;
  mo.stream = o.stream;
  mo.math = o.math;
  for (z n0 = 0; n0 < n; n0 += chunk) {
    const z pixels = std::min(chunk, n - n0) * pq;
    conv2d_im2col_nchw_t<T><<<grad_blocks(device, crs * pixels), conv2d_grad_block, 0, o.stream>>>(
        a, fast_divmod(static_cast<unsigned>(pixels)), static_cast<int>(n0), col_t);
    check_launch(what);
    // dw (K x CRS) (+)= dy_t[:, pixels of the chunk] (K x pixels, rows NPQ apart) * col_t^T (pixels x CRS)
    matmul_impl<T>(op::none, op::transpose, K, crs, pixels, compute_t<T>(1), dy_t + n0 * pq, npq, col_t, pixels,
                   compute_t<T>(n0 == 0 ? 0 : 1), dw, crs, mo);
  }
  return true;
}

/// dw of an NHWC 16-bit layer on the wgmma implicit GEMM (gradient step 3, see
/// the top of this file): planned here (wgrad_wgmma_plan.hpp) with its split's
/// fp32 slabs -- and, under the ReLU mask, dy masked first (conv2d_dy_spread)
/// -- in one pooled workspace, launched by backward_sm90a.cu, reduced here.
/// A layer whose x TMA cannot read in place (C * sizeof(T) not a multiple of
/// 16 bytes, as the RGB stem's C = 3, or x misaligned) runs as its column fold,
/// the forward's (wgmma_sm90a.hpp): x folded into an R x 1 layer over C' = S C
/// rounded up to 16 bytes, whose gradient dw' (K x R x C') holds each (k, r)'s
/// S C values of dw first, copied out at the end. (The stem's dw: 159 us as
/// im2col + matmul on the H200.)
/// false (nothing enqueued but possibly the mask or the fold) where it does not
/// run: float, NCHW, no sm_90a kernel for the device, a layer or pointer outside
/// its reach, no workspace for the mask or the fold; without memory for the
/// slabs it runs unsplit.
template <class T>
bool wgrad_as_wgmma(const char* what, int device, const conv2d_params& p, const conv2d_sizes& sizes,
                    const conv2d_args<T>& a, const T* dy, T* dw, const conv2d_backward_options& o, const T* relu_y) {
  if constexpr (std::is_same_v<T, float>) {
    return false;  // TF32 wgmma reads k-major operands only (03_wgrad_wgmma.cuh)
  } else {
    if (p.layout != conv2d_layout::nhwc || !conv2d_wgrad_wgmma_available(device)) return false;
    constexpr z tma_bytes = 16;
    const bool fold =
        (p.in_channels * sizeof(T)) % tma_bytes != 0 || reinterpret_cast<std::uintptr_t>(a.x) % tma_bytes != 0;
    // The layer the kernel reads: `a`, or its column fold (R x 1 at stride (stride_h, 1) over c_folded channels).
    const z c_folded = fold ? conv2d_nhwc_folded_channels(p.filter_width, p.in_channels, sizeof(T)) : p.in_channels;
    const z s_read = fold ? 1 : p.filter_width, stride_w_read = fold ? 1 : p.stride_w;
    if (conv2d_wgrad_wgmma_unsupported_reason(c_folded, p.out_channels, sizeof(T), p.stride_h, stride_w_read) !=
        nullptr) {
      return false;
    }
    const bool masked = o.relu;  // the masked dy goes to the (aligned) workspace
    if (!conv2d_wgrad_wgmma_aligned(fold ? nullptr : a.x, masked ? nullptr : static_cast<const void*>(dy))) {
      return false;
    }
    const z K = p.out_channels, rsc_read = p.filter_height * s_read * c_folded;
    const int sms = limits_for(device).sm_count;
    const auto plan_for = [&](bool unsplit) {
      return plan_conv2d_wgrad_wgmma(p.batch, sizes.p, sizes.q, K, c_folded, p.filter_height, s_read, p.stride_h,
                                     stride_w_read, p.dilation_h, static_cast<z>(sms > 0 ? sms : 1), unsplit);
    };
    conv2d_wgrad_wgmma_plan plan = plan_for(false);
    // The workspace: [masked dy][x folded][dw' (folded)][the split's slabs]; all but the slabs are needed.
    const z dy_bytes = masked ? aligned_bytes(sizes.y_elements, sizeof(T)) : 0;
    const z x_fold_bytes = fold ? aligned_bytes(p.batch * p.in_height * sizes.q * c_folded, sizeof(T)) : 0;
    const z dw_fold_bytes = fold ? aligned_bytes(K * rsc_read, sizeof(T)) : 0;
    const z needed = dy_bytes + x_fold_bytes + dw_fold_bytes;
    const pooled_workspace scratch(device, needed + plan.workspace_bytes(K, rsc_read), o.stream);
    char* memory = scratch.data<char>();
    const bool unsplit = memory == nullptr && plan.split > 1;  // no memory for the slabs: one slice, no slabs
    const pooled_workspace needed_only(device, unsplit ? needed : 0, o.stream);
    if (unsplit) {
      plan = plan_for(true);
      memory = needed_only.data<char>();
    }
    if (needed > 0 && memory == nullptr) return false;
    conv2d_args<T> read = a;
    T* dw_read = dw;
    if (fold) {
      T* const x_folded = reinterpret_cast<T*>(memory + dy_bytes);
      read = conv2d_nhwc_column_fold_of(a, static_cast<int>(c_folded), x_folded);
      dw_read = reinterpret_cast<T*>(memory + dy_bytes + x_fold_bytes);
      if (!conv2d_nhwc_fold_input(device, a, c_folded, x_folded, o.stream, what)) return false;
    }
    const T* source = dy;
    if (masked) {
      T* const masked_dy = reinterpret_cast<T*>(memory);
      launch_dy_spread(what, device, true, true, dy_reader(dy, o, relu_y), masked_dy, p.batch, K, sizes.p, sizes.q,
                       sizes.p, sizes.q, 1, 1, o.stream);
      source = masked_dy;
    }
    float* const partial = plan.split > 1 ? reinterpret_cast<float*>(memory + needed) : nullptr;
    if (!conv2d_wgrad_wgmma_try_launch(device, read, source, dw_read, partial, plan, o.stream)) return false;
    if (plan.split > 1) {
      using store = conv2d_wgrad_split_k_store<T>;
      (void)profile_of<&split_k_reduce<store>>(device, what);  // no_kernel_image before the launch (cached)
      launch_split_k_reduce(device, partial, K, rsc_read, static_cast<int>(plan.split), store{dw_read}, o.stream, what);
    }
    if (fold) {  // dw (K x R x S C) = the first S C of each (k, r)'s c_folded values
      const z row = p.filter_width * p.in_channels * sizeof(T);
      cuda_check(cudaMemcpy2DAsync(dw, row, dw_read, c_folded * sizeof(T), row, K * p.filter_height,
                                   cudaMemcpyDeviceToDevice, o.stream),
                 what);
    }
    return true;
  }
}

template <class T>
void launch_bias_grad(const char* what, int device, const conv2d_args<T>& a, conv2d_dy_reader<T> dy, T* dbias,
                      bool nhwc, cudaStream_t stream) {
  const z rows = static_cast<z>(a.m);
  // Slices of at least 64 rows, at most 4 per SM: the finishing pass then sums
  // a few hundred partials per channel (1568 for N32 56x56 took 25 us).
  constexpr z rows_per_slice = 64, slices_per_sm = 4;
  const int sms = limits_for(device).sm_count;
  z slices = std::min<z>(ceil_div(rows, rows_per_slice), slices_per_sm * static_cast<z>(sms > 0 ? sms : 1));
  const z per_slice = ceil_div(rows, slices);
  pooled_workspace partial(device, slices > 1 ? slices * static_cast<z>(a.k) * sizeof(float) : 0, stream);
  if (partial.data() == nullptr) slices = 1;  // one slice per channel block: slower, same sums
  const dim3 grid(static_cast<unsigned>(ceil_div(static_cast<z>(a.k), static_cast<z>(conv2d_bias_grad_channels))),
                  static_cast<unsigned>(slices));
  const dim3 block(32, conv2d_bias_grad_warps);
  const int slice_rows = static_cast<int>(slices == 1 ? rows : per_slice);
  if (nhwc) {
    conv2d_bias_grad_partial<T, true>
        <<<grid, block, 0, stream>>>(dy, a.m, a.k, a.pq, slice_rows, partial.data<float>(), dbias);
  } else {
    conv2d_bias_grad_partial<T, false>
        <<<grid, block, 0, stream>>>(dy, a.m, a.k, a.pq, slice_rows, partial.data<float>(), dbias);
  }
  check_launch(what);
  if (slices > 1) {
    conv2d_bias_grad_finish<T><<<static_cast<unsigned>(ceil_div(static_cast<z>(a.k), 32)), block, 0, stream>>>(
        partial.data<float>(), static_cast<int>(slices), a.k, dbias);
    check_launch(what);
  }
}

}  // namespace

template <class T>
void conv2d_backward_data_impl(const conv2d_params& p, const T* dy, const T* w, T* dx, const conv2d_backward_options& o,
                               const T* relu_y) {
  const char* what = "kf::conv2d_backward_data";
  const conv2d_sizes sizes = validate_conv2d_backward_data(what, p, dy, w, dx, relu_y, sizeof(T), o);
  if (sizes.x_elements == 0) return;  // N = 0
  const int device = current_device(what);
  require_kernel_image_cached(device, what);
  if (sizes.y_elements == 0) {  // K = 0: nothing flows back
    cuda_check(cudaMemsetAsync(dx, 0, sizes.x_elements * sizeof(T), o.stream), what);
    return;
  }
  if (o.variant != conv2d_backward_variant::naive && dgrad_as_forward(what, device, p, sizes, dy, w, dx, o, relu_y)) {
    return;
  }
  const conv2d_args<T> a = make_conv2d_args<T>(p, sizes.p, sizes.q, nullptr, w, nullptr, nullptr);
  launch_dgrad_naive(what, device, a, dy_reader(dy, o, relu_y), dx, p.layout == conv2d_layout::nhwc, o.stream);
}

template <class T>
void conv2d_backward_filter_impl(const conv2d_params& p, const T* x, const T* dy, T* dw, T* dbias,
                                 const conv2d_backward_options& o, const T* relu_y) {
  const char* what = "kf::conv2d_backward_filter";
  const conv2d_sizes sizes = validate_conv2d_backward_filter(what, p, x, dy, dw, dbias, relu_y, sizeof(T), o);
  if (sizes.w_elements == 0) return;  // K = 0
  const int device = current_device(what);
  require_kernel_image_cached(device, what);
  if (sizes.y_elements == 0) {  // N = 0: no positions to sum
    cuda_check(cudaMemsetAsync(dw, 0, sizes.w_elements * sizeof(T), o.stream), what);
    if (dbias != nullptr) cuda_check(cudaMemsetAsync(dbias, 0, p.out_channels * sizeof(T), o.stream), what);
    return;
  }
  const bool nhwc = p.layout == conv2d_layout::nhwc;
  const conv2d_args<T> a = make_conv2d_args<T>(p, sizes.p, sizes.q, x, nullptr, nullptr, nullptr);
  const conv2d_dy_reader<T> reader = dy_reader(dy, o, relu_y);
  if (dbias != nullptr) launch_bias_grad(what, device, a, reader, dbias, nhwc, o.stream);
  if (o.variant != conv2d_backward_variant::naive) {
    const bool wgmma =
        o.variant == conv2d_backward_variant::best || o.variant == conv2d_backward_variant::implicit_gemm_wgmma;
    if (wgmma && wgrad_as_wgmma(what, device, p, sizes, a, dy, dw, o, relu_y)) return;
    if (nhwc ? wgrad_as_gemm(what, device, p, sizes, a, dy, dw, o, relu_y)
             : wgrad_nchw_as_nt_gemm(what, device, a, dy, dw, o, relu_y)) {
      return;
    }
  }
  launch_wgrad_naive(what, device, a, reader, dw, nhwc, o.stream);
}

#define KF_CONV2D_BACKWARD_INSTANTIATE(T)                                                        \
  template void conv2d_backward_data_impl<T>(const conv2d_params&, const T*, const T*, T*,       \
                                             const conv2d_backward_options&, const T*);          \
  template void conv2d_backward_filter_impl<T>(const conv2d_params&, const T*, const T*, T*, T*, \
                                               const conv2d_backward_options&, const T*);
KF_CONV2D_BACKWARD_INSTANTIATE(float)
KF_CONV2D_BACKWARD_INSTANTIATE(__half)
KF_CONV2D_BACKWARD_INSTANTIATE(__nv_bfloat16)
#undef KF_CONV2D_BACKWARD_INSTANTIATE

}  // namespace detail

}  // namespace kf
