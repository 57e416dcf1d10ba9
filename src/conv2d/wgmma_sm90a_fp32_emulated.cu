// SPDX-License-Identifier: Apache-2.0
// Steps 9 and 13, host side -- math_mode::fp32_emulated for conv2d (kernels:
// 09_implicit_gemm_wgmma_fp32_emulated.cuh, and at stride 1 on 3x3 filters
// 13_implicit_gemm_wgmma_halo_fp32_emulated.cuh; interface: wgmma_sm90a.hpp): the
// split pre-pass of the input and the filter (matmul/split_tf32.cuh) into a
// pooled workspace, the two tensor maps over the split operands, and both
// instances of the persistent kernel (finite inputs; inputs with an inf or a
// NaN), of which the one the pre-pass's flag does not name returns at once.
//
// Built for sm_90a only (src/conv2d/sources.cmake), or as stubs where the
// library's architecture list has no 90. It instantiates only steps 9's and 13's kernels
// and the split pre-pass (a template, shared with matmul step 15's translation
// unit, which is sm_90a-only too).
#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include <cuda.h>

#include "kernelforge/kernels/common/alignment.hpp"
#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/conv2d/09_implicit_gemm_wgmma_fp32_emulated.cuh"
#include "kernelforge/kernels/conv2d/13_implicit_gemm_wgmma_halo_fp32_emulated.cuh"
#include "kernelforge/kernels/conv2d/wgmma_host.cuh"
#include "kernelforge/kernels/matmul/split_tf32.cuh"
#include "kernelforge/kernels/runtime/kernel_attributes.hpp"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/kernels/runtime/workspace.hpp"

namespace kf::detail {

namespace {

constexpr const char* what = "kf::conv2d_forward (implicit_gemm_wgmma_fp32_emulated)";

/// Step 9's kernel, or (Halo) step 13's.
template <conv2d_layout Layout, int BN, bool Apart, class Epilogue, bool Halo>
constexpr auto instance = Halo ? &conv2d_implicit_gemm_wgmma_halo_fp32_emulated<Layout, BN, Apart, Epilogue>
                               : &conv2d_implicit_gemm_wgmma_fp32_emulated<Layout, BN, Apart, Epilogue>;
template <int BN, bool Halo>
constexpr int smem_bytes = Halo ? conv2d_wgmma::halo_smem_bytes<BN, 2> : conv2d_wgmma::smem_bytes<BN>;

/// Returns f(layout, bn, halo) with y's layout, the tile width and the step (13: halo tiles) as constants.
template <class F>
decltype(auto) with_layout_and_width(conv2d_layout layout, std::size_t bn, bool halo, F&& f) {
  const auto with_halo = [&](auto layout_tag, auto bn_tag) {
    return halo ? f(layout_tag, bn_tag, std::true_type{}) : f(layout_tag, bn_tag, std::false_type{});
  };
  using nchw = std::integral_constant<conv2d_layout, conv2d_layout::nchw>;
  using nhwc = std::integral_constant<conv2d_layout, conv2d_layout::nhwc>;
  using bn64 = std::integral_constant<int, 64>;
  using bn128 = std::integral_constant<int, 128>;
  if (layout == conv2d_layout::nhwc) return bn == 64 ? with_halo(nhwc{}, bn64{}) : with_halo(nhwc{}, bn128{});
  return bn == 64 ? with_halo(nchw{}, bn64{}) : with_halo(nchw{}, bn128{});
}

/// The CTAs both instances keep resident at once (the persistent grid's most);
/// the queries also set each instance's shared-memory limit.
template <conv2d_layout Layout, int BN, bool Halo, class Epilogue>
int resident_ctas(int device) {
  constexpr int smem = smem_bytes<BN, Halo>;
  const int common =
      resident_clusters<instance<Layout, BN, false, Epilogue, Halo>>(device, conv2d_wgmma::threads, smem, 1, what);
  const int apart =
      resident_clusters<instance<Layout, BN, true, Epilogue, Halo>>(device, conv2d_wgmma::threads, smem, 1, what);
  return common < apart ? common : apart;
}

/// Both instances of the kernel, persistent, on `grid` CTAs.
template <conv2d_layout Layout, int BN, bool Halo, class Epilogue>
void launch_instances(int grid, const CUtensorMap& map_x, const CUtensorMap& map_w,
                      const conv2d_wgmma::params<float>& prm, const Epilogue& ep, const unsigned* nonfinite,
                      cudaStream_t stream) {
  constexpr int smem = smem_bytes<BN, Halo>;
  instance<Layout, BN, false, Epilogue, Halo>
      <<<grid, conv2d_wgmma::threads, smem, stream>>>(map_x, map_w, prm, ep, nonfinite);
  check_launch(what);
  instance<Layout, BN, true, Epilogue, Halo>
      <<<grid, conv2d_wgmma::threads, smem, stream>>>(map_x, map_w, prm, ep, nonfinite);
  check_launch(what);
}

/// A pointwise NHWC layer runs as one row of N H W pixels (conv2d_one_row_if_pointwise; NCHW's
/// y keeps its image stride, so not there).
template <class Epilogue>
bool try_launch(int device, const conv2d_args<float>& layer, conv2d_layout layout, const Epilogue& ep,
                cudaStream_t stream) {
  using z = std::size_t;
  const conv2d_args<float> a = layout == conv2d_layout::nhwc ? conv2d_one_row_if_pointwise(layer) : layer;
  // Every check before any work: a false return has enqueued nothing. (The
  // caller has checked the layer: conv2d_fp32_emulated_unsupported_reason.)
  if (!conv2d_wgmma_available(device)) return false;
  const z N = static_cast<z>(a.n), C = static_cast<z>(a.c), H = static_cast<z>(a.h), W = static_cast<z>(a.w);
  const z K = static_cast<z>(a.k), RS = static_cast<z>(a.rs);
  // The layer over the split operands: 2 round_up(C, 32) channels (hi and lo
  // per 32), which the kernel walks as chunks of 32 (hi, lo, hi, lo, ...).
  const z ld = split_tf32_ld(C);
  conv2d_args<float> s = a;
  s.c = static_cast<int>(ld);
  // The CTAs both instances of step 9's kernel (halo: step 13's) keep resident at bn columns.
  const auto resident_of = [&](std::size_t bn, bool halo_tiles) {
    return with_layout_and_width(layout, bn, halo_tiles, [&](auto layout_tag, auto bn_tag, auto halo_tag) {
      return resident_ctas<decltype(layout_tag)::value, decltype(bn_tag)::value, decltype(halo_tag)::value, Epilogue>(
          device);
    });
  };
  // Step 9's plan: its tiles, the persistent grid, and its last round split over the CTAs that
  // would wait (wgmma_last_round.cuh), a k-block being 2 k-steps (a tap's 32 channels, hi and lo).
  conv2d_wgmma_tile plan = choose_conv2d_wgmma_tile(N, static_cast<z>(a.p), static_cast<z>(a.q), K,
                                                    static_cast<z>(a.stride_h), static_cast<z>(a.stride_w));
  int resident = resident_of(plan.bn, false);
  const z step9_grid = std::min(plan.tiles(), static_cast<z>(resident));
  last_round_plan last_round =
      plan_conv2d_wgmma_last_round(plan.tiles(), step9_grid, RS * (ld / (2 * split_block_k)), 2);
  // Step 13 where halo tiles fit (stride and dilation 1, filters up to 3 x 3: one halo box a
  // 32-channel block) and its rounds of the grid do not outnumber step 9's (tuning.hpp). It does not split.
  bool halo = false;
  if (conv2d_nhwc_wgmma_halo_fit(static_cast<z>(a.r), static_cast<z>(a.s), static_cast<z>(a.stride_h),
                                 static_cast<z>(a.stride_w), static_cast<z>(a.dilation_h),
                                 static_cast<z>(a.dilation_w))) {
    const conv2d_wgmma_tile halo_plan = plan_conv2d_nhwc_wgmma_halo(plan, N, static_cast<z>(a.p), static_cast<z>(a.q),
                                                                    static_cast<z>(a.r), static_cast<z>(a.s));
    const int halo_resident = resident_of(halo_plan.bn, true);
    halo = conv2d_fp32_emulated_prefers_halo(halo_plan.tiles(), static_cast<z>(halo_resident), plan.tiles(), step9_grid,
                                             last_round);
    if (halo) {
      plan = halo_plan;
      resident = halo_resident;
      last_round = last_round_plan{plan.tiles(), 1, 0};
    }
  }
  conv2d_wgmma::params<float> prm;
  if (!make_conv2d_wgmma_params(s, plan, prm)) return false;
  const int grid = prm.tiles < resident ? prm.tiles : resident;
  const z split_tiles = static_cast<z>(prm.tiles) - last_round.split_from;
  prm.split_parts = static_cast<int>(last_round.parts);
  prm.split_from = static_cast<int>(last_round.split_from);
  prm.split_steps = static_cast<int>(last_round.part_steps);

  const z x_bytes = round_up(N * H * W * ld * sizeof(float), workspace_alignment);
  const z w_bytes = round_up(K * RS * ld * sizeof(float), workspace_alignment);
  // The split tiles' sums: a slot of the tile's BN x 128 floats a part (each consumer warpgroup's half).
  const z sums_bytes = split_tiles * last_round.parts * plan.bn * conv2d_wgmma::block_m * sizeof(float);
  // The flag of a non-finite input, then a counter per split tile and consumer warpgroup: zeroed together.
  const z counters = 1 + split_tiles * conv2d_wgmma::consumer_warpgroups;
  // Returned to the pool on `stream` when this function returns or throws.
  const pooled_workspace scratch(device, x_bytes + w_bytes + sums_bytes + counters * sizeof(unsigned), stream);
  if (scratch.data() == nullptr) return false;  // the caller reports it
  float* const x_split = scratch.data<float>();
  float* const w_split = reinterpret_cast<float*>(scratch.data<char>() + x_bytes);
  prm.split_sums = split_tiles == 0 ? nullptr : reinterpret_cast<float*>(scratch.data<char>() + x_bytes + w_bytes);
  unsigned* const nonfinite = reinterpret_cast<unsigned*>(scratch.data<char>() + x_bytes + w_bytes + sums_bytes);
  prm.split_arrivals = split_tiles == 0 ? nullptr : nonfinite + 1;
  CUtensorMap map_x{}, map_w{};
  s.x = x_split;
  s.wt = w_split;
  if (!encode_conv2d_wgmma_maps(map_x, map_w, s.x, s.wt, s, ld, ld, plan)) return false;

  // Nothing is enqueued above: from here on the call runs to the end (or throws).
  cuda_check(cudaMemsetAsync(nonfinite, 0, counters * sizeof(unsigned), stream), what);
  const z HW = H * W;
  // Both operands split by one launch (launch_split_tf32_pack_pair).
  split_tf32_operand xs, ws;
  xs.src = a.x, xs.dst = x_split, xs.k = C;
  ws.src = a.wt, ws.dst = w_split, ws.k = C;
  if (layout == conv2d_layout::nhwc) {
    // x: N H W pixels of C contiguous channels; the filter: K R S taps of C.
    xs.row_stride = C, xs.rows = N * HW;
    ws.row_stride = C, ws.rows = K * RS;
  } else {
    // x: per image, H W pixels (contiguous) by C channels H W apart; the filter: per k, R S taps by C.
    xs.batch = N, xs.src_batch = C * HW, xs.row_stride = 1, xs.k_stride = HW, xs.rows = HW, xs.dst_batch = HW * ld;
    ws.batch = K, ws.src_batch = C * RS, ws.row_stride = 1, ws.k_stride = RS, ws.rows = RS, ws.dst_batch = RS * ld;
  }
  launch_split_tf32_pack_pair(xs, ws, nonfinite, stream, what);
  with_layout_and_width(layout, plan.bn, halo, [&](auto layout_tag, auto bn_tag, auto halo_tag) {
    launch_instances<decltype(layout_tag)::value, decltype(bn_tag)::value, decltype(halo_tag)::value>(
        grid, map_x, map_w, prm, ep, nonfinite, stream);
  });
  return true;
}

}  // namespace

bool conv2d_fp32_emulated_try_launch(int device, const conv2d_args<float>& a, conv2d_layout layout,
                                     const epilogue::identity& ep, cudaStream_t stream) {
  return try_launch(device, a, layout, ep, stream);
}

bool conv2d_fp32_emulated_try_launch(int device, const conv2d_args<float>& a, conv2d_layout layout,
                                     const epilogue::bias_relu_threshold<float>& ep, cudaStream_t stream) {
  return try_launch(device, a, layout, ep, stream);
}

}  // namespace kf::detail

#else  // !KERNELFORGE_HAS_SM90A: the library's list has no 90; nothing to run.

namespace kf::detail {

bool conv2d_fp32_emulated_try_launch(int, const conv2d_args<float>&, conv2d_layout, const epilogue::identity&,
                                     cudaStream_t) {
  return false;
}

bool conv2d_fp32_emulated_try_launch(int, const conv2d_args<float>&, conv2d_layout,
                                     const epilogue::bias_relu_threshold<float>&, cudaStream_t) {
  return false;
}

}  // namespace kf::detail

#endif
