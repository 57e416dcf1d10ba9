// SPDX-License-Identifier: Apache-2.0
// Host side of step 7 (07_warp_tiled.cuh): picks the tuning for the device's
// image, splits k where the tiles cannot fill the GPU (split_k.cuh) and
// launches one instantiation per transpose combination and alignment.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "../runtime/launcher.hpp"
#include "07_warp_tiled.cuh"
#include "launch_util.hpp"
#include "split_k.cuh"
#include "tile_params.cuh"

namespace kf::detail {

/// The tuning of the image that runs on `device`: the architecture it was
/// compiled for (cudaFuncAttributes::ptxVersion, from the runtime's cached
/// kernel profile) is what selected the device code, which may differ from the
/// device's own compute capability (PTX JIT, or a lower minor version's code).
/// Probed on the Epilogue's own instantiation: a user's .cu (kernelforge/matmul.cuh)
/// brings its own images, for its own architecture list; `what` names it in errors.
template <class Epilogue = epilogue::identity>
warp_tiled_tuning_id warp_tiled_tuning_of(int device, const char* what = "kf::matmul (warp_tiled)") {
  constexpr auto probe = &matmul_warp_tiled<warp_tiled_large_smem, false, false, true, Epilogue>;
  return warp_tiled_tuning_for(profile_of<probe>(device, what).ptx_version);
}

template <class Config, class Epilogue = epilogue::identity>
void launch_warp_tiled_with(const gemm_args<float>& g, cudaStream_t stream, int device, const Epilogue& ep = {}) {
  const char* what = "kf::matmul (warp_tiled)";
  tile_params x = make_tile_params<Config>(g);
  const std::size_t tiles = grid_block_tiles(x.tiles_m, x.tiles_n, what);
  const bool vec = rows_16b_aligned(g.A, g.lda) && rows_16b_aligned(g.B, g.ldb);
  constexpr int threads = Config::warps_m * Config::warps_n * 32;
  dispatch_transposes(g.trans_a, g.trans_b, [&](auto ta, auto tb) {
    constexpr bool TA = decltype(ta)::value, TB = decltype(tb)::value;
    auto run = [&](auto vec_constant) {
      constexpr bool V = decltype(vec_constant)::value;
      constexpr std::size_t smem = warp_tiled_layout<Config, TA, TB>::smem_bytes;
      constexpr auto kernel = &matmul_warp_tiled<Config, TA, TB, V, Epilogue>;
      const int blocks_per_sm = resident_blocks_per_sm<kernel>(device, threads, smem, what);
      launch_split_k(g, x, tiles, Config::block_k, blocks_per_sm * limits_for(device).sm_count, device, ep, stream,
                     [&](const dim3& grid) {
                       kernel<<<grid, threads, smem, stream>>>(g, x, ep);
                       check_launch(what);
                     });
    };
    if (vec)
      run(bool_constant<true>{});
    else
      run(bool_constant<false>{});
  });
}

/// C = ep(alpha * op(A) op(B) + beta * C) with the warp-tiled kernel; `what`
/// names the caller in errors (no_kernel_image: which translation unit).
template <class T, class Epilogue = epilogue::identity>
void launch_warp_tiled(const gemm_args<T>& g, cudaStream_t stream, const Epilogue& ep = {},
                       const char* what = "kf::matmul (warp_tiled)") {
  static_assert(std::is_same_v<T, float>, "the warp_tiled kernel is written for float (float4 fragments)");
  const int device = current_device(what);
  if (warp_tiled_tuning_of<Epilogue>(device, what) == warp_tiled_tuning_id::large_smem) {
    launch_warp_tiled_with<warp_tiled_large_smem>(g, stream, device, ep);
  } else {
    launch_warp_tiled_with<warp_tiled_small_smem>(g, stream, device, ep);
  }
}

}  // namespace kf::detail
