// SPDX-License-Identifier: Apache-2.0
// Step 12, host interface: the wgmma f16 / bf16 kernel (12_wgmma_f16.cuh,
// launched by wgmma_f16.cu) runs when
//  * the library was built with 90 in CMAKE_CUDA_ARCHITECTURES and the device is
//    compute capability 9.0 (wgmma_tf32_available: the same condition);
//  * m, n, k < 2^31 - 512 (TMA coordinates are 32-bit) and the tile count fits
//    an int (the persistent kernel walks tiles with an int index);
//  * the workspace can be allocated when a repack is needed.
// The kernel reads A as m x k, k-contiguous, and B either as k x n,
// n-contiguous (wgmma's transpose bit) or as n x k, k-contiguous, all with
// 16-byte aligned rows (TMA). What runs for each layout:
//  * trans_a = none, either trans_b, rows 16-byte aligned (pointer and leading
//    dimension a multiple of 8 elements): wgmma reads both operands in place --
//    the plain row-major product NN included;
//  * anything else (trans_a = transpose, or rows not 16-byte aligned) first
//    repacks the operand(s) concerned into a k-contiguous copy in a
//    stream-ordered workspace (one bandwidth-bound pass each, counted in the
//    timing), then wgmma.
// Otherwise launch_wgmma_f16 falls back to the mma.sync kernel (step 11).
// Its measured speed: the README's generated tables and benchmarks/TUNING.md (bench_matmul).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "gemm_args.cuh"
#include "tuning.hpp"  // wgmma_multicast
#ifndef KF_WGMMA_F16_DECLARATIONS_ONLY
#include "tensor_core_f16_launch.cuh"
#endif

namespace kf::detail {

/// CTAs per cluster sharing one B or A tile (TMA multicast): 1 or 2.
inline constexpr int wgmma_f16_default_cluster = 2;

/// Enqueues C = alpha * op(A) * op(B) + beta * C with the wgmma kernel on the
/// current device and returns true; returns false, having enqueued nothing, when
/// a condition above is not met. cluster_size: 1 or 2 (anything else: the default).
/// block_n: the block tile's width, 0 (by shape: tuning.hpp choose_wgmma_block_n)
/// or one of wgmma_block_n_choices (256, 128, 64; tests run every width);
/// anything else: errc::invalid_argument. multicast: which operand a cluster
/// of 2 shares, by shape (tuning.hpp: wgmma_multicasts_a: A for 128 x 64
/// tiles in two tile rows or more) or forced (tests and benchmarks compare both);
/// split_k: the cluster split-k instead (a cluster of 2 on each 128 x 128 tile,
/// each CTA over half of k; block_n must be 0 or 128 and cluster_size not 1,
/// else errc::invalid_argument).
bool wgmma_f16_try_launch(const gemm_args<__half>& args, cudaStream_t stream,
                          int cluster_size = wgmma_f16_default_cluster, int block_n = 0,
                          wgmma_multicast multicast = wgmma_multicast::by_shape);
bool wgmma_f16_try_launch(const gemm_args<__nv_bfloat16>& args, cudaStream_t stream,
                          int cluster_size = wgmma_f16_default_cluster, int block_n = 0,
                          wgmma_multicast multicast = wgmma_multicast::by_shape);

/// The repack pass alone for 16-bit elements: as wgmma_pack_k_major(const float*, ...)
/// (wgmma_tf32_launch.cuh).
bool wgmma_pack_k_major(const __half* src, std::size_t ld_src, bool source_k_contiguous, __half* dst,
                        std::size_t ld_dst, std::size_t rows, std::size_t k, cudaStream_t stream);
bool wgmma_pack_k_major(const __nv_bfloat16* src, std::size_t ld_src, bool source_k_contiguous, __nv_bfloat16* dst,
                        std::size_t ld_dst, std::size_t rows, std::size_t k, cudaStream_t stream);

#ifndef KF_WGMMA_F16_DECLARATIONS_ONLY
/// The wgmma kernel where it runs, else the mma.sync kernel (sm_80+).
template <class T>
void launch_wgmma_f16(const gemm_args<T>& args, cudaStream_t stream) {
  if (!wgmma_f16_try_launch(args, stream)) launch_tensor_core_f16(args, stream);
}
#endif

}  // namespace kf::detail
