// SPDX-License-Identifier: Apache-2.0
// Step 7, host side -- the wgmma conv2d launch (kernel: 07_implicit_gemm_wgmma.cuh;
// interface: wgmma_sm90a.hpp): the pooled workspace (the input in NHWC and the
// filter as K x RS x C padded to 32, both rounded to TF32), the two tensor maps,
// the two repacking passes and the persistent launch.
//
// This translation unit is built for sm_90a only (src/conv2d/sources.cmake). It must
// instantiate no kernel that other translation units instantiate too (their
// weak copies could be the ones the program registers, and other GPUs would
// then find no image): so it includes neither gemm_launch.cuh nor any other
// step, only the step-7 kernels, which nothing else instantiates.
#include "kernelforge/kernels/conv2d/wgmma_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include <climits>
#include <cstddef>

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/conv2d/07_implicit_gemm_wgmma.cuh"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/kernels/runtime/tensor_map.hpp"

namespace kf::detail {

bool conv2d_wgmma_available(int device) { return sm90a_code_runs_on(device); }

namespace {

constexpr const char* what = "kf::conv2d_forward (implicit_gemm_wgmma)";
/// NHWC rows (one pixel's channels) padded to 16 bytes: TMA strides are multiples of 16.
constexpr std::size_t tma_stride_floats = 4;
/// Grid-stride blocks per SM of the filter repack.
constexpr std::size_t filter_blocks_per_sm = 8;

template <int BN, class Epilogue>
void launch_kernel(int device, const CUtensorMap& map_x, const CUtensorMap& map_w, const conv2d_wgmma::params& prm,
                   const Epilogue& ep, cudaStream_t stream) {
  constexpr auto kernel = &conv2d_implicit_gemm_wgmma<BN, Epilogue>;
  constexpr int smem = conv2d_wgmma::smem_bytes<BN>;
  const int resident = resident_clusters<kernel>(device, conv2d_wgmma::threads, smem, 1, what);
  const int grid = prm.tiles < resident ? prm.tiles : resident;  // persistent
  kernel<<<grid, conv2d_wgmma::threads, smem, stream>>>(map_x, map_w, prm, ep);
  check_launch(what);
}

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
  if (plan.tiles() > static_cast<z>(INT_MAX)) return false;  // the kernel walks tiles with an int

  const z c_stride = round_up(C, tma_stride_floats);
  const z c_chunks = ceil_div(C, conv2d_wgmma_block_c);
  const z c_padded = c_chunks * conv2d_wgmma_block_c;
  const z x_bytes = round_up(N * H * W * c_stride * sizeof(float), workspace_alignment);
  const z w_bytes = K * RS * c_padded * sizeof(float);
  if (K * RS * c_padded > static_cast<z>(INT_MAX) || RS * c_chunks > static_cast<z>(INT_MAX)) return false;
  // Returned to the pool on `stream` when this function returns or throws.
  const pooled_workspace scratch(device, x_bytes + w_bytes, stream);
  if (scratch.data() == nullptr) return false;  // no pool or no memory: the mma.sync kernel instead
  float* const x_nhwc = scratch.data<float>();
  float* const w_krsc = reinterpret_cast<float*>(scratch.data<char>() + x_bytes);

  // The input: dims (c, w, h, n), boxes of 32 channels x wt x ht x nt pixels.
  // The filter: K rows of RS * c_padded, boxes of 32 x BN. 128-byte swizzle,
  // zero fill outside (padding, past C, past K).
  CUtensorMap map_x{}, map_w{};
  const cuuint64_t x_dims[4] = {C, W, H, N};
  const cuuint64_t x_strides[3] = {c_stride * sizeof(float), W * c_stride * sizeof(float),
                                   H * W * c_stride * sizeof(float)};
  const cuuint32_t x_box[4] = {static_cast<cuuint32_t>(conv2d_wgmma_block_c), static_cast<cuuint32_t>(plan.wt),
                               static_cast<cuuint32_t>(plan.ht), static_cast<cuuint32_t>(plan.nt)};
  if (!encode_sw128_tiled(map_x, x_nhwc, 4, x_dims, x_strides, x_box) ||
      !encode_sw128(map_w, w_krsc, RS * c_padded, K, RS * c_padded, static_cast<cuuint32_t>(conv2d_wgmma_block_c),
                    static_cast<cuuint32_t>(plan.bn))) {
    return false;
  }

  conv2d_wgmma::params prm;
  prm.y = a.y;
  prm.bias = a.bias;
  prm.k = a.k;
  prm.p = a.p;
  prm.q = a.q;
  prm.pq = a.pq;
  prm.n = a.n;
  prm.pad_h = a.pad_h;
  prm.pad_w = a.pad_w;
  prm.dilation_h = a.dilation_h;
  prm.dilation_w = a.dilation_w;
  prm.s = a.s;
  prm.c_chunks = static_cast<int>(c_chunks);
  prm.c_padded = static_cast<int>(c_padded);
  prm.k_steps = static_cast<int>(RS * c_chunks);
  prm.wt = static_cast<int>(plan.wt);
  prm.ht = static_cast<int>(plan.ht);
  prm.nt = static_cast<int>(plan.nt);
  prm.box_pixels = static_cast<int>(plan.box_pixels());
  prm.tiles_q = static_cast<int>(plan.tiles_q);
  prm.tiles_p = static_cast<int>(plan.tiles_p);
  prm.tiles_k = static_cast<int>(plan.tiles_k);
  prm.tiles = static_cast<int>(plan.tiles());
  prm.a_box_bytes = prm.box_pixels * conv2d_wgmma::row_bytes;

  // Nothing is enqueued above: from here on the call runs to the end (or throws).
  using conv2d_wgmma::transpose_rows_per_pass;
  using conv2d_wgmma::transpose_tile;
  const dim3 t_grid(static_cast<unsigned>(ceil_div(H * W, transpose_tile)),
                    capped_grid_dim(ceil_div(C, transpose_tile)), capped_grid_dim(N));
  conv2d_nchw_to_nhwc_tf32<<<t_grid, dim3(transpose_tile, transpose_rows_per_pass), 0, stream>>>(
      a.x, x_nhwc, a.n, a.c, a.hw, static_cast<int>(c_stride));
  check_launch(what);
  const z filter_items = K * RS * c_padded;
  const int sms = limits_for(device).sm_count;
  const z filter_cap = static_cast<z>(sms > 0 ? sms : 1) * filter_blocks_per_sm;
  const z filter_needed = ceil_div(filter_items, conv2d_wgmma::filter_block);
  conv2d_kcrs_to_krsc_tf32<<<static_cast<unsigned>(filter_needed < filter_cap ? filter_needed : filter_cap),
                             conv2d_wgmma::filter_block, 0, stream>>>(a.wt, w_krsc, a.k, a.c, a.rs,
                                                                      static_cast<int>(c_padded));
  check_launch(what);
  if (plan.bn == 64) {
    launch_kernel<64>(device, map_x, map_w, prm, ep, stream);
  } else {
    launch_kernel<128>(device, map_x, map_w, prm, ep, stream);
  }
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

template <class T, class Epilogue>
bool conv2d_nhwc_wgmma_try_launch(int, const conv2d_args<T>&, const Epilogue&, cudaStream_t) {
  return false;  // NHWC_PLACEHOLDER
}

#define KF_CONV2D_NHWC_WGMMA_INSTANCE(T)                                                                              \
  template bool conv2d_nhwc_wgmma_try_launch(int, const conv2d_args<T>&, const epilogue::identity&, cudaStream_t);    \
  template bool conv2d_nhwc_wgmma_try_launch(int, const conv2d_args<T>&, const epilogue::bias_relu_threshold<float>&, \
                                             cudaStream_t);
KF_CONV2D_NHWC_WGMMA_INSTANCE(float)
KF_CONV2D_NHWC_WGMMA_INSTANCE(__half)
KF_CONV2D_NHWC_WGMMA_INSTANCE(__nv_bfloat16)
#undef KF_CONV2D_NHWC_WGMMA_INSTANCE

}  // namespace kf::detail

#else  // !KERNELFORGE_HAS_SM90A: the library's list has no 90; nothing to run.

namespace kf::detail {

bool conv2d_wgmma_available(int) { return false; }

bool conv2d_wgmma_try_launch(int, const conv2d_args<float>&, const epilogue::identity&, cudaStream_t) { return false; }

bool conv2d_wgmma_try_launch(int, const conv2d_args<float>&, const epilogue::bias_relu_threshold<float>&,
                             cudaStream_t) {
  return false;
}

template <class T, class Epilogue>
bool conv2d_nhwc_wgmma_try_launch(int, const conv2d_args<T>&, const Epilogue&, cudaStream_t) {
  return false;  // NHWC_PLACEHOLDER
}

#define KF_CONV2D_NHWC_WGMMA_INSTANCE(T)                                                                              \
  template bool conv2d_nhwc_wgmma_try_launch(int, const conv2d_args<T>&, const epilogue::identity&, cudaStream_t);    \
  template bool conv2d_nhwc_wgmma_try_launch(int, const conv2d_args<T>&, const epilogue::bias_relu_threshold<float>&, \
                                             cudaStream_t);
KF_CONV2D_NHWC_WGMMA_INSTANCE(float)
KF_CONV2D_NHWC_WGMMA_INSTANCE(__half)
KF_CONV2D_NHWC_WGMMA_INSTANCE(__nv_bfloat16)
#undef KF_CONV2D_NHWC_WGMMA_INSTANCE

}  // namespace kf::detail

#endif
