// SPDX-License-Identifier: Apache-2.0
// The host side of step 16 (16_mma_sync_fp32_emulated.cuh), for its
// translation unit (src/matmul/mma_sync_fp32_emulated.cu): the tile width and
// pipeline depth from the device's shared memory (plan.hpp), the split
// pre-pass into a pooled workspace (split_tf32.cuh), and both instances.
#pragma once

#include <cstddef>
#include <limits>
#include <string>

#include <cuda_runtime_api.h>

#include "../common/grid.hpp"
#include "../runtime/device_facts.hpp"
#include "../runtime/launcher.hpp"
#include "16_mma_sync_fp32_emulated.cuh"
#include "gemm_args.cuh"
#include "plan.hpp"
#include "split_tf32.cuh"

namespace kf::detail::emulated_mma {

/// mma_sync_fp32_emulated_kernel<BlockN, *, Epilogue>: its instance for
/// finite inputs and the one for inputs with an inf or a NaN (64-row tiles).
template <int BlockN, class Epilogue>
struct instance {
  using common = tile_config<BlockN, false>;
  using apart = tile_config<BlockN, true>;
  static constexpr auto kernel = &mma_sync_fp32_emulated_kernel<BlockN, false, Epilogue>;
  static constexpr auto kernel_apart = &mma_sync_fp32_emulated_kernel<BlockN, true, Epilogue>;
};

/// Calls f(instance<...>{}) for the tile width (128, 64) chosen at run time.
template <class Epilogue, class F>
void with_instance(int block_n, F&& f) {
  if (block_n == 128) {
    f(instance<128, Epilogue>{});
  } else {
    f(instance<64, Epilogue>{});
  }
}

/// See mma_sync_fp32_emulated_try_launch (mma_sync_fp32_emulated.hpp).
template <class Epilogue>
bool try_launch(const gemm_args<float>& g, const Epilogue& ep, int device, cudaStream_t stream, const char* what) {
  // Every check before any work: a false return has enqueued nothing.
  if (compute_capability(device) < mma_sync_min_cc) {
    throw_needs_compute_capability(what, device, mma_sync_min_cc,
                                   "options.math = fp32_emulated (TF32 tensor cores, mma.sync)",
                                   "use math_mode::exact for fp32 accuracy on this GPU");
  }
  if (g.k == 0) return false;  // C = beta C + epilogue: the launcher's own path
  const device_limits& limits = limits_for(device);
  const int block_n = choose_mma_fp32_emulated_block_n(g.m, g.n, limits.sm_count, limits.max_smem_per_block_optin);
  if (block_n == 0) {
    throw error(errc::unsupported, std::string(what) + ": two stages of 128 x 64 (" +
                                       std::to_string(2 * mma_fp32_emulated_stage_bytes(64)) +
                                       " bytes of shared memory) do not fit the device's " +
                                       std::to_string(limits.max_smem_per_block_optin) +
                                       " a block; use math_mode::exact");
  }
  tf32_mma::params p;
  copy_gemm_args(p, g);  // A, B, k and their strides: the split operands', below
  p.tiles_n = static_cast<long long>(ceil_div(g.n, static_cast<std::size_t>(block_n)));
  p.stages = mma_fp32_emulated_stages(block_n, limits.max_smem_per_block_optin);
  // The inf / NaN instance's tiles are half as tall: twice the tile rows.
  const long long tiles_m = static_cast<long long>(ceil_div(g.m, mma_fp32_emulated_block_m / 2));
  if (tiles_m * p.tiles_n > static_cast<long long>(limits.max_grid_x)) {
    throw error(errc::unsupported, std::string(what) + ": " + std::to_string(g.m) + " x " + std::to_string(g.n) +
                                       " needs " + std::to_string(tiles_m * p.tiles_n) + " tiles of 64 x " +
                                       std::to_string(block_n) + ", more than the device's grid limit");
  }
  const std::size_t ld = split_tf32_ld(g.k);
  if (ld / (2 * split_block_k) > static_cast<std::size_t>(std::numeric_limits<int>::max())) return false;
  int smem = 0, smem_apart = 0;
  with_instance<Epilogue>(block_n, [&](auto chosen) {
    using I = decltype(chosen);
    smem = p.stages * I::common::stage_bytes;
    smem_apart = p.stages * I::apart::stage_bytes;
    profile_of<I::kernel>(device, what);  // errc::no_kernel_image, naming `what`, where this image is missing
    allow_dynamic_smem<I::kernel>(device, smem, what);
    allow_dynamic_smem<I::kernel_apart>(device, smem_apart, what);
  });

  const split_gemm_operands operands(g, device, stream);  // back to the pool on return
  if (operands.a() == nullptr) return false;              // no pool or no memory: the caller reports it
  operands.enqueue(g, stream, what);
  p.A = operands.a();
  p.B = operands.b();
  p.k = p.lda = p.ldb = static_cast<long long>(ld);
  tf32_mma::params p_apart = p;
  p.tiles_m = static_cast<long long>(ceil_div(g.m, mma_fp32_emulated_block_m));
  p_apart.tiles_m = tiles_m;
  const unsigned* const flag = operands.nonfinite();
  with_instance<Epilogue>(block_n, [&](auto chosen) {
    using I = decltype(chosen);
    // Both instances; the one the pre-pass's flag does not name returns at once.
    I::kernel<<<static_cast<unsigned>(p.tiles_m * p.tiles_n), I::common::threads, smem, stream>>>(p, ep, flag);
    check_launch(what);
    I::kernel_apart<<<static_cast<unsigned>(p_apart.tiles_m * p_apart.tiles_n), I::apart::threads, smem_apart,
                      stream>>>(p_apart, ep, flag);
    check_launch(what);
  });
  return true;
}

}  // namespace kf::detail::emulated_mma
