// SPDX-License-Identifier: Apache-2.0
// The matrix product's selection rules for the SIMT steps, pure functions of
// the architecture, the shape and the device's resident blocks over the data
// in tuning.hpp, tested on the CPU (tests/matmul/matmul_cpu_test.cpp): which
// warp_tiled / large_tile configuration an architecture compiles and runs,
// large_tile's orientation, whether variant best runs large_tile, and the
// split-k plan (the shared planner, common/split_k_plan.hpp, with the
// matmul's limits; the wgmma kernel's own choices: wgmma/policy.hpp), and
// where math_mode::fp32_emulated runs (steps 15, 16 and 17) and on what tiles.
// warp_tiled_tuning_for is read by device code too (KF_TUNING_FN).
#pragma once

#include <cstddef>

#include "../arch/compute_capability.hpp"
#include "../common/grid.hpp"
#include "../common/host_device.hpp"
#include "../common/split_k_plan.hpp"
#include "tuning.hpp"

namespace kf::detail {

/// Which warp_tiled (and large_tile) configuration an architecture uses.
/// cc: major * 10 + minor of the code that runs (see the launcher).
KF_TUNING_FN warp_tiled_tuning_id warp_tiled_tuning_for(int cc) {
  return cc == 80 || cc == 87 || (cc >= 90 && cc < 120) ? warp_tiled_tuning_id::large_smem
                                                        : warp_tiled_tuning_id::small_smem;
}

/// The split-k limits of a product of m x n outputs whose kernel steps k by
/// `block_k`, with `resident_blocks` blocks on the GPU at once (tuning.hpp):
/// split only where the tiles fill at most half a wave, into slices that fill
/// about one wave, at most split_k_max, `min_slice` long on average, the
/// workspace within split_k_max_workspace_bytes.
inline split_k_policy matmul_split_k_policy(std::size_t m, std::size_t n, int block_k, int resident_blocks,
                                            std::size_t min_slice = split_k_min_slice) {
  const std::size_t resident = resident_blocks > 0 ? static_cast<std::size_t>(resident_blocks) : 0;
  split_k_policy p;
  p.max_tiles = resident / split_k_wave_fraction_den;  // tiles * den <= resident
  p.max_split = split_k_max;
  p.max_blocks = resident;
  p.min_mean_slice = min_slice;
  p.granule = static_cast<std::size_t>(block_k);
  p.slice_bytes = m * n * sizeof(float);
  p.max_workspace_bytes = split_k_max_workspace_bytes;
  return p;
}

/// How a product of `tiles` block tiles cuts k (plan_split_k with
/// matmul_split_k_policy): slices rounded up to `block_k`, which can leave
/// fewer of them (k = 4100 in 16: slices of 288 with block_k 32, 15 of them).
inline split_k_plan plan_matmul_split_k(std::size_t tiles, std::size_t m, std::size_t n, std::size_t k, int block_k,
                                        int resident_blocks, std::size_t min_slice = split_k_min_slice) {
  return plan_split_k(tiles, k, matmul_split_k_policy(m, n, block_k, resident_blocks, min_slice));
}

/// The split-k reduction indexes a partial slab (m x n floats) with int: the
/// workspace cap keeps it below 2^31 elements whenever k is split.
static_assert(split_k_max_workspace_bytes / (2 * sizeof(float)) < (std::size_t{1} << 31),
              "a split-k slab must stay below 2^31 elements");

/// Which large_tile orientation runs a product: the one whose tiles fill the
/// GPU in fewer waves of `resident_blocks` (ties: 128 x 256). Products that
/// split k fill their waves by splitting, so they keep 128 x 256.
inline bool large_tile_prefers_256x128(std::size_t m, std::size_t n, int resident_blocks) {
  if (resident_blocks <= 0) return false;
  const auto waves = [&](std::size_t bm, std::size_t bn) {
    const std::size_t tiles = ((m + bm - 1) / bm) * ((n + bn - 1) / bn);
    return (tiles + std::size_t(resident_blocks) - 1) / std::size_t(resident_blocks);
  };
  const std::size_t wide = waves(128, 256), tall = waves(256, 128);
  return tall < wide &&
         ((m + 127) / 128) * ((n + 255) / 256) * split_k_wave_fraction_den > std::size_t(resident_blocks);
}

/// Whether variant best runs large_tile (else warp_tiled) for an exact fp32
/// product, by the architecture class of the code that runs and the shape.
/// large_tile where it was tuned (the large_smem class: sm_80, sm_90, sm_100)
/// and a 128 x 256 tile is at least a quarter used; warp_tiled elsewhere
/// (and everywhere while tuning.hpp's best_uses_large_tile is off).
KF_TUNING_FN bool best_is_large_tile(warp_tiled_tuning_id arch, std::size_t m, std::size_t n) {
  return best_uses_large_tile && arch == warp_tiled_tuning_id::large_smem && m >= 64 && n >= 64;
}

// ---- math_mode::fp32_emulated (steps 15, 16 and 17) ---------------------------------
/// Products with k below this run on the exact fp32 steps under
/// math_mode::fp32_emulated: over a few k-blocks, the tensor cores' truncating
/// sums (an ulp toward zero per instruction) cost more accuracy than the
/// emulation's two-level fp32 sum saves, and the exact steps are as accurate by
/// definition. H200, test_fp32_emulated_gpu (median relative error, 64 x 64
/// outputs, step 15's first version): k = 16 ours 8.4e-8 vs exact 6.0e-8, k =
/// 64 1.25e-7 vs 1.21e-7, k = 256 1.35e-7 vs 2.41e-7
/// (benchmarks/tuning/matmul.md#fp32-emulation-on-tf32-tensor-cores-step-15-math_modefp32_emulated).
/// Step 16 (mma.sync) uses the same bound, not yet measured on its own.
constexpr std::size_t fp32_emulated_min_k = 128;

/// What runs a math_mode::fp32_emulated product.
///  * unsupported: the device has no TF32 tensor cores (errc::unsupported);
///  * exact: k < fp32_emulated_min_k, the exact fp32 steps;
///  * wgmma: step 15, or step 17 for skinny shapes (choose_fp32_emulated_large below,
///    where tuning.hpp's best_uses_fp32_emulated_skinny allows it)
///    (the library's sm_90a image on a compute capability 9.0 device);
///  * mma_sync: step 16 (compute capability 8.0 and newer).
enum class fp32_emulated_route { unsupported, exact, wgmma, mma_sync };

/// The route for a device of compute capability `cc` (major * 10 + minor) on
/// which the sm_90a kernels run or not (wgmma_available), for a product's k
/// (k > 0). The device decides first: an unsupported device is one for every k.
constexpr fp32_emulated_route choose_fp32_emulated_route(int cc, bool wgmma_runs, std::size_t k) {
  if (cc < mma_sync_min_cc) return fp32_emulated_route::unsupported;
  if (k < fp32_emulated_min_k) return fp32_emulated_route::exact;
  return wgmma_runs ? fp32_emulated_route::wgmma : fp32_emulated_route::mma_sync;
}

/// Where the wgmma route runs a product of one small side: step 17
/// (17_wgmma_fp32_emulated_skinny.cuh), which reads the large operand once as
/// plain fp32 and splits it in registers, instead of step 15, whose pre-pass
/// moves 20 bytes of HBM traffic for each 4-byte element of it (read, hi and lo
/// written, both read again) before its kernel starts. Per element of the
/// large operand the products take 6 s flops for a small side s: at the H200's
/// TF32 peak (495 TFLOP/s) against 4.8 TB/s, step 15's 20 bytes outlast them
/// up to s ~ 340, step 17's 4 up to s ~ 70. So step 17 where the small side is
/// at most fp32_emulated_skinny_max_small, and the large one at least
/// fp32_emulated_skinny_min_large (4 times that: the large operand's bytes are
/// most of the traffic; below, both operands are small and step 15's pre-pass
/// is short). Measured at 128 x 8192 x 8192 only, where step 17 runs at 1.29x
/// step 15 (the switch: tuning.hpp's best_uses_fp32_emulated_skinny)
/// (benchmarks/tuning/matmul.md#fp32-emulation-for-skinny-products-step-17).
constexpr std::size_t fp32_emulated_skinny_max_small = 256;
constexpr std::size_t fp32_emulated_skinny_min_large = 1024;

/// The operand step 17 splits in its kernel (the large one): none (step 15
/// runs), a (n is small: C = op(A) op(B), op(A) from registers) or b (m is
/// small: the kernel computes C^T = op(B)^T op(A)^T, op(B)^T from registers).
enum class fp32_emulated_large { none, a, b };

/// Step 17's operand for an m x n x k product on the wgmma route (k >=
/// fp32_emulated_min_k), by shape (see fp32_emulated_skinny_max_small).
constexpr fp32_emulated_large choose_fp32_emulated_large(std::size_t m, std::size_t n, std::size_t k) {
  if (k < fp32_emulated_min_k) return fp32_emulated_large::none;
  if (m <= fp32_emulated_skinny_max_small && n >= fp32_emulated_skinny_min_large) return fp32_emulated_large::b;
  if (n <= fp32_emulated_skinny_max_small && m >= fp32_emulated_skinny_min_large) return fp32_emulated_large::a;
  return fp32_emulated_large::none;
}

/// Step 17 forced at any shape (tests, benchmarks): the larger side's operand
/// (ties: B, the swapped product).
constexpr fp32_emulated_large forced_fp32_emulated_large(std::size_t m, std::size_t n) {
  return m <= n ? fp32_emulated_large::b : fp32_emulated_large::a;
}

/// Step 16's block tile (16_mma_sync_fp32_emulated.cuh): 128 rows, 128 or 64
/// columns; a stage holds one k-block, hi and lo (64 floats) of each row of A
/// and B, unpadded (swizzled): 64 KiB at 128 x 128, 48 KiB at 128 x 64.
constexpr std::size_t mma_fp32_emulated_block_m = 128;
constexpr std::size_t mma_fp32_emulated_row_bytes = 2 * 32 * sizeof(float);
constexpr int mma_fp32_emulated_max_stages = 3;
constexpr std::size_t mma_fp32_emulated_stage_bytes(int block_n) {
  return (mma_fp32_emulated_block_m + static_cast<std::size_t>(block_n)) * mma_fp32_emulated_row_bytes;
}

/// The stages of block_n-wide tiles that fit `smem_optin` bytes of shared
/// memory a block (up to mma_fp32_emulated_max_stages); below 2 the tile does
/// not run (a cp.async pipeline needs one stage in the products and one loading).
constexpr int mma_fp32_emulated_stages(int block_n, std::size_t smem_optin) {
  const std::size_t fit = smem_optin / mma_fp32_emulated_stage_bytes(block_n);
  return fit >= static_cast<std::size_t>(mma_fp32_emulated_max_stages) ? mma_fp32_emulated_max_stages
                                                                       : static_cast<int>(fit);
}

/// Step 16's tile width for an m x n product on `sms` SMs with `smem_optin`
/// bytes of shared memory a block: 128 where two stages of it fit (sm_80:
/// 163 KiB, sm_90: 227 KiB) and its tiles make at least a wave (one block an
/// SM: 256 threads at up to 255 registers), else 64 (sm_86, sm_89, sm_120: 99
/// KiB hold two stages of 128 x 64 alone; small products get twice the
/// blocks). 0 where not even 128 x 64 fits (the step does not run). To be
/// measured
/// (benchmarks/tuning/matmul.md#step-16-the-mmasync-path-16_mma_sync_fp32_emulatedcuh).
constexpr int choose_mma_fp32_emulated_block_n(std::size_t m, std::size_t n, int sms, std::size_t smem_optin) {
  if (mma_fp32_emulated_stages(64, smem_optin) < 2) return 0;
  if (mma_fp32_emulated_stages(128, smem_optin) < 2) return 64;
  const std::size_t tiles_128 = ceil_div(m, mma_fp32_emulated_block_m) * ceil_div(n, std::size_t{128});
  return tiles_128 >= static_cast<std::size_t>(sms > 0 ? sms : 0) ? 128 : 64;
}

}  // namespace kf::detail
