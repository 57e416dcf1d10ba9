// SPDX-License-Identifier: Apache-2.0
// Launch planning as pure functions: device limits + kernel occupancy + problem
// size -> grid and block. No CUDA calls here, so the CPU tests cover every rule.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace kf::detail {

/// The device limits planning needs (read once per device and cached).
struct device_limits {
  int sm_count = 0;
  int max_threads_per_sm = 0;
  int max_threads_per_block = 0;
  std::uint32_t max_grid_x = 0;  ///< gridDim.x limit (2^31 - 1 on every GPU since sm_30)
  int cc_major = 0;              ///< compute capability, for architecture-specific variants
  int cc_minor = 0;
  std::size_t max_smem_per_block_optin = 0;  ///< shared memory a block may opt in to (bytes)
};

/// Resident blocks per SM for each block size 32, 64, ..., 1024 (index: warps - 1),
/// as cudaOccupancyMaxActiveBlocksPerMultiprocessor reports them; 0 where the
/// block size cannot launch at all (registers, shared memory, or the kernel's max).
using occupancy_table = std::array<int, 32>;

struct launch_plan {
  std::uint32_t grid = 0;
  std::uint32_t block = 0;
};

/// Block size to use when the caller asks for none: the one with the most
/// resident threads per SM; among ties, the one closest to `preferred` (256 is a
/// good default for memory-bound code: short tail, cheap block scheduling).
/// Returns 0 if no block size can launch.
int choose_block_size(const occupancy_table& occupancy, int preferred = 256) noexcept;

/// Validates a caller's block size: a multiple of 32 in [32, 1024].
bool is_valid_block_size(int block) noexcept;

/// One thread per work item (the naive kernels): grid = ceil(items / block).
/// Throws kf::error(unsupported) when that exceeds the device's grid limit.
launch_plan plan_one_per_thread(const device_limits& limits, int block, std::size_t items);

/// Grid-stride kernels: enough blocks to cover `items` (items_per_block each),
/// capped at `max_waves` full waves (a wave: sm_count x blocks_per_sm blocks,
/// all resident at once) and at the device's grid limit; the kernel's
/// grid-stride loop covers whatever the cap leaves. max_waves = 0: no wave cap.
/// (Measured on the H200 for the elementwise kernels: one tile per block, no
/// wave cap, beats a single full wave by 7%; see include/kernelforge/kernels/elementwise/tuning.hpp.)
launch_plan plan_grid_stride(const device_limits& limits, int block, int blocks_per_sm, std::size_t items,
                             std::size_t items_per_block, int max_waves = 1);

}  // namespace kf::detail
