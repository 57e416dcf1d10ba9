// SPDX-License-Identifier: Apache-2.0
// FP8 step 3 -- wgmma, declarations: what kf::scaled_matmul (scaled_matmul.cu)
// calls. The kernel (scaled/03_wgmma.cuh) and its host side
// (scaled/wgmma_launch.cuh) are compiled for sm_90a only, in
// src/matmul/scaled_wgmma_sm90a_*.cu; without 90 in CMAKE_CUDA_ARCHITECTURES those
// files compile to stubs that return false (as matmul's wgmma_sm90a.hpp).
#pragma once

#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include "../wgmma/policy.hpp"  // scaled_wgmma_tile
#include "args.cuh"

namespace kf::detail {

/// Enqueues the scaled product `g` with the FP8 wgmma kernel on `device` (the
/// current one, whose kernel image the caller has checked) and returns true; returns false, having enqueued nothing,
/// where the sm_90a kernels do not run (wgmma_available), k == 0, m, n or k reach 2^31 - 512 (TMA coordinates), or no
/// workspace can be had for a repack. The tile width is chosen by shape (192, 144, 128 or 64: choose_scaled_block_n),
/// and clusters of 2 CTAs share B where there are two tile rows or more. Operands FP8 wgmma cannot read in place (A
/// transposed, B not transposed, rows not 16-byte aligned) are first repacked k-contiguous (pack_k_major.cuh). Shipped
/// for the operand pairs and output types of kf::scaled_matmul. `tile`: by shape (what the library runs), or forced
/// (policy.hpp: scaled_wgmma_tile; the tests and bench_scaled_matmul's two_partials_vs_192 rows).
template <class TA, class TB, class TD>
bool scaled_wgmma_try_launch(const scaled_gemm_args<TA, TB, TD>& g, int device, cudaStream_t stream,
                             scaled_wgmma_tile tile = scaled_wgmma_tile::by_shape);

/// The FP8 repack alone (pack_k_major.cuh, the instance the GEMM runs for e4m3; a byte copy, the same for e5m2), for
/// tests and benchmarks: as wgmma_pack_k_major of the other element types (matmul/wgmma_sm90a.hpp).
bool wgmma_pack_k_major(const __nv_fp8_e4m3* src, std::size_t ld_src, bool source_k_contiguous, __nv_fp8_e4m3* dst,
                        std::size_t ld_dst, std::size_t rows, std::size_t k, cudaStream_t stream);

}  // namespace kf::detail
