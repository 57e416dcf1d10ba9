// SPDX-License-Identifier: Apache-2.0
// Grouped tile rasterization, shared by the tiled GEMM kernels: consecutive
// block ids walk down `group_rows` tile-rows before moving one tile right along
// n, so the blocks resident at the same time share A and B tiles in L2 instead
// of streaming whole rows of tiles (the swizzle CUTLASS and Triton use).
#pragma once

#include "host_device.hpp"

namespace kf::detail {

struct tile_coord {
  long long m = 0;  ///< tile row
  long long n = 0;  ///< tile column
};

/// The tile that block `id` of a tiles_m x tiles_n grid computes.
KF_HOST_DEVICE inline tile_coord grouped_tile(long long id, long long tiles_m, long long tiles_n,
                                              long long group_rows) {
  const long long per_group = group_rows * tiles_n;
  const long long first_m = (id / per_group) * group_rows;
  const long long rows = tiles_m - first_m < group_rows ? tiles_m - first_m : group_rows;
  const long long in_group = id - (id / per_group) * per_group;
  return tile_coord{first_m + in_group % rows, in_group / rows};
}

}  // namespace kf::detail
