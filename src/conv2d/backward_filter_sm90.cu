// SPDX-License-Identifier: Apache-2.0
// best's filter gradient of channels_last layers on sm_90: gradient steps 3
// and 4 (the wgmma implicit GEMM: 16-bit, and float under TF32) and step 9
// (the TF32 pointwise dw on mma.sync) -- their plans, workspaces, the masked /
// transposed / folded operands they need, and their slabs' sum where the
// kernel leaves it. Built for every architecture: the sm_90a launches they
// call (backward_sm90a.cu, backward_pointwise_sm90a.cu) are stubs without 90
// in the library's list. The rest of dw: backward_filter.cu.
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backward_common.cuh"
#include "kernelforge/kernels/conv2d/args.cuh"
#include "kernelforge/kernels/conv2d/backward/wgrad_pointwise_sm90a.hpp"
#include "kernelforge/kernels/conv2d/backward/wgrad_wgmma_sm90a.hpp"
#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/kernels/runtime/workspace.hpp"

namespace kf::detail::conv2d_grad {

/// dw of an NHWC layer on the wgmma implicit GEMM -- 16-bit: gradient step 3;
/// float under math_mode::tf32: step 4 (see the top of backward_data.cu) --
/// planned here (wgrad_wgmma_plan.hpp) with its split's fp32 slabs -- and, in
/// 16 bits under the ReLU mask, dy masked first (conv2d_dy_spread); in TF32,
/// dy_t, which step 4's launch writes through the mask -- in one pooled
/// workspace, launched by backward_sm90a.cu, reduced here.
/// A layer whose x TMA cannot read in place (C * sizeof(T) not a multiple of
/// 16 bytes, as the RGB stem's C = 3, or x misaligned) runs as its column fold,
/// the forward's (wgmma_sm90a.hpp): x folded into an R x 1 layer over C' = S C
/// rounded up to 16 bytes, whose gradient dw' (K x R x C') holds each (k, r)'s
/// S C values of dw first, copied out at the end. (The stem's dw: 159 us as
/// im2col + matmul on the H200, in fp16.)
/// false (nothing enqueued but possibly the mask or the fold) where it does not
/// run: NCHW, float under another math mode, float under `best` where step 2
/// is preferred (conv2d_wgrad_tf32_preferred), no sm_90a kernel for the device,
/// a layer or pointer outside its reach, no workspace for the mask, dy_t or
/// the fold; without memory for the slabs it runs unsplit.
/// A pointwise layer's patches are runs of consecutive pixels (conv2d_one_row_if_pointwise).
template <class T>
bool wgrad_as_wgmma(const char* what, int device, const conv2d_params& p, const conv2d_args<T>& layer, const T* dy,
                    T* dw, const conv2d_backward_options& o, const T* relu_y) {
  constexpr bool tf32 = std::is_same_v<T, float>;
  if constexpr (tf32) {
    if (o.math != math_mode::tf32) return false;
    if (o.variant == conv2d_backward_variant::best &&
        !conv2d_wgrad_tf32_preferred(p.in_channels, p.filter_height, p.filter_width, p.stride_h, p.stride_w, p.pad_h,
                                     p.pad_w)) {
      return false;
    }
  }
  if (p.layout != conv2d_layout::nhwc || !conv2d_wgrad_wgmma_available(device)) return false;
  const conv2d_args<T> a = conv2d_one_row_if_pointwise(layer);
  const z n = static_cast<z>(a.n), out_p = static_cast<z>(a.p), out_q = static_cast<z>(a.q);
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
  // 16-bit: TMA reads dy in place unless it is masked into the (aligned) workspace. TF32: dy_t is always
  // written (any alignment of dy). x is read in place only where aligned (else folded).
  const bool masked = o.relu;
  if (!tf32 && !masked && reinterpret_cast<std::uintptr_t>(dy) % tma_bytes != 0) return false;
  const z K = p.out_channels, rsc_read = p.filter_height * s_read * c_folded;
  const int sms = limits_for(device).sm_count;
  const auto plan_for = [&](bool unsplit) {
    return plan_conv2d_wgrad_wgmma(n, out_p, out_q, K, c_folded, p.filter_height, s_read, p.stride_h, stride_w_read,
                                   static_cast<z>(a.dilation_h), static_cast<z>(sms > 0 ? sms : 1), unsplit, sizeof(T));
  };
  conv2d_wgrad_wgmma_plan plan = plan_for(false);
  // The workspace: [masked dy or dy_t][x folded][dw' (folded)][the split's slabs]; all but the slabs are needed.
  const z dy_bytes = tf32     ? aligned_bytes(K * plan.dy_t_columns(), sizeof(T))
                     : masked ? aligned_bytes(n * out_p * out_q * K, sizeof(T))
                              : 0;
  const z x_fold_bytes = fold ? aligned_bytes(n * static_cast<z>(a.h) * out_q * c_folded, sizeof(T)) : 0;
  const z dw_fold_bytes = fold ? aligned_bytes(K * rsc_read, sizeof(T)) : 0;
  const z needed = dy_bytes + x_fold_bytes + dw_fold_bytes;
  const pooled_workspace scratch(device, needed + plan.workspace_bytes(K, rsc_read), o.stream);
  char* memory = scratch.data<char>();
  const bool unsplit = memory == nullptr && plan.split > 1;  // no memory for the slabs: one slice, no slabs
  const pooled_workspace needed_only(device, unsplit ? needed : 0, o.stream);
  if (unsplit) {
    plan = plan_for(true);  // the same patches: dy_t's size holds
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
  float* const partial = plan.split > 1 ? reinterpret_cast<float*>(memory + needed) : nullptr;
  bool slabs_left = plan.split > 1;  // the split's slabs, for sum_wgrad_slabs (step 3 sums them itself where it can)
  if constexpr (tf32) {
    float* const dy_t = reinterpret_cast<float*>(memory);
    if (!conv2d_wgrad_tf32_try_launch(device, read, dy_reader(dy, o, relu_y), dy_t, dw_read, partial, plan, o.stream)) {
      return false;
    }
  } else {
    const T* source = dy;
    if (masked) {
      T* const masked_dy = reinterpret_cast<T*>(memory);
      launch_dy_spread(what, device, true, true, dy_reader(dy, o, relu_y), masked_dy, n, K, out_p, out_q, out_p, out_q,
                       1, 1, o.stream);
      source = masked_dy;
    }
    // The tiles' counters, after the slabs: the launch sums the slabs itself where that gains (else below).
    auto* const arrivals =
        plan.split > 1 ? reinterpret_cast<unsigned*>(memory + needed + plan.slab_bytes(K, rsc_read)) : nullptr;
    const wgrad_launched launched =
        conv2d_wgrad_wgmma_try_launch(device, read, source, dw_read, partial, arrivals, plan, o.stream);
    if (launched == wgrad_launched::nothing) return false;
    slabs_left = launched == wgrad_launched::slabs;
  }
  if (slabs_left) sum_wgrad_slabs(what, device, partial, K, rsc_read, static_cast<int>(plan.split), dw_read, o.stream);
  if (fold) {  // dw (K x R x S C) = the first S C of each (k, r)'s c_folded values
    const z row = p.filter_width * p.in_channels * sizeof(T);
    cuda_check(cudaMemcpy2DAsync(dw, row, dw_read, c_folded * sizeof(T), row, K * p.filter_height,
                                 cudaMemcpyDeviceToDevice, o.stream),
               what);
  }
  return true;
}

/// dw of a pointwise float NHWC layer under math_mode::tf32 and `best` on
/// gradient step 9 (sm_90: 09_wgrad_mma_tf32_pointwise.cuh, dy and x read once
/// where they lie, dy masked by relu_y in the kernel), planned here
/// (wgrad_pointwise_plan.hpp) with its split's slabs; false (nothing enqueued)
/// where it does not run: another layout, math mode, variant or layer, no
/// sm_90a kernel for the device, an operand off 16 bytes (step 2 then, or step
/// 4 under implicit_gemm_wgmma). Without memory for the slabs it runs unsplit.
bool wgrad_as_pointwise_mma(const char* what, int device, const conv2d_params& p, const conv2d_args<float>& layer,
                            const float* dy, float* dw, const conv2d_backward_options& o, const float* relu_y) {
  if (o.math != math_mode::tf32 || o.variant != conv2d_backward_variant::best || p.layout != conv2d_layout::nhwc ||
      !conv2d_is_pointwise(layer) || !conv2d_wgrad_wgmma_available(device)) {
    return false;
  }
  const conv2d_args<float> a = conv2d_one_row_if_pointwise(layer);
  const z pixels = static_cast<z>(a.m), K = p.out_channels, C = p.in_channels;
  if (conv2d_wgrad_pointwise_unsupported_reason(C, K, pixels) != nullptr) return false;
  const int sms = limits_for(device).sm_count;
  conv2d_wgrad_wgmma_plan plan = plan_conv2d_wgrad_pointwise(pixels, K, C, static_cast<z>(sms > 0 ? sms : 1));
  const pooled_workspace scratch(device, plan.workspace_bytes(K, C), o.stream);
  if (plan.split > 1 && scratch.data() == nullptr) plan = plan_conv2d_wgrad_pointwise(pixels, K, C, 1, true);
  float* const partial = plan.split > 1 ? scratch.data<float>() : nullptr;
  auto* const arrivals =
      plan.split > 1 ? reinterpret_cast<unsigned*>(scratch.data<char>() + plan.slab_bytes(K, C)) : nullptr;
  const wgrad_launched launched = conv2d_wgrad_pointwise_try_launch(
      device, a, dy, o.relu ? relu_y : nullptr, o.relu_threshold, dw, partial, arrivals, plan, o.stream);
  if (launched == wgrad_launched::nothing) return false;
  if (launched == wgrad_launched::slabs)
    sum_wgrad_slabs(what, device, partial, K, C, static_cast<int>(plan.split), dw, o.stream);
  return true;
}

template bool wgrad_as_wgmma<float>(const char*, int, const conv2d_params&, const conv2d_args<float>&, const float*,
                                    float*, const conv2d_backward_options&, const float*);
template bool wgrad_as_wgmma<__half>(const char*, int, const conv2d_params&, const conv2d_args<__half>&, const __half*,
                                     __half*, const conv2d_backward_options&, const __half*);
template bool wgrad_as_wgmma<__nv_bfloat16>(const char*, int, const conv2d_params&, const conv2d_args<__nv_bfloat16>&,
                                            const __nv_bfloat16*, __nv_bfloat16*, const conv2d_backward_options&,
                                            const __nv_bfloat16*);

}  // namespace kf::detail::conv2d_grad
