// SPDX-License-Identifier: Apache-2.0
// Whether a Hopper GEMM's C goes out through the staged epilogue
// (wgmma/epilogue.cuh: store_tile_staged; swap_ab.cuh: store_tile_staged_swapped),
// and C's TMA map for it: the one rule for step 14 (wgmma/launch.cuh) and the
// fp32-emulation steps 15 and 17. Host code of the sm_90a translation units.
#pragma once

#include <cuda.h>

#include "../../common/alignment.hpp"
#include "../../runtime/tensor_map.hpp"  // encode_sw128
#include "../gemm_args.cuh"
#include "config.cuh"

namespace kf::detail::wgmma {

/// The staged epilogue (shared memory, then TMA stores of 64 rows x one
/// swizzled row) runs where C is not read (beta == 0), no split-k partials are
/// written (`split`), and TMA can write C's rows in place: 16-byte aligned, and
/// whole 16-byte units wide -- a TMA store writes whole 16-byte chunks, past
/// C's last column up to the next 16-byte boundary (seen on the H200: n = 65
/// floats wrote columns 65..67 of ldc's padding; triton-lang/triton#11583
/// reports the same). Elsewhere each thread stores its accumulators itself.
/// Returns whether it runs, having encoded map_c (C as m x n) where it does.
template <class T>
bool encode_staged_c(CUtensorMap& map_c, const gemm_args<T>& g, bool split) {
  return g.beta == 0.0f && !split && rows_aligned(g.C, g.ldc, sizeof(T), tma_alignment) &&
         (g.n * sizeof(T)) % tma_alignment == 0 &&
         encode_sw128(map_c, static_cast<const T*>(g.C), g.n, g.m, g.ldc,
                      static_cast<cuuint32_t>(swizzle_row_bytes / sizeof(T)), static_cast<cuuint32_t>(c_box_rows));
}

}  // namespace kf::detail::wgmma
