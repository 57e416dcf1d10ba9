// SPDX-License-Identifier: Apache-2.0
// Step 10 -- wgmma_tf32: the Hopper (sm_90a) tensor-core path. Host interface;
// the kernel (10_wgmma_tf32.cuh) and its launch (wgmma_tf32.cu) are compiled for sm_90a only (see
// tensor_core_sources.cmake), and the launcher reaches it through these calls.
//
// What changes from tensor_core_tf32 (mma.sync), and why it is faster on Hopper:
//  * wgmma.mma_async: a warpgroup (4 warps) issues one m64n256k8 product that
//    reads both operands straight from shared memory; Hopper's tensor cores reach
//    their full TF32 rate only through wgmma (mma.sync runs them at a fraction),
//    and no fragment loads, TF32 conversions or register staging are issued.
//  * TMA (cp.async.bulk.tensor) moves each 128x32 tile with one instruction from
//    one thread, zero-fills whatever overhangs the matrix, and writes it in the
//    128-byte swizzled layout that wgmma reads without bank conflicts.
//  * mbarrier pipeline, warp-specialized: one producer warpgroup keeps 4 stages in
//    flight while two consumer warpgroups (setmaxnreg: 40 vs 232 registers) run
//    the products; a 2-CTA cluster shares each B tile (or, for 128 x 64 tiles,
//    each A tile) through TMA multicast, which halves that operand's L2 -> SM
//    traffic, what limits a TF32 kernel (4 bytes an element).
//
// Conditions (else launch_wgmma_tf32 falls back to launch_tensor_core_tf32):
//  * the library was built with 90 in CMAKE_CUDA_ARCHITECTURES and the device is
//    compute capability 9.0 (wgmma_tf32_available);
//  * m, n, k < 2^31 - 512 (TMA coordinates are 32-bit) and the tile count fits
//    an int (the persistent kernel walks tiles with an int index);
//  * the workspace can be allocated when a repack is needed.
// TF32 wgmma reads operands from shared memory k-contiguous only (no transpose
// for TF32), with 16-byte aligned rows (TMA). An n-contiguous B (not
// transposed: the plain row-major product) with 16-byte aligned rows is read as
// it is by the swapped product C^T = op(B)^T op(A)^T, whose A operand (op(B)^T)
// the consumers load into registers (10_wgmma_tf32.cuh: SwapAB). Other operands
// that are not k-contiguous (A transposed,
// or a base / leading dimension not 16-byte aligned) are first repacked into a k-contiguous copy in a workspace
// taken stream-ordered from a per-device memory pool (cudaMallocFromPoolAsync,
// freed stream-ordered right after; the pool keeps its memory for the next
// call): one bandwidth-bound pass, counted in the timing. A and op(B)^T both
// k-contiguous (trans_a == false, trans_b == true) run with no extra pass.
// Precision: wgmma reads the fp32 bits as TF32 (low 13 mantissa bits dropped:
// truncation, not rounding), so a product carries up to ~2e-3 relative error
// (mma.sync rounds: ~1e-3); sums accumulate in fp32.
// Its measured speed: the README's generated tables and benchmarks/TUNING.md (bench_matmul).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

#include "gemm_args.cuh"
#include "kernelforge/epilogue.cuh"
#include "tuning.hpp"  // wgmma_tf32_b_mode
#ifndef KF_WGMMA_TF32_DECLARATIONS_ONLY
#include "tensor_core_tf32_launch.cuh"
#endif

namespace kf::detail {

/// CTAs per cluster sharing one B or A tile (TMA multicast): 1 or 2.
inline constexpr int wgmma_tf32_default_cluster = 2;

/// True when the wgmma kernel is compiled into this library (90 in its
/// architecture list) and `device` is compute capability 9.0. Cached per device.
bool wgmma_tf32_available(int device);

/// Enqueues C = alpha * op(A) * op(B) + beta * C with the wgmma kernel on the
/// current device and returns true; returns false, having enqueued nothing, when
/// a condition above is not met. cluster_size: 1 or 2 (tests and benchmarks
/// compare both; anything else is treated as the default).
/// b_mode: an n-contiguous B with 16-byte aligned rows is read by the swapped
/// product (by_shape), or repacked in HBM first (repack: tests and benchmarks
/// compare both; tuning.hpp: wgmma_tf32_b_mode).
/// block_n: the block tile's width, 0 (by shape: tuning.hpp choose_wgmma_block_n)
/// or one of wgmma_block_n_choices (256, 128, 64; tests run every width);
/// anything else: errc::invalid_argument.
/// multicast: which operand a cluster of 2 shares, by shape (tuning.hpp:
/// wgmma_multicasts_a) or forced (tests and benchmarks compare both); split_k:
/// the cluster split-k instead (a cluster of 2 on each 128 x 128 tile, each CTA
/// over half of k; block_n must be 0 or 128 and cluster_size not 1, else
/// errc::invalid_argument).
bool wgmma_tf32_try_launch(const gemm_args<float>& args, cudaStream_t stream,
                           int cluster_size = wgmma_tf32_default_cluster,
                           wgmma_tf32_b_mode b_mode = wgmma_tf32_b_mode::by_shape, int block_n = 0,
                           wgmma_multicast multicast = wgmma_multicast::by_shape);

/// The same with the library's fused epilogue (options.bias / options.relu):
/// C = fused(alpha * op(A) * op(B) + beta * C). The wgmma kernel is compiled into
/// the library's sm_90a object for this epilogue and identity only; a user's own
/// functor (kernelforge/matmul.cuh) takes the mma.sync kernel.
bool wgmma_tf32_try_launch(const gemm_args<float>& args, const epilogue::bias_relu_threshold<float>& fused,
                           cudaStream_t stream, int cluster_size = wgmma_tf32_default_cluster,
                           wgmma_tf32_b_mode b_mode = wgmma_tf32_b_mode::by_shape, int block_n = 0,
                           wgmma_multicast multicast = wgmma_multicast::by_shape);

/// The repack pass alone (pack_k_major.cuh), for tests and benchmarks: dst
/// (rows x k, k-contiguous, row stride ld_dst; 16-byte aligned rows, as the
/// GEMM's workspace has; columns k up to k rounded up to 16 bytes set to zero)
/// from src, whose element (x, p) lies at src[x * ld_src + p] when
/// source_k_contiguous, else at src[p * ld_src + x]. Arguments are validated
/// first (errc::invalid_argument naming the one at fault); then true, enqueued
/// on `stream` (nothing for rows or k == 0), or false, nothing enqueued, where
/// the wgmma kernels do not run (wgmma_tf32_available).
bool wgmma_pack_k_major(const float* src, std::size_t ld_src, bool source_k_contiguous, float* dst, std::size_t ld_dst,
                        std::size_t rows, std::size_t k, cudaStream_t stream);

#ifndef KF_WGMMA_TF32_DECLARATIONS_ONLY
/// The wgmma kernel where it runs, else the mma.sync kernel (sm_80+).
/// Epilogue: identity or bias_relu_threshold<float> (the instantiations wgmma_tf32.cu ships).
template <class Epilogue = epilogue::identity>
void launch_wgmma_tf32(const gemm_args<float>& args, cudaStream_t stream, const Epilogue& ep = {}) {
  if constexpr (std::is_same_v<Epilogue, epilogue::identity>) {
    if (!wgmma_tf32_try_launch(args, stream)) launch_tensor_core_tf32(args, stream);
  } else {
    static_assert(std::is_same_v<Epilogue, epilogue::bias_relu_threshold<float>>,
                  "the wgmma kernel ships identity and bias_relu_threshold<float> epilogues only");
    if (!wgmma_tf32_try_launch(args, ep, stream)) launch_tensor_core_tf32(args, stream, ep);
  }
}
#endif

}  // namespace kf::detail
