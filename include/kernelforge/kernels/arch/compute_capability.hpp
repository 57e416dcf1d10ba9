// SPDX-License-Identifier: Apache-2.0
// The compute capabilities (major * 10 + minor) from which the instructions of
// the library's kernels exist, for the host-side checks that pick a path or
// refuse a call (runs_image_for, throw_needs_compute_capability). Device code
// reads the architecture through guards.cuh's KF_ARCH_* macros instead.
#pragma once

namespace kf::detail {

/// mma.sync with TF32, fp16 or bf16 operands and fp32 accumulation (m16n8k8
/// .tf32, m16n8k16 .f16 / .bf16: arch/mma_sm80.cuh): compute capability 8.0.
/// Every warp-level tensor-core path needs it: matmul's steps 9, 10 and 16,
/// conv2d's TF32 implicit GEMM, the few-channel stem kernels and gradient step 8.
inline constexpr int mma_sync_min_cc = 80;

}  // namespace kf::detail
