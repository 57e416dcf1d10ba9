// SPDX-License-Identifier: Apache-2.0
// The host side of the skinny fp32-emulation step (17_wgmma_fp32_emulated_skinny.cuh),
// for its sm_90a translation unit alone (src/matmul/wgmma_sm90a_fp32_emulated_skinny.cu):
// the large operand's TMA map in place, the small operand's split pre-pass
// into a pooled workspace, the cluster by shape, split-k where one tile
// column cannot fill the GPU, the persistent launch of both instances, and
// the split-k reduction.
#pragma once

#include <cstddef>
#include <limits>
#include <type_traits>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "../common/alignment.hpp"
#include "../common/grid.hpp"
#include "../runtime/tensor_map.hpp"
#include "17_wgmma_fp32_emulated_skinny.cuh"
#include "fp32_emulated_instances.cuh"
#include "gemm_args.cuh"
#include "plan.hpp"
#include "split_k.cuh"
#include "split_tf32.cuh"
#include "wgmma/config.cuh"
#include "wgmma/policy.hpp"
#include "wgmma/staged_c.hpp"
#include "wgmma/swap_ab.cuh"
#include "wgmma_sm90a.hpp"  // wgmma_available

namespace kf::detail::fp32_emulated_skinny_host {

/// wgmma_fp32_emulated_skinny_kernel<Cluster, Swap, *, *>: its two instances
/// (finite Y, with the k-loop's schedule SplitAhead; Y with an inf or a NaN,
/// serial), their shared memory and launch.
template <int Cluster, bool Swap, bool SplitAhead>
using instance = fp32_emulated_instances<&wgmma_fp32_emulated_skinny_kernel<Cluster, Swap, false, SplitAhead>,
                                         &wgmma_fp32_emulated_skinny_kernel<Cluster, Swap, true, false>,
                                         wgmma::tile_config<skinny_block_n, false, 2>::smem_bytes, Cluster>;

/// Calls f(instance<...>{}) for the cluster size (1, 2), orientation and schedule chosen at run time.
template <class F>
void with_instance(int cluster, bool swap, fp32_emulated_skinny_schedule schedule, F&& f) {
  const auto with_schedule = [&](auto split_ahead) {
    constexpr bool ahead = decltype(split_ahead)::value;
    if (swap) {
      if (cluster == 1) {
        f(instance<1, true, ahead>{});
      } else {
        f(instance<2, true, ahead>{});
      }
    } else if (cluster == 1) {
      f(instance<1, false, ahead>{});
    } else {
      f(instance<2, false, ahead>{});
    }
  };
  if (schedule == fp32_emulated_skinny_schedule::split_ahead) {
    with_schedule(std::true_type{});
  } else {
    with_schedule(std::false_type{});
  }
}

/// The large operand X (rows x k) where it lies: element (r, p) at base[r *
/// ld + p] (k_major) or base[p * ld + r].
struct large_operand {
  const float* base;
  std::size_t ld;
  bool k_major;
  std::size_t rows;
};

/// X for `large` (a or b): op(A) (m x k; A not transposed is k-major) or
/// op(B)^T (n x k; op(B)^T(j, p) = B[j * ldb + p] where B is transposed).
inline large_operand large_operand_of(const gemm_args<float>& g, fp32_emulated_large large) {
  if (large == fp32_emulated_large::b) return {g.B, g.ldb, g.trans_b, g.n};
  return {g.A, g.lda, !g.trans_a, g.m};
}

/// See wgmma_fp32_emulated_skinny_try_launch (wgmma_sm90a.hpp).
inline bool try_launch(const gemm_args<float>& g, const epilogue::bias_relu_threshold<float>& fused,
                       fp32_emulated_large large, int device, cudaStream_t stream, const char* what,
                       fp32_emulated_skinny_schedule schedule) {
  using wgmma::block_m;
  using wgmma::max_cluster;
  constexpr int block_n = skinny_block_n;
  constexpr int k_block = split_block_k;  // a stage: one k-block of the pre-pass's layout
  // Every check before any work: a false return has enqueued nothing.
  if (g.k == 0 || large == fp32_emulated_large::none) return false;
  if (!wgmma_available(device)) return false;  // compute capability 9.0 with the sm_90a image
  // Swapped (B is the large operand): the kernel computes C^T, its Y is op(A).
  const bool swap = large == fp32_emulated_large::b;
  const large_operand x = large_operand_of(g, large);
  const std::size_t small = swap ? g.m : g.n;
  const std::size_t ld = split_tf32_ld(g.k);
  if (x.rows > wgmma::max_extent || small > wgmma::max_extent || ld > wgmma::max_extent) return false;
  if (!rows_aligned(x.base, x.ld, sizeof(float), wgmma::tma_alignment)) return false;  // TMA reads X in place
  if (encode_tiled() == nullptr) return false;
  // Tiles of 128 rows of X x 64 of Y; clusters of 2 CTAs on adjacent tiles of
  // Y, sharing X, where there are two tile columns or more.
  const std::size_t tiles_m = ceil_div(x.rows, static_cast<std::size_t>(block_m));
  const std::size_t tiles_n = ceil_div(small, static_cast<std::size_t>(block_n));
  const int cluster = tiles_n < 2 ? 1 : max_cluster;
  const std::size_t cluster_tiles_n = ceil_div(tiles_n, static_cast<std::size_t>(cluster));
  if (tiles_m * cluster_tiles_n > static_cast<std::size_t>(std::numeric_limits<int>::max())) return false;

  // The small operand's split (Y: op(A) as m x k, or op(B)^T as n x k), then the non-finite flag.
  const split_gemm_operands operands(g, device, stream, swap ? split_which::a : split_which::b);
  if (!operands.allocated()) return false;  // no pool or no memory: the caller reports it
  const float* const y = swap ? operands.a() : operands.b();
  CUtensorMap map_x{}, map_y{}, map_c{};
  const bool x_encoded = x.k_major ? encode_sw128(map_x, x.base, g.k, x.rows, x.ld, k_block,
                                                  static_cast<cuuint32_t>(wgmma::a_box_rows(cluster > 1)))
                                   : encode_sw128(map_x, x.base, x.rows, g.k, x.ld, wgmma::swap_box_rows, k_block);
  if (!x_encoded || !encode_sw128(map_y, y, ld, small, ld, k_block, block_n)) return false;
  operands.enqueue(g, stream, what);

  int resident = 0;
  with_instance(cluster, swap, schedule, [&](auto chosen) { resident = decltype(chosen)::resident(device, what); });
  // The kernel's m and n are X's rows and Y's (swapped: C's n and m).
  wgmma::params<float> p = wgmma::params_of(g.C, g.ldc, x.rows, small, g.k, g.alpha, g.beta, tiles_m, cluster_tiles_n);
  // Split-k where the tiles fill less than half the GPU (as step 14), in whole k-blocks.
  const split_k_workspace split(plan_matmul_split_k(tiles_m * tiles_n, g.m, g.n, g.k, k_block, resident * cluster,
                                                    wgmma_split_k_min_slice(sizeof(float))),
                                g.m, g.n, g.k, device, stream);
  p.partial = split.partials();
  p.splits = split.plan().split;
  p.split_k_tiles = static_cast<int>(ceil_div(split.plan().k_slice, static_cast<std::size_t>(k_block)));
  // Swapped: C through shared memory and TMA stores where it can
  // (wgmma/staged_c.hpp: step 14's swapped epilogue); C's own orientation
  // from registers (its rows are permuted as the fragments are).
  p.staged = swap && wgmma::encode_staged_c(map_c, g, p.partial != nullptr);

  // Both instances; the one Y's flag does not name returns at once.
  const std::size_t items = tiles_m * cluster_tiles_n * static_cast<std::size_t>(p.splits);
  with_instance(cluster, swap, schedule, [&](auto chosen) {
    decltype(chosen)::launch(items, resident, stream, what, map_x, map_y, map_c, p, fused,
                             static_cast<const unsigned*>(operands.nonfinite()), x.k_major);
  });
  check_launch(what);
  split.reduce(g, fused, stream);
  return true;
}

}  // namespace kf::detail::fp32_emulated_skinny_host
