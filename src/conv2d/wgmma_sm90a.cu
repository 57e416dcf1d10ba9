// SPDX-License-Identifier: Apache-2.0
// Step 7, host side -- the wgmma conv2d launch (kernel: 07_implicit_gemm_wgmma.cuh;
// interface: wgmma_sm90a.hpp): the two tensor maps and the persistent launch.
// NCHW float first goes through a pooled workspace (the input in NHWC and the
// filter as K x RS x C padded to 32, both rounded to TF32) and two repacking
// passes; NHWC (float, __half, __nv_bfloat16) is read where it is. dx's
// forward (16-bit NHWC, backward_data.cu) reads the layer's filter unturned.
//
// This translation unit holds float NCHW and the device check; the NHWC launchers
// (one unit per element type) and what they share: wgmma_sm90a_nhwc.cuh, which
// says why no two units may instantiate one kernel. Built for sm_90a only
// (src/conv2d/sources.cmake).
#include "wgmma_sm90a_nhwc.cuh"

#if defined(KERNELFORGE_HAS_SM90A)

#include <climits>
#include <cstddef>

#include "kernelforge/kernels/conv2d/wgmma_nchw_repack.cuh"

namespace kf::detail {

bool conv2d_wgmma_available(int device) { return sm90a_code_runs_on(device); }

namespace {

/// NHWC rows (one pixel's channels) padded to 16 bytes: TMA strides are multiples of 16.
constexpr std::size_t tma_stride_floats = 4;

/// NCHW float: x and the filter copied to NHWC / K x RS x C (TF32-rounded) in a
/// pooled workspace, then the kernel.
template <class Epilogue>
bool try_launch(int device, const conv2d_args<float>& a, const Epilogue& ep, cudaStream_t stream) {
  if (!conv2d_wgmma_available(device)) return false;
  if (conv2d_wgmma_unsupported_reason(static_cast<std::size_t>(a.stride_h), static_cast<std::size_t>(a.stride_w)) !=
      nullptr) {
    return false;
  }
  using z = std::size_t;
  const z N = static_cast<z>(a.n), C = static_cast<z>(a.c), H = static_cast<z>(a.h), W = static_cast<z>(a.w);
  const z K = static_cast<z>(a.k), RS = static_cast<z>(a.rs);
  const conv2d_wgmma_tile plan = choose_conv2d_wgmma_tile(N, static_cast<z>(a.p), static_cast<z>(a.q), K);
  conv2d_wgmma::params<float> prm;
  if (!make_conv2d_wgmma_params(a, plan, prm)) return false;

  const z c_stride = round_up(C, tma_stride_floats);
  const z c_padded = static_cast<z>(prm.c_chunks) * conv2d_wgmma_block_c;
  const z x_bytes = round_up(N * H * W * c_stride * sizeof(float), workspace_alignment);
  const z w_bytes = K * RS * c_padded * sizeof(float);
  if (K * RS * c_padded > static_cast<z>(INT_MAX)) return false;
  // Returned to the pool on `stream` when this function returns or throws.
  const pooled_workspace scratch(device, x_bytes + w_bytes, stream);
  if (scratch.data() == nullptr) return false;  // no pool or no memory: the mma.sync kernel instead
  float* const x_nhwc = scratch.data<float>();
  float* const w_krsc = reinterpret_cast<float*>(scratch.data<char>() + x_bytes);
  CUtensorMap map_x{}, map_w{};
  if (!encode_conv2d_wgmma_maps(map_x, map_w, x_nhwc, w_krsc, a, c_stride, c_padded, plan)) return false;

  // Nothing is enqueued above: from here on the call runs to the end (or throws).
  using tiled_transpose::rows_per_pass;
  using tiled_transpose::tile;
  const dim3 t_grid(static_cast<unsigned>(ceil_div(H * W, tile)), capped_grid_dim(ceil_div(C, tile)),
                    capped_grid_dim(N));
  conv2d_nchw_to_nhwc_tf32<<<t_grid, dim3(tile, rows_per_pass), 0, stream>>>(a.x, x_nhwc, a.n, a.c, a.hw,
                                                                             static_cast<int>(c_stride));
  check_launch(conv2d_wgmma_launch::what);
  conv2d_kcrs_to_krsc_tf32<<<conv2d_wgmma_repack_blocks(device, K * RS * c_padded), conv2d_wgmma::filter_block, 0,
                             stream>>>(a.wt, w_krsc, a.k, a.c, a.rs, static_cast<int>(c_padded));
  check_launch(conv2d_wgmma_launch::what);
  conv2d_wgmma_launch::launch_planned<float, conv2d_layout::nchw>(device, map_x, map_w, prm, plan.bn, false, ep,
                                                                  stream);
  return true;
}

}  // namespace

bool conv2d_wgmma_try_launch(int device, const conv2d_args<float>& a, const epilogue::identity& ep,
                             cudaStream_t stream) {
  return try_launch(device, a, ep, stream);
}

bool conv2d_wgmma_try_launch(int device, const conv2d_args<float>& a, const epilogue::bias_relu_threshold<float>& ep,
                             cudaStream_t stream) {
  return try_launch(device, a, ep, stream);
}

}  // namespace kf::detail

#else  // !KERNELFORGE_HAS_SM90A: the library's list has no 90; nothing to run.

namespace kf::detail {

bool conv2d_wgmma_available(int) { return false; }

bool conv2d_wgmma_try_launch(int, const conv2d_args<float>&, const epilogue::identity&, cudaStream_t) { return false; }

bool conv2d_wgmma_try_launch(int, const conv2d_args<float>&, const epilogue::bias_relu_threshold<float>&,
                             cudaStream_t) {
  return false;
}

}  // namespace kf::detail

#endif
