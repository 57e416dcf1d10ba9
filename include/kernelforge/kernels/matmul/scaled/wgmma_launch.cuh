// SPDX-License-Identifier: Apache-2.0
// The host side of the FP8 wgmma GEMM (scaled/03_wgmma.cuh), for its sm_90a
// translation units alone (src/matmul/scaled_wgmma_sm90a_*.cu): the repack of
// operands FP8 wgmma cannot read in place, the TMA maps, the tile width and
// cluster by shape, the persistent grid (its last round split over the
// clusters that would wait) and the cluster launch.
#pragma once

#include <cstddef>
#include <limits>
#include <string>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "../../common/alignment.hpp"
#include "../../common/grid.hpp"
#include "../../common/last_round.hpp"
#include "../../runtime/kernel_attributes.hpp"
#include "../../runtime/launcher.hpp"
#include "../../runtime/tensor_map.hpp"
#include "../../runtime/validate.hpp"
#include "../../runtime/workspace.hpp"
#include "../pack_k_major.cuh"
#include "../wgmma/config.cuh"
#include "../wgmma/policy.hpp"
#include "../wgmma_sm90a.hpp"  // wgmma_available
#include "03_wgmma.cuh"
#include "wgmma_sm90a.hpp"

namespace kf::detail::scaled_wgmma_host {

using wgmma::tma_alignment;

/// scaled_wgmma_kernel<TA, TB, TD, Cluster, BlockN>: its shared memory, its
/// clusters resident at once (and its shared-memory opt-in, once per device).
template <class TA, class TB, class TD, int Cluster, int BlockN>
struct scaled_instance {
  static constexpr auto kernel = &scaled_wgmma_kernel<TA, TB, TD, Cluster, BlockN>;
  static constexpr int smem_bytes = wgmma::scaled_tile<BlockN>::smem_bytes;
  static constexpr int accumulators = wgmma::scaled_tile<BlockN>::accumulators;  ///< a consumer thread's
  static int resident(int device, const char* what) {
    return resident_clusters<kernel>(device, wgmma::threads, smem_bytes, Cluster, what);
  }
};

/// Calls f(scaled_instance<...>{}) for the cluster size (1, 2) and tile width
/// (192 in clusters of 2 only, 128, 64) chosen at run time. 128 in clusters of
/// 2 is the two-partials tile (scaled_two_partials_block_n).
template <class TA, class TB, class TD, class F>
void with_scaled_instance(int cluster, int block_n, F&& f) {
  static_assert(scaled_two_partials_block_n == 128, "the two-partials tile: the 128-wide instance in clusters of 2");
  if (block_n == scaled_wide_block_n) {
    f(scaled_instance<TA, TB, TD, 2, scaled_wide_block_n>{});
  } else if (block_n == 128) {
    if (cluster == 1) {
      f(scaled_instance<TA, TB, TD, 1, 128>{});
    } else {
      f(scaled_instance<TA, TB, TD, 2, 128>{});
    }
  } else if (cluster == 1) {
    f(scaled_instance<TA, TB, TD, 1, 64>{});
  } else {
    f(scaled_instance<TA, TB, TD, 2, 64>{});
  }
}

/// An operand as the kernel reads it: `rows` x k, k-contiguous, 16-byte aligned
/// rows, in place or repacked into `packed` (row stride ld_packed).
template <class T>
struct k_major_operand {
  const T* data;
  std::size_t ld;
  bool repack;
};

/// op(X)(x, p) = X[x * row + p * col]: read in place when k is contiguous
/// (col == 1) and the rows are 16-byte aligned, else repacked.
template <class T>
k_major_operand<T> k_major_source(const T* x, std::size_t row, std::size_t col) {
  const bool in_place = col == 1 && rows_aligned(x, row, sizeof(T), tma_alignment);
  return {x, in_place ? row : 0, !in_place};
}

/// See scaled_wgmma_try_launch (scaled/wgmma_sm90a.hpp).
template <class TA, class TB, class TD>
bool try_launch(const scaled_gemm_args<TA, TB, TD>& g, int device, cudaStream_t stream, const char* what,
                scaled_wgmma_tile tile) {
  using wgmma::block_m;
  using wgmma::max_cluster;
  constexpr int stage_k = wgmma::element<wgmma::fp8_operands<TA, TB>>::stage_k;
  if (g.k == 0) return false;                  // D = beta D + epilogue: the naive step's
  if (!wgmma_available(device)) return false;  // compute capability 9.0 with the sm_90a image
  const std::size_t max_extent = wgmma::max_extent;
  if (g.m > max_extent || g.n > max_extent || g.k > max_extent) return false;
  if (encode_tiled() == nullptr) return false;

  // A as m x k and op(B)^T as n x k, both k-contiguous: in place or repacked.
  k_major_operand<TA> a = k_major_source(g.A, g.a_row, g.a_col);
  k_major_operand<TB> b = k_major_source(g.B, g.b_col, g.b_row);
  const std::size_t ld_packed = round_up(g.k, tma_alignment);  // bytes = elements
  const std::size_t a_bytes = a.repack ? round_up(g.m * ld_packed, workspace_alignment) : 0;
  const std::size_t b_bytes = b.repack ? round_up(g.n * ld_packed, workspace_alignment) : 0;
  const pooled_workspace scratch(device, a_bytes + b_bytes, stream);  // back to the pool on return or throw
  void* const workspace = scratch.data();
  if (a_bytes + b_bytes > 0 && workspace == nullptr) return false;  // no pool or no memory: the naive step instead
  if (a.repack) {
    TA* const packed = static_cast<TA*>(workspace);
    const bool k_contiguous = g.a_col == 1;
    wgmma_host::launch_pack(g.A, k_contiguous ? g.a_row : g.a_col, k_contiguous, packed, ld_packed, g.m, g.k, stream,
                            what);
    a = {packed, ld_packed, true};
  }
  if (b.repack) {
    TB* const packed = reinterpret_cast<TB*>(static_cast<char*>(workspace) + a_bytes);
    const bool k_contiguous = g.b_row == 1;
    wgmma_host::launch_pack(g.B, k_contiguous ? g.b_col : g.b_row, k_contiguous, packed, ld_packed, g.n, g.k, stream,
                            what);
    b = {packed, ld_packed, true};
  }

  // The tile width by shape (or forced), and clusters of 2 sharing B where there are two tile rows (always at
  // 192, whose kernel runs in clusters of 2 only, and for the forced two-partials tile, the 128-wide instance
  // in clusters of 2: over a single tile row too).
  const std::size_t tiles_m = ceil_div(g.m, block_m);
  const int block_n =
      choose_scaled_block_n(g.m, g.n, g.k, scaled_instance<TA, TB, TD, 1, 128>::resident(device, what), tile);
  const bool clustered_only = block_n == scaled_wide_block_n || tile == scaled_wgmma_tile::two_partials;
  const int cluster = tiles_m < 2 && !clustered_only ? 1 : max_cluster;
  const std::size_t tiles_n = ceil_div(g.n, static_cast<std::size_t>(block_n));
  const std::size_t cluster_tiles_m = ceil_div(tiles_m, static_cast<std::size_t>(cluster));
  if (cluster_tiles_m * tiles_n > static_cast<std::size_t>(std::numeric_limits<int>::max())) return false;

  CUtensorMap map_a{}, map_b{}, map_c{};
  if (!encode_sw128(map_a, a.data, g.k, g.m, a.ld, stage_k, wgmma::box_rows) ||
      !encode_sw128(map_b, b.data, g.k, g.n, b.ld, stage_k, static_cast<cuuint32_t>(block_n / max_cluster))) {
    return false;
  }

  wgmma::params<TD> p = wgmma::params_of(g.D, g.ldd, g.m, g.n, g.k, g.alpha, g.beta, cluster_tiles_m, tiles_n);
  p.split_k_tiles = static_cast<int>(ceil_div(g.k, static_cast<std::size_t>(stage_k)));  // one slice: all of k
  // D through shared memory and TMA stores where D is not read and its rows are whole 16-byte units.
  p.staged = g.beta == 0.0f && rows_aligned(g.D, g.ldd, sizeof(TD), tma_alignment) &&
             (g.n * sizeof(TD)) % tma_alignment == 0 &&
             encode_sw128(map_c, static_cast<const TD*>(g.D), g.n, g.m, g.ldd,
                          static_cast<cuuint32_t>(wgmma::swizzle_row_bytes / sizeof(TD)),
                          static_cast<cuuint32_t>(wgmma::c_box_rows));

  fp8_scale_view scales;
  scales.mode = g.mode;
  scales.a = g.scale_a;
  scales.b = g.scale_b;
  scales.k_blocks = static_cast<int>(g.k_blocks);
  epilogue::bias_relu_threshold<TD> fused;
  fused.bias = g.bias;
  fused.relu = g.relu;
  fused.threshold = g.relu_threshold;

  with_scaled_instance<TA, TB, TD>(cluster, block_n, [&](auto instance) {
    using I = decltype(instance);
    // Persistent: no more clusters than the device runs at once.
    const std::size_t items = cluster_tiles_m * tiles_n;
    const std::size_t held = static_cast<std::size_t>(I::resident(device, what));
    const std::size_t clusters = items < held ? items : held;
    // The last round of cluster tiles split over the clusters that would wait (common/last_round.hpp): each
    // part's fp32 sums go to a slot of the workspace (a slot per split tile, part, CTA and consumer
    // warpgroup), and a counter per split tile, CTA and consumer warpgroup tells the part that arrives last.
    const last_round_plan last_round = plan_last_round(items, clusters, static_cast<std::size_t>(p.split_k_tiles), 1,
                                                       scaled_last_round_max_parts, scaled_last_round_min_k_steps);
    const std::size_t split_tiles = items - last_round.split_from;
    const std::size_t groups = static_cast<std::size_t>(cluster) * wgmma::consumer_warpgroups;
    const std::size_t sums_bytes = round_up(split_tiles * last_round.parts * groups * I::accumulators *
                                                static_cast<std::size_t>(warpgroup_threads) * sizeof(float),
                                            workspace_alignment);
    const std::size_t counter_bytes = split_tiles * groups * sizeof(unsigned);
    const pooled_workspace split_scratch(device, split_tiles == 0 ? 0 : sums_bytes + counter_bytes, stream);
    if (split_tiles > 0 && split_scratch.data() != nullptr) {  // without a workspace the last round runs unsplit
      p.split_parts = static_cast<int>(last_round.parts);
      p.split_from = static_cast<int>(last_round.split_from);
      p.split_steps = static_cast<int>(last_round.part_steps);
      p.split_sums = split_scratch.data<float>();
      p.split_arrivals = reinterpret_cast<unsigned*>(split_scratch.data<char>() + sums_bytes);
      cuda_check(cudaMemsetAsync(p.split_arrivals, 0, counter_bytes, stream), what);
    }
    cudaLaunchAttribute cluster_dims{};
    const cudaLaunchConfig_t config =
        cluster_launch_config(dim3(static_cast<unsigned>(clusters * cluster)), dim3(wgmma::threads), I::smem_bytes,
                              stream, cluster, cluster_dims);
    cuda_check(cudaLaunchKernelEx(&config, I::kernel, map_a, map_b, map_c, p, scales, fused, g.amax_bits), what);
  });
  check_launch(what);
  return true;
}

}  // namespace kf::detail::scaled_wgmma_host
