// SPDX-License-Identifier: Apache-2.0
// The host side of the Hopper GEMM (14_wgmma.cuh), for the sm_90a translation
// units only (wgmma_sm90a_{tf32,tf32_fused,f16,bf16}.cu): the TMA descriptors,
// the repack of operands wgmma cannot read in place (pack_k_major.cuh, into the
// runtime's pooled workspace), the choices of policy.hpp, the split-k plan and
// its fp32 partials, the persistent grid, the cluster launch of the instance
// the choices name (instances.cuh), and the split-k reduction (split_k.cuh),
// which applies alpha, beta and the epilogue functor once the k-slices are summed.
#pragma once

#include <cstddef>
#include <limits>
#include <string>

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include "../../common/alignment.hpp"
#include "../../common/grid.hpp"
#include "../../common/vector_access.cuh"
#include "../../runtime/launcher.hpp"
#include "../../runtime/tensor_map.hpp"  // encode_tiled, encode_sw128
#include "../../runtime/validate.hpp"
#include "../14_wgmma.cuh"
#include "../gemm_args.cuh"
#include "../pack_k_major.cuh"  // the repack, and its launch
#include "../split_k.cuh"
#include "../wgmma_sm90a.hpp"
#include "instances.cuh"
#include "policy.hpp"
#include "staged_c.hpp"

namespace kf::detail {

namespace wgmma_host {

using wgmma::tma_alignment;

/// errc::invalid_argument unless block_n is 0 (by shape) or one of wgmma_block_n_choices.
inline void require_wgmma_block_n(const char* what, int block_n) {
  if (block_n == 0) return;
  for (const int w : wgmma_block_n_choices) {
    if (w == block_n) return;
  }
  throw_invalid_argument(what, "block_n = " + std::to_string(block_n) +
                                   " is not a wgmma tile width: pass 0 (chosen by shape), 256, 128 or 64");
}

/// errc::invalid_argument unless `mode` is one of wgmma_cluster_mode's values.
inline void require_wgmma_cluster_mode(const char* what, wgmma_cluster_mode mode) {
  if (mode == wgmma_cluster_mode::by_shape || mode == wgmma_cluster_mode::share_a ||
      mode == wgmma_cluster_mode::share_b || mode == wgmma_cluster_mode::split_k) {
    return;
  }
  throw_invalid_argument(what, "cluster_mode = " + std::to_string(static_cast<int>(mode)) +
                                   " is not a wgmma_cluster_mode: pass by_shape, share_b, share_a or split_k");
}

/// errc::invalid_argument unless the forced cluster split-k (cluster_mode =
/// split_k) meets its instance: 128 x 128 tiles, a cluster of 2.
inline void require_wgmma_cluster_split_k(const char* what, int cluster_size, int block_n) {
  if (block_n != 0 && block_n != 128) {
    throw_invalid_argument(what, "block_n = " + std::to_string(block_n) +
                                     " with cluster_mode = split_k: the cluster split-k runs 128 x 128 tiles only; "
                                     "pass block_n 0 or 128");
  }
  if (cluster_size == 1) {
    throw_invalid_argument(what,
                           "cluster_size = 1 with cluster_mode = split_k: the cluster split-k needs a cluster of 2 "
                           "CTAs; pass cluster_size 2");
  }
}

/// Enqueues C = fn(alpha * op(A) op(B) + beta * C) with the wgmma kernel on the
/// current device and returns true, or returns false having enqueued nothing
/// (no sm_90a image for this device, extents past TMA's 32-bit coordinates, no
/// driver entry point, or no workspace for a needed repack). What runs:
///  * A read in place when k-contiguous with 16-byte aligned rows, else repacked;
///  * B read in place when k-contiguous, or (16-bit T: wgmma's transpose bit)
///    n-contiguous, with 16-byte aligned rows; TF32 n-contiguous B with such
///    rows read in place by the swapped product (C^T = op(B)^T op(A)^T, its A
///    from registers) unless overrides.tf32_b_mode forces the repack; else
///    repacked k-contiguous (policy.hpp: choose_wgmma_b_source);
///  * the cluster split-k (cluster_mode split_k, or by shape where
///    wgmma_cluster_splits_k says so): clusters of 2 CTAs on each 128 x 128
///    tile, each over half of k, the halves added in shared memory;
///  * else clusters of 2 CTAs sharing B (adjacent m-tiles) or A (adjacent n-tiles:
///    wgmma_cluster_shares_a, by shape where B's tile is narrower than A's and there
///    are two tile rows or more, or
///    forced by overrides.cluster_mode: tests run both at every shape), persistent over
///    the tiles (cluster_size 1: single CTAs; a single tile row sharing B or a
///    single tile column sharing A: single CTAs, the partner would only idle);
///  * block tiles 128 x 256, or 128 x 128 or 128 x 64 where the wider tiles
///    cannot fill the GPU (choose_wgmma_block_n; overrides.block_n, where nonzero,
///    forces one of wgmma_block_n_choices: tests run every width on one shape);
///  * split-k where the tiles fill less than half the GPU (plan_matmul_split_k with
///    wgmma_split_k_min_slice), then the reduction;
///  * C stored through shared memory and TMA when beta == 0 and C's rows are
///    16-byte aligned (unsplit), else from registers.
template <class T, class Epilogue>
bool try_launch(const gemm_args<T>& args, cudaStream_t stream, const Epilogue& fn, const wgmma_overrides& overrides,
                const char* what) {
  using wgmma::block_m;
  using wgmma::max_cluster;
  constexpr int stage_k = wgmma::element<T>::stage_k;

  const int cluster_size = overrides.cluster_size, forced_block_n = overrides.block_n;
  const wgmma_cluster_mode multicast = overrides.cluster_mode;
  require_wgmma_block_n(what, forced_block_n);
  require_wgmma_cluster_mode(what, multicast);
  if (multicast == wgmma_cluster_mode::split_k) require_wgmma_cluster_split_k(what, cluster_size, forced_block_n);
  const int device = current_device(what);
  if (!wgmma_available(device)) return false;  // compute capability 9.0 with the sm_90a image
  // The library's own architecture list decides, as for every other kernel: a
  // copy built without this device's architecture raises no_kernel_image here.
  require_kernel_image_cached(device, what);
  const std::size_t max_extent = wgmma::max_extent;
  if (args.m > max_extent || args.n > max_extent || args.k > max_extent) return false;
  if (encode_tiled() == nullptr) return false;

  // Operands wgmma cannot read in place get a k-contiguous repacked copy (row
  // stride: k rounded up to 16 bytes) in the workspace.
  const wgmma_b_source b_source = choose_wgmma_b_source(
      sizeof(T), args.trans_b, rows_aligned(args.B, args.ldb, sizeof(T), tma_alignment), overrides.tf32_b_mode);
  // N-major TMA boxes of B, read so by the 16-bit products (wgmma's transpose bit).
  const bool b_n_major = b_source == wgmma_b_source::n_major;
  // The swapped TF32 product: the kernel computes C^T = op(B)^T op(A)^T, so its
  // m and n are the product's n and m (tiles of 128 columns x block_n rows of C).
  const bool swap = b_source == wgmma_b_source::swapped;
  const std::size_t km = swap ? args.n : args.m, kn = swap ? args.m : args.n;
  const bool pack_a = args.trans_a || !rows_aligned(args.A, args.lda, sizeof(T), tma_alignment);
  const bool pack_b = b_source == wgmma_b_source::repacked;
  const std::size_t tiles_m = ceil_div(km, block_m);
  // The cluster size the tile width is chosen with: sharing B (as before A could be shared).
  const int b_cluster = wgmma_cluster_ctas(cluster_size, false, tiles_m, 0);

  // The tile width: the widest whose tiles fill the GPU (choose_wgmma_block_n;
  // every width runs one CTA per SM, the widest instance's count stands for all
  // of them), unless forced.
  // The cluster split-k (a cluster of 2 on each 128 x 128 tile, k halved),
  // forced or by shape (policy.hpp: wgmma_cluster_splits_k).
  bool split_k_cluster = multicast == wgmma_cluster_mode::split_k;
  int block_n = forced_block_n;
  if (block_n == 0 && !split_k_cluster) {
    int resident_wide = 0;
    with_instance<T, Epilogue>(b_n_major, swap, cluster_choice{b_cluster}, wgmma_block_n_choices[0],
                               [&](auto i) { resident_wide = decltype(i)::resident(device, what); });
    block_n = choose_wgmma_block_n(km, kn, resident_wide * b_cluster);
    split_k_cluster = multicast == wgmma_cluster_mode::by_shape && cluster_size != 1 &&
                      wgmma_cluster_splits_k(km, kn, args.k, sizeof(T), stage_k, resident_wide * b_cluster);
  }
  if (split_k_cluster) block_n = 128;
  const std::size_t tiles_n = ceil_div(kn, static_cast<std::size_t>(block_n));
  // Which operand a cluster shares, and whether there is a cluster at all.
  const bool share_a = !split_k_cluster && wgmma_cluster_shares_a(multicast, block_n, tiles_m, tiles_n);
  const int cluster = split_k_cluster ? max_cluster : wgmma_cluster_ctas(cluster_size, share_a, tiles_m, tiles_n);
  const bool multicast_a = share_a && cluster > 1;  // single CTAs share nothing
  const cluster_choice choice{cluster, multicast_a, split_k_cluster};
  // A cluster tile: `cluster` block tiles along m (sharing B) or n (sharing A),
  // or one block tile (splitting k: both CTAs take it).
  const std::size_t cluster_tiles_m =
      multicast_a || split_k_cluster ? tiles_m : ceil_div(tiles_m, static_cast<std::size_t>(cluster));
  const std::size_t cluster_tiles_n = multicast_a ? ceil_div(tiles_n, static_cast<std::size_t>(cluster)) : tiles_n;
  // The persistent kernel walks cluster tiles with an int index.
  if (cluster_tiles_m * cluster_tiles_n > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    return false;
  }

  const std::size_t ld_packed = round_up(args.k, tma_alignment / sizeof(T));
  const std::size_t a_bytes = pack_a ? round_up(args.m * ld_packed * sizeof(T), workspace_alignment) : 0;
  const std::size_t b_bytes = pack_b ? round_up(args.n * ld_packed * sizeof(T), workspace_alignment) : 0;
  // Returned to the pool on `stream` when this function returns or throws.
  const pooled_workspace scratch(device, a_bytes + b_bytes, stream);
  void* const workspace = scratch.data();
  if (a_bytes + b_bytes > 0 && workspace == nullptr) return false;  // no pool or no memory: mma.sync instead
  T* const packed_a = static_cast<T*>(workspace);
  T* const packed_b = reinterpret_cast<T*>(static_cast<char*>(workspace) + a_bytes);
  const T* const a = pack_a ? packed_a : args.A;
  const T* const b = pack_b ? packed_b : args.B;
  const std::size_t lda = pack_a ? ld_packed : args.lda;
  const std::size_t ldb = pack_b ? ld_packed : args.ldb;

  // A as m x k: boxes of 128 rows x one swizzled row of k (64 rows, one per
  // CTA of the cluster, where it shares A); op(B)^T as n x k:
  // boxes of block_n / 2 rows x one swizzled row of k; N-major B as k x n: boxes
  // of one swizzled row of n x a stage's k rows. Swapped: the kernel's A is B
  // N-major (those boxes), its B is A (boxes of block_n / 2 rows).
  CUtensorMap map_a{}, map_b{};
  const auto a_box_rows = static_cast<cuuint32_t>(wgmma::a_box_rows(multicast_a));
  const auto b_box_rows = static_cast<cuuint32_t>(block_n / max_cluster);  // tile_config<block_n>::b_box_rows
  bool encoded = false;
  if (swap) {
    encoded = encode_sw128(map_a, b, args.n, args.k, ldb, stage_k, stage_k) &&
              encode_sw128(map_b, a, args.k, args.m, lda, stage_k, b_box_rows);
  } else {
    encoded = encode_sw128(map_a, a, args.k, args.m, lda, stage_k, a_box_rows) &&
              (b_n_major ? encode_sw128(map_b, b, args.n, args.k, ldb, stage_k, stage_k)
                         : encode_sw128(map_b, b, args.k, args.n, ldb, stage_k, b_box_rows));
  }
  if (!encoded) return false;

  if (pack_a) launch_pack(args.A, args.lda, !args.trans_a, packed_a, ld_packed, args.m, args.k, stream, what);
  if (pack_b) launch_pack(args.B, args.ldb, args.trans_b, packed_b, ld_packed, args.n, args.k, stream, what);

  // The kernel for this layout and cluster size: how many clusters the device holds.
  int resident = 0, smem_bytes = 0;
  with_instance<T, Epilogue>(b_n_major, swap, choice, block_n, [&](auto i) {
    resident = decltype(i)::resident(device, what);
    smem_bytes = decltype(i)::smem_bytes;
  });

  // Swapped: C has km columns and kn rows.
  wgmma::params<T> ep = wgmma::params_of(args, km, kn, cluster_tiles_m, cluster_tiles_n);

  // The cluster split-k sums its two halves of k on chip: no workspace slices.
  const split_k_workspace split(split_k_cluster
                                    ? split_k_plan{1, args.k}
                                    : plan_matmul_split_k(tiles_m * tiles_n, km, kn, args.k, stage_k,
                                                          resident * cluster, wgmma_split_k_min_slice(sizeof(T))),
                                args.m, args.n, args.k, device, stream);
  ep.partial = split.partials();
  ep.splits = split.plan().split;
  ep.split_k_tiles = static_cast<int>(ceil_div(split.plan().k_slice, static_cast<std::size_t>(stage_k)));

  // C through shared memory and TMA stores where it can (staged_c.hpp).
  CUtensorMap map_c{};
  ep.staged = wgmma::encode_staged_c(map_c, args, ep.partial != nullptr);

  // Persistent: no more clusters than the device runs at once.
  const std::size_t items = cluster_tiles_m * cluster_tiles_n * static_cast<std::size_t>(ep.splits);
  const std::size_t clusters = items < static_cast<std::size_t>(resident) ? items : static_cast<std::size_t>(resident);
  cudaLaunchAttribute cluster_dims{};
  const cudaLaunchConfig_t config = cluster_launch_config(
      dim3(static_cast<unsigned>(clusters * cluster)), dim3(wgmma::threads), smem_bytes, stream, cluster, cluster_dims);
  with_instance<T, Epilogue>(b_n_major, swap, choice, block_n, [&](auto i) {
    cuda_check(cudaLaunchKernelEx(&config, decltype(i)::kernel, map_a, map_b, map_c, ep, fn), what);
  });
  check_launch(what);
  split.reduce(args, fn, stream);
  return true;
}

}  // namespace wgmma_host

}  // namespace kf::detail
