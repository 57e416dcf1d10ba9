// SPDX-License-Identifier: Apache-2.0
// Steps 11-14 -- wgmma, declarations: what the matmul launcher (matmul.cu), the
// tests and the benchmarks call. The kernels (11_wgmma_tma.cuh ...
// 14_wgmma.cuh) and their host side (wgmma/launch.cuh, wgmma_steps_sm90a.cu)
// are compiled for sm_90a only, in wgmma_sm90a_tf32{,_fused}.cu,
// wgmma_sm90a_{f16,bf16}.cu and wgmma_steps_sm90a.cu; without 90 in CMAKE_CUDA_ARCHITECTURES those files
// compile to stubs that return false. Declarations only: the fallback to
// mma.sync is matmul.cu's choice, never made in the sm_90a objects (their copy
// of a shared mma.sync kernel could be the one the program registers, and other
// GPUs would then find no image for it).
// A product runs on wgmma when the library holds the sm_90a image and the device
// is compute capability 9.0 (wgmma_available), m, n, k < 2^31 - 512 (TMA
// coordinates are 32-bit), the tile count fits an int, and the workspace for a
// repack can be allocated. Operands wgmma cannot read in place (A not
// k-contiguous, rows not 16-byte aligned; TF32 B n-contiguous only with the
// repack forced) are first repacked k-contiguous (pack_k_major.cuh).
// Precision (TF32): wgmma reads the fp32 bits as TF32 (low 13 mantissa bits
// dropped: truncation), so a product carries up to ~2e-3 relative error.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "gemm_args.cuh"
#include "kernelforge/epilogue.cuh"
#include "plan.hpp"          // fp32_emulated_large
#include "wgmma/policy.hpp"  // wgmma_cluster_mode, wgmma_tf32_b_mode

namespace kf::detail {

/// What tests and benchmarks may force; the defaults are what the library runs.
struct wgmma_overrides {
  /// CTAs per cluster: 2 (share an operand or split k, by shape) or 1 (single CTAs).
  int cluster_size = 2;
  /// The block tile's width: 0 (by shape: choose_wgmma_block_n) or one of
  /// wgmma_block_n_choices (256, 128, 64); anything else: errc::invalid_argument.
  int block_n = 0;
  /// What a cluster of 2 does: by shape, share B, share A, or split k of one
  /// 128 x 128 tile (then block_n must be 0 or 128 and cluster_size 2, else
  /// errc::invalid_argument).
  wgmma_cluster_mode cluster_mode = wgmma_cluster_mode::by_shape;
  /// TF32 only: an n-contiguous B with 16-byte aligned rows is read by the
  /// swapped product (by_shape) or repacked in HBM first (repack).
  wgmma_tf32_b_mode tf32_b_mode = wgmma_tf32_b_mode::by_shape;
};

/// True when the wgmma kernels are compiled into this library (90 in its
/// architecture list) and `device` is compute capability 9.0. Cached per device.
bool wgmma_available(int device);

/// Enqueues C = alpha * op(A) * op(B) + beta * C with the wgmma kernel on the
/// current device and returns true; returns false, having enqueued nothing,
/// where a condition above is not met.
bool wgmma_try_launch(const gemm_args<float>& args, cudaStream_t stream, const wgmma_overrides& overrides = {});
bool wgmma_try_launch(const gemm_args<__half>& args, cudaStream_t stream, const wgmma_overrides& overrides = {});
bool wgmma_try_launch(const gemm_args<__nv_bfloat16>& args, cudaStream_t stream, const wgmma_overrides& overrides = {});

/// The same with the library's fused epilogue (options.bias / options.relu):
/// C = fused(alpha * op(A) * op(B) + beta * C). The sm_90a object holds this
/// epilogue and identity only; a user's own functor (kernelforge/matmul.cuh)
/// takes the mma.sync kernel.
bool wgmma_try_launch(const gemm_args<float>& args, const epilogue::bias_relu_threshold<float>& fused,
                      cudaStream_t stream, const wgmma_overrides& overrides = {});

/// Step 15, math_mode::fp32_emulated (15_wgmma_fp32_emulated.cuh): C =
/// fused(alpha * op(A) * op(B) + beta * C) with fp32 accuracy from three TF32
/// products per element pair (each operand split into TF32 hi and lo parts by a
/// pre-pass into a pooled workspace of (m + n) x 2 round_up(k, 32) floats),
/// partial sums promoted into fp32 every 32 of k. Returns false, having
/// enqueued nothing, where the wgmma conditions above are not met on `device`
/// (the current one) or the workspace cannot be allocated. Pass a default
/// bias_relu_threshold for none. Skinny shapes (plan.hpp:
/// choose_fp32_emulated_large) run step 17 instead where it can (below) once
/// tuning.hpp's best_uses_fp32_emulated_skinny is on (it is: 1.45x step 15);
/// `kernel` forces one of the two (tests, benchmarks): skinny_serial is step 17
/// with its serial k-loop (fp32_emulated_skinny_schedule::serial).
enum class fp32_emulated_wgmma_kernel { by_shape, step_15, skinny, skinny_serial };
bool wgmma_fp32_emulated_try_launch(const gemm_args<float>& args, const epilogue::bias_relu_threshold<float>& fused,
                                    int device, cudaStream_t stream,
                                    fp32_emulated_wgmma_kernel kernel = fp32_emulated_wgmma_kernel::by_shape);

/// Step 17, math_mode::fp32_emulated for skinny products
/// (17_wgmma_fp32_emulated_skinny.cuh): the `large` operand (not none) read
/// in place as plain fp32 and split into TF32 parts in registers, the other
/// one pre-split into a pooled workspace of its rows x 2 round_up(k, 32)
/// floats. Returns false, having enqueued nothing, where the wgmma conditions
/// above are not met on `device` (the current one), the large operand's rows
/// are not 16-byte aligned (TMA reads it in place), or the workspace cannot be
/// allocated. `schedule`: the k-loop's, split_ahead (the next k-block split
/// while this one's products run) or serial (split after they complete); the
/// same products, order and sums, so the same bits (the serial one is kept for
/// bench_matmul's paired row and the tests' bit-for-bit comparison).
enum class fp32_emulated_skinny_schedule { split_ahead, serial };
bool wgmma_fp32_emulated_skinny_try_launch(
    const gemm_args<float>& args, const epilogue::bias_relu_threshold<float>& fused, fp32_emulated_large large,
    int device, cudaStream_t stream,
    fp32_emulated_skinny_schedule schedule = fp32_emulated_skinny_schedule::split_ahead);

/// The Hopper learning steps, which lead up to step 14 one idea at a time:
/// 11 wgmma + TMA in one warpgroup, 12 warp specialization, 13 clusters
/// sharing B (11_wgmma_tma.cuh, 12_wgmma_warp_specialized.cuh, 13_wgmma_clusters.cuh).
enum class wgmma_step { tma = 11, warp_specialized = 12, clusters = 13 };

/// Enqueues C = alpha * A * B + beta * C with learning step `step` on the
/// current device and returns true; returns false, having enqueued nothing,
/// where the sm_90a kernels do not run (wgmma_available) or m, n, k reach
/// 2^31 - 512. The steps take the row-major product only: trans_a and trans_b
/// none, A's and B's rows 16-byte aligned (pointers and leading dimensions
/// multiples of 8 elements); other layouts are errc::unsupported (step 14,
/// wgmma_try_launch, takes every layout). A step that is not one of
/// wgmma_step's values is errc::invalid_argument.
bool wgmma_step_try_launch(wgmma_step step, const gemm_args<__half>& args, cudaStream_t stream);
bool wgmma_step_try_launch(wgmma_step step, const gemm_args<__nv_bfloat16>& args, cudaStream_t stream);

/// The repack pass alone (pack_k_major.cuh), for tests and benchmarks: dst
/// (rows x k, k-contiguous, row stride ld_dst; 16-byte aligned rows, as the
/// GEMM's workspace has; columns k up to k rounded up to 16 bytes set to zero)
/// from src, whose element (x, p) lies at src[x * ld_src + p] when
/// source_k_contiguous, else at src[p * ld_src + x]. Arguments are validated
/// first (errc::invalid_argument naming the one at fault); then true, enqueued
/// on `stream` (nothing for rows or k == 0), or false, nothing enqueued, where
/// the wgmma kernels do not run (wgmma_available).
bool wgmma_pack_k_major(const float* src, std::size_t ld_src, bool source_k_contiguous, float* dst, std::size_t ld_dst,
                        std::size_t rows, std::size_t k, cudaStream_t stream);
bool wgmma_pack_k_major(const __half* src, std::size_t ld_src, bool source_k_contiguous, __half* dst,
                        std::size_t ld_dst, std::size_t rows, std::size_t k, cudaStream_t stream);
bool wgmma_pack_k_major(const __nv_bfloat16* src, std::size_t ld_src, bool source_k_contiguous, __nv_bfloat16* dst,
                        std::size_t ld_dst, std::size_t rows, std::size_t k, cudaStream_t stream);

}  // namespace kf::detail
