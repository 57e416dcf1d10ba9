// SPDX-License-Identifier: Apache-2.0
// Host side of step 8 (08_large_tile.cuh): picks the architecture class of the
// image that runs and the tile orientation for the shape (plan.hpp), splits
// k where the tiles cannot fill the GPU (split_k.cuh, workspace from the
// runtime's pool), and launches one instantiation per transpose combination
// and alignment.
#pragma once

#include <cstddef>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "../runtime/launcher.hpp"
#include "08_large_tile.cuh"
#include "kernelforge/epilogue.cuh"
#include "launch_util.hpp"
#include "split_k.cuh"
#include "tile_params.cuh"
#include "warp_tiled_launch.cuh"  // warp_tiled_tuning_of: the same architecture classes

namespace kf::detail {

constexpr const char* large_tile_what = "kf::matmul (large_tile)";

/// The kernel's resident blocks per SM for one instantiation (also performs the
/// shared-memory opt-in once per device and kernel).
template <class Config, bool TA, bool TB, bool V, class Epilogue>
int large_tile_blocks_per_sm(int device) {
  constexpr auto kernel = &matmul_large_tile<Config, TA, TB, V, Epilogue>;
  return resident_blocks_per_sm<kernel>(device, Config::threads, large_tile_layout<Config>::smem_bytes,
                                        large_tile_what);
}

/// Launches configuration Config (split-k: the reduction applies alpha, beta and `ep`).
/// Whether large_tile copies `g`'s operands 16 bytes at a time: those stored
/// k-outer (A transposed, B untransposed) have 16-byte aligned rows; the
/// k-inner ones are always copied 4 bytes at a time.
inline bool large_tile_vec(const gemm_args<float>& g) {
  return (!g.trans_a || rows_16b_aligned(g.A, g.lda)) && (g.trans_b || rows_16b_aligned(g.B, g.ldb));
}

/// AlignedOnly: only the 16-byte kernels are built (the library's identity
/// instantiation: matmul.cu hands misaligned plain calls to the fused kernels),
/// and a misaligned `g` is errc::unsupported.
template <class Config, bool AlignedOnly, class Epilogue>
void launch_large_tile_with(const gemm_args<float>& g, cudaStream_t stream, int device, const Epilogue& ep) {
  tile_params x = make_tile_params<Config>(g);
  const std::size_t tiles = grid_block_tiles(x.tiles_m, x.tiles_n, large_tile_what);
  const bool vec = large_tile_vec(g);
  dispatch_transposes(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    constexpr bool TA = decltype(ta)::value, TB = decltype(tb)::value;
    auto run = [&](auto vec_constant) {
      constexpr bool V = decltype(vec_constant)::value;
      constexpr std::size_t smem = large_tile_layout<Config>::smem_bytes;
      constexpr auto kernel = &matmul_large_tile<Config, TA, TB, V, Epilogue>;
      const int blocks_per_sm = large_tile_blocks_per_sm<Config, TA, TB, V, Epilogue>(device);
      launch_split_k(g, x, tiles, Config::block_k, blocks_per_sm * limits_for(device).sm_count, device, ep, stream,
                     [&](const dim3& grid) {
                       kernel<<<grid, Config::threads, smem, stream>>>(g, x, ep);
                       check_launch(large_tile_what);
                     });
    };
    // Without a k-outer operand both instantiations are the same code: build one.
    constexpr bool has_k_outer = TA || !TB;
    if constexpr (has_k_outer && !AlignedOnly) {
      if (!vec) return run(bool_constant<false>{});
    } else if constexpr (has_k_outer) {
      if (!vec) {
        throw error(errc::unsupported, std::string(large_tile_what) +
                                           ": this instantiation has the 16-byte kernels only (large_tile_vec)");
      }
    }
    run(bool_constant<true>{});
  });
}

/// Picks the orientation (plan.hpp: large_tile_prefers_256x128) and launches.
/// The 4-byte forms (a k-outer operand whose rows are not 16-byte aligned) are
/// built in the 256 x 128 orientation alone: they are 3 of a fused instance's
/// 14 kernels an architecture saved, for calls that lose at most the wave
/// quantization the other orientation would save
/// (benchmarks/tuning/matmul.md#large_tile_misaligned_forms).
template <warp_tiled_tuning_id Id, bool AlignedOnly, class Epilogue>
void launch_large_tile_for(const gemm_args<float>& g, cudaStream_t stream, int device, const Epilogue& ep) {
  using wide = large_tile_128x256<Id>;
  using tall = large_tile_256x128<Id>;
  if constexpr (!AlignedOnly) {
    if (!large_tile_vec(g)) return launch_large_tile_with<tall, false>(g, stream, device, ep);
  }
  // Both orientations run one block per SM (registers), so one occupancy query serves the choice.
  const int resident =
      large_tile_blocks_per_sm<wide, false, false, true, Epilogue>(device) * limits_for(device).sm_count;
  if (large_tile_prefers_256x128(g.m, g.n, resident)) {
    launch_large_tile_with<tall, true>(g, stream, device, ep);
  } else {
    launch_large_tile_with<wide, true>(g, stream, device, ep);
  }
}

/// C = ep(alpha * op(A) op(B) + beta * C) with the large_tile kernel
/// (AlignedOnly: launch_large_tile_with's).
template <class Epilogue = kf::epilogue::identity, bool AlignedOnly = false>
void launch_large_tile(const gemm_args<float>& g, cudaStream_t stream, const Epilogue& ep = {}) {
  const int device = current_device(large_tile_what);
  // The image's tuning, probed on warp_tiled's fused instantiation: the one the
  // library compiles (src/matmul/warp_tiled.cu), whatever large_tile's epilogue.
  if (warp_tiled_tuning_of<epilogue::bias_relu_threshold<float>>(device) == warp_tiled_tuning_id::large_smem) {
    launch_large_tile_for<warp_tiled_tuning_id::large_smem, AlignedOnly>(g, stream, device, ep);
  } else {
    launch_large_tile_for<warp_tiled_tuning_id::small_smem, AlignedOnly>(g, stream, device, ep);
  }
}

}  // namespace kf::detail
