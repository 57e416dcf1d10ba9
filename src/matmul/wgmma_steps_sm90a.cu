// SPDX-License-Identifier: Apache-2.0
// Steps 11-13, host side: the launches of the Hopper learning steps
// (11_wgmma_tma.cuh, 12_wgmma_warp_specialized.cuh, 13_wgmma_clusters.cuh) for
// __half and __nv_bfloat16: layout checks, the two TMA descriptors and one
// tile (or cluster tile) per CTA (cluster). Compiled for sm_90a alone
// (src/matmul/sources.cmake), or as stubs where the library has no 90.
// Declarations and what they promise: wgmma_sm90a.hpp.
#include "kernelforge/kernels/matmul/wgmma_sm90a.hpp"

#if defined(KERNELFORGE_HAS_SM90A)

#include <climits>
#include <string>

#include <cuda.h>

#include "kernelforge/kernels/common/alignment.hpp"
#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/kernels/matmul/11_wgmma_tma.cuh"
#include "kernelforge/kernels/matmul/12_wgmma_warp_specialized.cuh"
#include "kernelforge/kernels/matmul/13_wgmma_clusters.cuh"
#include "kernelforge/kernels/runtime/launcher.hpp"
#include "kernelforge/kernels/runtime/tensor_map.hpp"
#include "kernelforge/kernels/runtime/validate.hpp"

namespace kf::detail {
namespace {

constexpr const char* what = "kf::detail::wgmma_step_try_launch";

template <class T>
bool step_try_launch(wgmma_step step, const gemm_args<T>& args, cudaStream_t stream) {
  if (step != wgmma_step::tma && step != wgmma_step::warp_specialized && step != wgmma_step::clusters) {
    throw_invalid_argument(what, "step = " + std::to_string(static_cast<int>(step)) +
                                     " is not a learning step: pass wgmma_step::tma, warp_specialized or clusters");
  }
  if (args.trans_a || args.trans_b) {
    throw error(errc::unsupported, std::string(what) +
                                       ": the learning steps take the row-major product only (trans_a and "
                                       "trans_b none); step 14 (wgmma_try_launch) takes every layout");
  }
  if (!rows_aligned(args.A, args.lda, sizeof(T), wgmma::tma_alignment) ||
      !rows_aligned(args.B, args.ldb, sizeof(T), wgmma::tma_alignment)) {
    throw error(errc::unsupported, std::string(what) +
                                       ": the learning steps read A and B in place with TMA, which needs 16-byte "
                                       "aligned rows: pass pointers and lda, ldb that are multiples of 8 elements");
  }
  const int device = current_device(what);
  if (!wgmma_available(device)) return false;
  require_kernel_image_cached(device, what);
  if (args.m > wgmma::max_extent || args.n > wgmma::max_extent || args.k > wgmma::max_extent) return false;
  if (args.m == 0 || args.n == 0) return true;
  if (encode_tiled() == nullptr) return false;

  constexpr int stage_k = wgmma::element<T>::stage_k;
  const bool step11 = step == wgmma_step::tma;
  const std::size_t block_m = step11 ? wgmma_tma::block_m : wgmma::block_m;
  const std::size_t tiles_m = ceil_div(args.m, block_m), tiles_n = ceil_div(args.n, std::size_t{256});
  const int cluster = step == wgmma_step::clusters ? wgmma::max_cluster : 1;
  const std::size_t cluster_tiles_m = ceil_div(tiles_m, static_cast<std::size_t>(cluster));
  if (cluster_tiles_m * tiles_n * cluster > static_cast<std::size_t>(INT_MAX)) return false;

  // A as m x k in boxes of block_m rows x 64 k; B as k x n (n-contiguous) in boxes of 64 k rows x 64 n.
  CUtensorMap map_a{}, map_b{};
  if (!encode_sw128(map_a, args.A, args.k, args.m, args.lda, stage_k, static_cast<cuuint32_t>(block_m)) ||
      !encode_sw128(map_b, args.B, args.n, args.k, args.ldb, stage_k, stage_k)) {
    return false;
  }
  const wgmma::params<T> p = wgmma::params_of(args, args.m, args.n, cluster_tiles_m, tiles_n);
  const auto blocks = static_cast<unsigned>(cluster_tiles_m * tiles_n * cluster);

  if (step11) {
    constexpr auto kernel = &wgmma_tma_kernel<T>;
    resident_clusters<kernel>(device, warpgroup_threads, wgmma_tma::smem_bytes, 1, what);  // the shared-memory opt-in
    kernel<<<blocks, warpgroup_threads, wgmma_tma::smem_bytes, stream>>>(map_a, map_b, p);
  } else if (step == wgmma_step::warp_specialized) {
    constexpr auto kernel = &wgmma_warp_specialized_kernel<T>;
    constexpr int smem = wgmma::tile_config<256>::smem_bytes;
    resident_clusters<kernel>(device, wgmma::threads, smem, 1, what);
    kernel<<<blocks, wgmma::threads, smem, stream>>>(map_a, map_b, p);
  } else {
    constexpr auto kernel = &wgmma_clusters_kernel<T>;
    constexpr int smem = wgmma::tile_config<256>::smem_bytes;
    resident_clusters<kernel>(device, wgmma::threads, smem, cluster, what);
    cudaLaunchAttribute cluster_dims{};
    const cudaLaunchConfig_t config =
        cluster_launch_config(dim3(blocks), dim3(wgmma::threads), smem, stream, cluster, cluster_dims);
    cuda_check(cudaLaunchKernelEx(&config, kernel, map_a, map_b, p), what);
  }
  check_launch(what);
  return true;
}

}  // namespace

bool wgmma_step_try_launch(wgmma_step step, const gemm_args<__half>& args, cudaStream_t stream) {
  return step_try_launch(step, args, stream);
}

bool wgmma_step_try_launch(wgmma_step step, const gemm_args<__nv_bfloat16>& args, cudaStream_t stream) {
  return step_try_launch(step, args, stream);
}

}  // namespace kf::detail

#else  // no 90 in the library's architecture list: nothing runs here.

namespace kf::detail {

bool wgmma_step_try_launch(wgmma_step, const gemm_args<__half>&, cudaStream_t) { return false; }
bool wgmma_step_try_launch(wgmma_step, const gemm_args<__nv_bfloat16>&, cudaStream_t) { return false; }

}  // namespace kf::detail

#endif
