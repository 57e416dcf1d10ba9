// SPDX-License-Identifier: Apache-2.0
// conv2d's data gradient dx (<kernelforge/conv_backward.hpp>): validate ->
// dispatch, and the instantiations shipped in the fatbin (float in both layouts,
// __half and __nv_bfloat16 in NHWC). The filter gradient: backward_filter.cu;
// what both share: backward_common.cuh. The steps of both:
//
// Gradient step 2 -- implicit_gemm: rather than new kernels, both gradients
// become products the library already runs at its best speed.
//  * dx is a forward convolution: dx[h] collects w[r] dy[p] over p sh - ph + r dh
//    = h; with r' = R-1-r that is the forward convolution of dy (spread over a
//    zero grid at stride > 1) with the filter turned by 180 degrees, K and C
//    swapped, stride 1, padding dh (R-1) - ph, and the same dilation. It runs
//    on conv2d_forward's best variant: the wgmma implicit GEMM on sm_90, the
//    Winograd kernels for exact 3x3 layers (float NHWC under exact math through
//    the NCHW kernels on transposed copies, nhwc_launch.cuh). The turned filter is a copy
//    (conv2d_filter_turn, into a pooled workspace), except for 16-bit NHWC on
//    sm_90a where TMA reads dy and w in place: there step 7 reads w where it
//    lies, tap t's slice being the layer's tap RS - 1 - t as an N-major B
//    (conv2d_wgmma_filter::dgrad_unturned; the route: backward/dgrad_plan.hpp).
//    The spread costs stride^2 more products at stride > 1 (CUTLASS's
//    stride-squared decomposition would not).
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
//
// Gradient step 4 -- implicit_gemm_wgmma in TF32 (and best, but for 1x1
// stride-1 unpadded layers, step 9's: conv2d_wgrad_tf32_preferred): dw of NHWC float
// layers under math_mode::tf32 on sm_90 as step 3's implicit GEMM transposed,
// x's im2col tiles loaded by TMA and fed to wgmma from registers, dy read as
// dy_t, a pre-pass's transpose in patch order
// (kernels/conv2d/backward/04_wgrad_wgmma_tf32.cuh); elsewhere step 2.
//
// Gradient step 5 -- best's dw of an exact-fp32 NCHW layer of K <= 128 (any architecture):
// an implicit GEMM on the CUDA cores that reads dy and x where they lie, 64
// output channels x 128 filter taps a CTA, the pixels split so the grid fills
// the GPU (kernels/conv2d/backward/05_wgrad_simt_fp32.cuh; its launch in
// backward_filter_fp32.cu). Step 2 stays the implicit_gemm variant.
//
// Gradient step 6 -- best's dw of an exact-fp32 NCHW 3x3 stride-1 layer with K
// and C >= 128: Winograd F(4x4, 3x3) by the forward's transforms transposed, the
// positions' products on step 5's tile core (kernels/conv2d/backward/
// 06_wgrad_winograd.cuh). Steps 5 and 6 launch from backward_filter_fp32.cu.
//
// Gradient steps 7 and 8 -- best's dx of a strided layer with few input
// channels (the RGB stem) by its parity classes, each a stride-1 correlation of
// dy with a sub-filter of at most 4 x 4 taps, instead of step 2's dcol + col2im:
// step 7 for exact float NCHW on the CUDA cores (07_dgrad_parity_fp32.cuh),
// step 8 for NHWC -- 16-bit, and float under TF32 -- on the tensor cores,
// mma.sync (08_dgrad_parity_mma.cuh). Both launch from here (dgrad_by_parity,
// dgrad_by_parity_mma; the rules in backward/dgrad_plan.hpp).
//
// Gradient step 9 -- best's dw of a pointwise float NHWC layer (1x1, stride 1,
// no padding) under math_mode::tf32 on sm_90: dw = dy^T x with both operands
// read once where they lie, by TMA, and multiplied on mma.sync, whose
// fragments the threads load from any layout (TF32 wgmma reads only k-major
// operands, which pixel-major dy and x are not: steps 2 and 4 move one of
// them through memory once more); the pixels split over the SMs, the slabs
// summed by the CTAs (09_wgrad_mma_tf32_pointwise.cuh; its launch in
// backward_pointwise_sm90a.cu, its rule in backward_filter.cu's
// wgrad_as_pointwise_mma); elsewhere step 2.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backward_common.cuh"
#include "kernelforge/kernels/arch/compute_capability.hpp"
#include "kernelforge/conv_backward.hpp"
#include "kernelforge/kernels/common/alignment.hpp"
#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/common/numeric.cuh"
#include "kernelforge/kernels/conv2d/args.cuh"
#include "kernelforge/kernels/conv2d/backward/01_naive.cuh"
#include "kernelforge/kernels/conv2d/backward/07_dgrad_parity_fp32.cuh"
#include "kernelforge/kernels/conv2d/backward/08_dgrad_parity_mma.cuh"
#include "kernelforge/kernels/conv2d/backward/dgrad_plan.hpp"
#include "kernelforge/kernels/conv2d/backward/passes.cuh"
#include "kernelforge/kernels/conv2d/validate.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/matmul.hpp"
#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"

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

using namespace conv2d_grad;

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

/// Gradient step 7 (07_dgrad_parity_fp32.cuh): dx of a float NCHW layer by its
/// parity classes, one launch for the groups of 4 channels and one for the rest.
void dgrad_by_parity(const char* what, const conv2d_params& p, const conv2d_sizes& sizes, const float* dy,
                     const float* w, float* dx, const conv2d_backward_options& o, const float* relu_y) {
  namespace dp = dgrad_parity;
  const conv2d_args<float> a = make_conv2d_args<float>(p, sizes.p, sizes.q, nullptr, w, nullptr, nullptr);
  const z class_rows = ceil_div(static_cast<z>(p.in_height), static_cast<z>(p.stride_h));
  const z class_cols = ceil_div(static_cast<z>(p.in_width), static_cast<z>(p.stride_w));
  const z tiles_j = ceil_div(class_cols, static_cast<z>(dp::tile_j));
  const z tiles = ceil_div(class_rows, static_cast<z>(dp::tile_i)) * tiles_j;
  const z classes = static_cast<z>(p.stride_h * p.stride_w), full = p.in_channels / dgrad_parity_group,
          rest = p.in_channels % dgrad_parity_group;
  const conv2d_dy_reader<float> reader = dy_reader(dy, o, relu_y);
  auto launch = [&](auto group, z groups, int c_first) {
    constexpr int G = decltype(group)::value;
    const dim3 grid(static_cast<unsigned>(tiles * groups), static_cast<unsigned>(p.batch),
                    static_cast<unsigned>(classes));
    conv2d_dgrad_parity_fp32<G><<<grid, dp::threads, 0, o.stream>>>(a, reader, dx, c_first, static_cast<int>(tiles),
                                                                    static_cast<int>(tiles_j));
    check_launch(what);
  };
  const int c_rest = static_cast<int>(dgrad_parity_group * full);
  if (full > 0) launch(std::integral_constant<int, static_cast<int>(dgrad_parity_group)>{}, full, 0);
  if (rest == 1) launch(std::integral_constant<int, 1>{}, 1, c_rest);
  if (rest == 2) launch(std::integral_constant<int, 2>{}, 1, c_rest);
  if (rest == 3) launch(std::integral_constant<int, 3>{}, 1, c_rest);
}

/// Gradient step 8 (08_dgrad_parity_mma.cuh): dx of an NHWC layer (16-bit, or
/// float as TF32) by its parity classes on the tensor cores, one launch for
/// every group of 8 channels. dy by cp.async where its pixels are whole 16-byte
/// pieces (K * sizeof(T) a multiple of 16, dy 16-byte aligned, no mask). false
/// (nothing enqueued) where the device runs no sm_80 image of the kernel.
template <class T>
bool dgrad_by_parity_mma(const char* what, int device, const conv2d_params& p, const conv2d_sizes& sizes, const T* dy,
                         const T* w, T* dx, const conv2d_backward_options& o, const T* relu_y) {
  namespace dm = dgrad_parity_mma;
  const conv2d_args<T> a = make_conv2d_args<T>(p, sizes.p, sizes.q, nullptr, w, nullptr, nullptr);
  const conv2d_dy_reader<T> reader = dy_reader(dy, o, relu_y);
  const z tiles_j =
      ceil_div(ceil_div(static_cast<z>(p.in_width), static_cast<z>(p.stride_w)), static_cast<z>(dm::tile_j));
  const z tiles =
      ceil_div(ceil_div(static_cast<z>(p.in_height), static_cast<z>(p.stride_h)), static_cast<z>(dm::tile_i)) * tiles_j;
  const dim3 grid(static_cast<unsigned>(tiles),
                  static_cast<unsigned>(p.stride_h * p.stride_w * ceil_div(p.in_channels, static_cast<z>(dm::group))),
                  static_cast<unsigned>(p.batch));
  auto launch = [&](auto async) {
    constexpr auto kernel = &conv2d_dgrad_parity_mma<T, decltype(async)::value>;
    if (!runs_image_for<kernel>(device, mma_sync_min_cc, what)) return false;
    allow_dynamic_smem<kernel>(device, dm::smem_bytes, what);
    kernel<<<grid, dm::threads, dm::smem_bytes, o.stream>>>(a, reader, dx, static_cast<int>(tiles_j));
    check_launch(what);
    return true;
  };
  const bool async = p.out_channels * sizeof(T) % 16 == 0 && is_aligned(dy, 16) && reader.relu_y == nullptr;
  return async ? launch(std::true_type{}) : launch(std::false_type{});
}

/// dx of a strided layer with few input channels (conv2d_dgrad_path::gemm_col2im) as
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

/// dx's forward f of `source` (dy, or its spread) with the filter turned by
/// conv2d_filter_turn into a pooled workspace, through conv2d_forward. false
/// where no workspace is available (a spread already enqueued then goes unread:
/// naive recomputes dx).
template <class T>
bool dgrad_forward_turned(const char* what, int device, const conv2d_params& p, const conv2d_params& f,
                          const conv2d_sizes& sizes, const T* source, const T* w, T* dx,
                          const conv2d_backward_options& o) {
  const pooled_workspace scratch(device, aligned_bytes(sizes.w_elements, sizeof(T)), o.stream);
  T* const turned = scratch.data<T>();
  if (turned == nullptr) return false;
  const int K = static_cast<int>(p.out_channels), C = static_cast<int>(p.in_channels);
  const int R = static_cast<int>(p.filter_height), S = static_cast<int>(p.filter_width);
  const unsigned turn_blocks = grad_blocks(device, sizes.w_elements);
  if (p.layout == conv2d_layout::nhwc) {
    conv2d_filter_turn<T, true><<<turn_blocks, conv2d_grad_block, 0, o.stream>>>(w, turned, K, C, R, S);
  } else {
    conv2d_filter_turn<T, false><<<turn_blocks, conv2d_grad_block, 0, o.stream>>>(w, turned, K, C, R, S);
  }
  check_launch(what);
  conv2d_options fo;
  fo.stream = o.stream;
  fo.math = o.math;
  conv2d_forward_impl<T>(f, source, turned, nullptr, dx, fo);
  return true;
}

/// dx as kf::matmul or conv2d_forward (see the top of this file), on the path
/// plan_conv2d_dgrad picks; false (nothing enqueued) where that is naive, the
/// spread dy would not fit 32-bit indexing, or no workspace is available.
template <class T>
bool dgrad_as_forward(const char* what, int device, const conv2d_params& p, const conv2d_sizes& sizes, const T* dy,
                      const T* w, T* dx, const conv2d_backward_options& o, const T* relu_y) {
  const conv2d_dgrad_path path = plan_conv2d_dgrad(p, sizeof(T), o.relu);
  if (path == conv2d_dgrad_path::naive) return false;
  if (path == conv2d_dgrad_path::matmul) {
    // dx (NHW x C) = dy (NHW x K) * w (K x C), a GEMM with a short reduction
    // that kf::matmul stores faster than the convolution kernel, whose tiles expect a long one.
    matmul_options mo;
    mo.stream = o.stream;
    mo.math = o.math;
    matmul_impl<T>(op::none, op::none, sizes.x_elements / p.in_channels, p.in_channels, p.out_channels, compute_t<T>(1),
                   dy, p.out_channels, w, p.in_channels, compute_t<T>(0), dx, p.in_channels, mo);
    return true;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (path == conv2d_dgrad_path::gemm_col2im && o.variant == conv2d_backward_variant::best &&
        conv2d_dgrad_parity_fits(p)) {
      dgrad_by_parity(what, p, sizes, dy, w, dx, o, relu_y);
      return true;
    }
  }
  if (path == conv2d_dgrad_path::gemm_col2im && o.variant == conv2d_backward_variant::best &&
      conv2d_dgrad_parity_mma_fits(p, sizeof(T), o.math) &&
      dgrad_by_parity_mma(what, device, p, sizes, dy, w, dx, o, relu_y)) {
    return true;
  }
  if (path == conv2d_dgrad_path::gemm_col2im && dgrad_as_gemm_col2im(what, device, p, sizes, dy, w, dx, o, relu_y)) {
    return true;
  }
  const bool nhwc = p.layout == conv2d_layout::nhwc;
  const bool spread = conv2d_dgrad_spreads(p, o.relu);
  const z reach_h = p.dilation_h * (p.filter_height - 1), reach_w = p.dilation_w * (p.filter_width - 1);
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
  // The spread dy first: the filter's route depends on where the forward reads dy from.
  const pooled_workspace spread_scratch(device, spread ? aligned_bytes(spread_elements, sizeof(T)) : 0, o.stream);
  if (spread && spread_scratch.data() == nullptr) return false;
  const T* const source = spread ? spread_scratch.data<T>() : dy;
  bool unturned = false;
  if constexpr (!std::is_same_v<T, float>) {  // TF32 wgmma cannot read the unturned (N-major) filter
    unturned = conv2d_dgrad_filter(p, sizeof(T), conv2d_wgmma_available(device), source, w) ==
               conv2d_wgmma_filter::dgrad_unturned;
  }
  if (spread) {
    launch_dy_spread(what, device, nhwc, nhwc, dy_reader(dy, o, relu_y), spread_scratch.data<T>(), p.batch,
                     p.out_channels, sizes.p, sizes.q, f.in_height, f.in_width, p.stride_h, p.stride_w, o.stream);
  }
  if constexpr (!std::is_same_v<T, float>) {
    if (unturned) {
      const conv2d_args<T> fa = make_conv2d_args<T>(f, p.in_height, p.in_width, source, w, nullptr, dx);
      if (conv2d_nhwc_wgmma_dgrad_try_launch(device, fa, o.stream)) return true;
      // Not launched (a count past the kernel's ints, or no map): the turned filter after all.
    }
  }
  // The turned filter (K and C swapped, 180 degrees), where step 7 does not read w where it lies.
  return dgrad_forward_turned(what, device, p, f, sizes, source, w, dx, o);
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

#define KF_CONV2D_BACKWARD_INSTANTIATE(T)                                                  \
  template void conv2d_backward_data_impl<T>(const conv2d_params&, const T*, const T*, T*, \
                                             const conv2d_backward_options&, const T*);
KF_CONV2D_BACKWARD_INSTANTIATE(float)
KF_CONV2D_BACKWARD_INSTANTIATE(__half)
KF_CONV2D_BACKWARD_INSTANTIATE(__nv_bfloat16)
#undef KF_CONV2D_BACKWARD_INSTANTIATE

}  // namespace detail

}  // namespace kf
