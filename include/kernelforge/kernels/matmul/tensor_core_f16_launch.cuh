// SPDX-License-Identifier: Apache-2.0
// Host side of step 10 (10_tensor_core_f16.cuh): the 16-byte or the register
// copy path, and one instantiation per transpose combination, for __half and
// __nv_bfloat16.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "../common/alignment.hpp"
#include "../common/grid.hpp"
#include "../runtime/launcher.hpp"
#include "10_tensor_core_f16.cuh"
#include "launch_util.hpp"
#include "operand.cuh"

namespace kf::detail {

namespace f16_mma {

template <class T, bool TransA, bool TransB, bool Vec16>
void launch(const gemm_args<T>& args, cudaStream_t stream, const char* what) {
  constexpr auto kernel = &tensor_core_f16_kernel<T, TransA, TransB, Vec16>;
  const int device = current_device(what);
  params<T> p;
  copy_gemm_args(p, args);
  p.tiles_m = static_cast<long long>(ceil_div(args.m, block_m));
  p.tiles_n = static_cast<long long>(ceil_div(args.n, block_n));
  p.c_pairs = rows_aligned(args.C, args.ldc, sizeof(T), 2 * sizeof(T));
  const long long blocks = p.tiles_m * p.tiles_n;
  if (blocks > static_cast<long long>(limits_for(device).max_grid_x)) {
    throw error(errc::unsupported, std::string(what) + ": " + std::to_string(args.m) + " x " + std::to_string(args.n) +
                                       " needs " + std::to_string(blocks) +
                                       " tiles of 128 x 128, more than the device's grid limit");
  }
  allow_dynamic_smem<kernel>(device, smem_bytes, what);
  kernel<<<static_cast<unsigned>(blocks), threads, smem_bytes, stream>>>(p);
  check_launch(what);
}

}  // namespace f16_mma

/// Enqueues C = alpha * op(A) * op(B) + beta * C (see gemm_args.cuh) with the
/// mma.sync f16 / bf16 kernel. Requires a device of compute capability 8.0 or
/// newer (the caller checks); any shape, transposes, leading dimensions and
/// alignment (16-byte cp.async when both operands' rows are 16-byte aligned,
/// 16-bit loads otherwise).
template <class T>
void launch_tensor_core_f16(const gemm_args<T>& args, cudaStream_t stream) {
  const char* what = "kf::matmul (tensor_core_f16)";
  const bool vec16 = rows_16b_aligned(args.A, args.lda) && rows_16b_aligned(args.B, args.ldb);
  dispatch_transposes(args.trans_a, args.trans_b, [&](auto ta, auto tb) {
    constexpr bool trans_a = decltype(ta)::value, trans_b = decltype(tb)::value;
    if (vec16) {
      f16_mma::launch<T, trans_a, trans_b, true>(args, stream, what);
    } else {
      f16_mma::launch<T, trans_a, trans_b, false>(args, stream, what);
    }
  });
}

}  // namespace kf::detail
