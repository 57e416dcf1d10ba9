// SPDX-License-Identifier: Apache-2.0
// bench_matmul's tuning rows (matmul/fp32/tuning/<config>/<shape>, registered
// by bench_matmul.cu): warp_tiled and large_tile configurations other than the
// library's, and how each is launched on the untransposed product -- the data
// the constants of src/matmul's tuning.hpp were chosen from.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "kernelforge/epilogue.cuh"
#include "kernelforge/kernels/matmul/gemm_args.cuh"
#include "kernelforge/kernels/matmul/large_tile_launch.cuh"
#include "kernelforge/kernels/matmul/warp_tiled_launch.cuh"
#include "kernelforge/kernels/runtime/device_facts.hpp"

namespace kf::bench::matmul {

// Alternative warp_tiled configurations (the library's own is the warp_tiled
// row). They carry the large_smem id, so they run only where that family runs
// (sm_80, sm_90, sm_100...). Outside the anonymous namespace: kernels templated
// on them need external linkage for their hidden visibility.
using kf::detail::warp_tiled_large_smem;
struct tune_128x128x16 : warp_tiled_large_smem {
  static constexpr int block_k = 16;
};
struct tune_128x128x32_4stages : warp_tiled_large_smem {
  static constexpr int stages = 4;
};
struct tune_128x256x16 : warp_tiled_large_smem {
  static constexpr int block_n = 256, thread_n = 16, block_k = 16;
};
struct tune_128x128x16_2blocks : warp_tiled_large_smem {
  static constexpr int block_k = 16, min_blocks_per_sm = 2;
};

// Alternative large_tile configurations (the library's own is the large_tile
// row): k-slices of 8 (one barrier per 1024 FMAs a thread, a main loop half
// as long in instructions) with 3 or 4 stages.
using kf::detail::large_tile_128x256;
using kf::detail::warp_tiled_tuning_id;
struct tune_large_k8_3stages : large_tile_128x256<warp_tiled_tuning_id::large_smem> {
  static constexpr int block_k = 8, stages = 3;
};
struct tune_large_k8_4stages : large_tile_128x256<warp_tiled_tuning_id::large_smem> {
  static constexpr int block_k = 8, stages = 4;
};

/// Config's tiles of the untransposed product, unsplit (the tuning shapes fill the GPU).
template <class Config>
kf::detail::tile_params unsplit_tiles(const kf::detail::gemm_args<float>& g) {
  kf::detail::tile_params x = kf::detail::make_tile_params<Config>(g);
  x.k_slice = g.k;
  return x;
}

/// Launches configuration Config on the untransposed product directly (no
/// split-k: the tuning shapes fill the GPU), through the library's own
/// per-device preparation; the 16-byte or the 4-byte copy path as alignment allows.
template <class Config>
void launch_tuning(const kf::detail::gemm_args<float>& g, cudaStream_t stream) {
  namespace d = kf::detail;
  const int device = d::current_device("bench tuning");
  const d::tile_params x = unsplit_tiles<Config>(g);
  const dim3 grid(static_cast<unsigned>(x.tiles_m * x.tiles_n));
  constexpr int threads = Config::warps_m * Config::warps_n * 32;
  constexpr std::size_t smem = d::warp_tiled_layout<Config, false, false>::smem_bytes;
  const auto run = [&](auto kernel) {
    d::resident_blocks_per_sm<decltype(kernel)::value>(device, threads, smem, "bench tuning");  // smem opt-in
    decltype(kernel)::value<<<grid, threads, smem, stream>>>(g, x, kf::epilogue::identity{});
  };
  if (d::rows_16b_aligned(g.A, g.lda) && d::rows_16b_aligned(g.B, g.ldb)) {
    run(std::integral_constant<decltype(&d::matmul_warp_tiled<Config, false, false, true>),
                               &d::matmul_warp_tiled<Config, false, false, true>>{});
  } else {
    run(std::integral_constant<decltype(&d::matmul_warp_tiled<Config, false, false, false>),
                               &d::matmul_warp_tiled<Config, false, false, false>>{});
  }
  d::check_launch("bench tuning");
}

/// Launches large_tile configuration Config on the untransposed product
/// directly (no split-k: the tuning shapes fill the GPU; 16-byte copies: the
/// bench's operands are aligned).
template <class Config>
void launch_large_tuning(const kf::detail::gemm_args<float>& g, cudaStream_t stream) {
  namespace d = kf::detail;
  const int device = d::current_device("bench tuning");
  const d::tile_params x = unsplit_tiles<Config>(g);
  if (!d::rows_16b_aligned(g.A, g.lda) || !d::rows_16b_aligned(g.B, g.ldb)) {
    throw std::runtime_error("large_tile tuning rows: 16-byte aligned operands only");
  }
  d::large_tile_blocks_per_sm<Config, false, false, true, kf::epilogue::identity>(device);  // smem opt-in
  d::matmul_large_tile<Config, false, false, true>
      <<<static_cast<unsigned>(x.tiles_m * x.tiles_n), Config::threads, d::large_tile_layout<Config>::smem_bytes,
         stream>>>(g, x, kf::epilogue::identity{});
  d::check_launch("bench tuning");
}

}  // namespace kf::bench::matmul
