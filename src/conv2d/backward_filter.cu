// SPDX-License-Identifier: Apache-2.0
// conv2d's filter gradient dw and dbias (<kernelforge/conv_backward.hpp>):
// validate -> dispatch, and the instantiations shipped in the fatbin; here the
// naive kernel, step 2 (im2col and kf::matmul) and dbias. The sm_90 routes
// (steps 3, 4 and 9): backward_filter_sm90.cu; the exact-fp32 NCHW ones (steps
// 5 and 6): backward_filter_fp32.cu. The steps are described at the top of
// backward_data.cu; what both gradients share: backward_common.cuh.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backward_common.cuh"
#include "kernelforge/conv_backward.hpp"
#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/common/numeric.cuh"
#include "kernelforge/kernels/common/split_k_reduce.cuh"
#include "kernelforge/kernels/conv2d/args.cuh"
#include "kernelforge/kernels/conv2d/backward/01_naive.cuh"
#include "kernelforge/kernels/conv2d/backward/passes.cuh"
#include "kernelforge/kernels/conv2d/validate.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/matmul.hpp"

namespace kf::detail {
namespace {

using namespace conv2d_grad;

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

/// Images per im2col chunk for rows of row_elements values of T (P Q rows an
/// image): the chunk within conv2d_im2col_max_bytes and its elements below 2^31
/// (the kernels' int indexing), at least one image, at most n.
template <class T>
z im2col_chunk_images(z n, z pq, z row_elements) {
  const z per_image = pq * row_elements;
  const z chunk = std::min(conv2d_im2col_max_bytes / (per_image * sizeof(T)), static_cast<z>(INT32_MAX) / per_image);
  return std::min(std::max<z>(1, chunk), n);
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

/// dw of an NHWC layer as im2col + matmul (see the top of backward_data.cu); false
/// (nothing enqueued) where no workspace is available.
template <class T>
bool wgrad_as_gemm(const char* what, int device, const conv2d_params& p, const conv2d_sizes& sizes,
                   const conv2d_args<T>& a, const T* dy, T* dw, const conv2d_backward_options& o, const T* relu_y) {
  // x of a 1x1 stride-1 unpadded layer is its own im2col matrix.
  const bool x_is_col = a.r == 1 && a.s == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 && a.pad_w == 0;
  const bool dy_is_matrix = !o.relu;  // NPQ x K as stored
  const z pq = static_cast<z>(a.pq), crs = static_cast<z>(a.crs), n = static_cast<z>(a.n);
  const z ld = x_is_col ? crs : im2col_ld(a);  // col's rows (padded to 16 bytes for narrow NHWC runs)
  const z chunk = x_is_col ? n : im2col_chunk_images<T>(n, pq, ld);
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
  const z chunk = im2col_chunk_images<T>(n, pq, crs);
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

namespace conv2d_grad {

template <class T>
void sum_wgrad_slabs(const char* what, int device, const float* partial, z rows, z cols, int split, T* dw,
                     cudaStream_t stream) {
  using store = conv2d_wgrad_split_k_store<T>;
  (void)profile_of<&split_k_reduce<store>>(device, what);  // no_kernel_image before the launch (cached)
  launch_split_k_reduce(device, partial, rows, cols, split, store{dw}, stream, what);
}
template void sum_wgrad_slabs<float>(const char*, int, const float*, z, z, int, float*, cudaStream_t);
template void sum_wgrad_slabs<__half>(const char*, int, const float*, z, z, int, __half*, cudaStream_t);
template void sum_wgrad_slabs<__nv_bfloat16>(const char*, int, const float*, z, z, int, __nv_bfloat16*, cudaStream_t);

}  // namespace conv2d_grad

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
    if constexpr (std::is_same_v<T, float>) {
      if (wgrad_as_pointwise_mma(what, device, p, a, dy, dw, o, relu_y)) return;
    }
    const bool wgmma =
        o.variant == conv2d_backward_variant::best || o.variant == conv2d_backward_variant::implicit_gemm_wgmma;
    if (wgmma && wgrad_as_wgmma(what, device, p, a, dy, dw, o, relu_y)) return;
    if constexpr (std::is_same_v<T, float>) {
      const bool exact_nchw = o.variant == conv2d_backward_variant::best && !nhwc && o.math == math_mode::exact;
      if (exact_nchw && conv2d_grad::wgrad_exact_nchw_fp32(what, device, p, a, dy, dw, o, relu_y)) return;
    }
    if (nhwc ? wgrad_as_gemm(what, device, p, sizes, a, dy, dw, o, relu_y)
             : wgrad_nchw_as_nt_gemm(what, device, a, dy, dw, o, relu_y)) {
      return;
    }
  }
  launch_wgrad_naive(what, device, a, reader, dw, nhwc, o.stream);
}

#define KF_CONV2D_BACKWARD_INSTANTIATE(T)                                                        \
  template void conv2d_backward_filter_impl<T>(const conv2d_params&, const T*, const T*, T*, T*, \
                                               const conv2d_backward_options&, const T*);
KF_CONV2D_BACKWARD_INSTANTIATE(float)
KF_CONV2D_BACKWARD_INSTANTIATE(__half)
KF_CONV2D_BACKWARD_INSTANTIATE(__nv_bfloat16)
#undef KF_CONV2D_BACKWARD_INSTANTIATE

}  // namespace kf::detail
