// SPDX-License-Identifier: Apache-2.0
// Pure launch planning (see launch_plan.hpp). Unit-tested on the CPU.
#include "kernelforge/kernels/runtime/launch_plan.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "kernelforge/kernels/common/grid.hpp"
#include "kernelforge/error.hpp"

namespace kf::detail {
bool is_valid_block_size(int block) noexcept { return block >= 32 && block <= 1024 && block % 32 == 0; }

int choose_block_size(const occupancy_table& occupancy, int preferred) noexcept {
  int best_block = 0;
  long best_threads = 0;
  for (int warps = 1; warps <= static_cast<int>(occupancy.size()); ++warps) {
    const int block = warps * 32;
    const long threads = static_cast<long>(occupancy[warps - 1]) * block;
    if (threads <= 0) continue;
    const bool more = threads > best_threads;
    const bool tie_closer = threads == best_threads && std::abs(block - preferred) < std::abs(best_block - preferred);
    if (more || tie_closer) {
      best_threads = threads;
      best_block = block;
    }
  }
  return best_block;
}

launch_plan plan_one_per_thread(const device_limits& limits, int block, std::size_t items) {
  const std::size_t blocks = ceil_div(items, static_cast<std::size_t>(block));
  if (blocks > limits.max_grid_x) {
    throw error(errc::unsupported, "one-thread-per-element launch needs " + std::to_string(blocks) + " blocks of " +
                                       std::to_string(block) + " threads, over the device's grid limit of " +
                                       std::to_string(limits.max_grid_x) +
                                       "; use a grid-stride variant (e.g. vectorized)");
  }
  return {static_cast<std::uint32_t>(blocks), static_cast<std::uint32_t>(block)};
}

launch_plan plan_grid_stride(const device_limits& limits, int block, int blocks_per_sm, std::size_t items,
                             std::size_t items_per_block, int max_waves) {
  const std::size_t needed = ceil_div(items, items_per_block);
  std::size_t cap = limits.max_grid_x;
  if (max_waves > 0) {
    const std::size_t wave =
        static_cast<std::size_t>(std::max(limits.sm_count, 1)) * static_cast<std::size_t>(std::max(blocks_per_sm, 1));
    cap = std::min(cap, wave * static_cast<std::size_t>(max_waves));
  }
  const std::size_t blocks = std::max<std::size_t>(1, std::min(needed, cap));
  return {static_cast<std::uint32_t>(blocks), static_cast<std::uint32_t>(block)};
}

}  // namespace kf::detail
